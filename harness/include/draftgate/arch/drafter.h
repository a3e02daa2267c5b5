#pragma once
// A DFlash drafter's config.json, interpreted: the shape of its layers, its block, mask id and the
// target layers it taps. Torch-free, so structural checks read it without loading libtorch.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "draftgate/arch/drafter_keys.h"
#include "draftgate/io/config.h"

namespace draftgate::model {

// Whose reading decides a layer's causality when the config carries `dflash_config.causal` but no
// top-level `is_causal`: z-lab's reference (and SGLang) never read dflash_config.causal; vLLM
// (`qwen3_dflash.py`, `_dflash_layer_causal`) honours it before its legacy rule.
enum class CausalityReading { kZLab, kVllm };
const char* causality_reading_name(CausalityReading reading);  // "zlab" | "vllm"
// Parses "zlab" / "vllm"; draftgate::Error naming `source` otherwise.
CausalityReading parse_causality_reading(const std::string& value, const std::string& source);

// Whether each drafter layer attends causally inside the block. The z-lab reference
// (dflash/model.py @10129599, Qwen3DFlashAttention.__init__): with `is_causal` absent or null a
// sliding_attention layer is causal and a full_attention layer is not; otherwise bool(is_causal)
// decides for every layer. kVllm consults `dflash_causal` (dflash_config.causal) between the two.
std::vector<bool> layer_causality(const std::vector<std::string>& layer_types,
                                  std::optional<bool> is_causal, std::optional<bool> dflash_causal,
                                  CausalityReading reading);

// The keys that decide the layers' causality, read on their own: the drafter_config check states
// them for configs that fail other rules. Draftgate::Error when a key has the wrong type.
// vLLM also reads dflash_config.use_swa / swa_window_size (`_resolve_layer_attention` @036a00d1):
// without a sliding layer in layer_types, use_swa makes every layer sliding; the window is
// swa_window_size, else sliding_window. z-lab reads only layer_types and sliding_window.
struct CausalityKeys {
  std::vector<std::string> layer_types;  // full_attention for every layer when the config has none
  std::optional<bool> is_causal;         // top level; null = absent
  std::optional<bool> dflash_causal;     // dflash_config.causal
  std::optional<std::int64_t> sliding_window;   // top level
  std::optional<bool> use_swa;                  // dflash_config.use_swa
  std::optional<std::int64_t> swa_window_size;  // dflash_config.swa_window_size
  std::vector<bool> layers(CausalityReading reading) const;
  // Each layer's sliding window under `reading` (nullopt: full attention; a sliding layer without
  // a window reads as 0, which DrafterConfig::from refuses).
  std::vector<std::optional<std::int64_t>> windows(CausalityReading reading) const;
  // True where z-lab's and vLLM's readings give some layer a different causality or window.
  bool readings_disagree() const;
  // Each layer as `reading` runs it: "0 full non-causal, 1 sliding(2048) causal".
  std::string describe(CausalityReading reading) const;
};
CausalityKeys read_causality_keys(const io::ModelConfig& config);

struct DrafterConfig;
// {"causality": "zlab", "drafter_causal": [false, true, …]}: the reading applied and each layer's
// causality inside the block, as eval's output and golden files record them under "decoding".
nlohmann::json causality_json(const DrafterConfig& config);
// One line for eval's output: each layer's type and causality, and what decided it.
std::string describe_causality(const DrafterConfig& config);
// Where the config carries dflash_config.causal without is_causal and the readings disagree: a
// note naming the file, the reading applied and the flag that picks the other one.
std::optional<std::string> causality_note(const DrafterConfig& config, const std::string& file);

// DFlash2 (z-lab `DFlash2DraftModel`, dflash/model.py @10129599): per layer a grouped dynamic
// causal convolution before and after attention and before and after the MLP, and a
// candidate_selector that walks per-position top-k candidates into the draft. Read from
// dflash_config first, then the top level, as the reference's `_draft_value` does.
struct Dflash2Config {
  std::int64_t conv_kernel_size = 0;  // taps of each convolution, over the block rows only
  std::int64_t conv_group_size = 0;   // hidden channels sharing one dynamic kernel weight
  std::int64_t selector_rank = 0;     // width of the predecessor/successor codebooks
  std::int64_t selector_top_k = 0;    // candidates per draft position
};

struct DrafterConfig {
  // The layout config.json is written in. A speculators config is read as vLLM reads it
  // (speculators_config.h): its transformer_layer_config with the DFlash fields added.
  DrafterFormat format = DrafterFormat::kZLab;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  double rms_eps = 1e-6;
  double rope_theta = 0;  // top-level rope_theta or rope_parameters.rope_theta (must agree)
  std::int64_t block_size = 0;
  std::int64_t mask_token_id = 0;
  std::vector<std::int64_t>
      target_layer_ids;  // taps: outputs of these target layers, in fc input order
  // The taps as the file writes them: target_layer_ids (z-lab), aux_hidden_state_layer_ids =
  // z-lab id + 1 (speculators).
  std::vector<std::int64_t> taps_as_written;
  std::optional<std::int64_t> num_target_layers;
  std::optional<std::int64_t> vocab_size;
  // speculators draft_vocab_size: the rows of the drafter's own lm_head. Below the target's
  // vocabulary the drafter proposes in its own vocabulary and d2t maps to target ids (vLLM
  // qwen3_dflash.py DFlashQwen3ForCausalLM.compute_logits).
  std::optional<std::int64_t> draft_vocab_size;
  std::vector<std::string> layer_types;  // full_attention | sliding_attention, as written
  std::optional<std::int64_t> sliding_window;
  // Each layer's attention window under the reading applied (nullopt: full attention).
  std::vector<std::optional<std::int64_t>> layer_window;
  // Causality: the config's keys, the reading applied, and the result per layer.
  CausalityKeys causality;
  CausalityReading causality_reading = CausalityReading::kZLab;
  std::vector<bool> layer_causal;
  // The target's raw input embeddings of the block are multiplied by this (z-lab
  // `_raw_input_embeddings`; dflash_config first, then the top level).
  double input_embedding_scale = 1.0;
  // Drafter logits = lm_head(y) × output_multiplier, then cap·tanh(ℓ/cap) where
  // final_logit_softcapping > 0 (z-lab `compute_logits`, v1 and v2 alike; before any top-k).
  double output_multiplier = 1.0;
  std::optional<double> final_logit_softcapping;
  // Set for a DFlash2 drafter: `architectures` names DFlash2DraftModel. Its keys without that
  // architecture (or the architecture without its keys) are an error, never a guess.
  std::optional<Dflash2Config> dflash2;

  // block_size and mask_token_id at the top level or under dflash_config (must agree where both are
  // given); target_layer_ids required under dflash_config (or the top level): never the default
  // formula, which is wrong for most published drafters. Throws draftgate::Error naming the file
  // and field.
  // `reading` only matters where readings_disagree().
  static DrafterConfig from(const io::ModelConfig& config,
                            CausalityReading reading = CausalityReading::kZLab);

  // The layers the checkpoint's tensors hold (`layers.N.*`, N written canonically: no leading
  // zeros) must be exactly 0..num_layers-1: a config that declares fewer would silently drop
  // trained layers. A speculators drafter holds only DFlashDraftModel's tensors. DFlash2 weights
  // (convolutions, candidate selector) need a DFlash2 config: a v1 one would silently draft without
  // them. Throws draftgate::Error naming the file.
  void check_tensors(const std::vector<std::string>& tensor_names, const std::string& file) const;
  // The shape loading the drafter requires of tensor `name` (a Qwen3 layer's, a DFlash2 layer's
  // convolutions and the candidate selector, the norms, its own embedding and head, the reduced
  // vocabulary's d2t / t2d) against a target of `target_vocab` ids; none for fc (its width is the
  // target's) and the tensors loading does not read (speculators' verifier_*). What a header-only
  // check compares.
  std::optional<std::vector<std::int64_t>> expected_shape(const std::string& name,
                                                          std::int64_t target_vocab) const;
  // The tensors loading the drafter requires, each as the names it may be stored under (a DFlash2
  // codebook bare or with ".weight"): fc, the norms, every layer's, a DFlash2 drafter's
  // convolutions and selector. Its own embedding, head, d2t and t2d are optional.
  std::vector<std::vector<std::string>> required_tensors() const;
};

// A reduced vocabulary (`draft_vocab` below `target_vocab`) is scored by the drafter's own lm_head
// and mapped to target ids by d2t: both must be in `tensor_names`. Throws draftgate::Error naming
// `dir` (what loading refuses, said from the headers by the structural checks too).
void require_draft_vocab_tensors(const std::vector<std::string>& tensor_names,
                                 std::int64_t draft_vocab, std::int64_t target_vocab,
                                 const std::string& dir);

// Which of `names` (one tensor's alternative names: a DFlash2 codebook bare or with ".weight")
// `tensor_names` holds, or "" when none; both is ambiguous and throws draftgate::Error naming
// `dir`.
std::string stored_name(const std::vector<std::string>& tensor_names,
                        const std::vector<std::string>& names, const std::string& dir);

}  // namespace draftgate::model
