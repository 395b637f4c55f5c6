#include "kernels/cpu/work_queue.hpp"

namespace eth::kernels {

WorkQueue::WorkQueue() : worker_([this] { run(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_cv_.notify_all();
  worker_.join();
}

uint64_t WorkQueue::enqueue(std::function<void()> op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(op));
  }
  queued_cv_.notify_one();
  return ++enqueued_;
}

bool WorkQueue::completed(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  rethrow_error();
  return completed_ >= count;
}

void WorkQueue::wait_for(uint64_t count) {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_cv_.wait(lock, [&] { return completed_ >= count || error_ != nullptr; });
  rethrow_error();
}

void WorkQueue::rethrow_error() {
  if (error_ != nullptr) std::rethrow_exception(error_);
}

void WorkQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      op();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error != nullptr && error_ == nullptr) error_ = error;
    completed_++;
    completed_cv_.notify_all();
  }
}

}  // namespace eth::kernels
