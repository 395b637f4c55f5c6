#include "lib/io/llmc_model.hpp"

#include <cstdint>
#include <fstream>
#include <map>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/whole_model.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {
namespace {

constexpr int32_t kMagic = 20240326;
constexpr int32_t kVersion = 3;  // parameters with the padded vocabulary
constexpr size_t kHeaderInts = 256;

// The tensors of the one-stage layout in llm.c's file order: wte, wpe, then each of a layer's
// twelve tensors (in ETH's per-layer order, which is llm.c's order of kinds) for every layer in
// turn, then lnf_w, lnf_b.
std::vector<const ParamTensor*> llmc_order(const ParamLayout& whole, int num_layers) {
  std::map<std::string, const ParamTensor*> by_name;
  for (const ParamTensor& t : whole.tensors()) by_name[t.name] = &t;
  std::vector<const ParamTensor*> order = {by_name.at("wte"), by_name.at("wpe")};
  const std::string first = "layer0.";
  for (const ParamTensor& kind : whole.tensors()) {
    if (kind.name.rfind(first, 0) != 0) continue;
    for (int l = 0; l < num_layers; l++)
      order.push_back(by_name.at("layer" + std::to_string(l) + "." + kind.name.substr(first.size())));
  }
  order.push_back(by_name.at("lnf_w"));
  order.push_back(by_name.at("lnf_b"));
  return order;
}

std::vector<std::pair<const char*, int32_t>> header_fields(const ModelConfig& m) {
  return {{"magic", kMagic},       {"version", kVersion},       {"max_seq_len", m.max_seq_len},
          {"vocab_size", m.vocab_size}, {"num_layers", m.num_layers}, {"num_heads", m.num_heads},
          {"channels", m.channels},     {"padded_vocab_size", m.padded_vocab_size}};
}

}  // namespace

void write_llmc_model(const std::string& path, const ModelConfig& model, const std::vector<float>& whole) {
  const ParamLayout layout(model, {0, model.num_layers});
  std::vector<int32_t> header(kHeaderInts, 0);
  const auto fields = header_fields(model);
  for (size_t i = 0; i < fields.size(); i++) header[i] = fields[i].second;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail_input(path, "--out", "a writable path", "one that cannot be opened");
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size() * sizeof(int32_t)));
  for (const ParamTensor* t : llmc_order(layout, model.num_layers))
    out.write(reinterpret_cast<const char*>(whole.data() + t->offset), static_cast<std::streamsize>(t->size * sizeof(float)));
  if (!out.flush()) fail_input(path, "--out", "a file that can be written in full", "a write error");
}

std::vector<float> read_llmc_model(const std::string& path, const ModelConfig& model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "llm.c model", "a readable llm.c model file", "a missing or unreadable file");
  std::vector<int32_t> header(kHeaderInts, 0);
  in.read(reinterpret_cast<char*>(header.data()), static_cast<std::streamsize>(header.size() * sizeof(int32_t)));
  if (!in) fail_input(path, "header", "256 int32 values", "a shorter file");
  const auto fields = header_fields(model);
  for (size_t i = 0; i < fields.size(); i++)
    if (header[i] != fields[i].second)
      fail_input(path, fields[i].first,
                 strprintf("%d%s", fields[i].second, i < 2 ? "" : (", as in the model YAML (" + model.name + ")").c_str()),
                 std::to_string(header[i]));
  const ParamLayout layout(model, {0, model.num_layers});
  std::vector<float> whole(layout.size());
  size_t read = 0;
  for (const ParamTensor* t : llmc_order(layout, model.num_layers)) {
    in.read(reinterpret_cast<char*>(whole.data() + t->offset), static_cast<std::streamsize>(t->size * sizeof(float)));
    if (!in) fail_input(path, t->name, strprintf("%zu parameters in all", layout.size()), strprintf("a file that ends after %zu", read + static_cast<size_t>(in.gcount()) / sizeof(float)));
    read += t->size;
  }
  if (in.peek() != std::ifstream::traits_type::eof())
    fail_input(path, "parameters", strprintf("exactly %zu parameters", layout.size()), "more data after them");
  return whole;
}

void import_llmc_model(const std::string& llmc_path, const ModelConfig& model, const std::string& checkpoint_path) {
  write_step0_checkpoint(checkpoint_path, model, read_llmc_model(llmc_path, model));
}

void export_llmc_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& llmc_path) {
  const std::vector<float> whole = read_whole_params(checkpoint_path, model);
  if (is_rank_zero()) write_llmc_model(llmc_path, model, whole);  // one writer of the one file
}

}  // namespace eth
