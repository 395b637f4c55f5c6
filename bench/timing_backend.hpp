// A Backend that forwards every call to another one and adds its wall time to a per-operation
// total: the profile of a training step, op by op, with no change to lib/ or kernels/. Matmuls
// are keyed by shape as well, so the LM head stands apart from the layer GEMMs.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>

#include "kernels/forwarding_backend.hpp"

namespace eth::bench {

// The names kernels/backend_ops.hpp's entries use.
using kernels::AdamWParams;
using kernels::AdamWSegment;
using kernels::AttentionHeads;
using kernels::bf16;
using kernels::ConstTensor;
using kernels::ElementType;
using kernels::Tensor;

struct OpTotal {
  double ms = 0.0;
  long calls = 0;
};

class TimingBackend : public kernels::ForwardingBackend {
 public:
  explicit TimingBackend(kernels::Backend& inner) : ForwardingBackend(inner) {}

  const std::map<std::string, OpTotal>& totals() const { return totals_; }
  void reset() { totals_.clear(); }

  std::string name() const override { return inner_.name() + "+timing"; }

  // Memory, ordering and precision pass through untimed (kernels/forwarding_backend.hpp), except
  // the copies; the inner backend must be synchronous (the CPU one) for wall times per operation
  // to mean anything.
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_device_async(void* dst, const void* src, size_t bytes) override;
  void copy_to_host_async(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill_zero(Tensor x, size_t n) override;

  // Every operation of kernels/backend_ops.hpp's list, timed under its name (op_key).
#define ETH_TIMED_OP(ret, name, params, args) \
  ret name params override { return timed(op_key(#name, ETH_OP_ARGS args), [&] { return inner_.name args; }); }
  ETH_BACKEND_OPS(ETH_TIMED_OP)
  ETH_FUSED_BACKEND_OPS(ETH_TIMED_OP)
#undef ETH_TIMED_OP

 protected:
  // An operation's key: its name, and for a matmul its shape, "matmul_forward (768->3072)"
  // (every matmul op ends with N, C, OC), so that the LM head stands apart from the layers.
  template <typename... Args>
  static std::string op_key(const char* op, const Args&... args) {
    using Types = std::tuple<std::decay_t<Args>...>;
    constexpr size_t n = sizeof...(Args);
    if constexpr (n >= 3) {
      if constexpr (std::is_same_v<std::tuple_element_t<n - 2, Types>, int> &&
                    std::is_same_v<std::tuple_element_t<n - 1, Types>, int>) {
        const std::string name = op;
        if (name.rfind("matmul", 0) == 0) {
          const auto all = std::forward_as_tuple(args...);
          return name + " (" + std::to_string(std::get<n - 2>(all)) + "->" + std::to_string(std::get<n - 1>(all)) + ")";
        }
      }
    }
    return op;
  }
  // Runs f() and adds its wall time under `key`.
  template <typename Fn>
  std::invoke_result_t<Fn> timed(const std::string& key, Fn&& f) {
    const auto start = std::chrono::steady_clock::now();
    struct Record {  // adds the time on every way out, so f may return a value or void
      OpTotal& total;
      std::chrono::steady_clock::time_point start;
      ~Record() {
        total.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        total.calls++;
      }
    } record{totals_[key], start};
    return f();
  }

 private:
  std::map<std::string, OpTotal> totals_;
};

}  // namespace eth::bench
