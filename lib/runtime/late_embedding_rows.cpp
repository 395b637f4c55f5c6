#include "lib/runtime/late_embedding_rows.hpp"

#include "mpi_topology/host_messages.hpp"

namespace eth {

LateEmbeddingRows::LateEmbeddingRows(const ProcessGroup& tied, kernels::Backend& backend, int C, int my_rows,
                                     int all_rows)
    : tied_(&tied), backend_(&backend), C_(C),
      row_words_(C * static_cast<int>(wire_words(kernels::element_bytes(backend.storage())))),
      rows_(backend, static_cast<size_t>(my_rows) * row_words_), ids_(backend, static_cast<size_t>(my_rows)),
      gathered_rows_(backend, static_cast<size_t>(all_rows) * row_words_),
      gathered_ids_(backend, static_cast<size_t>(all_rows)) {}

void LateEmbeddingRows::add_gathered(float* dwte, int count) {
  host_rows_.resize(static_cast<size_t>(count) * row_words_);
  host_ids_.resize(static_cast<size_t>(count));
  if (count > 0) {  // a stage without the embedding keeps none (and holds no buffers to copy)
    backend_->copy_to_host(host_rows_.data(), rows_.data(), host_rows_.size() * sizeof(WireWord));
    backend_->copy_to_host(host_ids_.data(), ids_.data(), host_ids_.size() * sizeof(int32_t));
  }
  gather_labelled_rows(tied_->comm(), tied_->members(), host_rows_.data(), host_ids_.data(), count, row_words_, all_host_rows_,
                       all_host_ids_, "the gather of the tied embedding's last rows");
  const int total = static_cast<int>(all_host_ids_.size());
  if (total == 0) return;
  backend_->copy_to_device(gathered_rows_.data(), all_host_rows_.data(), all_host_rows_.size() * sizeof(WireWord));
  backend_->copy_to_device(gathered_ids_.data(), all_host_ids_.data(), all_host_ids_.size() * sizeof(int32_t));
  // The embedding's backward without wpe: row r adds into dwte[id r], rows in member order.
  backend_->encoder_backward(dwte, nullptr, kernels::ConstTensor(gathered_rows_.data(), backend_->storage()),
                             gathered_ids_.data(), 1, total, C_);
}

}  // namespace eth
