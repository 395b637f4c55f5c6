// Gradient blocks: which ranks must sum which parameters.
//
// Layer l sits on a different rank in each pipeline, so there is no single data-parallel group.
// Number the model's units 0 = embedding (wpe), 1..L = transformer layers 0..L-1, L+1 = final
// layernorm. In every pipeline a stage holds a contiguous run of units (its layers, plus unit 0
// on a first stage and unit L+1 on a last stage). The union of all pipelines' stage boundaries
// cuts the units into blocks: maximal runs held by the same set of ranks. Each block is reduced
// once among exactly its owners, and it is one contiguous slice of each owner's gradients.
//
// The tied word embedding wte is not in any block: the first stage holds it as the embedding
// and the last stage as the LM head, so it is reduced among the ranks of every pipeline's first
// and last stages (tied_embedding_group), which sums both uses over all pipelines.
#pragma once

#include <string>
#include <vector>

#include "lib/plan/plan.hpp"

namespace eth {

struct GradBlock {
  int unit_begin = 0;        // [unit_begin, unit_end) over units 0 .. L+1
  int unit_end = 0;
  std::vector<int> owners;   // ranks holding these units, ascending
};

// Units of a stage holding `layers` of an L-layer model.
LayerRange stage_units(LayerRange layers, int num_layers);

// Units [unit_begin, unit_end) in words: "embedding + layer 0", "layers 1-2", "layer 3 + final
// layernorm" (layers counted from 0, as plans count them). For messages.
std::string units_name(int unit_begin, int unit_end, int num_layers);

// Blocks in unit order, for a validated plan. Messages and --inject-fault number them by
// this order: block 0 holds the embedding.
std::vector<GradBlock> derive_grad_blocks(const Plan& plan, int num_layers);

// Ranks of every pipeline's first and last stages, ascending.
std::vector<int> tied_embedding_group(const Plan& plan);

// The tied embedding's early sum (lib/runtime/late_embedding_rows.hpp), its pure rules.
// Rows (token positions) the tied group's members keep out of dwte per step in all: every
// pipeline's last micro-batch, T each sample.
int tied_rows_kept_late(const Plan& plan, int seq_len);
// Whether a plan's tied group sums early: the head is tied and the kept rows at most a quarter
// of the padded vocabulary (the same answer on every rank).
bool tied_sum_starts_early(const Plan& plan, const ModelConfig& model, int seq_len);

}  // namespace eth
