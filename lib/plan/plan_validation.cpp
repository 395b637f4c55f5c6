#include "lib/plan/plan_validation.hpp"

#include <numeric>
#include <string>
#include <vector>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/grad_blocks.hpp"

namespace eth {
namespace {

std::string stage_path(size_t p, size_t s) { return strprintf("pipelines[%zu].stages[%zu]", p, s); }

// A split stage's share of a smaller last micro-batch of `last` samples (0: none): every rank
// at least one sample (a rank with none would have nothing to compute or send) and at most its
// full share (its buffers are sized for that).
void check_last_split(const std::string& file, const std::string& sp, const PlanStage& stage, int last) {
  if (last == 0) {
    if (!stage.last_split.empty())
      fail_input(file, sp + ".last_split", "nothing: the pipeline's last micro-batch is full", "a split");
    return;
  }
  if (stage.last_split.size() != stage.ranks.size())
    fail_input(file, sp + ".last_split", strprintf("%zu sample counts, one per rank", stage.ranks.size()),
               std::to_string(stage.last_split.size()));
  int sum = 0;
  for (size_t i = 0; i < stage.last_split.size(); i++) {
    if (stage.last_split[i] < 1 || stage.last_split[i] > stage.split[i])
      fail_input(file, strprintf("%s.last_split[%zu]", sp.c_str(), i),
                 strprintf("1 to split[%zu] = %d samples", i, stage.split[i]), std::to_string(stage.last_split[i]));
    sum += stage.last_split[i];
  }
  if (sum != last)
    fail_input(file, sp + ".last_split", strprintf("samples adding up to last_micro_batch %d", last), strprintf("a sum of %d", sum));
}

// Each entry of sharded_blocks names a block of derive_grad_blocks once, and one with owners to
// shard among. Call on a plan whose stages are valid (the blocks derive from them).
void check_sharded_blocks(const Plan& plan, int num_layers) {
  if (plan.sharded_blocks.empty()) return;
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, num_layers);
  std::vector<bool> named(blocks.size(), false);
  for (size_t i = 0; i < plan.sharded_blocks.size(); i++) {
    const int b = plan.sharded_blocks[i];
    const std::string field = strprintf("sharded_blocks[%zu]", i);
    if (b < 0 || b >= static_cast<int>(blocks.size()))
      fail_input(plan.source, field,
                 strprintf("a block index below %zu, the plan's gradient blocks in unit order (block 0 holds the embedding)",
                           blocks.size()),
                 std::to_string(b));
    const GradBlock& block = blocks[b];
    const std::string name = units_name(block.unit_begin, block.unit_end, num_layers);
    if (named[b]) fail_input(plan.source, field, "each block once", strprintf("block %d (%s) again", b, name.c_str()));
    if (block.owners.size() < 2)
      fail_input(plan.source, field, "a block of at least two owners to shard its optimizer state among",
                 strprintf("block %d (%s), held by rank %d alone", b, name.c_str(), block.owners.front()));
    named[b] = true;
  }
}
}  // namespace

namespace {

// One pass over a plan, in the order of the file: each check throws InputError naming plan.source
// and the field; the first broken invariant is the one reported.
class PlanCheck {
 public:
  PlanCheck(const Plan& plan, const Topology& topology, const ModelConfig& model)
      : plan_(plan), topology_(topology), model_(model), file_(plan.source), world_(topology.world_size()),
        seen_(static_cast<size_t>(world_)) {}

  void run() {
    if (plan_.pipelines.empty()) fail_input(file_, "pipelines", "at least one pipeline", "none");
    int samples = 0;
    for (size_t p = 0; p < plan_.pipelines.size(); p++) samples += pipeline(p);
    for (size_t i = 0; i < plan_.idle.size(); i++) place(plan_.idle[i], strprintf("idle[%zu]", i), "a rank in no stage");
    for (int r = 0; r < world_; r++)
      if (seen_[r].empty())
        fail_input(file_, "pipelines",
                   strprintf("every rank 0..%d of %s in one stage or idle", world_ - 1, topology_.source.c_str()),
                   strprintf("rank %d in none", r));
    if (samples != plan_.global_batch)
      fail_input(file_, "global_batch", strprintf("the pipelines' samples, sum of micro_batch x micro_batches = %d", samples),
                 std::to_string(plan_.global_batch));
    check_sharded_blocks(plan_, model_.num_layers);
    predicted_memory();
  }

 private:
  // Pipeline p's fields and stages; returns its samples per step.
  int pipeline(size_t p) {
    const PlanPipeline& pipe = plan_.pipelines[p];
    const std::string pp = strprintf("pipelines[%zu]", p);
    if (pipe.micro_batch < 1) fail_input(file_, pp + ".micro_batch", "at least 1", std::to_string(pipe.micro_batch));
    if (pipe.micro_batches < 1) fail_input(file_, pp + ".micro_batches", "at least 1", std::to_string(pipe.micro_batches));
    if (pipe.stages.empty()) fail_input(file_, pp + ".stages", "at least one stage", "none");
    if (pipe.last_micro_batch >= pipe.micro_batch)
      fail_input(file_, pp + ".last_micro_batch",
                 strprintf("fewer samples than micro_batch %d (0: the last is full)", pipe.micro_batch),
                 std::to_string(pipe.last_micro_batch));
    int next_layer = 0;
    for (size_t s = 0; s < pipe.stages.size(); s++) next_layer = stage(pipe, p, s, next_layer);
    if (next_layer != model_.num_layers)
      fail_input(file_, stage_path(p, pipe.stages.size() - 1) + ".layers",
                 strprintf("to end at layer %d, the model's num_layers", model_.num_layers), strprintf("end %d", next_layer));
    return pipe.samples();
  }

  // Stage s of pipeline p: its ranks, its layers (from `next_layer` on) and its split; returns
  // where the next stage's layers begin.
  int stage(const PlanPipeline& pipe, size_t p, size_t s, int next_layer) {
    const PlanStage& stage = pipe.stages[s];
    const std::string sp = stage_path(p, s);
    if (stage.ranks.empty()) fail_input(file_, sp + ".ranks", "at least one rank", "none");
    for (size_t i = 0; i < stage.ranks.size(); i++)
      place(stage.ranks[i], strprintf("%s.ranks[%zu]", sp.c_str(), i), "a rank in no other stage", sp);
    const LayerRange l = stage.layers;
    if (l.begin != next_layer || l.end <= l.begin)
      fail_input(file_, sp + ".layers",
                 strprintf("[%d, end) with end > %d, continuing where the previous stage ends", next_layer, next_layer),
                 strprintf("[%d, %d)", l.begin, l.end));
    if (stage.ranks.size() > 1 || !stage.split.empty()) split(pipe, stage, sp);
    return l.end;
  }

  // A stage of several ranks: one sample count per rank, each at least 1, adding up to the
  // micro-batch; and the same for a smaller last micro-batch.
  void split(const PlanPipeline& pipe, const PlanStage& stage, const std::string& sp) {
    if (stage.split.size() != stage.ranks.size())
      fail_input(file_, sp + ".split", strprintf("%zu sample counts, one per rank", stage.ranks.size()),
                 std::to_string(stage.split.size()));
    for (size_t i = 0; i < stage.split.size(); i++)
      if (stage.split[i] < 1)
        fail_input(file_, strprintf("%s.split[%zu]", sp.c_str(), i), "at least 1 sample", std::to_string(stage.split[i]));
    const int sum = std::accumulate(stage.split.begin(), stage.split.end(), 0);
    if (sum != pipe.micro_batch)
      fail_input(file_, sp + ".split", strprintf("samples adding up to micro_batch %d", pipe.micro_batch),
                 strprintf("a sum of %d", sum));
    check_last_split(file_, sp, stage, pipe.short_last() ? pipe.last_micro_batch : 0);
  }

  // Rank r, named by `field`, placed once: a rank of the topology not placed before. `where` is
  // what later messages call its place (the field itself when empty).
  void place(int r, const std::string& field, const char* expected, const std::string& where = "") {
    if (r < 0 || r >= world_)
      fail_input(file_, field, strprintf("a rank below %d, the device count of %s", world_, topology_.source.c_str()),
                 std::to_string(r));
    if (!seen_[r].empty()) fail_input(file_, field, expected, strprintf("rank %d, already in %s", r, seen_[r].c_str()));
    seen_[r] = where.empty() ? field : where;
  }

  void predicted_memory() {
    const std::vector<double>& mem = plan_.predicted.memory_gb;
    if (!mem.empty() && static_cast<int>(mem.size()) != world_)
      fail_input(file_, "predicted.memory_gb", strprintf("%d entries, one per rank", world_), std::to_string(mem.size()));
    for (size_t r = 0; r < mem.size(); r++) {
      const DeviceType& dev = topology_.device_of(static_cast<int>(r));
      if (mem[r] > dev.memory_gb)
        fail_input(file_, strprintf("predicted.memory_gb[%zu]", r),
                   strprintf("at most %g GB, the memory of rank %zu's %s", dev.memory_gb, r, dev.name.c_str()),
                   strprintf("%g GB", mem[r]));
    }
  }

  const Plan& plan_;
  const Topology& topology_;
  const ModelConfig& model_;
  const std::string& file_;
  const int world_;
  std::vector<std::string> seen_;  // per rank: where it was placed, "" while not yet
};

}  // namespace

void validate_plan(const Plan& plan, const Topology& topology, const ModelConfig& model) {
  PlanCheck(plan, topology, model).run();
}

}  // namespace eth
