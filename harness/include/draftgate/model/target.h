#pragma once
// A target model (Qwen3 dense or Qwen3.5/3.6 hybrid) loaded from any checkpoint layout the
// decoder-stack resolution accepts, with an incremental cache (see cache.h) and hidden-state taps.
//
// Tap id l = output of decoder layer l (0-based) = HF hidden_states[l + 1], before the final norm.
// Batch size 1. Weights are zero-copy views of the mapped checkpoint when dtype and device match.

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/target_config.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/cache.h"
#include "draftgate/model/gated_delta_net.h"
#include "draftgate/model/target_layer.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

struct TargetOptions {
  std::optional<at::ScalarType>
      dtype;  // kBFloat16 or kFloat; unset = as stored (f32 for other dtypes)
  at::Device device = at::kCPU;
  GdnAlgorithm gdn = GdnAlgorithm::kChunked;  // for pending chains; trees always walk recurrently
  // Training: weights become owned copies listed in parameters() and forward passes record
  // autograd (no InferenceMode). The caller decides which parameters require grad.
  bool autograd = false;
  // Only the embedding, the final norm and lm_head, for a drafter that reads them (the decoder
  // layers are not loaded; extend() and forward() refuse).
  bool head_only = false;
  // How the user picks the stored bf16 instead of f32 (the flag or check parameter), named by the
  // hint of a memory refusal; empty when nothing but a larger machine avoids it.
  std::string dtype_flag = "--dtype bf16";
};

struct ForwardResult {
  at::Tensor logits;                        // [T, vocab] float32 (undefined when not requested)
  std::map<std::int64_t, at::Tensor> taps;  // tap id -> [T, hidden] float32
};

class TargetModel {
 public:
  static std::unique_ptr<TargetModel> load(const io::Checkpoint& checkpoint,
                                           const TargetOptions& options);

  const TargetConfig& config() const { return config_; }
  const layout::DecoderStack& stack() const { return stack_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }
  const at::Tensor& embed_weight() const { return embed_; }
  const at::Tensor& lm_head_weight() const { return lm_head_; }
  bool autograd() const { return autograd_; }
  // Every weight by checkpoint name (autograd mode only; empty otherwise).
  const ParameterMap& parameters() const { return parameters_; }

  TargetState new_state() const;

  // Runs `tokens` after the committed prefix. `parents[i]` (< i, or -1 for the committed tip) makes
  // them a tree, each token seeing only its ancestors and the committed prefix, at position
  // committed + depth; empty parents = a chain. The tokens stay pending until commit(). Taps must
  // be valid layer ids.
  ForwardResult extend(TargetState& state, const std::vector<std::int64_t>& tokens,
                       const std::vector<std::int64_t>& parents = {},
                       const std::vector<std::int64_t>& taps = {}, bool want_logits = true) const;
  // Keeps the pending tokens `path` (a root-to-node chain of pending indices) and drops the rest.
  void commit(TargetState& state, const std::vector<std::int64_t>& path) const;
  void commit_all(TargetState& state) const;

  // Limits checked before a sequence of `positions` positions (`new_positions` of them run at
  // once) is computed: at most max_position_embeddings, and the attention scores and logits of
  // the extension must fit in the memory the machine has available. Throws draftgate::Error
  // naming `source` (the prompt file, the flag) otherwise. extend() applies it to every call.
  void require_fits(std::int64_t positions, std::int64_t new_positions,
                    const std::string& source) const;

  // Fresh state, one chain extension, nothing kept.
  ForwardResult forward(const std::vector<std::int64_t>& tokens,
                        const std::vector<std::int64_t>& taps, bool want_logits = true) const;

  // The final norm of hidden states h [T, hidden], in the model's dtype (HF's hidden_states[-1] for
  // the last layer's output).
  at::Tensor final_norm(const at::Tensor& hidden) const;
  // lm_head(final_norm(h)) for hidden states h [T, hidden] in float32.
  at::Tensor logits_from_hidden(const at::Tensor& hidden) const;

 private:
  TargetModel(const io::Checkpoint& checkpoint, const TargetOptions& options);

  layout::DecoderStack stack_;
  TargetConfig config_;
  at::ScalarType dtype_;
  at::Device device_;
  GdnAlgorithm gdn_;
  bool autograd_;
  bool head_only_;
  ParameterMap parameters_;
  at::Tensor embed_, final_norm_, lm_head_;
  at::Tensor inv_freq_;  // shared by every attention layer
  std::vector<TargetLayer> layers_;
};

// What every way of running a target shares, so a streamed forward refuses and computes exactly
// what the in-memory one does.
//
// The compute dtype: options.dtype, else the embeddings' stored dtype (bf16; f32 for others).
at::ScalarType compute_dtype(const io::Checkpoint& checkpoint, const layout::DecoderStack& stack,
                             const TargetOptions& options);
// The config's tie flag and the files must agree (compared as stored, in chunks: no whole copy).
void check_tie_flag(const io::Checkpoint& checkpoint, const layout::DecoderStack& stack);
// Token ids inside the vocabulary, taps that are decoder layers, a non-empty sequence.
void check_tokens_and_taps(const TargetConfig& config, const std::vector<std::int64_t>& tokens,
                           const std::vector<std::int64_t>& taps);
// TargetModel::require_fits for any target of `config`.
void require_sequence_fits(const TargetConfig& config, std::int64_t positions,
                           std::int64_t new_positions, const std::string& source);

// Parses "cpu" / "cuda" / "cuda:N"; draftgate::Error naming `source` when this libtorch has no
// CUDA or no such GPU.
at::Device parse_device(const std::string& name, const std::string& source = "--device");
// Parses "bf16" / "f32".
at::ScalarType parse_dtype_flag(const std::string& name);
// Parses "chunked" / "recurrent".
GdnAlgorithm parse_gdn_flag(const std::string& name);

}  // namespace draftgate::model
