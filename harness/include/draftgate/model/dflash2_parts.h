#pragma once
// The two modules DFlash2 adds to a DFlash drafter (z-lab dflash/model.py @10129599,
// `GroupedDynamicCausalConv` and `CandidateSelector`), in inference form at temperature 0.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "draftgate/arch/drafter.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

// out[n, t, c] = Σ_{o < K, t−o ≥ 0} (base[o, c] + dynamic[n, t, o, c / group]) · x[n, t−o, c]: a
// causal convolution over the rows of each block n of x [N, T, H] (rows before a block's row 0 are
// zeros; no block sees another), one weight per channel from `base` [K, H] plus one per group of
// `group` channels from `dynamic` [N, T, K, H / group], which is computed from the output row.
// Inference passes one block (the reference's batch of 1), the training-mode forward all anchors'
// blocks at once. Accumulated offset by offset in x's dtype, as the reference.
at::Tensor grouped_dynamic_causal_conv(const at::Tensor& x, const at::Tensor& dynamic,
                                       const at::Tensor& base, std::int64_t group);

// `attention_conv` / `mlp_conv` of one layer: base_kernel [2, K, H] and kernel_projection
// [2·K·G, H]. prepare() convolves the sublayer's input [N, T, H] (N blocks of T rows) with kernel
// 0 and returns the dynamic weights for finish(), which convolves the sublayer's output with
// kernel 1. Only the block rows
// pass through it: the context's keys/values never do, and nothing carries across draft steps.
class DynamicConv {
 public:
  DynamicConv(const WeightLoader& w, const std::string& prefix, std::int64_t hidden,
              const Dflash2Config& config);
  struct Prepared {
    at::Tensor input;          // the convolved sublayer input [N, T, H]
    at::Tensor finish_kernel;  // dynamic weights [N, T, K, G] for finish()
  };
  Prepared prepare(const at::Tensor& x) const;
  at::Tensor finish(const at::Tensor& y, const at::Tensor& finish_kernel) const;

 private:
  std::int64_t kernel_, group_, groups_;
  at::Tensor base_, projection_;
};

// candidate_selector: per draft position the top-k candidates of the (capped) logits, scored
// unary + ⟨predecessor_codebook[prev] ⊙ hidden_projection(y_p), successor_codebook[candidate]⟩,
// walked greedily left to right from the anchor (prev = the token chosen one position earlier).
// The checkpoint stores the codebooks under `candidate_selector.{predecessor,successor}_codebook`
// (no `.weight`; the reference's loader remaps the names); `.weight` names are read as well.
class CandidateSelector {
 public:
  CandidateSelector(const io::Checkpoint& checkpoint, const WeightLoader& w, std::int64_t hidden,
                    std::int64_t vocab, const Dflash2Config& config);
  // y [n, H] (the drafter's final-normed rows), logits [n, vocab] in y's dtype → n draft tokens.
  std::vector<std::int64_t> walk(const at::Tensor& y, const at::Tensor& logits,
                                 std::int64_t anchor) const;

 private:
  std::int64_t top_k_;
  at::Tensor predecessor_, successor_, projection_;
};

}  // namespace draftgate::model
