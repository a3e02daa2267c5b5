#pragma once
// A Hugging Face tokenizer.json, encoded and decoded as the `tokenizers` library does: added
// tokens extracted first, then normalizer, pre-tokenizer and BPE model on the rest; decode maps
// ids to tokens (added tokens by content) and runs the decoder. What draftgate does not implement
// (another model type, truncation, padding, a post-processor that adds tokens) is refused when
// the file is read, naming the place, never approximated.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "draftgate/tokenizer/added_tokens.h"
#include "draftgate/tokenizer/bpe_model.h"

namespace draftgate::tokenizer {

class Normalizer;
class PreTokenizer;
class Decoder;

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json, or the file itself when `path` is one.
  static Tokenizer load(const std::filesystem::path& path);
  // Parses tokenizer.json text; errors name `file`.
  static Tokenizer from_text(std::string_view text, const std::string& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // The ids of valid UTF-8 `text` (the library's encode with add_special_tokens: the
  // post-processors draftgate accepts add none). Throws Error naming `source` when `text` is not
  // valid UTF-8.
  std::vector<std::int32_t> encode(std::string_view text, const std::string& source) const;
  // The pre-tokenizer alone on `text` as one piece (what the library's preTokenizeString shows):
  // the pieces, in the byte-level alphabet when the pre-tokenizer maps bytes.
  std::vector<std::string> pre_tokenize(std::string_view text) const;
  // The text of `ids`; an id no token has is an Error.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens) const;
  // The vocabulary's string for `id` (added tokens by content; byte-level alphabet as is).
  std::string id_to_token(std::int32_t id) const;
  // Whether some token (added or in the vocabulary) has `id`.
  bool has_id(std::int32_t id) const;

  const std::string& file() const { return file_; }
  const AddedVocabulary& added() const { return added_; }

 private:
  Tokenizer();
  std::string file_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  BpeModel model_;
  AddedVocabulary added_;
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace draftgate::tokenizer
