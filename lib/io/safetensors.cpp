#include "lib/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "kernels/cpu/bf16.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"

namespace eth {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors is little-endian");

constexpr size_t kMaxHeaderBytes = size_t(100) << 20;  // the specification's limit on N

// Bytes per element of every dtype the specification names.
size_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2},
      {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},   {"F32", 4},     {"F64", 8}, {"I64", 8}, {"U64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// IEEE half to float, exactly (every half is a float).
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, nan
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float subnormal = std::ldexp(static_cast<float>(mantissa), -24);  // 0 included
  return sign ? -subnormal : subnormal;
}

std::string tensor_field(const std::string& name, const char* field) { return "tensor \"" + name + "\": " + field; }

// One header entry, checked on its own; the layout of all of them is checked by the caller.
SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const json& value) {
  if (!value.is_object()) fail_input(path, "tensor \"" + name + "\"", "an object of dtype, shape and data_offsets", value.type_name());
  SafetensorsEntry e;
  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string())
    fail_input(path, tensor_field(name, "dtype"), "a string", dtype == value.end() ? "none" : dtype->dump());
  e.dtype = dtype->get<std::string>();
  const size_t bytes = dtype_bytes(e.dtype);
  if (bytes == 0) fail_input(path, tensor_field(name, "dtype"), "one of the safetensors dtypes (F32, F16, BF16, ...)", "\"" + e.dtype + "\"");
  const auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array())
    fail_input(path, tensor_field(name, "shape"), "an array of sizes", shape == value.end() ? "none" : shape->dump());
  size_t numel = 1;
  for (const json& d : *shape) {
    if (!d.is_number_unsigned()) fail_input(path, tensor_field(name, "shape"), "non-negative integer sizes", shape->dump());
    const auto n = d.get<uint64_t>();
    if (n != 0 && numel > std::numeric_limits<size_t>::max() / bytes / n)
      fail_input(path, tensor_field(name, "shape"), "a size that fits in memory", shape->dump());
    numel *= n;
    e.shape.push_back(n);
  }
  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    fail_input(path, tensor_field(name, "data_offsets"), "[begin, end], two non-negative integers",
               offsets == value.end() ? "none" : offsets->dump());
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.end < e.begin) fail_input(path, tensor_field(name, "data_offsets"), "begin <= end", offsets->dump());
  if (e.end - e.begin != numel * bytes)
    fail_input(path, tensor_field(name, "data_offsets"),
               strprintf("end - begin = %zu bytes (shape %s of %s, %zu bytes each)", numel * bytes,
                         shape_string(e.shape).c_str(), e.dtype.c_str(), bytes),
               strprintf("%zu bytes (%s)", e.end - e.begin, offsets->dump().c_str()));
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  if (!value.is_object()) fail_input(path, "__metadata__", "an object of strings", value.type_name());
  std::map<std::string, std::string> metadata;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) fail_input(path, "__metadata__: \"" + key + "\"", "a string", v.dump());
    metadata[key] = v.get<std::string>();
  }
  return metadata;
}

// The tensors must tile the byte buffer [0, buffer_bytes): in offset order, each begins where
// the one before ends, and the last ends at the file's end.
void check_tiling(const std::string& path, const std::map<std::string, SafetensorsEntry>& entries, size_t buffer_bytes) {
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, e] : entries) {
    if (e.end > buffer_bytes)
      fail_input(path, tensor_field(name, "data_offsets"),
                 strprintf("an end within the %zu bytes of data after the header", buffer_bytes), strprintf("end %zu", e.end));
    order.emplace_back(&name, &e);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  size_t at = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, e] : order) {
    if (e->begin < at)
      fail_input(path, tensor_field(*name, "data_offsets"),
                 strprintf("a begin at %zu, where tensor \"%s\" ends (no overlap)", at, previous->c_str()),
                 strprintf("begin %zu", e->begin));
    if (e->begin > at)
      fail_input(path, tensor_field(*name, "data_offsets"),
                 strprintf("a begin at %zu, where %s (no hole)", at,
                           previous ? ("tensor \"" + *previous + "\" ends").c_str() : "the data begins"),
                 strprintf("begin %zu", e->begin));
    at = e->end;
    previous = name;
  }
  if (at != buffer_bytes)
    fail_input(path, "data", strprintf("the tensors to end at the file's end (%zu bytes of data)", buffer_bytes),
               strprintf("%zu bytes after the last tensor", buffer_bytes - at));
}

}  // namespace

size_t SafetensorsEntry::numel() const {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

std::string shape_string(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char* dtype_name(SafetensorsDtype dtype) { return dtype == SafetensorsDtype::bf16 ? "BF16" : "F32"; }

size_t dtype_size(SafetensorsDtype dtype) { return dtype == SafetensorsDtype::bf16 ? 2 : 4; }

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, SafetensorsDtype dtype) {
  const size_t bytes = dtype_size(dtype);
  const auto numel = [](const SafetensorsTensor& t) {
    size_t n = 1;
    for (size_t d : t.shape) n *= d;
    return n;
  };
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t at = 0;
  for (const SafetensorsTensor& t : tensors) {
    header[t.name] = {{"dtype", dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + numel(t) * bytes}}};
    at += numel(t) * bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N a multiple of 8
  const uint64_t n = text.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail_input(path, "--out", "a writable path", "one that cannot be opened");
  out.write(reinterpret_cast<const char*>(&n), sizeof(n));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<kernels::bf16> rounded;
  for (const SafetensorsTensor& t : tensors) {
    const char* data = reinterpret_cast<const char*>(t.data);
    if (dtype == SafetensorsDtype::bf16) {
      rounded.resize(numel(t));
      for (size_t i = 0; i < rounded.size(); i++) rounded[i] = kernels::cpu::to_bf16(t.data[i]);
      data = reinterpret_cast<const char*>(rounded.data());
    }
    out.write(data, static_cast<std::streamsize>(numel(t) * bytes));
  }
  if (!out.flush()) fail_input(path, "--out", "a file that can be written in full", "a write error");
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  std::error_code ec;
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  if (!in_ || ec) fail_input(path, "safetensors", "a readable safetensors file", "a missing or unreadable file");
  uint64_t n = 0;
  if (file_bytes < sizeof(n)) fail_input(path, "header length", "8 bytes (a little-endian u64)", strprintf("a file of %ju bytes", file_bytes));
  in_.read(reinterpret_cast<char*>(&n), sizeof(n));
  if (n > file_bytes - sizeof(n) || n > kMaxHeaderBytes)
    fail_input(path, "header length",
               strprintf("at most %ju (the bytes after it, and at most 100 MiB)", std::min<uintmax_t>(file_bytes - sizeof(n), kMaxHeaderBytes)),
               std::to_string(n));
  std::string text(n, '\0');
  in_.read(text.data(), static_cast<std::streamsize>(n));
  if (!in_) fail_input(path, "header", strprintf("%ju bytes of JSON", n), "a read error");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    fail_input(path, "header", "UTF-8 JSON", strprintf("a parse error at byte %zu", e.byte));
  } catch (const json::exception& e) {  // a number past double's range throws out_of_range
    fail_input(path, "header", "UTF-8 JSON with its numbers in range", e.what());
  }
  if (!header.is_object()) fail_input(path, "header", "a JSON object", header.type_name());
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") metadata_ = parse_metadata(path, value);
    else entries_[name] = parse_entry(path, name, value);
  }
  buffer_start_ = sizeof(n) + n;
  check_tiling(path, entries_, file_bytes - buffer_start_);
}

std::vector<float> SafetensorsReader::read(const std::string& name, const std::vector<size_t>& shape) {
  const auto it = entries_.find(name);
  if (it == entries_.end()) fail_input(path_, "tensor \"" + name + "\"", "present, of shape " + shape_string(shape), "no such tensor");
  const SafetensorsEntry& e = it->second;
  if (e.shape != shape) fail_input(path_, tensor_field(name, "shape"), shape_string(shape), shape_string(e.shape));
  if (e.dtype != "F32" && e.dtype != "F16" && e.dtype != "BF16")
    fail_input(path_, tensor_field(name, "dtype"), "F32, F16 or BF16", e.dtype);
  std::vector<char> bytes(e.end - e.begin);
  in_.seekg(static_cast<std::streamoff>(buffer_start_ + e.begin));
  in_.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!in_) fail_input(path_, tensor_field(name, "data"), strprintf("%zu bytes", bytes.size()), "a shorter file");
  std::vector<float> out(e.numel());  // shape's product
  if (e.dtype == "F32") {
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());  // an empty vector's data() may be null
    return out;
  }
  for (size_t i = 0; i < out.size(); i++) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    out[i] = e.dtype == "F16" ? half_to_float(h) : std::bit_cast<float>(uint32_t(h) << 16);
  }
  return out;
}

}  // namespace eth
