#pragma once
// tokenizer.json's "pre_tokenizer": Split (a regex or a literal, the five delimiter behaviours,
// invert), ByteLevel (add_prefix_space, use_regex with GPT-2's pattern) and Sequence, as the
// Hugging Face library applies them (src/pre_tokenizers/{split,byte_level,sequence}.rs,
// src/tokenizer/{pattern,normalizer}.rs). Another type is refused by name.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by the pieces it splits into; empty pieces are dropped.
  virtual void apply(std::vector<std::string>& pieces) const = 0;
};

// nullptr for a null pre-tokenizer.
std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& j, const JsonPlace& at);

}  // namespace draftgate::tokenizer
