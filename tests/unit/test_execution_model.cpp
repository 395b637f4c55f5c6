// The execution model (kernels/device.hpp) on the CPU: the asynchronous mode computes exactly
// what the synchronous one does when its events are kept, copy_to_device takes its bytes at the
// call, and events behave. Which GPU a rank takes: test_gpu_binding.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

TEST(ExecutionModel, CopyToDeviceTakesTheBytesAtTheCall) {
  auto backend = kernels::make_async_cpu_backend();
  kernels::DeviceBuffer<float> d(*backend, 1000);
  std::vector<float> host(1000, 1.5f), back(1000, 0.f);
  backend->copy_to_device(d.data(), host.data(), host.size() * sizeof(float));
  std::fill(host.begin(), host.end(), -7.f);  // the caller reuses its buffer at once
  backend->copy_to_host(back.data(), d.data(), back.size() * sizeof(float));
  for (float v : back) ASSERT_EQ(v, 1.5f);
}

// Timed events measure the stream, not the host: in asynchronous mode the host has long
// returned from stall() when the worker runs it, and the events still span it. (A lower bound
// only: a stall never ends early, however busy the machine.)
TEST(ExecutionModel, TimedEventsSpanTheStreamsWork) {
  for (auto make : {kernels::make_cpu_backend, kernels::make_async_cpu_backend}) {
    auto backend = make(0);
    kernels::Event start = kernels::Event::timed(*backend), end = kernels::Event::timed(*backend);
    start.record();
    backend->stall(30.0);
    end.record();
    EXPECT_GE(end.ms_since(start), 30.0) << backend->name();
    EXPECT_TRUE(end.done()) << backend->name();
  }
}

TEST(ExecutionModel, EventsMarkQueuedWork) {
  for (auto make : {kernels::make_cpu_backend, kernels::make_async_cpu_backend}) {
    auto backend = make(0);
    kernels::Event fresh(*backend);
    EXPECT_TRUE(fresh.done()) << backend->name();
    const size_t n = 1 << 20;
    kernels::DeviceBuffer<float> x(*backend, n), y(*backend, n);
    std::vector<float> host(n);
    for (size_t i = 0; i < n; i++) host[i] = 0.25f + static_cast<float>(i % 97) * 1e-3f;
    backend->copy_to_device(x.data(), host.data(), n * sizeof(float));
    for (int k = 0; k < 20; k++) backend->gelu_forward(y.data(), x.data(), n);
    kernels::Event after(*backend);
    after.record();
    after.wait();
    EXPECT_TRUE(after.done()) << backend->name();
    // Host memory on both modes: once the event is done the host may read the result directly.
    float expected = 0.f;
    kernels::make_cpu_backend()->gelu_forward(&expected, &host[n - 1], 1);
    EXPECT_EQ(y.data()[n - 1], expected) << backend->name();
  }
}

// A stage's forward, loss and backward over three micro-batches in two slots: the asynchronous
// mode gives bit-for-bit the synchronous mode's loss and gradients (same ops, same order).
TEST(ExecutionModel, AsyncStageEqualsSyncStage) {
  const ModelConfig config = load_model_config("inputs/models/tiny-4l.yaml");
  const int B = 2, T = 8, slots = 2;
  const size_t BT = static_cast<size_t>(B) * T;
  std::vector<int32_t> tokens(3 * BT), targets(3 * BT);
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = static_cast<int32_t>((i * 37 + 11) % config.vocab_size);
    targets[i] = static_cast<int32_t>((i * 53 + 5) % config.vocab_size);
  }
  struct Result {
    double loss;
    std::vector<float> grads;
  };
  auto run = [&](kernels::Backend& backend) {
    Stage stage(config, {0, config.num_layers}, B, T, slots, backend);
    std::vector<float> params(stage.layout().size());
    init_parameters(config, stage.layout(), 7, params.data());
    backend.copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
    stage.params_written();
    for (int mb = 0; mb < 3; mb++) {
      // The host's token buffer changes right after each call: uploads must not depend on it.
      std::vector<int32_t> in(tokens.begin() + mb * BT, tokens.begin() + (mb + 1) * BT);
      std::vector<int32_t> out(targets.begin() + mb * BT, targets.begin() + (mb + 1) * BT);
      stage.forward(mb % slots, in.data(), nullptr);
      std::fill(in.begin(), in.end(), 0);
      stage.loss(mb % slots, out.data(), 1.0f);
      std::fill(out.begin(), out.end(), 0);
      stage.backward(mb % slots, nullptr);
    }
    Result r{stage.take_loss_sum(), std::vector<float>(stage.layout().size())};
    backend.copy_to_host(r.grads.data(), stage.grads(), r.grads.size() * sizeof(float));
    return r;
  };
  auto sync = kernels::make_cpu_backend();
  auto async = kernels::make_async_cpu_backend();
  const Result a = run(*sync), b = run(*async);
  EXPECT_GT(a.loss, 0.0);
  EXPECT_EQ(a.loss, b.loss);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  size_t differing = 0;
  for (size_t i = 0; i < a.grads.size(); i++) differing += std::memcmp(&a.grads[i], &b.grads[i], sizeof(float)) != 0;
  EXPECT_EQ(differing, 0u) << "of " << a.grads.size() << " gradients";
}

}  // namespace
}  // namespace eth::test
