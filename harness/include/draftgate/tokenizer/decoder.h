#pragma once
// tokenizer.json's "decoder": ByteLevel (the alphabet back to bytes, then UTF-8 with invalid
// sequences replaced by U+FFFD), ByteFallback (<0xNN> tokens to bytes), Fuse and Sequence
// (Hugging Face tokenizers, src/decoders/*.rs and src/pre_tokenizers/byte_level.rs). Another
// type is refused by name.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // decode_chain: tokens in, tokens out; the text is their concatenation.
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

// nullptr for a null decoder (the library then joins the tokens with spaces).
std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& j, const JsonPlace& at);

}  // namespace draftgate::tokenizer
