// --precision resolved once per device type (lib/plan/precision_paths.hpp), and every reader of
// it seeing the same path: backend selection, the memory model, the cost model's profiles and
// MFU's peak. And what that changes for a mixed-generation plan: the planner prices an A100 in
// bf16 on its tensor cores, a V100 in fp32 arithmetic on the bf16 bytes.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kernels/backend_select.hpp"
#include "kernels/cuda_capability.hpp"
#ifdef ETH_HAVE_SIMT_INTERPRETER
#include "kernels/emulated/cuda_emulated_backend.hpp"
#endif
#include "lib/job/model_flops.hpp"
#include "lib/plan/memory_model.hpp"
#include "lib/plan/plan.hpp"
#include "lib/planner/attention_memory.hpp"
#include "lib/planner/candidate.hpp"
#include "lib/planner/scenario.hpp"
#include "lib/planner/search.hpp"

namespace eth::test {
namespace {

using kernels::Arithmetic;
using kernels::Precision;
using planner::CostModel;
using planner::Profile;

// lab-2node-a100-v100.yaml: 4 A100-80GB (bf16 312, fp32 19.5 TFLOP/s), 4 V100-32GB (fp32 15.7).
struct Lab {
  Topology topology = load_topology("inputs/topologies/lab-2node-a100-v100.yaml");
  ModelConfig model = load_model_config("inputs/models/tiny.yaml");
  int a100 = topology.ranks[0].device_type;
  int v100 = topology.ranks[4].device_type;
};

// The settings of a process with ETH_BACKEND=`kind`.
kernels::DeviceSettings backend_kind(const char* kind) {
  kernels::DeviceSettings settings;
  settings.backend = kind;
  return settings;
}

TEST(PrecisionPaths, Bf16RunsOnBf16UnitsWhereADeviceHasThemInFp32ArithmeticElsewhere) {
  const Lab lab;
  const PrecisionPaths paths = precision_paths(lab.topology, Precision::bf16);
  EXPECT_EQ(paths.precision, Precision::bf16);
  const kernels::PrecisionPath& a = paths.by_type[static_cast<size_t>(lab.a100)];
  const kernels::PrecisionPath& v = paths.by_type[static_cast<size_t>(lab.v100)];
  EXPECT_EQ(a.arithmetic, Arithmetic::bf16);
  EXPECT_EQ(a.peak_tflops, 312);
  EXPECT_EQ(a.name(), "bf16");
  EXPECT_EQ(v.precision, Precision::bf16);
  EXPECT_EQ(v.arithmetic, Arithmetic::fp32);
  EXPECT_EQ(v.peak_tflops, 15.7);
  EXPECT_EQ(v.name(), "bf16 in fp32 arithmetic");
}

// In auto each device takes its own 16-bit units: the A100s bf16, the V100s (fp16 tensor cores,
// no bf16 units) fp16 at 125 TFLOP/s; a job of V100s alone is fp16, one without 16-bit units
// (any CPU) fp32.
TEST(PrecisionPaths, AutoTakesEachDevicesOwn16BitUnits) {
  const Lab lab;
  const PrecisionPaths paths = precision_paths(lab.topology, Precision::automatic);
  EXPECT_EQ(paths.requested, Precision::automatic);
  EXPECT_EQ(paths.precision, Precision::bf16) << "the job's format: a device with neither units stores bf16";
  const kernels::PrecisionPath& a = paths.by_type[static_cast<size_t>(lab.a100)];
  const kernels::PrecisionPath& v = paths.by_type[static_cast<size_t>(lab.v100)];
  EXPECT_EQ(a.name(), "bf16");
  EXPECT_EQ(a.arithmetic, Arithmetic::bf16);
  EXPECT_EQ(v.precision, Precision::fp16);
  EXPECT_EQ(v.arithmetic, Arithmetic::fp16);
  EXPECT_EQ(v.peak_tflops, 125);
  EXPECT_EQ(v.name(), "fp16");

  Topology v100s = lab.topology;
  v100s.device_types[static_cast<size_t>(lab.a100)].peak_tflops_bf16 = 0;
  v100s.device_types[static_cast<size_t>(lab.a100)].peak_tflops_fp16 = 0;
  const PrecisionPaths fp16 = precision_paths(v100s, Precision::automatic);
  EXPECT_EQ(fp16.precision, Precision::fp16);
  EXPECT_EQ(fp16.by_type[static_cast<size_t>(lab.a100)].name(), "fp16 in fp32 arithmetic");
  v100s.device_types[static_cast<size_t>(lab.v100)].peak_tflops_fp16 = 0;
  const PrecisionPaths fp32 = precision_paths(v100s, Precision::automatic);
  EXPECT_EQ(fp32.precision, Precision::fp32);
  for (const kernels::PrecisionPath& p : fp32.by_type) EXPECT_EQ(p.name(), "fp32");
}

// One job (auto, on the lab topology) as each reader sees it: the backend a rank selects computes
// in the path's precision and storage, on bf16 kernels exactly where the path's arithmetic is
// bf16; the cost model's profiles are on each type's path and its memory counts the path's
// storage bytes; MFU's peak is the sum of the ranks' path peaks.
TEST(PrecisionPaths, EveryReaderSeesTheSamePath) {
  const Lab lab;
  const PrecisionPaths paths = precision_paths(lab.topology, Precision::automatic);
  const int T = 64;

  for (int rank : {0, 4}) {
    const kernels::PrecisionPath& path = paths.of_rank(lab.topology, rank);
    const kernels::BackendChoice chosen = kernels::select_backend(0, 1, path, backend_kind("cpu"));
    EXPECT_EQ(chosen.backend->precision(), path.precision) << rank;
    EXPECT_EQ(chosen.backend->storage(), path.storage()) << rank;
    EXPECT_EQ(chosen.backend->arithmetic(), Arithmetic::fp32) << "the CPU has no 16-bit kernels";
#ifdef ETH_HAVE_SIMT_INTERPRETER
    const kernels::BackendChoice emulated = kernels::select_backend(0, 1, path, backend_kind("cuda-emulated"));
    EXPECT_EQ(emulated.backend->storage(), path.storage()) << rank;
    EXPECT_EQ(emulated.backend->arithmetic(), path.arithmetic) << rank;
#endif
  }

  const std::vector<Profile> profiles = planner::profiles_for(lab.topology, lab.model, T, {}, {1, 2}, paths);
  ASSERT_EQ(profiles.size(), lab.topology.device_types.size());
  for (size_t d = 0; d < profiles.size(); d++) EXPECT_TRUE(profiles[d].on_path(paths.by_type[d])) << d;
  const CostModel cost(lab.topology, lab.model, T, profiles);
  const LayerRange all{0, lab.model.num_layers};
  const JobMemoryOptions bf16_storage{planner::planner_attention_path(T), kernels::ElementType::bf16, false, true,
                                      kernels::Arithmetic::fp32};
  const JobMemoryOptions fp32_storage{planner::planner_attention_path(T), kernels::ElementType::f32, false, true,
                                      kernels::Arithmetic::fp32};
  const MemoryBytes expected = stage_memory(lab.model, all, 2, T, 1, Recompute::none, bf16_storage);
  EXPECT_EQ(cost.memory_bytes(all, 2, 1), expected.total() - expected.transfers);
  EXPECT_LT(cost.memory_bytes(all, 2, 1), stage_memory(lab.model, all, 2, T, 1, Recompute::none, fp32_storage).total())
      << "bf16 storage must hold fewer bytes than fp32";

  EXPECT_DOUBLE_EQ(peak_flops(lab.topology, paths), (4 * 312 + 4 * 125) * 1e12);
}

// ETH_BF16_KERNELS=0 is a choice of the rank's path, made once (rank_path): an A100's bf16 path
// becomes bf16 in fp32 arithmetic at its fp32 peak, the path a V100 takes, and backend selection
// reads that arithmetic alone; paths not on bf16 units stay as planned; another value is refused.
TEST(PrecisionPaths, Bf16KernelsOffIsTheRanksPathInFp32Arithmetic) {
  const Lab lab;
  const PrecisionPaths paths = precision_paths(lab.topology, Precision::automatic);
  const DeviceType& a100 = lab.topology.device_types[static_cast<size_t>(lab.a100)];
  const DeviceType& v100 = lab.topology.device_types[static_cast<size_t>(lab.v100)];
  kernels::DeviceSettings off = backend_kind("cuda-emulated");
  off.bf16_kernels = "0";
  const kernels::PrecisionPath a = kernels::rank_path(paths.of_rank(lab.topology, 0), a100.rates(), off);
  EXPECT_EQ(a.name(), "bf16 in fp32 arithmetic");
  EXPECT_EQ(a.peak_tflops, 19.5);
  const kernels::PrecisionPath& v = paths.of_rank(lab.topology, 4);  // fp16 on its tensor cores
  EXPECT_EQ(kernels::rank_path(v, v100.rates(), off).name(), v.name());
  EXPECT_EQ(kernels::rank_path(paths.of_rank(lab.topology, 0), a100.rates(), backend_kind("cuda-emulated")).arithmetic,
            Arithmetic::bf16);
  off.bf16_kernels = "no";
  EXPECT_THROW(kernels::rank_path(v, v100.rates(), off), std::invalid_argument);
#ifdef ETH_HAVE_SIMT_INTERPRETER
  const kernels::BackendChoice twin = kernels::select_backend(0, 1, a, backend_kind("cuda-emulated"));
  EXPECT_EQ(twin.backend->arithmetic(), Arithmetic::fp32);
  EXPECT_EQ(twin.backend->storage(), kernels::ElementType::bf16);
  EXPECT_NE(twin.backend->precision_path().find("twin over the fp32 kernels"), std::string::npos)
      << twin.backend->precision_path();
  // The GPU ops compute a 16-bit path on their 16-bit kernels only: in fp32 arithmetic it is the twin's.
  EXPECT_THROW(kernels::make_cuda_emulated_backend(0, a), std::logic_error);
#endif
}

// One table of the compute capability each arithmetic needs on a GPU (the CUDA backend refuses
// a path its GPU cannot compute, and backend selection passes that on: no quiet twin).
TEST(PrecisionPaths, CapabilityTable) {
  EXPECT_EQ(kernels::capability_for(Arithmetic::bf16), 80);
  EXPECT_EQ(kernels::capability_for(Arithmetic::tf32), 80);
  EXPECT_EQ(kernels::capability_for(Arithmetic::fp16), 70);
  EXPECT_EQ(kernels::capability_for(Arithmetic::fp32), 0);
  EXPECT_EQ(kernels::capability_name(kernels::kMma16816Capability), "8.0");
}

// A job scales its loss where some path stores fp16 (auto on A100s and V100s), not elsewhere.
TEST(PrecisionPaths, LossScaledWhereAPathStoresFp16) {
  const Lab lab;
  EXPECT_TRUE(precision_paths(lab.topology, Precision::automatic).loss_scaled());
  EXPECT_FALSE(precision_paths(lab.topology, Precision::bf16).loss_scaled());
  EXPECT_TRUE(precision_paths(lab.topology, Precision::fp16).loss_scaled());
  EXPECT_FALSE(precision_paths(lab.topology, Precision::fp32).loss_scaled());
}

// The samples each active rank of `plan` computes per step, by device type name.
std::map<std::string, std::set<int>> samples_by_type(const Plan& plan, const Topology& topology) {
  std::map<std::string, std::set<int>> by_type;
  const std::vector<RankRole> roles = rank_roles(plan, topology.world_size());
  for (int r = 0; r < topology.world_size(); r++) {
    const RankRole& role = roles[static_cast<size_t>(r)];
    if (role.idle()) continue;
    const PlanPipeline& pipe = plan.pipelines[static_cast<size_t>(role.pipeline)];
    const int last = pipe.short_last() ? role.last_samples : role.samples;
    by_type[topology.device_of(r).name].insert(role.samples * (pipe.micro_batches - 1) + last);
  }
  return by_type;
}

// inputs/scenarios/a100-v100.yaml (8 A100-80GB, 8 V100-32GB, GPT-2 1558M, batch 256) planned
// with the shipped profiles (inputs/profiles, the roofline estimates of each type's path).
struct A100V100 {
  explicit A100V100(Precision precision)
      : s(planner::load_scenario("inputs/scenarios/a100-v100.yaml")), topology(load_topology(s.topology_path)),
        model(load_model_config(s.model_path)), paths(precision_paths(topology, precision)),
        cost(topology, model, s.seq_len,
             planner::profiles_for(topology, model, s.seq_len, planner::load_profile_dir("inputs/profiles"),
                                   s.micro_batches, paths)),
        best(planner::search_hpp(cost, {s.global_batch, s.micro_batches, 1}, s.source).front()) {}
  planner::Scenario s;
  Topology topology;
  ModelConfig model;
  PrecisionPaths paths;
  CostModel cost;
  planner::Candidate best;
};

// In bf16 an A100 is priced at its tensor cores (312 TFLOP/s) and a V100 at fp32 on bf16 bytes
// (15.7): each A100 rank takes at least four times the samples of any V100 rank, or the V100s
// sit idle. The simulator's step for the plan stays within 10% of the planner's analytic step
// (the two model the same profiles differently: the simulator replays 1F1B and the reductions'
// overlap event by event).
TEST(PrecisionPaths, A100V100InBf16GivesTheA100sTheWork) {
  const A100V100 job(Precision::bf16);
  for (int type = 0; type < 2; type++) {
    const Profile& p = job.cost.profile(type);
    EXPECT_FALSE(p.source == "roofline estimate") << p.device_type << ": the shipped profile of its path is taken";
    EXPECT_EQ(p.precision, Precision::bf16);
  }
  const auto by_type = samples_by_type(job.best.plan, job.topology);
  ASSERT_TRUE(by_type.count("A100-80GB"));
  if (by_type.count("V100-32GB")) {
    EXPECT_GE(*by_type.at("A100-80GB").begin(), 4 * *by_type.at("V100-32GB").rbegin()) << plan_yaml(job.best.plan);
  }
  const double simulated = planner::simulate(job.cost, job.best.plan).iteration_ms;
  EXPECT_NEAR(simulated, job.best.estimate.iteration_ms, 0.1 * job.best.estimate.iteration_ms);
}

// In fp32 the plan is the one the planner wrote before precision paths (main at d046b3d,
// `eth_plan --scenario inputs/scenarios/a100-v100.yaml --precision fp32`): both types at their
// fp32 peaks, as the roofline priced them then.
TEST(PrecisionPaths, A100V100InFp32KeepsItsPlan) {
  const A100V100 job(Precision::fp32);
  EXPECT_EQ(plan_yaml(job.best.plan), plan_yaml(load_plan("tests/unit/data/a100-v100-fp32-plan.yaml")));
}

}  // namespace
}  // namespace eth::test
