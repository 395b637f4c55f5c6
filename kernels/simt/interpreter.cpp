// The kernel interpreter (interpreter.hpp): a cooperative scheduler per block. Each GPU thread
// is a fiber that runs until it reaches a barrier, a warp operation or its end; when every
// fiber of the block has stopped, the scheduler completes what can be completed (a warp
// operation whose lanes have all arrived, a barrier every thread waits at) and runs the
// released fibers again. When nothing can be completed and threads still wait, the launch has
// deadlocked on the GPU too: the scheduler reports who waits where and who never comes.
// Which warps run first in a round is drawn from the launch's schedule seed, and every access to
// shared memory goes through the race detector (shared_shadow.hpp).
#include "kernels/simt/interpreter.hpp"

#include <boost/context/fiber.hpp>

#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/simt/fragments.hpp"
#include "kernels/simt/kernel_name.hpp"
#include "kernels/simt/profiler.hpp"
#include "kernels/simt/shared_shadow.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace eth::kernels::simt {
namespace host {

thread_local Traffic* t_traffic = nullptr;
// The thread whose fiber runs on this host thread (null on the scheduler's own stack).
thread_local HostThread* t_running = nullptr;

void global_read(const void* p, size_t bytes, const std::source_location& where) {
  t_traffic->bytes_read += bytes;
  if (t_profiler != nullptr && t_running != nullptr)
    t_profiler->access(t_running->index_, AccessKind::global_load, reinterpret_cast<uintptr_t>(p), bytes, where);
}
void global_written(const void* p, size_t bytes, const std::source_location& where) {
  t_traffic->bytes_written += bytes;
  if (t_profiler != nullptr && t_running != nullptr)
    t_profiler->access(t_running->index_, AccessKind::global_store, reinterpret_cast<uintptr_t>(p), bytes, where);
}
void count_special() {
  if (t_profiler != nullptr) t_profiler->special();
}
void count_fp64(uint64_t operations) {
  if (t_profiler != nullptr) t_profiler->fp64(operations);
}

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::shfl_xor: return "shfl_xor";
    case WarpOp::shfl_down: return "shfl_down";
    case WarpOp::shfl_up: return "shfl_up";
    case WarpOp::shfl_idx: return "shfl_idx";
    case WarpOp::ballot: return "ballot";
    case WarpOp::any: return "any";
    case WarpOp::all: return "all";
    case WarpOp::mma: return "mma.m16n8k16";
    case WarpOp::ldmatrix: return "ldmatrix";
  }
  return "?";
}

namespace {

namespace ctx = boost::context;

constexpr size_t kStackBytes = 64 * 1024;  // the attention kernels keep 4 x 128 floats per thread

std::string where_text(const std::source_location& where) {
  const std::string file = where.file_name();
  const size_t slash = file.rfind('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(where.line());
}

// "0-31, 40, 64-127": thread indices, runs collapsed.
std::string index_list(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) j++;
    if (!out.empty()) out += ", ";
    out += std::to_string(sorted[i]);
    if (j > i) out += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

std::string hex_mask(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

// Fiber stacks, reused by every block this host thread runs.
class StackPool {
 public:
  ~StackPool() {
    for (void* s : free_) std::free(s);
  }
  ctx::stack_context allocate() {
    void* base;
    if (free_.empty()) {
      base = std::malloc(kStackBytes);
      if (base == nullptr) throw std::bad_alloc();
    } else {
      base = free_.back();
      free_.pop_back();
    }
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char*>(base) + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) { free_.push_back(static_cast<char*>(sc.sp) - sc.size); }

 private:
  std::vector<void*> free_;
};

// Tells ASan which stack the code runs on across a switch between fibers: without it, an
// exception thrown on a fiber's stack looks to ASan like a use of memory out of scope. Nothing
// in a build without ASan.
class StackSwitch {
 public:
  void* bottom = nullptr;
  size_t size = 0;
#if defined(__SANITIZE_ADDRESS__)
  // Before switching to the stack `to`; `fake` keeps this side's fake stack (null: it ends).
  static void start(void** fake, const StackSwitch& to) { __sanitizer_start_switch_fiber(fake, to.bottom, to.size); }
  // After arriving; `from` learns the bounds of the stack left.
  static void finish(void* fake, StackSwitch* from) {
    const void* bottom = nullptr;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(fake, &bottom, &size);
    if (from != nullptr) {
      from->bottom = const_cast<void*>(bottom);
      from->size = size;
    }
  }
#else
  static void start(void**, const StackSwitch&) {}
  static void finish(void*, StackSwitch*) {}
#endif
};

struct PoolAllocator {
  StackPool* pool;
  StackSwitch* stack;  // learns the bounds of the stack it hands out
  ctx::stack_context allocate() {
    ctx::stack_context sc = pool->allocate();
    stack->bottom = static_cast<char*>(sc.sp) - sc.size;
    stack->size = sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) { pool->deallocate(sc); }
};

// Thrown on a fiber's stack when a failed launch ends the threads still waiting, so that each
// unwinds and ends the ordinary way.
struct Cancelled {};

struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes;
};

enum class State : uint8_t { runnable, barrier, warp, done };

struct Slot {
  HostThread thread;
  StackSwitch stack;
  ctx::fiber fiber;
  ctx::fiber scheduler;  // where the fiber returns to when it stops
  bool started = false;
  State state = State::runnable;
  std::source_location barrier_where;
  WarpRequest request{};
  std::vector<AsyncCopy> open_group;
  std::deque<std::vector<AsyncCopy>> groups;
};

}  // namespace

class Block {
 public:
  Block(const char* kernel_name, const LaunchShape& shape, Dim3 block_idx, const void* kernel,
        void (*body)(const void*, HostThread&), StackPool& pool, SharedShadow& shadow, uint64_t schedule_seed)
      : name_(kernel_name), shape_(shape), block_idx_(block_idx), kernel_(kernel), body_(body), pool_(pool),
        shadow_(shadow), slots_(shape.block.count()),
        schedule_(schedule_seed ^ (0x9e3779b97f4a7c15ull * (1 + block_idx.x + (uint64_t{block_idx.y} << 21) +
                                                             (uint64_t{block_idx.z} << 42)))) {
    shadow_.begin_block(shape.shared_bytes);
    if (shape.shared_bytes > 0) {
      shared_ = std::make_unique<unsigned char[]>(shape.shared_bytes);
      std::memset(shared_.get(), 0xff, shape.shared_bytes);  // NaN in every float, double and bf16
    }
    for (size_t i = 0; i < slots_.size(); i++) {
      HostThread& t = slots_[i].thread;
      t.block_ = this;
      t.index_ = static_cast<int>(i);
      t.lane_ = static_cast<int>(i % kWarp);
      t.warp_ = static_cast<int>(i / kWarp);
      const unsigned bx = shape.block.x, by = shape.block.y;
      t.thread_ = Dim3(static_cast<unsigned>(i % bx), static_cast<unsigned>(i / bx % by),
                       static_cast<unsigned>(i / (size_t{bx} * by)));
      t.block_idx_ = block_idx;
      t.block_dim_ = shape.block;
      t.grid_dim_ = shape.grid;
    }
  }

  void run() {
    std::vector<int> warp_order(static_cast<size_t>((slots_.size() + kWarp - 1) / kWarp));
    std::iota(warp_order.begin(), warp_order.end(), 0);
    try {
      for (;;) {
        // Each round runs the warps in a new order of the seed's drawing, each lane to its next stop.
        std::shuffle(warp_order.begin(), warp_order.end(), schedule_);
        for (int w : warp_order) {
          for (int l = 0; l < warp_lanes(w); l++) {
            const size_t i = static_cast<size_t>(w) * kWarp + l;
            if (slots_[i].state != State::runnable) continue;
            resume(i);
            if (!error_.empty()) throw LaunchError(error_);
          }
        }
        size_t done = 0;
        for (const Slot& s : slots_) done += s.state == State::done;
        if (done == slots_.size()) return;
        if (!release_warp_ops() && !release_barrier()) fail(deadlock_report());
      }
    } catch (const LaunchError&) {
      cancel();
      throw;
    }
  }

  // ---- called by HostThread, on its fiber ----------------------------------------------------
  [[noreturn]] void fail(const std::string& what) const { throw LaunchError(block_text() + what); }
  std::string block_text() const {
    return "kernel " + std::string(name_) + ", block (" + std::to_string(block_idx_.x) + "," +
           std::to_string(block_idx_.y) + "," + std::to_string(block_idx_.z) + "): ";
  }
  std::string thread_text(int index) const {
    return "thread " + std::to_string(index) + " (warp " + std::to_string(index / kWarp) + ", lane " +
           std::to_string(index % kWarp) + ")";
  }

  void suspend(int index) {
    Slot& s = slots_[index];
    void* fake = nullptr;
    StackSwitch::start(&fake, scheduler_stack_);
    s.scheduler = std::move(s.scheduler).resume();
    StackSwitch::finish(fake, nullptr);
    if (cancelled_) throw Cancelled{};
  }
  void wait_barrier(int index, const std::source_location& where) {
    slots_[index].state = State::barrier;
    slots_[index].barrier_where = where;
    suspend(index);
  }
  WarpRequest& begin_warp_op(int index, WarpOp op, unsigned mask, const std::source_location& where) {
    const int lane = index % kWarp;
    if ((mask >> lane & 1u) == 0)
      fail(std::string(warp_op_name(op)) + " at " + where_text(where) + ": " + thread_text(index) +
           " calls it with mask " + hex_mask(mask) + ", which leaves out its own lane");
    WarpRequest& r = slots_[index].request;
    r.op = op;
    r.mask = mask;
    r.where = where;
    return r;
  }
  void wait_warp_op(int index) {
    slots_[index].state = State::warp;
    suspend(index);
  }

  void* shared_memory(size_t bytes, size_t align, const std::source_location& where) const {
    if (bytes > shape_.shared_bytes)
      fail("shared memory at " + where_text(where) + ": the kernel's layout takes " + std::to_string(bytes) +
           " bytes, the launch gives " + std::to_string(shape_.shared_bytes));
    if (align > 16) fail("shared memory at " + where_text(where) + ": alignment past 16 bytes");
    return shared_.get();
  }
  bool in_shared(const void* p, size_t bytes) const {
    const auto* c = static_cast<const unsigned char*>(p);
    return shared_ != nullptr && c >= shared_.get() && c + bytes <= shared_.get() + shape_.shared_bytes;
  }

  void async_copy(int index, void* dst, const void* src, int bytes, const std::source_location& where) {
    if (!in_shared(dst, static_cast<size_t>(bytes)))
      fail("cp.async at " + where_text(where) + ": " + thread_text(index) +
           "'s destination is not inside the block's shared memory");
    if (reinterpret_cast<uintptr_t>(dst) % bytes != 0 || reinterpret_cast<uintptr_t>(src) % bytes != 0)
      fail("cp.async at " + where_text(where) + ": " + thread_text(index) + "'s addresses are not " +
           std::to_string(bytes) + "-byte aligned");
    global_read(src, static_cast<size_t>(bytes), where);
    if (const std::optional<Race> race = shadow_.issue_async(index, offset_of(dst), static_cast<size_t>(bytes), where))
      fail(race_text(*race));
    slots_[index].open_group.push_back({dst, src, bytes});
  }
  void async_commit(int index) {
    Slot& s = slots_[index];
    s.groups.push_back(std::move(s.open_group));
    s.open_group.clear();
  }
  void async_wait(int index, int pending) {
    Slot& s = slots_[index];
    while (s.groups.size() > static_cast<size_t>(pending)) {
      for (const AsyncCopy& c : s.groups.front()) {
        std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
        shadow_.land_async(index, offset_of(c.dst), static_cast<size_t>(c.bytes));
      }
      s.groups.pop_front();
    }
  }

  void shared_access(int index, const void* p, size_t bytes, const std::source_location& where, bool write) {
    const size_t offset = offset_of(p);
    if (t_profiler != nullptr)
      t_profiler->access(index, write ? AccessKind::shared_store : AccessKind::shared_load, offset, bytes, where);
    const std::optional<Race> race =
        write ? shadow_.write(index, offset, bytes, where) : shadow_.read(index, offset, bytes, where);
    if (race) fail(race_text(*race));
  }

 private:
  static constexpr int kWarp = 32;

  size_t offset_of(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - shared_.get());
  }

  // "shared-memory race at byte 4104: thread 5 (warp 0, lane 5) reads at f.hpp:12 what thread 70
  // (warp 2, lane 6) wrote at f.hpp:40, with no barrier between"
  std::string race_text(const Race& r) const {
    const std::string me = thread_text(r.thread) + " ";
    const std::string at = where_text(r.where), other_at = where_text(r.other_where);
    const std::string other = r.other == Race::kSeveral ? "several threads" : thread_text(r.other);
    std::string what;
    switch (r.kind) {
      case Race::Kind::read_after_write:
        what = me + "reads at " + at + " what " + other + " wrote at " + other_at + ", with no barrier between";
        break;
      case Race::Kind::write_after_write:
        what = me + "writes at " + at + " over what " + other + " wrote at " + other_at + ", with no barrier between";
        break;
      case Race::Kind::write_after_read:
        what = me + "writes at " + at + " what " + other + " read at " + other_at +
               (r.other == Race::kSeveral ? " (the first of them)" : "") + ", with no barrier between";
        break;
      case Race::Kind::read_in_flight:
      case Race::Kind::write_in_flight:
        what = me + (r.kind == Race::Kind::read_in_flight ? "reads" : "writes") + " at " + at +
               " bytes the cp.async of " + other + " at " + other_at + " may still be copying (" +
               (r.other == r.thread ? "it" : "that thread") + " has not waited for its group)";
        break;
    }
    return "shared-memory race at byte " + std::to_string(r.offset) + ": " + what;
  }

  void resume(size_t i) {
    Slot& s = slots_[i];
    if (!s.started) {
      s.started = true;
      s.fiber = ctx::fiber(std::allocator_arg, PoolAllocator{&pool_, &s.stack}, [this, i](ctx::fiber&& scheduler) {
        StackSwitch::finish(nullptr, &scheduler_stack_);
        Slot& me = slots_[i];
        me.scheduler = std::move(scheduler);
        try {
          body_(kernel_, me.thread);
        } catch (const Cancelled&) {
        } catch (const LaunchError& e) {
          if (error_.empty()) error_ = e.what();
        } catch (const std::exception& e) {
          if (error_.empty()) error_ = block_text() + e.what();  // a shared-memory index out of range
        }
        me.state = State::done;
        StackSwitch::start(nullptr, scheduler_stack_);
        return std::move(me.scheduler);
      });
    }
    void* fake = nullptr;
    StackSwitch::start(&fake, s.stack);
    t_running = &s.thread;
    s.fiber = std::move(s.fiber).resume();
    t_running = nullptr;
    StackSwitch::finish(fake, nullptr);
  }

  // Ends every thread still waiting: each is resumed once more and unwinds from its wait.
  void cancel() {
    cancelled_ = true;
    for (size_t i = 0; i < slots_.size(); i++)
      if (slots_[i].started && slots_[i].state != State::done) resume(i);
  }

  // Lanes [first, first + count) of warp w exist in this block.
  int warp_lanes(int w) const {
    return static_cast<int>(std::min<size_t>(kWarp, slots_.size() - static_cast<size_t>(w) * kWarp));
  }

  bool release_warp_ops() {
    bool released = false;
    const int warps = static_cast<int>((slots_.size() + kWarp - 1) / kWarp);
    for (int w = 0; w < warps; w++) {
      const int lanes = warp_lanes(w);
      for (int l = 0; l < lanes; l++) {
        Slot& s = slots_[static_cast<size_t>(w) * kWarp + l];
        if (s.state != State::warp) continue;
        const WarpRequest& r = s.request;
        if (lanes < kWarp && (r.mask >> lanes) != 0)
          fail(std::string(warp_op_name(r.op)) + " at " + where_text(r.where) + ": mask " + hex_mask(r.mask) +
               " names lanes past the " + std::to_string(lanes) + " that warp " + std::to_string(w) + " has");
        bool complete = true;
        for (int m = 0; m < lanes; m++) {
          if ((r.mask >> m & 1u) == 0) continue;
          const Slot& o = slots_[static_cast<size_t>(w) * kWarp + m];
          if (o.state != State::warp) {
            complete = false;
            break;
          }
          if (o.request.op != r.op || o.request.mask != r.mask)
            fail(std::string(warp_op_name(r.op)) + " at " + where_text(r.where) + " with mask " + hex_mask(r.mask) +
                 " meets " + warp_op_name(o.request.op) + " at " + where_text(o.request.where) + " with mask " +
                 hex_mask(o.request.mask) + " in lane " + std::to_string(m) + " of warp " + std::to_string(w));
        }
        if (!complete) continue;
        const unsigned mask = r.mask;
        execute(w, mask);
        // Every lane of the warp is here: the accesses before it form closed requests.
        if (t_profiler != nullptr && mask == (lanes == kWarp ? ~0u : (1u << lanes) - 1)) t_profiler->converged(w);
        for (int m = 0; m < lanes; m++)
          if (r.mask >> m & 1u) slots_[static_cast<size_t>(w) * kWarp + m].state = State::runnable;
        released = true;
      }
    }
    return released;
  }

  bool release_barrier() {
    std::vector<int> waiting, ended;
    for (size_t i = 0; i < slots_.size(); i++) {
      if (slots_[i].state == State::barrier) waiting.push_back(static_cast<int>(i));
      else if (slots_[i].state == State::done) ended.push_back(static_cast<int>(i));
      else return false;  // in a warp operation that cannot complete: the deadlock report names it
    }
    if (waiting.empty()) return false;
    const std::source_location& where = slots_[waiting[0]].barrier_where;
    if (!ended.empty())
      fail("barrier at " + where_text(where) + " is reached by threads " + index_list(waiting) +
           " and never by threads " + index_list(ended) + " (returned before it)");
    for (int i : waiting) {
      const std::source_location& w = slots_[i].barrier_where;
      if (w.line() != where.line() || std::strcmp(w.file_name(), where.file_name()) != 0)
        fail("threads wait at different barriers: thread " + std::to_string(waiting[0]) + " at " +
             where_text(where) + ", thread " + std::to_string(i) + " at " + where_text(w));
    }
    for (int i : waiting) slots_[i].state = State::runnable;
    shadow_.barrier();
    if (t_profiler != nullptr) {
      t_profiler->barrier();
      t_profiler->converged_all();
    }
    return true;
  }

  std::string deadlock_report() const {
    for (size_t i = 0; i < slots_.size(); i++) {
      if (slots_[i].state != State::warp) continue;
      const WarpRequest& r = slots_[i].request;
      const int w = static_cast<int>(i / kWarp);
      for (int m = 0; m < warp_lanes(w); m++) {
        if ((r.mask >> m & 1u) == 0) continue;
        const size_t o = static_cast<size_t>(w) * kWarp + m;
        if (slots_[o].state == State::warp) continue;
        const std::string elsewhere = slots_[o].state == State::done
                                          ? "returned"
                                          : "waits at the barrier at " + where_text(slots_[o].barrier_where);
        return std::string(warp_op_name(r.op)) + " at " + where_text(r.where) + " with mask " + hex_mask(r.mask) +
               ": " + thread_text(static_cast<int>(o)) + " never joins (it " + elsewhere + ")";
      }
    }
    return "threads wait and none can go on";
  }

  // ---- completing a warp operation ------------------------------------------------------------
  Slot& lane_slot(int w, int lane) { return slots_[static_cast<size_t>(w) * kWarp + lane]; }

  void execute(int w, unsigned mask) {
    const WarpRequest& first = lane_slot(w, std::countr_zero(mask)).request;
    switch (first.op) {
      case WarpOp::ballot:
      case WarpOp::any:
      case WarpOp::all: {
        unsigned votes = 0;
        for (int l = 0; l < kWarp; l++)
          if ((mask >> l & 1u) && lane_slot(w, l).request.value != 0) votes |= 1u << l;
        const uint64_t result = first.op == WarpOp::ballot ? votes
                                : first.op == WarpOp::any  ? uint64_t{votes != 0}
                                                           : uint64_t{votes == mask};
        for (int l = 0; l < kWarp; l++)
          if (mask >> l & 1u) lane_slot(w, l).request.result = result;
        return;
      }
      case WarpOp::mma: return execute_mma(w);
      case WarpOp::ldmatrix: return execute_ldmatrix(w);
      default: return execute_shuffle(w, mask);
    }
  }

  // The lane a shuffle reads (width 32): past either end of the warp, a lane keeps its own value.
  static int source_lane(const WarpRequest& r, int lane) {
    switch (r.op) {
      case WarpOp::shfl_xor: return lane ^ (r.arg & 31);
      case WarpOp::shfl_down: return lane + r.arg < kWarp ? lane + r.arg : lane;
      case WarpOp::shfl_up: return lane - r.arg >= 0 ? lane - r.arg : lane;
      default: return r.arg & 31;
    }
  }

  void execute_shuffle(int w, unsigned mask) {
    // Every source is read before any result is written: the lanes exchange their values at once.
    uint64_t values[kWarp];
    for (int l = 0; l < kWarp; l++) values[l] = (mask >> l & 1u) ? lane_slot(w, l).request.value : 0;
    for (int l = 0; l < kWarp; l++) {
      if ((mask >> l & 1u) == 0) continue;
      WarpRequest& r = lane_slot(w, l).request;
      const int src = source_lane(r, l);
      if ((mask >> src & 1u) == 0)
        fail(std::string(warp_op_name(r.op)) + " at " + where_text(r.where) + ": lane " + std::to_string(l) +
             " of warp " + std::to_string(w) + " reads lane " + std::to_string(src) + ", which mask " +
             hex_mask(mask) + " leaves out (undefined on the GPU)");
      r.result = values[src];
    }
  }

  void require_whole_warp(int w, const WarpRequest& r) const {
    if (warp_lanes(w) < kWarp)
      fail(std::string(warp_op_name(r.op)) + " at " + where_text(r.where) + ": warp " + std::to_string(w) +
           " has " + std::to_string(warp_lanes(w)) + " threads; the instruction needs all 32");
  }

  // D = A B + C over the warp's fragments. Each product of two bf16 or of two fp16 is exact in
  // double (in fp32 even: 16 and 22 significant bits), and so is the sum of a row's 16 of them with
  // C's element as long as the exponents stay within double's 53 bits (true for any operands of
  // training's magnitudes); the result is rounded to fp32 once.
  // The hardware's internal order is not specified by the ISA: on exactly representable sums (the
  // GPU check's inputs) every order gives this result.
  void execute_mma(int w) {
    require_whole_warp(w, lane_slot(w, 0).request);
    const bool fp16_operands = lane_slot(w, 0).request.fp16_operands;  // one instruction: every lane's alike
    // Element i of a fragment: the low or the high half of its 32-bit register i / 2.
    const auto operand = [fp16_operands](const uint32_t* regs, int i) {
      const uint32_t r = regs[i / 2];
      if (fp16_operands) return (i & 1) ? unpack_hi<fp16>(r) : unpack_lo<fp16>(r);
      return (i & 1) ? unpack_hi<bf16>(r) : unpack_lo<bf16>(r);
    };
    float A[kMmaM][kMmaK], Bm[kMmaK][kMmaN], Cm[kMmaM][kMmaN];
    for (int l = 0; l < kWarp; l++) {
      const WarpRequest& r = lane_slot(w, l).request;
      for (int i = 0; i < kMmaARegs; i++) {
        const MatrixCoord at = mma_a_coord(l, i);
        A[at.row][at.col] = operand(r.a, i);
      }
      for (int i = 0; i < kMmaBRegs; i++) {
        const MatrixCoord at = mma_b_coord(l, i);
        Bm[at.row][at.col] = operand(r.b, i);
      }
      for (int i = 0; i < kMmaCRegs; i++) {
        const MatrixCoord at = mma_c_coord(l, i);
        Cm[at.row][at.col] = r.c[i];
      }
    }
    for (int l = 0; l < kWarp; l++) {
      WarpRequest& r = lane_slot(w, l).request;
      for (int i = 0; i < kMmaCRegs; i++) {
        const MatrixCoord at = mma_c_coord(l, i);
        double sum = Cm[at.row][at.col];
        for (int k = 0; k < kMmaK; k++) sum += static_cast<double>(A[at.row][k]) * Bm[k][at.col];
        r.d[i] = static_cast<float>(sum);
      }
    }
    t_traffic->mma_flops += 2ull * kMmaM * kMmaN * kMmaK;
    if (t_profiler != nullptr) t_profiler->mma();
  }

  void execute_ldmatrix(int w) {
    const WarpRequest& first = lane_slot(w, 0).request;
    require_whole_warp(w, first);
    const int count = first.arg;
    for (int l = 0; l < kWarp; l++) {
      const WarpRequest& r = lane_slot(w, l).request;
      if (r.arg != count || r.trans != first.trans)
        fail("ldmatrix at " + where_text(r.where) + ": lanes disagree on .x" + std::to_string(count) + "/.trans");
    }
    for (int l = 0; l < 8 * count; l++) {
      const WarpRequest& r = lane_slot(w, l).request;
      if (!in_shared(r.address, 16))
        fail("ldmatrix at " + where_text(r.where) + ": lane " + std::to_string(l) + " of warp " + std::to_string(w) +
             " gives a row address outside the block's shared memory");
      if (reinterpret_cast<uintptr_t>(r.address) % 16 != 0)
        fail("ldmatrix at " + where_text(r.where) + ": lane " + std::to_string(l) + " of warp " + std::to_string(w) +
             "'s row address is not 16-byte aligned");
      if (const std::optional<Race> race = shadow_.read(w * kWarp + l, offset_of(r.address), 16, r.where))
        fail(race_text(*race));
    }
    if (t_profiler != nullptr) {
      std::array<size_t, kWarp> rows{};
      for (int l = 0; l < 8 * count; l++) rows[static_cast<size_t>(l)] = offset_of(lane_slot(w, l).request.address);
      t_profiler->ldmatrix(rows, count);
    }
    for (int j = 0; j < count; j++) {
      uint16_t m[8][8];
      for (int row = 0; row < 8; row++)
        std::memcpy(m[row], lane_slot(w, ldmatrix_address_lane(j, row)).request.address, 16);
      for (int l = 0; l < kWarp; l++) {
        const MatrixCoord lo = ldmatrix_coord(l, 0, first.trans), hi = ldmatrix_coord(l, 1, first.trans);
        lane_slot(w, l).request.regs[j] = uint32_t{m[lo.row][lo.col]} | (uint32_t{m[hi.row][hi.col]} << 16);
      }
    }
  }

  const char* name_;
  LaunchShape shape_;
  Dim3 block_idx_;
  const void* kernel_;
  void (*body_)(const void*, HostThread&);
  StackPool& pool_;
  SharedShadow& shadow_;
  std::vector<Slot> slots_;
  std::mt19937_64 schedule_;
  std::unique_ptr<unsigned char[]> shared_;
  std::string error_;  // set by a fiber that failed; the launch stops with it
  bool cancelled_ = false;
  StackSwitch scheduler_stack_;  // the host thread's own stack, where the scheduler runs
};

void shared_read(const void* p, size_t bytes, const std::source_location& where) {
  if (t_running != nullptr) t_running->block_->shared_access(t_running->index_, p, bytes, where, false);
}
void shared_written(const void* p, size_t bytes, const std::source_location& where) {
  if (t_running != nullptr) t_running->block_->shared_access(t_running->index_, p, bytes, where, true);
}

void shared_misaligned(size_t bytes, std::source_location where) {
  throw std::out_of_range("a " + std::to_string(bytes) + "-byte shared-memory access is not " + std::to_string(bytes) +
                          "-byte aligned at " + where_text(where));
}

void shared_out_of_range(size_t index, size_t extent, std::source_location where) {
  throw std::out_of_range("shared-memory index " + std::to_string(index) + " is out of range [0, " + std::to_string(extent) +
                    ") at " + where_text(where));
}

}  // namespace host

// ---- HostThread: the calls a kernel makes ---------------------------------------------------

void HostThread::sync(Where where) { block_->wait_barrier(index_, where); }

void* HostThread::shared_memory(size_t bytes, size_t align, Where where) {
  return block_->shared_memory(bytes, align, where);
}

host::WarpRequest& HostThread::begin_warp_op(host::WarpOp op, unsigned mask, Where where) {
  return block_->begin_warp_op(index_, op, mask, where);
}

void HostThread::wait_warp_op() { block_->wait_warp_op(index_); }

uint64_t HostThread::vote(host::WarpOp op, unsigned mask, bool p, Where where) {
  host::WarpRequest& r = begin_warp_op(op, mask, where);
  r.value = p;
  wait_warp_op();
  return r.result;
}

void HostThread::multiply(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                          bool fp16_operands, Where where) {
  host::WarpRequest& r = begin_warp_op(host::WarpOp::mma, 0xffffffffu, where);
  r.fp16_operands = fp16_operands;
  std::memcpy(r.a, a, sizeof r.a);
  std::memcpy(r.b, b, sizeof r.b);
  std::memcpy(r.c, c, sizeof r.c);
  wait_warp_op();
  std::memcpy(d, r.d, sizeof r.d);
}

void HostThread::load_matrices(uint32_t* regs, int count, bool trans, const void* row, Where where) {
  host::WarpRequest& r = begin_warp_op(host::WarpOp::ldmatrix, 0xffffffffu, where);
  r.arg = count;
  r.trans = trans;
  r.address = row;
  wait_warp_op();
  std::memcpy(regs, r.regs, sizeof(uint32_t) * static_cast<size_t>(count));
}

void HostThread::async_copy(void* dst, const void* src, int bytes, Where where) {
  block_->async_copy(index_, dst, src, bytes, where);
}
void HostThread::cp_async_commit() { block_->async_commit(index_); }
void HostThread::async_wait(int pending) { block_->async_wait(index_, pending); }

unsigned HostThread::atomic_add(Global<unsigned> address, unsigned value) {
  host::t_traffic->bytes_read += sizeof(unsigned);
  host::t_traffic->bytes_written += sizeof(unsigned);
  if (host::t_profiler != nullptr) host::t_profiler->atomic(reinterpret_cast<uintptr_t>(address.get()));
  return std::atomic_ref<unsigned>(*address.get()).fetch_add(value, std::memory_order_seq_cst);
}
void HostThread::threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- Interpreter ------------------------------------------------------------------------------

void Interpreter::run(const char* name, std::string (*profile_name)(), const LaunchShape& shape, const void* kernel,
                      Body body) {
  const auto refuse = [&](const std::string& what) {
    throw LaunchError("kernel " + std::string(name) + ": " + what);
  };
  const Dim3 g = shape.grid, b = shape.block;
  if (b.count() == 0 || b.count() > 1024 || b.z > 64)
    refuse("block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) +
           ") is not 1 to 1024 threads (z at most 64)");
  if (g.count() == 0 || g.y > 65535 || g.z > 65535 || g.x > 0x7fffffffu)
    refuse("grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
           ") is empty or past the limits (x < 2^31, y and z <= 65535)");
  if (shape.shared_bytes > kMaxSharedBytesPerBlock)
    refuse(std::to_string(shape.shared_bytes) + " bytes of shared memory per block, past the " +
           std::to_string(kMaxSharedBytesPerBlock) + " of sm_80");

  const long blocks = static_cast<long>(g.count());
  const long counted = counters_ ? static_cast<long>(counted_blocks(g, sampling_)) : 0;
  std::atomic<bool> failed{false};
  std::string first_error;
  KernelCounts launch;
  host::Tally tally;  // with counters on: the launch's, each host thread's merged into it
#pragma omp parallel
  {
    static thread_local host::StackPool pool;
    static thread_local host::SharedShadow shadow;
    host::Traffic traffic;
    host::t_traffic = &traffic;
    host::Tally mine;
#pragma omp for schedule(dynamic, 16)
    for (long i = 0; i < blocks; i++) {
      if (failed.load(std::memory_order_relaxed) || (i >= counted && !run_uncounted_)) continue;
      const Dim3 idx(static_cast<unsigned>(i % g.x), static_cast<unsigned>(i / g.x % g.y),
                     static_cast<unsigned>(i / (long{g.x} * g.y)));
      try {
        if (i < counted) {
          host::BlockProfiler profiler(mine, b.count(), static_cast<size_t>(i));
          const host::ProfilerInstalled installed(profiler);
          host::Block(name, shape, idx, kernel, body, pool, shadow, schedule_seed_).run();
          profiler.finish();
        } else {
          host::Block(name, shape, idx, kernel, body, pool, shadow, schedule_seed_).run();
        }
      } catch (const LaunchError& e) {
#pragma omp critical(simt_first_error)
        if (!failed.exchange(true)) first_error = e.what();
      }
    }
    host::t_traffic = nullptr;
#pragma omp critical(simt_counts)
    {
      launch.bytes_read += traffic.bytes_read;
      launch.bytes_written += traffic.bytes_written;
      launch.mma_flops += traffic.mma_flops;
      if (counters_) tally.merge(mine);
    }
  }
  KernelCounts& total = counts_[name];
  total.launches += 1;
  total.threads += g.count() * b.count();
  total.bytes_read += launch.bytes_read;
  total.bytes_written += launch.bytes_written;
  total.mma_flops += launch.mma_flops;
  if (failed) throw LaunchError(first_error);
  if (counters_) {
    LaunchProfile& p = profiles_.emplace_back();
    p.name = profile_name();
    p.dialect_name = name;
    p.grid = g;
    p.block = b;
    p.shared_bytes = shape.shared_bytes;
    tally.write(p, static_cast<size_t>(counted));
    extend_sample(p);
  }
}

}  // namespace eth::kernels::simt
