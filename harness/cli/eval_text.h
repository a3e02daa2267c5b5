#pragma once
// The text of what eval generated: each prompt's output ids decoded with the target checkpoint's
// tokenizer.json (special tokens kept, so an EOS shows where decoding stopped). A target without a
// usable tokenizer.json still evaluates: the output says why there is no text.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "draftgate/tokenizer/tokenizer.h"

namespace draftgate::cli {

struct OutputDecoder {
  std::optional<tokenizer::Tokenizer> tokenizer;
  std::string file;         // TARGET/tokenizer.json
  std::string unavailable;  // why there is no tokenizer (empty when there is one)
  bool unreadable = false;  // the file is there, but draftgate cannot read it
};

// TARGET/tokenizer.json when it exists and draftgate reads it; else `unavailable` says why (no
// file, or the reader's error naming the place).
OutputDecoder output_decoder(const std::string& target_dir);

// Adds "output_text" to each entry of `evaluation["per_prompt"]` (the decoded output_ids, or null
// with "output_text_unavailable" saying why, e.g. an id no token has) and the top-level
// "output_text": {"tokenizer": file, "skip_special_tokens": false} or {"tokenizer": null,
// "unavailable": why}.
void add_output_text(nlohmann::json& evaluation, const OutputDecoder& decoder);

}  // namespace draftgate::cli
