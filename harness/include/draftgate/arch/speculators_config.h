#pragma once
// A speculators DFlash config.json (vllm-project/speculators DFlashSpeculatorConfig) read the way
// vLLM reads it: `SpeculatorsConfig.extract_transformers_pre_trained_config` starts from
// `transformer_layer_config` and `update_dflash` adds the DFlash fields (vLLM
// vllm/transformers_utils/configs/speculators/{base,algos}.py, the stored version whose
// update_dflash carries "DFlash configs use different indexing for the target layers, see #40727").
// The result is the z-lab-format config the same drafter would have, so one reader
// (DrafterConfig::from) serves both formats. Torch-free.

#include <cstdint>
#include <vector>

#include "draftgate/io/config.h"

namespace draftgate::model {

// transformer_layer_config, plus what `update_dflash` sets: architectures ["DFlashDraftModel"],
// draft_vocab_size, target_hidden_size (when given) and dflash_config {mask_token_id,
// target_layer_ids = aux_hidden_state_layer_ids − 1}; and the top-level block_size (vLLM takes the
// block from speculators_config's speculative_tokens + 1, which the key table requires to agree).
// The result names `speculators.file()` in its errors. Throws draftgate::Error naming the file
// and key when transformer_layer_config is not an object, aux_hidden_state_layer_ids is not a
// non-empty array of integers ≥ 1 (0 is the embedding output, which no DFlash tap reads), or
// mask_token_id / block_size are missing or not integers.
io::ModelConfig speculators_as_zlab(const io::ModelConfig& speculators);

// aux_hidden_state_layer_ids − 1: speculators counts hidden states with the embedding output as 0
// (speculators convert/dflash/converter.py @c05b95b3 :117-126 writes z-lab id + 1; vLLM's
// update_dflash subtracts it again). Throws as speculators_as_zlab does.
std::vector<std::int64_t> speculators_taps(const io::ModelConfig& speculators);

}  // namespace draftgate::model
