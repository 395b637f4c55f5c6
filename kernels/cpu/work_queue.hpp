// One in-order queue of work on a thread of its own: what a CUDA stream is to the host. The
// host enqueues and runs ahead; an operation's place in the queue (its count) is how the host,
// or another queue, learns that it has completed. The asynchronous CPU backend's compute stream
// and the emulated NCCL streams (mpi_topology/emulated_streams.cpp) are each one of these.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace eth::kernels {

class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();  // runs everything queued, then joins the thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `op` and returns its count (1 for the first). One enqueuing thread only.
  uint64_t enqueue(std::function<void()> op);
  uint64_t enqueued() const { return enqueued_; }  // the enqueuing thread only

  // Whether the first `count` operations have completed; rethrows the first operation's
  // exception, here and in every later call, so that a failure reaches the host.
  bool completed(uint64_t count);
  // Blocks until they have; any thread may wait.
  void wait_for(uint64_t count);
  void synchronize() { wait_for(enqueued_); }

 private:
  void run();
  void rethrow_error();  // mutex_ held

  uint64_t enqueued_ = 0;  // written by the enqueuing thread only
  std::mutex mutex_;
  std::condition_variable queued_cv_, completed_cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  uint64_t completed_ = 0;                   // guarded by mutex_
  std::exception_ptr error_;                 // the first failure, guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread worker_;                       // last: starts once everything above exists
};

}  // namespace eth::kernels
