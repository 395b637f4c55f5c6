// safetensors (github.com/huggingface/safetensors, the format Hugging Face models are shared in):
// named tensors, no knowledge of what they mean (lib/io/hf_gpt2.hpp maps GPT-2's names).
//
//   u64 N (little-endian)             the header's length in bytes
//   N bytes of UTF-8 JSON             an object: per tensor
//                                       "NAME": {"dtype": "F32", "shape": [d0, d1, ...],
//                                                "data_offsets": [begin, end]}
//                                     plus an optional "__metadata__": {string: string}; the
//                                     writer pads it with spaces so that 8 + N is a multiple of 8
//   the byte buffer                   each tensor's row-major little-endian elements at
//                                     [begin, end) of it; the tensors cover it exactly: in
//                                     offset order, no overlap, no hole, ending at the file's end
//
// The reader checks all of that (docs/formats.md, "safetensors") before it reads any element,
// and each violation is one InputError naming the file, the tensor and what was expected.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace eth {

// One tensor of a file as its header describes it.
struct SafetensorsEntry {
  std::string dtype;            // one of the specification's: "F32", "F16", "BF16", "I64", ...
  std::vector<size_t> shape;    // (d0, d1, ...); empty for a scalar
  size_t begin = 0, end = 0;    // bytes, within the byte buffer after the header
  size_t numel() const;
};

// An fp32 tensor to write: `data` holds the product of `shape` floats, row-major.
struct SafetensorsTensor {
  std::string name;
  std::vector<size_t> shape;
  const float* data = nullptr;
};

// The element types the writer stores fp32 values as: F32 exactly, BF16 rounded to nearest even
// (kernels/cpu/bf16.hpp).
enum class SafetensorsDtype { f32, bf16 };
const char* dtype_name(SafetensorsDtype dtype);  // "F32", "BF16"
size_t dtype_size(SafetensorsDtype dtype);       // bytes per element

// Writes the tensors as `dtype`, in the order given (their data_offsets ascend in that order),
// with `metadata` as "__metadata__". An InputError naming `path` when it cannot be written.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       SafetensorsDtype dtype = SafetensorsDtype::f32);

class SafetensorsReader {
 public:
  // Opens `path` and checks its header against the file (see above): an InputError otherwise.
  explicit SafetensorsReader(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }

  // The tensor `name` as floats (product of `shape` of them), converted exactly from F32, F16 or
  // BF16. An InputError naming the file and tensor when it is missing, has another shape or
  // another dtype, or the file is shorter than its header said.
  std::vector<float> read(const std::string& name, const std::vector<size_t>& shape);

 private:
  std::string path_;
  std::ifstream in_;
  size_t buffer_start_ = 0;  // 8 + N: where the byte buffer begins in the file
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// "[d0, d1]": a shape as the messages write it.
std::string shape_string(const std::vector<size_t>& shape);

}  // namespace eth
