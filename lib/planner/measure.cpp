#include "lib/planner/measure.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "kernels/device_buffer.hpp"
#include "lib/stage.hpp"

namespace eth::planner {
namespace {

double median_ms(int repetitions, const std::function<void()>& run) {
  run();  // warm-up: page faults, thread pool start
  std::vector<double> ms;
  for (int i = 0; i < repetitions; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

// Forward and backward ms of a one-layer stage at `layer` of the 3-layer model.
ComputeMs time_stage(kernels::Backend& backend, const GptConfig& model, int layer, int B, int T, int reps) {
  Stage stage(model, {layer, layer + 1}, B, T, 1, backend);
  const size_t BT = static_cast<size_t>(B) * T;
  std::vector<int32_t> tokens(BT);
  for (size_t i = 0; i < BT; i++) tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(model.vocab_size));
  std::vector<float> host(BT * model.channels, 0.01f);
  kernels::DeviceBuffer<float> input(backend, host.size()), dout(backend, host.size());
  backend.copy_to_device(input.data(), host.data(), host.size() * sizeof(float));
  backend.copy_to_device(dout.data(), host.data(), host.size() * sizeof(float));
  const bool first = layer == 0, last = layer == model.num_layers - 1;
  auto forward = [&] {
    stage.forward(0, first ? tokens.data() : nullptr, first ? nullptr : input.data());
    if (last) stage.loss(0, tokens.data(), true);
  };
  ComputeMs c;
  c.forward = median_ms(reps, forward);
  // Backward needs the forward before it (the last stage's dlogits are consumed); time it alone.
  std::vector<double> ms;
  for (int i = 0; i <= reps; i++) {
    forward();
    const auto t0 = std::chrono::steady_clock::now();
    stage.backward(0, dout.data());
    if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
  c.backward = ms[ms.size() / 2];
  return c;
}

}  // namespace

Profile measure_profile(kernels::Backend& backend, const GptConfig& model, const std::string& device_type,
                        const MeasureOptions& options) {
  GptConfig three = model;
  three.num_layers = 3;
  // The roofline supplies activation and parameter bytes (exact counts); times are measured.
  Profile p = roofline_profile({device_type, 1, 1, 0, 0, 1}, model, options.seq_len, options.micro_batches, "eth_profile");
  p.source = "measured";
  p.estimate = false;
  for (ProfileEntry& e : p.entries) {
    const ComputeMs a = time_stage(backend, three, 0, e.micro_batch, options.seq_len, options.repetitions);
    const ComputeMs m = time_stage(backend, three, 1, e.micro_batch, options.seq_len, options.repetitions);
    const ComputeMs z = time_stage(backend, three, 2, e.micro_batch, options.seq_len, options.repetitions);
    e.layer.forward_ms = m.forward;
    e.layer.backward_ms = m.backward;
    e.embedding.forward_ms = std::max(0.0, a.forward - m.forward);
    e.embedding.backward_ms = std::max(0.0, a.backward - m.backward);
    e.head.forward_ms = std::max(0.0, z.forward - m.forward);
    e.head.backward_ms = std::max(0.0, z.backward - m.backward);
  }
  const size_t n = 1 << 20;
  kernels::DeviceBuffer<float> params(backend, n), grads(backend, n), m1(backend, n), m2(backend, n);
  for (auto* b : {&params, &grads, &m1, &m2}) backend.fill_zero(b->data(), n);
  const kernels::AdamWParams hp{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  p.optimizer_ms_per_mparam =
      median_ms(options.repetitions, [&] { backend.adamw_update(params.data(), grads.data(), m1.data(), m2.data(), n, hp); }) *
      1e6 / double(n);
  return p;
}

}  // namespace eth::planner
