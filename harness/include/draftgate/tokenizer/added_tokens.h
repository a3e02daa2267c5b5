#pragma once
// tokenizer.json's "added_tokens" and how the Hugging Face library finds them in a text
// (src/tokenizer/added_vocabulary.rs): before anything else, the tokens with normalized=false are
// matched in the raw text; the rest of the text is normalized piece by piece, and the tokens with
// normalized=true are matched in the normalized pieces (by their normalized content). Matching is
// leftmost-longest and non-overlapping; a match failing single_word is dropped (its text is not
// searched again); lstrip and rstrip widen a match over the whitespace beside it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class Normalizer;
class BpeModel;

struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A stretch of the text: an added token's id, or text still to pre-tokenize.
struct Segment {
  std::string text;
  std::optional<std::int32_t> id;
};

class AddedVocabulary {
 public:
  // The "added_tokens" array. Ids are assigned as the library assigns them (the model's id for a
  // content in the vocabulary, else the next free id after it); a token whose declared "id"
  // differs from that is refused, as are empty and repeated contents.
  static AddedVocabulary from_json(const nlohmann::json& j, const JsonPlace& at,
                                   const BpeModel& model, const Normalizer* normalizer);

  // `text` split into added tokens and normalized text (extract_and_normalize).
  std::vector<Segment> extract_and_normalize(std::string_view text,
                                             const Normalizer* normalizer) const;

  // The token with `id`, or nullptr.
  const AddedToken* find(std::int32_t id) const;
  // The content decode uses for `id` (the normalized content of a normalized token).
  const std::string* decoded_content(std::int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Matcher;  // a byte trie over one set of contents
  std::vector<Segment> split(std::string_view text, const std::vector<std::size_t>& set) const;

  std::vector<AddedToken> tokens_;
  std::vector<std::string> match_content_;   // per token: what is searched for
  std::vector<std::size_t> raw_set_;         // indices of normalized=false tokens
  std::vector<std::size_t> normalized_set_;  // indices of normalized=true tokens
};

}  // namespace draftgate::tokenizer
