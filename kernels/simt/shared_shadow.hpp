// The interpreter's race detector: a shadow of one block's shared memory that records, per byte,
// who last wrote it and who read it since the last barrier, and reports the first access that
// nothing orders against another thread's (a data race on the GPU, however the interpreter
// happened to schedule the threads).
//
// The model is the one a __syncthreads kernel is written against: the block's barriers cut time
// into epochs, and two accesses of different threads to a byte are ordered only when a barrier
// lies between them. So, within one epoch, a byte one thread wrote may be read or written by no
// other thread, and a byte other threads read may be written by none. Warp-synchronous
// instructions (shuffles, mma, ldmatrix) order nothing here: since Volta a warp's lanes are not
// guaranteed to move in lock step, and kernels that pass data through shared memory between lanes
// synchronise the block. A cp.async writes its bytes at any moment between its issue and the
// wait_group that covers it, so from its issue on they are off limits to every thread (the issuer
// included) until the issuer has waited; once it has, they count as written by the issuer then.
//
// A block's epochs continue a counter of the host thread's shadow, so that a new block starts
// with nothing recorded and no byte is cleared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <source_location>
#include <vector>

namespace eth::kernels::simt::host {

// An access the detector found unordered against an earlier one of another thread.
struct Race {
  enum class Kind : uint8_t {
    read_after_write,     // read bytes another thread wrote in this epoch
    write_after_write,    // wrote bytes another thread wrote in this epoch
    write_after_read,     // wrote bytes another thread read in this epoch
    read_in_flight,       // read bytes a cp.async is still copying to
    write_in_flight,      // wrote bytes a cp.async is still copying to
  };
  Kind kind;
  size_t offset;  // the first byte in conflict, from the start of the block's shared memory
  int thread;     // this access
  std::source_location where;
  int other;      // the earlier access; kSeveral when more than one other thread read the byte
  std::source_location other_where;  // (then where the first of them read it)
  static constexpr int kSeveral = -1;
};

class SharedShadow {
 public:
  // A new block with `bytes` of shared memory: nothing of earlier blocks is remembered.
  void begin_block(size_t bytes);
  // Every thread of the block passed a barrier.
  void barrier() { epoch_++; }

  // Each records the access of `thread` to [offset, offset + bytes) and returns the race it is
  // part of, if any.
  std::optional<Race> read(int thread, size_t offset, size_t bytes, const std::source_location& where);
  std::optional<Race> write(int thread, size_t offset, size_t bytes, const std::source_location& where);
  std::optional<Race> issue_async(int thread, size_t offset, size_t bytes, const std::source_location& where);
  // The issuer waited for the copy: its bytes are written by it now.
  void land_async(int thread, size_t offset, size_t bytes);

 private:
  struct Byte {
    uint32_t write_epoch = 0, read_epoch = 0;
    uint32_t in_flight_block = 0;  // the block whose cp.async is copying to it, until its issuer waits
    int16_t writer = 0, reader = 0;
    std::source_location write_where, read_where;
  };
  static constexpr int16_t kSeveralReaders = -1;

  // The race an access of `thread` to byte b (at `offset`) would make with what b records: a copy
  // in flight, another thread's write in this epoch, and for a write another thread's read.
  std::optional<Race> conflict(const Byte& b, size_t offset, int thread, const std::source_location& where,
                               bool write) const;

  std::vector<Byte> bytes_;
  uint32_t epoch_ = 0;        // the current epoch; every block starts a new one
  uint32_t block_epoch_ = 0;  // the epoch this block started with: in-flight marks of older blocks are void
};

}  // namespace eth::kernels::simt::host
