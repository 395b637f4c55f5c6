// PipelineRuntime's state beyond a step (pipeline_runtime.hpp): the whole model gathered,
// checkpoints written and read, and the re-balancing hand-over from the runtime it replaces.
#include <algorithm>
#include <cassert>

#include "lib/runtime/fault_injection.hpp"
#include "lib/runtime/pipeline_runtime.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/shard_collectives.hpp"

namespace eth {
namespace {

const ParamTensor* find_tensor(const ParamLayout& layout, const std::string& name) {
  for (const ParamTensor& t : layout.tensors())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

void PipelineRuntime::gather_parameters(float* full) {
  gather_whole_model(whole_, owners_, ctx_.world_rank, [&](const ParamTensor& t, float* host) {
    backend_.copy_to_host(host, stage_.params() + find_tensor(stage_.layout(), t.name)->offset, t.size * sizeof(float));
  }, full);
}

// The three flat buffers a checkpoint holds, by group.
float* PipelineRuntime::state_buffer(CheckpointGroup group) {
  switch (group) {
    case CheckpointGroup::params: return stage_.params();
    case CheckpointGroup::adam_m: return optimizer_.first_moments();
    case CheckpointGroup::adam_v: return optimizer_.second_moments();
  }
  return nullptr;
}

std::vector<PipelineRuntime::GatheredMoments> PipelineRuntime::gather_sharded_moments() {
  std::vector<GatheredMoments> gathered(shards_.size());
  std::vector<std::vector<float>> mine(2 * shards_.size());
  std::vector<PendingShards> pending;
  for (size_t b = 0; b < shards_.size(); b++) {
    const BlockShard& s = shards_[b];
    if (!s.sharded) continue;
    std::vector<size_t> counts;
    for (int i = 0; i < s.owners; i++) counts.push_back(shard_span(s.slice.size, s.owners, i).size);
    const ProcessGroup& group = ctx_.block_groups[static_cast<size_t>(s.block)];
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      std::vector<float>& shard = mine[2 * b + (g == CheckpointGroup::adam_v)];
      std::vector<float>& all = g == CheckpointGroup::adam_m ? gathered[b].m : gathered[b].v;
      shard.resize(s.mine().size);
      optimizer_.for_kept(s.mine(), [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_host(shard.data() + at, state_buffer(g) + moment, n * sizeof(float));
      });
      if (s.index == 0) all.resize(s.slice.size);
      pending.push_back(PendingShards::gather_to_first(group, shard.data(), all.data(), counts));
    }
  }
  for (PendingShards& p : pending) p.wait("gather of sharded AdamW moments for a checkpoint");
  return gathered;
}

void PipelineRuntime::save_checkpoint(const std::string& path, const CheckpointHeader& header) {
  const std::vector<GatheredMoments> gathered = gather_sharded_moments();
  CheckpointWriter writer(path, model_, header, world_comm());
  std::vector<float> host;
  bool written = false;
  for (size_t i = 0; i < whole_.tensors().size(); i++) {
    if (owners_[i] != ctx_.world_rank) continue;
    const ParamTensor& t = whole_.tensors()[i];
    const size_t offset = find_tensor(stage_.layout(), t.name)->offset;
    host.resize(t.size);
    backend_.copy_to_host(host.data(), stage_.params() + offset, t.size * sizeof(float));
    writer.write(CheckpointGroup::params, t, host.data());
    // A moment comes from the device where this rank keeps all of the tensor's, else from the
    // sharded block's gathered moments (this rank, the tensor's writer, is their first owner).
    const auto block = std::find_if(shards_.begin(), shards_.end(), [&](const BlockShard& s) {
      return s.sharded && s.slice.offset <= offset && offset < s.slice.end();
    });
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      if (block != shards_.end()) {
        const GatheredMoments& all = gathered[static_cast<size_t>(block - shards_.begin())];
        const float* from = (g == CheckpointGroup::adam_m ? all.m : all.v).data() + (offset - block->slice.offset);
        writer.write(g, t, from);
        continue;
      }
      optimizer_.for_kept({offset, t.size}, [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_host(host.data() + at, state_buffer(g) + moment, n * sizeof(float));
      });
      writer.write(g, t, host.data());
    }
    if (!written) fault_point(FaultPhase::checkpoint, header.step - 1);  // between this rank's dataset writes
    written = true;
  }
  if (!written) fault_point(FaultPhase::checkpoint, header.step - 1);
  writer.finish();
}

StageState PipelineRuntime::release_state() {
  StageState state;
  state.params.resize(stage_.layout().size());
  state.first_moments.resize(optimizer_.moment_size());
  state.second_moments.resize(optimizer_.moment_size());
  backend_.copy_to_host(state.params.data(), stage_.params(), state.params.size() * sizeof(float));
  backend_.copy_to_host(state.first_moments.data(), optimizer_.first_moments(), state.first_moments.size() * sizeof(float));
  backend_.copy_to_host(state.second_moments.data(), optimizer_.second_moments(), state.second_moments.size() * sizeof(float));
  state.steps_taken = optimizer_.steps_taken();
  return state;
}

void PipelineRuntime::take_state(const StageState& state) {
  // Re-balancing keeps the stages, hence the blocks and shards.
  assert(state.params.size() == stage_.layout().size() && state.first_moments.size() == optimizer_.moment_size());
  backend_.copy_to_device(stage_.params(), state.params.data(), state.params.size() * sizeof(float));
  backend_.copy_to_device(optimizer_.first_moments(), state.first_moments.data(), state.first_moments.size() * sizeof(float));
  backend_.copy_to_device(optimizer_.second_moments(), state.second_moments.data(),
                          state.second_moments.size() * sizeof(float));
  optimizer_.set_steps_taken(state.steps_taken);
  stage_.params_written();
}

CheckpointHeader PipelineRuntime::load_checkpoint(const std::string& path) {
  CheckpointReader reader(path, model_);
  std::vector<float> host;
  for (const ParamTensor& t : stage_.layout().tensors()) {  // the tied head copy of wte reads "wte" too
    host.resize(t.size);
    reader.read(CheckpointGroup::params, t, host.data());
    backend_.copy_to_device(stage_.params() + t.offset, host.data(), t.size * sizeof(float));
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {  // the parts this rank keeps
      reader.read(g, t, host.data());
      optimizer_.for_kept({t.offset, t.size}, [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_device(state_buffer(g) + moment, host.data() + at, n * sizeof(float));
      });
    }
  }
  // AdamW's bias correction counts the updates made: the steps, less those an overflow skipped.
  const CheckpointHeader& header = reader.header();
  optimizer_.set_steps_taken(header.step - static_cast<int>(header.loss_scale ? header.loss_scale->skipped : 0));
  stage_.params_written();
  return reader.header();
}

}  // namespace eth
