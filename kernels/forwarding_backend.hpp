// A Backend that passes every call to another one, its device (ForwardingDevice) and its
// operations (each of kernels/backend_ops.hpp's list): the base of decorators that change a few
// operations and leave the rest (kernels/twin_backend.cpp, bench/timing_backend.hpp). Does
// not own the inner backend.
#pragma once

#include "kernels/backend.hpp"
#include "kernels/forwarding_device.hpp"

namespace eth::kernels {

class ForwardingBackend : public ForwardingDevice<Backend> {
 public:
  explicit ForwardingBackend(Backend& inner) : ForwardingDevice<Backend>(inner), inner_(inner) {}

  Precision precision() const override { return inner_.precision(); }
  std::string precision_path() const override { return inner_.precision_path(); }
  Arithmetic arithmetic() const override { return inner_.arithmetic(); }
  void reserve_workspace(const StageShape& shape) override { inner_.reserve_workspace(shape); }
  OpsDevice ops_device() const override { return inner_.ops_device(); }
  AttentionPath attention_path(int T) const override { return inner_.attention_path(T); }

#define ETH_FORWARD_OP(ret, name, params, args) \
  ret name params override { return inner_.name args; }
  ETH_BACKEND_OPS(ETH_FORWARD_OP)
  ETH_FUSED_BACKEND_OPS(ETH_FORWARD_OP)
#undef ETH_FORWARD_OP

 protected:
  Backend& inner_;
};

}  // namespace eth::kernels
