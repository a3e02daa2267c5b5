#pragma once
// The DFlash drafter (z-lab/dflash reference semantics): a few Qwen3 layers that read target hidden
// states.
//
// Context: the tap features of newly committed positions, concatenated in target_layer_ids order,
// go through fc → hidden_norm and are injected as keys/values into every layer (k_norm on all keys,
// RoPE at their absolute positions); they persist in the drafter's cache. Draft: the block [anchor,
// MASK × (B−1)] embedded by the target (× input_embedding_scale), at positions s…s+B−1 (s = context
// length), attends to the context and to the block; the drafter's own final norm, then the
// target's lm_head on rows 1…B−1 (row j predicts position s+j). The block's K/V are dropped
// afterwards. A speculators drafter (drafter_config.h) embeds with and scores by its own
// embed_tokens / lm_head where it has them, as vLLM does, and a reduced draft vocabulary's logits
// are scattered onto target ids through d2t (draft_vocab.h) before the argmax. Inside the block a
// layer is causal or not as DrafterConfig::layer_causal says (the z-lab rule, drafter_config.h); a
// sliding_attention layer also hides keys `sliding_window` or more positions behind each query and,
// when not causal, as far ahead (z-lab `_attention_mask`). Logits are lm_head × output_multiplier,
// then soft-capped (z-lab `compute_logits`).
//
// DFlash2 (DrafterConfig::dflash2): each layer's attention and MLP sit between the two halves of
// a grouped dynamic causal convolution over the block rows (dflash2_parts.h), and the draft tokens
// come from the candidate_selector's walk over the per-position top-k instead of the argmax.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/drafter.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/attention.h"
#include "draftgate/model/decoder_layer_parts.h"
#include "draftgate/model/dflash2_parts.h"
#include "draftgate/model/target.h"

namespace draftgate::model {

// The keys each block query of one draft call sees, as z-lab's `_attention_mask` decides: queries
// at positions s…s+B−1, keys 0…s+B−1 (context, then the block). Causal: keys at or before the
// query. Window w: keys fewer than w positions behind the query and, if not causal, fewer than w
// ahead. Without a window the context is always visible and the result is [B, B] over the block's
// own keys (Attention::extend's short form); with one it is [B, s+B]. Bool, on `device`.
at::Tensor block_visibility(std::int64_t s, std::int64_t b, bool causal,
                            std::optional<std::int64_t> window, const at::Device& device);

// One draft step: the logits [B−1, vocab] (float32) of the positions after the anchor and the
// B−1 tokens drafted for them (their argmax, or DFlash2's selector walk).
struct BlockDraft {
  at::Tensor logits;
  std::vector<std::int64_t> tokens;
};

struct DrafterState {
  std::int64_t context =
      0;                    // positions whose features have been added = the next anchor's position
  std::vector<KVCache> kv;  // per layer: context K/V only
};

// A trainer's hypothetical mask for sliding `layers` in DFlashDrafter::training_logits, where
// z-lab's inference windows context and block alike and keeps the block causal.
enum class SlidingMask {
  kNoWindow,           // the window dropped, the block causal
  kFullLayer,          // no window and a bidirectional block: a full layer's mask (SpecForge's,
                       // dflash_family_model.py @a6b6b023 :47-88, for a config without one)
  kContextWindowOnly,  // the window on the context only, the block causal without it:
                       // SpecForge's sliding mask (create_dflash_sdpa_mask, :47-131), which
                       // differs from inference only where the window is below the block size
};
struct SlidingLayersMask {
  std::vector<std::int64_t> layers;
  SlidingMask mask = SlidingMask::kNoWindow;
};

class DFlashDrafter {
 public:
  // Loads unprefixed DFlash tensors (fc, hidden_norm, norm, layers.N.*) and validates them against
  // `target` (hidden size, fc width = taps × target hidden, taps in range, mask id inside the
  // target's embedding, vocab). `autograd`: owned weights in parameters(), passes record autograd.
  // `reading`: whose reading of dflash_config.causal decides the layers' causality.
  static std::unique_ptr<DFlashDrafter> load(const io::Checkpoint& checkpoint,
                                             const TargetModel& target, bool autograd = false,
                                             CausalityReading reading = CausalityReading::kZLab);

  const DrafterConfig& config() const { return config_; }
  std::int64_t block_size() const { return config_.block_size; }
  // Every drafter weight by checkpoint name (autograd mode only; empty otherwise).
  const ParameterMap& parameters() const { return parameters_; }
  DrafterState new_state() const;

  // The fc input rows for committed positions: taps of `r` concatenated in target_layer_ids order,
  // rows `rows` (indices into r's tokens). `r` must carry every tap.
  at::Tensor features(const ForwardResult& r, const std::vector<std::int64_t>& rows) const;
  // Adds context features [n, taps × target hidden] of the next n committed positions.
  void add_context(DrafterState& state, const at::Tensor& features) const;
  // The draft of the block [anchor, MASK × (rows−1)] at position state.context onward; rows is
  // the block size unless given (the reference shortens the last block of a generation to the
  // tokens still wanted, and a shorter block attends to fewer MASK rows).
  BlockDraft propose(DrafterState& state, std::int64_t anchor, std::int64_t rows = 0) const;
  // propose(…).tokens without the logits (the speculative loop's chain): where nothing follows
  // the lm_head product but the argmax, it is picked in the product (dense_argmax).
  std::vector<std::int64_t> propose_tokens(DrafterState& state, std::int64_t anchor,
                                           std::int64_t rows = 0) const;
  // propose(…).logits.
  at::Tensor draft(DrafterState& state, std::int64_t anchor) const;
  bool is_dflash2() const { return config_.dflash2.has_value(); }

  // Training mode, all blocks in one pass (SpecForge after PR #473): features [S, taps × target
  // hidden] of the whole sequence, `input_ids` [S], one block [input_ids[a], MASK × (B−1)] per
  // anchor a at positions a…a+B−1. Block j sees context positions strictly before a_j and its own
  // block (bidirectionally, or causally in a causal layer), no other block. Returns [anchors, B,
  // vocab] float32 (row 0, the anchor itself, carries no label). A sliding layer (window w) sees
  // keys fewer than w positions behind each query a+q, context and block alike (causal inside the
  // block by z-lab's rule, dflash/model.py @10129599; SpecForge's training mask,
  // dflash_family_model.py @a6b6b023 :47-88, is the same where w ≥ B) — what propose() gives.
  // `as_full` runs some sliding layers as full attention: a trainer bug's hypothesis.
  // DFlash2: each block's convolutions run over its own B rows (zeros before its row 0, nothing
  // from another block), so every block's logits equal propose()'s after the anchor's context.
  // kThroughAnchor reproduces the anchor-inclusive context bug (context kv <= a: the anchor's own
  // target state leaks); it exists so fixtures can carry that bug.
  enum class ContextVisibility { kBeforeAnchor, kThroughAnchor };
  at::Tensor training_logits(const at::Tensor& features, const std::vector<std::int64_t>& input_ids,
                             const std::vector<std::int64_t>& anchors,
                             ContextVisibility context = ContextVisibility::kBeforeAnchor,
                             const SlidingLayersMask& hypothesis = {}) const;

 private:
  struct Layer {
    NormsAndMlp parts;
    std::unique_ptr<Attention> attention;
    bool causal = false;                                  // inside the block
    std::optional<std::int64_t> window;                   // sliding_attention layers
    std::optional<DynamicConv> attention_conv, mlp_conv;  // DFlash2 only
  };
  DFlashDrafter(const io::Checkpoint& checkpoint, const TargetModel& target, bool autograd,
                CausalityReading reading);

  const TargetModel& target_;
  bool autograd_;
  ParameterMap parameters_;
  DrafterConfig config_;
  TargetConfig attention_config_;  // the Qwen3 attention shape the layers share
  // The block's final-normed hidden rows y [rows − 1, H] (after the anchor's row) for propose.
  at::Tensor block_output(DrafterState& state, std::int64_t anchor, std::int64_t rows) const;
  // Whether the logits are lm_head(y) as it is: no multiplier, soft-cap or reduced vocabulary.
  bool plain_logits() const;
  // lm_head(y) × output_multiplier, soft-capped, on target ids; in the model's dtype.
  at::Tensor logits(const at::Tensor& y) const;
  // logits(y) as float32.
  at::Tensor float_logits(const at::Tensor& y) const;
  // embed_ / lm_head_ / draft_targets_: the target's, or a speculators drafter's own.
  void load_embedding_and_head(const io::Checkpoint& checkpoint, const TargetModel& target);
  // h + the layer's MLP (inside DFlash2's mlp_conv) on whole blocks h [N·B, H].
  at::Tensor add_mlp(const Layer& l, const at::Tensor& h, std::int64_t block) const;

  at::Tensor fc_, hidden_norm_, norm_, inv_freq_;
  at::Tensor embed_, lm_head_;  // the block's embedding and the head: the target's unless its own
  at::Tensor draft_targets_;    // target id of each draft id (reduced vocabulary), else undefined
  std::vector<Layer> layers_;
  std::optional<CandidateSelector> selector_;  // DFlash2 only
};

}  // namespace draftgate::model
