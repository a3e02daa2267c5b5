#pragma once
// tokenizer.json's "normalizer": NFC, NFD, NFKC, NFKD or a Sequence of them (Hugging Face
// tokenizers, src/normalizers/unicode.rs and mod.rs). Another type is refused by name.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
};

// nullptr for a null normalizer.
std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& j, const JsonPlace& at);

}  // namespace draftgate::tokenizer
