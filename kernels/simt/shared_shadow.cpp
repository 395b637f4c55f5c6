// The race detector of shared_shadow.hpp.
#include "kernels/simt/shared_shadow.hpp"

namespace eth::kernels::simt::host {

void SharedShadow::begin_block(size_t bytes) {
  if (bytes_.size() < bytes) bytes_.resize(bytes);
  block_epoch_ = ++epoch_;
}

std::optional<Race> SharedShadow::conflict(const Byte& b, size_t offset, int thread, const std::source_location& where,
                                           bool write) const {
  using K = Race::Kind;
  if (b.in_flight_block == block_epoch_)
    return Race{write ? K::write_in_flight : K::read_in_flight, offset, thread, where, b.writer, b.write_where};
  if (b.write_epoch == epoch_ && b.writer != thread)
    return Race{write ? K::write_after_write : K::read_after_write, offset, thread, where, b.writer, b.write_where};
  if (write && b.read_epoch == epoch_ && b.reader != thread)
    return Race{K::write_after_read, offset, thread, where, b.reader == kSeveralReaders ? Race::kSeveral : b.reader,
                b.read_where};
  return std::nullopt;
}

std::optional<Race> SharedShadow::read(int thread, size_t offset, size_t bytes, const std::source_location& where) {
  for (size_t i = offset; i < offset + bytes; i++) {
    Byte& b = bytes_[i];
    if (std::optional<Race> r = conflict(b, i, thread, where, false)) return r;
    if (b.read_epoch != epoch_) {
      b.read_epoch = epoch_;
      b.reader = static_cast<int16_t>(thread);
      b.read_where = where;
    } else if (b.reader != thread) {
      b.reader = kSeveralReaders;
    }
  }
  return std::nullopt;
}

std::optional<Race> SharedShadow::write(int thread, size_t offset, size_t bytes, const std::source_location& where) {
  for (size_t i = offset; i < offset + bytes; i++) {
    Byte& b = bytes_[i];
    if (std::optional<Race> r = conflict(b, i, thread, where, true)) return r;
    b.write_epoch = epoch_;
    b.writer = static_cast<int16_t>(thread);
    b.write_where = where;
  }
  return std::nullopt;
}

std::optional<Race> SharedShadow::issue_async(int thread, size_t offset, size_t bytes,
                                              const std::source_location& where) {
  if (std::optional<Race> r = write(thread, offset, bytes, where)) return r;
  for (size_t i = offset; i < offset + bytes; i++) bytes_[i].in_flight_block = block_epoch_;
  return std::nullopt;
}

void SharedShadow::land_async(int thread, size_t offset, size_t bytes) {
  for (size_t i = offset; i < offset + bytes; i++) {
    Byte& b = bytes_[i];
    b.in_flight_block = 0;
    b.write_epoch = epoch_;
    b.writer = static_cast<int16_t>(thread);
  }
}

}  // namespace eth::kernels::simt::host
