// bench_ordered_gemm: the CPU backend's ordered GEMM (kernels/cpu/ordered_gemm.hpp) against
// OpenBLAS cblas_sgemm on the products of a GPT training step, in the same process.
//
// For one model and B x T rows, every matmul of a layer and the tied LM head in the three
// orientations the step runs (forward: out = inp @ W^T; dinp = dout @ W; dW += dout^T @ inp).
// Each round times `calls` calls of ours then of sgemm on the same buffers, alternating which goes
// first, so that both see the same load; prints and writes each shape's median GFLOP/s of both
// and their ratio, and the whole step's GEMM time of both (a layer's products times num_layers,
// plus the head's), the figure that decides what the order costs.
#include <boost/program_options.hpp>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_stamp.hpp"
#include "kernels/cpu/ordered_gemm.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/model/model_config.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;

namespace {

struct Options {
  std::string model_path = "inputs/models/gpt2-124m.yaml";
  int B = 4, T = 256;
  int rounds = 5, calls = 2;
  std::string json_path;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
}

// One product of the step: C (M, N) [+]= op(A) (M, K) @ op(B) (K, N), row-major, packed;
// `per_step`: how often a step runs it (num_layers for a layer's, 1 for the head's).
struct Product {
  std::string name;
  bool trans_a, trans_b, accumulate;
  int M, N, K, per_step;
  std::vector<float> a, b, c;
  double flops() const { return 2.0 * M * N * K; }
  int lda() const { return trans_a ? M : K; }
  int ldb() const { return trans_b ? K : N; }
  void ours() {
    eth::kernels::cpu::ordered_gemm(trans_a, trans_b, M, N, K, a.data(), lda(), b.data(), ldb(), accumulate, c.data(), N);
  }
  void openblas() {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f,
                a.data(), lda(), b.data(), ldb(), accumulate ? 1.0f : 0.0f, c.data(), N);
  }
};

std::vector<float> random_values(size_t n, uint64_t stream) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<float>(eth::uniform_at(stream, i) - 0.5);
  return v;
}

// A matmul of inp (BT, in) by W (out, in) in its three orientations.
void add_matmul(std::vector<Product>& products, const std::string& name, int BT, int in, int out, int per_step) {
  const auto add = [&](const std::string& what, bool ta, bool tb, bool acc, int M, int N, int K) {
    const uint64_t stream = products.size() * 3;
    products.push_back({name + " " + what, ta, tb, acc, M, N, K, per_step, random_values(size_t(M) * K, stream),
                        random_values(size_t(K) * N, stream + 1), random_values(size_t(M) * N, stream + 2)});
  };
  add("forward", false, true, false, BT, out, in);  // out (BT, out) = inp (BT, in) @ W^T
  add("dinp", false, false, false, BT, in, out);    // dinp (BT, in) = dout (BT, out) @ W (out, in)
  add("dW", true, false, true, out, in, BT);        // dW (out, in) += dout^T @ inp
}

json run(const Options& o) {
  const eth::ModelConfig m = eth::load_model_config(o.model_path);
  const int BT = o.B * o.T, C = m.channels;
  std::vector<Product> products;
  add_matmul(products, "qkv", BT, C, 3 * C, m.num_layers);
  add_matmul(products, "attproj", BT, C, C, m.num_layers);
  add_matmul(products, "fc", BT, C, 4 * C, m.num_layers);
  add_matmul(products, "fcproj", BT, 4 * C, C, m.num_layers);
  add_matmul(products, "head", BT, C, m.padded_vocab_size, 1);
  for (Product& p : products) p.ours(), p.openblas();  // first touch, packing buffers

  json rows = json::array();
  double ours_step_ms = 0, openblas_step_ms = 0;
  for (Product& p : products) {
    std::vector<double> ours_ms, openblas_ms;
    for (int r = 0; r < o.rounds; r++) {
      const auto time = [&](auto&& fn) {
        const double start = now_ms();
        for (int i = 0; i < o.calls; i++) fn();
        return (now_ms() - start) / o.calls;
      };
      const auto ours = [&] { p.ours(); };
      const auto openblas = [&] { p.openblas(); };
      if (r % 2 == 0) {
        ours_ms.push_back(time(ours));
        openblas_ms.push_back(time(openblas));
      } else {
        openblas_ms.push_back(time(openblas));
        ours_ms.push_back(time(ours));
      }
    }
    const double ours = median(ours_ms), openblas = median(openblas_ms);
    ours_step_ms += ours * p.per_step;
    openblas_step_ms += openblas * p.per_step;
    rows.push_back({{"product", p.name}, {"M", p.M}, {"N", p.N}, {"K", p.K},
                    {"ours_gflops", p.flops() / ours / 1e6}, {"openblas_gflops", p.flops() / openblas / 1e6},
                    {"ours_over_openblas_time", ours / openblas}, {"ours_ms", ours_ms}, {"openblas_ms", openblas_ms}});
    std::printf("%-16s M %6d N %6d K %6d  ours %6.1f GFLOP/s  OpenBLAS %6.1f GFLOP/s  time ratio %.3f\n",
                p.name.c_str(), p.M, p.N, p.K, p.flops() / ours / 1e6, p.flops() / openblas / 1e6, ours / openblas);
  }
  std::printf("a step's products (%d layers + head): ours %.1f ms, OpenBLAS %.1f ms, ratio %.3f\n", m.num_layers,
              ours_step_ms, openblas_step_ms, ours_step_ms / openblas_step_ms);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  return {{"benchmark", "ordered_gemm"}, {"model", o.model_path}, {"B", o.B}, {"T", o.T}, {"rounds", o.rounds},
          {"calls_per_round", o.calls}, {"threads", omp_get_max_threads()},
          {"openblas_coretype", coretype ? coretype : ""}, {"openblas_config", openblas_get_config()},
          {"products", rows}, {"step_ms", {{"ours", ours_step_ms}, {"openblas", openblas_step_ms}}},
          {"step_ratio", ours_step_ms / openblas_step_ms}};
}

}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  try {
    Options o;
    po::options_description desc("bench_ordered_gemm: the ordered GEMM against OpenBLAS sgemm on a step's products");
    desc.add_options()("help,h", "print this help")
        ("model", po::value(&o.model_path)->default_value(o.model_path), "model YAML")
        ("batch", po::value(&o.B)->default_value(o.B), "samples, B")
        ("seq-len", po::value(&o.T)->default_value(o.T), "tokens per sample, T")
        ("rounds", po::value(&o.rounds)->default_value(o.rounds), "timed rounds per product (medians)")
        ("calls", po::value(&o.calls)->default_value(o.calls), "calls per round")
        ("json", po::value(&o.json_path), "also write the JSON here");
    if (!eth::parse_command_line(argc, argv, desc)) return 0;
    if (o.B <= 0 || o.T <= 0)
      eth::fail_input("--batch/--seq-len", "value", "positive counts", std::to_string(o.B) + "/" + std::to_string(o.T));
    if (o.rounds <= 0 || o.calls <= 0)
      eth::fail_input("--rounds/--calls", "value", "positive counts",
                      std::to_string(o.rounds) + "/" + std::to_string(o.calls));
    const json result = run(o);
    if (!o.json_path.empty()) eth::bench::write_stamped(o.json_path, result, load_at_start);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ordered_gemm: %s\n", e.what());
    return 1;
  }
}
