#include "lib/planner/plan_summary.hpp"

#include <algorithm>

#include "lib/base/strprintf.hpp"
#include "lib/plan/grad_blocks.hpp"

namespace eth::planner {
namespace {

// "4" or "1-3" (consecutive) or "0,2,5".
std::string rank_list(const std::vector<int>& ranks) {
  bool consecutive = true;
  for (size_t i = 1; i < ranks.size(); i++) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive && ranks.size() > 1) return strprintf("%d-%d", ranks.front(), ranks.back());
  std::string out;
  for (size_t i = 0; i < ranks.size(); i++) out += strprintf("%s%d", i ? "," : "", ranks[i]);
  return out;
}

// "A100-80GB", "3x T4-16GB" or "A100-80GB,T4-16GB".
std::string device_list(const Topology& topo, const std::vector<int>& ranks) {
  const std::string& first = topo.device_of(ranks.front()).name;
  const bool same = std::all_of(ranks.begin(), ranks.end(), [&](int r) { return topo.device_of(r).name == first; });
  if (same) return ranks.size() == 1 ? first : strprintf("%zux %s", ranks.size(), first.c_str());
  std::string out;
  for (size_t i = 0; i < ranks.size(); i++) out += strprintf("%s%s", i ? "," : "", topo.device_of(ranks[i]).name.c_str());
  return out;
}

}  // namespace

void print_summary(std::ostream& out, const CostModel& cost, const Candidate& c) {
  const Topology& topo = cost.topology();
  out << strprintf("plan: %s\n", c.label.c_str());
  out << strprintf("%-4s %-6s %-7s %-16s %-12s %-8s %-8s %-8s %-10s %s\n", "pipe", "stage", "ranks", "devices", "layers",
                   "samples", "mb x m", "split", "recompute", "memory GB / device GB (fullest rank)");
  for (size_t p = 0; p < c.plan.pipelines.size(); p++) {
    const PlanPipeline& pipe = c.plan.pipelines[p];
    for (size_t s = 0; s < pipe.stages.size(); s++) {
      const PlanStage& st = pipe.stages[s];
      std::string split;
      for (size_t i = 0; i < st.split.size(); i++) split += strprintf("%s%d", i ? ":" : "", st.split[i]);
      const int fullest = *std::max_element(st.ranks.begin(), st.ranks.end(), [&](int a, int b) {
        return c.estimate.memory_gb[a] / topo.device_of(a).memory_gb < c.estimate.memory_gb[b] / topo.device_of(b).memory_gb;
      });
      out << strprintf("%-4s %-6zu %-7s %-16s [%3d, %3d)   %-8s %-8s %-8s %-10s %.2f/%g\n", s == 0 ? std::to_string(p).c_str() : "", s,
                       rank_list(st.ranks).c_str(), device_list(topo, st.ranks).c_str(), st.layers.begin, st.layers.end,
                       s == 0 ? std::to_string(pipe.samples()).c_str() : "",
                       s == 0 ? strprintf("%dx%d", pipe.micro_batch, pipe.micro_batches).c_str() : "", split.c_str(),
                       to_string(st.recompute).c_str(), c.estimate.memory_gb[fullest], topo.device_of(fullest).memory_gb);
    }
    out << strprintf("     pipeline %zu: analytic %.2f ms, simulated %.2f ms\n", p, c.estimate.pipeline_ms[p],
                     c.simulation.pipeline_ms[p]);
  }
  out << strprintf("iteration: simulated %.2f ms, analytic %.2f ms (slowest pipeline %.2f + exposed reduction %.2f + "
                   "optimizer %.2f)\n",
                   c.simulation.iteration_ms, c.estimate.iteration_ms, c.estimate.iteration_ms - c.estimate.reduction_ms -
                   c.estimate.optimizer_ms, c.estimate.reduction_ms, c.estimate.optimizer_ms);
  if (!c.plan.sharded_blocks.empty()) {
    const std::vector<GradBlock> blocks = derive_grad_blocks(c.plan, cost.model().num_layers);
    out << "AdamW moments sharded among the owners of block(s):";
    for (int b : c.plan.sharded_blocks)
      out << strprintf(" %d (%s, %zu owners)", b, units_name(blocks[b].unit_begin, blocks[b].unit_end, cost.model().num_layers).c_str(),
                       blocks[b].owners.size());
    out << '\n';
  }
  print_memory(out, topo, c.estimate.memory);
}

void print_memory(std::ostream& out, const Topology& topo, const std::vector<MemoryBytes>& memory) {
  out << strprintf("predicted peak memory per rank, GB (idle ranks left out; consecutive equal ranks in one row):\n"
                   "%-10s %-16s %10s %10s %10s %11s %10s %10s %s\n", "ranks", "device", "parameters", "gradients",
                   "optimizer", "activations", "workspace", "total", "of device");
  auto same = [&](size_t a, size_t b) {
    const MemoryBytes &x = memory[a], &y = memory[b];
    return topo.ranks[a].device_type == topo.ranks[b].device_type && x.parameters == y.parameters &&
           x.optimizer == y.optimizer && x.activations == y.activations && x.workspace == y.workspace;
  };
  for (size_t r = 0; r < memory.size();) {
    size_t end = r + 1;
    while (end < memory.size() && same(r, end)) end++;
    const MemoryBytes& m = memory[r];
    const DeviceType& dev = topo.device_of(static_cast<int>(r));
    const std::string ranks = end - r == 1 ? std::to_string(r) : strprintf("%zu-%zu", r, end - 1);
    if (m.total() > 0)
      out << strprintf("%-10s %-16s %10.3f %10.3f %10.3f %11.3f %10.3f %10.3f %.0f%%\n", ranks.c_str(), dev.name.c_str(),
                       m.parameters * 1e-9, m.gradients * 1e-9, m.optimizer * 1e-9, m.activations * 1e-9,
                       m.workspace * 1e-9, m.total() * 1e-9, 100 * m.total() * 1e-9 / dev.memory_gb);
    r = end;
  }
}

}  // namespace eth::planner
