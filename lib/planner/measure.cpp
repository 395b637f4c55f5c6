#include "lib/planner/measure.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "kernels/device_buffer.hpp"
#include "lib/base/random.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace {

// Times runs that every rank of `ranks` makes at once, back to back. Backend work is only
// enqueued (kernels/device.hpp): a loop is timed from an idle device until its work has completed.
class LockstepTimer {
 public:
  LockstepTimer(MPI_Comm ranks, kernels::Device& device) : ranks_(ranks), device_(device) {}

  // ms per run of `run`: every rank starts `repetitions` runs back to back after a barrier, and
  // the loop takes as long as its slowest rank. Where ranks share cores (several per core, or the
  // ranks of a GPU-less node) the scheduler may favour some for a while, and a lone run's own
  // time then ranges over 2-3x (124 to 318 ms for the same head forward, 8 ranks on 2 cores); the
  // loop's end is when all the ranks' work is done, which sharing does not change. One warm-up
  // run first: page faults, thread pool start. Collective.
  double sustained_ms(int repetitions, const std::function<void()>& run) {
    run();
    device_.synchronize();
    MPI_CHECK(MPI_Barrier(ranks_));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repetitions; i++) run();
    device_.synchronize();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, ranks_));
    return ms / repetitions;
  }

 private:
  MPI_Comm ranks_;
  kernels::Device& device_;
};

// Forward and backward ms of a one-layer stage at `layer` of the 3-layer model.
ComputeMs time_stage(kernels::Backend& backend, LockstepTimer& timer, const ModelConfig& model, int layer, int B, int T,
                     int reps) {
  // Real values throughout, as in training: zero weights or constant activations would send
  // exp and tanh down their fast paths for tiny arguments and time too little.
  Stage stage(model, {layer, layer + 1}, B, T, 1, backend);
  std::vector<float> params(stage.layout().size());
  init_parameters(model, stage.layout(), 1234, params.data());
  backend.copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  const size_t BT = static_cast<size_t>(B) * T;
  std::vector<int32_t> tokens(BT);
  for (size_t i = 0; i < BT; i++) tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(model.vocab_size));
  std::vector<float> host(BT * model.channels);
  for (size_t i = 0; i < host.size(); i++) host[i] = static_cast<float>(2 * uniform_at(7, i) - 1);  // U(-1, 1)
  kernels::DeviceBuffer<float> input(backend, host.size()), dout(backend, host.size());
  backend.copy_to_device(input.data(), host.data(), host.size() * sizeof(float));
  backend.copy_to_device(dout.data(), host.data(), host.size() * sizeof(float));
  const bool first = layer == 0, last = layer == model.num_layers - 1;
  auto forward = [&] {
    stage.forward(0, first ? tokens.data() : nullptr, first ? nullptr : input.data());
    if (last) stage.loss(0, tokens.data(), 1.0f);
  };
  // Backward needs a forward before it (the last stage's dlogits are consumed): it is timed as
  // forward + backward less forward.
  ComputeMs c;
  c.forward = timer.sustained_ms(reps, forward);
  c.backward = std::max(0.0, timer.sustained_ms(reps, [&] {
    forward();
    stage.backward(0, dout.data());
  }) - c.forward);
  return c;
}

}  // namespace

Profile measure_profile(kernels::Backend& backend, const kernels::PrecisionPath& path, const ModelConfig& model,
                        const std::string& device_type, const MeasureOptions& options, MPI_Comm ranks) {
  LockstepTimer timer(ranks, backend);
  ModelConfig three = model;
  three.num_layers = 3;
  // The roofline supplies activation and parameter bytes (exact counts); times are measured.
  Profile p = roofline_profile({.name = device_type, .memory_gb = 1, .peak_tflops_fp32 = 1, .memory_bandwidth_gbs = 1}, model, options.seq_len, options.micro_batches, "eth_profile",
                               {kernels::Precision::fp32, kernels::Arithmetic::fp32, 1});
  p.precision = path.precision;
  p.arithmetic = backend.arithmetic();
  p.source = "measured";
  p.estimate = false;
  for (ProfileEntry& e : p.entries) {
    const ComputeMs a = time_stage(backend, timer, three, 0, e.micro_batch, options.seq_len, options.repetitions);
    const ComputeMs m = time_stage(backend, timer, three, 1, e.micro_batch, options.seq_len, options.repetitions);
    const ComputeMs z = time_stage(backend, timer, three, 2, e.micro_batch, options.seq_len, options.repetitions);
    e.layer.forward_ms = m.forward;
    e.layer.backward_ms = m.backward;
    e.embedding.forward_ms = std::max(0.0, a.forward - m.forward);
    e.embedding.backward_ms = std::max(0.0, a.backward - m.backward);
    e.head.forward_ms = std::max(0.0, z.forward - m.forward);
    e.head.backward_ms = std::max(0.0, z.backward - m.backward);
  }
  // The per-parameter passes of every step: gradient zeroing, the norm, AdamW, over buffers too
  // large for the caches (as a stage's are), so that memory traffic is what is timed.
  const size_t n = size_t{1} << 23;
  kernels::DeviceBuffer<float> params(backend, n), grads(backend, n), m1(backend, n), m2(backend, n);
  for (auto* b : {&params, &grads, &m1, &m2}) backend.fill_zero(b->data(), n);
  // The 16-bit paths' AdamW also writes the parameters' copies.
  const bool copies = backend.storage() != kernels::ElementType::f32;
  kernels::DeviceBuffer<uint16_t> param_copies;
  if (copies) param_copies = kernels::DeviceBuffer<uint16_t>(backend, n);
  std::vector<kernels::AdamWSegment> table;
  kernels::append_adamw_segments(table, 0, 0, n, true);
  kernels::DeviceBuffer<kernels::AdamWSegment> segments(backend, table.size());
  backend.copy_to_device(segments.data(), table.data(), table.size() * sizeof(kernels::AdamWSegment));
  const kernels::AdamWParams hp{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  const double ms = timer.sustained_ms(options.repetitions, [&] {
    backend.fill_zero(grads.data(), n);
    backend.sum_of_squares(grads.data(), n);
    backend.adamw_update(params.data(), kernels::Tensor(copies ? param_copies.data() : nullptr, backend.storage()),
                         grads.data(), m1.data(), m2.data(), segments.data(),
                         segments.size(), hp);
  });
  p.optimizer_ms_per_mparam = ms * 1e6 / double(n);
  return p;
}

}  // namespace eth::planner
