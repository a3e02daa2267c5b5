#pragma once
// Decoder-stack resolution: where a checkpoint's text decoder layers live, decided from the tensor
// names and validated against the config — never guessed from the class name. Every other indexed
// stack is reported with the reason it was rejected; when zero or several stacks qualify, the error
// lists every candidate.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/config.h"

namespace draftgate::layout {

// An indexed stack found in the tensor names: `<prefix>.<index>.<suffix>`.
struct StackCandidate {
  std::string prefix;      // as stored, e.g. "model.visual.blocks"
  std::int64_t count = 0;  // distinct layer indices
  std::int64_t min_index = 0;
  std::int64_t max_index = 0;
  std::string reason;  // why it is not the decoder stack
};

struct DecoderStack {
  std::string prefix;  // e.g. "model.language_model.layers"
  std::int64_t num_layers = 0;
  std::vector<std::string> layer_types;  // full_attention, linear_attention, sliding_attention, ...
  std::string embed_tokens;              // tensor names as stored
  std::string final_norm;
  std::string lm_head;  // equals embed_tokens when tied
  bool tied_embeddings = false;
  std::vector<std::int64_t> inline_mtp_layers;  // indices N.. of MTP layers stored inside the stack
  std::vector<StackCandidate> rejected;
  std::vector<std::string>
      notes;  // facts worth knowing (config/file disagreements the files settled)

  // "<prefix>.<index>" — the module path of decoder layer `index`.
  std::string layer_path(std::int64_t index) const;
};

// `source` names the checkpoint in errors (a directory or file). Throws draftgate::Error when no
// stack or more than one qualifies, or when the config contradicts the tensors.
DecoderStack resolve_decoder_stack(const std::vector<std::string>& names,
                                   const io::ModelConfig& config, const std::string& source);
DecoderStack resolve_decoder_stack(const io::Checkpoint& checkpoint);

// What is wrong where config.json unties the lm_head (tie_word_embeddings false) but the stack has
// none: loaders would initialise one randomly. Nothing otherwise.
std::optional<std::string> untied_lm_head_missing(const io::ModelConfig& config,
                                                  const DecoderStack& stack);

// {decoder_prefix, num_layers, layer_types, embed_tokens, final_norm, lm_head, tied_embeddings,
//  inline_mtp_layers, rejected_stacks: [{prefix, count, min_index, max_index, reason}], notes}
nlohmann::json to_json(const DecoderStack& stack);

// Splits "<prefix>.<index>.<suffix>" at the first numeric component that follows a layer-container
// word (layers, h, blocks, block, layer, decoder_layer). Returns false for names outside any stack.
struct StackName {
  std::string prefix;
  std::int64_t index = 0;
  std::string suffix;
};
bool split_stack_name(const std::string& name, StackName* out);

}  // namespace draftgate::layout
