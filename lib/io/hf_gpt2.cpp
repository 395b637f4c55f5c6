#include "lib/io/hf_gpt2.hpp"

#include <cstring>
#include <map>
#include <set>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {
namespace {

const std::string kPrefix = "transformer.";

// One transformers tensor and the ETH tensor it is.
struct Mapping {
  std::string hf;            // without the prefix: "h.0.attn.c_attn.weight"
  const ParamTensor* eth;    // its ETH tensor in the one-stage layout
  bool transposed;           // Conv1D weight (in, out) of ETH's (out, in)
  std::vector<size_t> shape; // transformers' shape
};

std::vector<Mapping> mappings(const ModelConfig& model, const ParamLayout& layout) {
  std::map<std::string, const ParamTensor*> eth;
  for (const ParamTensor& t : layout.tensors()) eth[t.name] = &t;
  struct Kind {
    const char *hf, *eth;
    bool transposed;
  };
  static const Kind kLayer[] = {
      {"ln_1.weight", "ln1_w", false},        {"ln_1.bias", "ln1_b", false},
      {"attn.c_attn.weight", "qkv_w", true},  {"attn.c_attn.bias", "qkv_b", false},
      {"attn.c_proj.weight", "attproj_w", true}, {"attn.c_proj.bias", "attproj_b", false},
      {"ln_2.weight", "ln2_w", false},        {"ln_2.bias", "ln2_b", false},
      {"mlp.c_fc.weight", "fc_w", true},      {"mlp.c_fc.bias", "fc_b", false},
      {"mlp.c_proj.weight", "fcproj_w", true}, {"mlp.c_proj.bias", "fcproj_b", false}};
  const auto make = [&](std::string hf, const std::string& eth_name, bool transposed) {
    const ParamTensor* t = eth.at(eth_name);
    std::vector<size_t> shape = t->shape;
    if (transposed) shape = {shape[1], shape[0]};
    return Mapping{std::move(hf), t, transposed, std::move(shape)};
  };
  std::vector<Mapping> out;
  out.push_back(make("wte.weight", "wte", false));
  out.back().shape[0] = static_cast<size_t>(model.vocab_size);  // (V, C): the padded rows dropped
  out.push_back(make("wpe.weight", "wpe", false));
  for (int l = 0; l < model.num_layers; l++)
    for (const Kind& k : kLayer)
      out.push_back(make("h." + std::to_string(l) + "." + k.hf, "layer" + std::to_string(l) + "." + k.eth, k.transposed));
  out.push_back(make("ln_f.weight", "lnf_w", false));
  out.push_back(make("ln_f.bias", "lnf_b", false));
  return out;
}

// dst (cols, rows) = src (rows, cols) transposed.
void transpose(const float* src, size_t rows, size_t cols, float* dst) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<SafetensorsTensor> hf_gpt2_tensors(const ModelConfig& model, const std::vector<float>& whole,
                                               std::vector<std::vector<float>>& storage) {
  const ParamLayout layout(model, {0, model.num_layers});
  std::vector<SafetensorsTensor> out;
  for (const Mapping& m : mappings(model, layout)) {
    const float* data = whole.data() + m.eth->offset;
    if (m.transposed) {
      storage.emplace_back(m.eth->size);
      transpose(data, m.eth->shape[0], m.eth->shape[1], storage.back().data());
      data = storage.back().data();
    }
    out.push_back({kPrefix + m.hf, m.shape, data});
  }
  return out;
}

std::vector<float> read_hf_gpt2_tensors(SafetensorsReader& file, const ModelConfig& model) {
  const ParamLayout layout(model, {0, model.num_layers});
  const std::vector<Mapping> maps = mappings(model, layout);
  std::string prefix = kPrefix;  // GPT2LMHeadModel's names; GPT2Model's have none
  if (!file.has(kPrefix + "wte.weight")) {
    if (!file.has("wte.weight"))
      fail_input(file.path(), "tensor \"transformer.wte.weight\"", "present (or \"wte.weight\", as GPT2Model saves it)", "neither");
    prefix.clear();
  }
  std::vector<float> whole(layout.size(), 0.0f);  // (P); wte's padded rows stay zero
  std::set<std::string> known;
  for (const Mapping& m : maps) {
    const std::vector<float> values = file.read(prefix + m.hf, m.shape);
    float* dst = whole.data() + m.eth->offset;
    if (m.transposed) transpose(values.data(), m.shape[0], m.shape[1], dst);
    else std::memcpy(dst, values.data(), values.size() * sizeof(float));
    known.insert(prefix + m.hf);
  }
  const std::string head = "lm_head.weight";
  if (file.has(head)) {
    const size_t V = static_cast<size_t>(model.vocab_size), C = static_cast<size_t>(model.channels);
    const std::vector<float> values = file.read(head, {V, C});
    const float* wte = whole.data() + layout.wte();  // (V, C) of it
    size_t differ = 0;  // the first element whose bits differ
    while (differ < values.size() && std::memcmp(&values[differ], &wte[differ], sizeof(float)) == 0) differ++;
    if (differ != values.size())
      fail_input(file.path(), "tensor \"" + head + "\"",
                 "the tied embedding, equal to \"" + prefix + "wte.weight\"",
                 strprintf("a different tensor (row %zu, column %zu first differs)", differ / C, differ % C));
    known.insert(head);
  }
  for (const auto& [name, entry] : file.entries())
    if (!known.count(name) && !ends_with(name, ".attn.bias") && !ends_with(name, ".attn.masked_bias"))
      fail_input(file.path(), "tensor \"" + name + "\"",
                 strprintf("only GPT-2's tensors (GPT2Model or GPT2LMHeadModel, %d layers)", model.num_layers),
                 "a tensor GPT-2 does not have");
  return whole;
}

}  // namespace eth
