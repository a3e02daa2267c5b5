#pragma once
// tokenizer.json's "model" of type BPE (Hugging Face tokenizers, src/models/bpe/{model,word,
// serialization}.rs): the vocabulary, the merges (["a", "b"] pairs or legacy "a b" strings) with
// their ranks, unk_token/fuse_unk, byte_fallback (<0xNN> tokens), continuing_subword_prefix,
// end_of_word_suffix and ignore_merges. A merge applies lowest rank first, and among equal ranks
// the leftmost pair first (word.rs, merge_all's min-heap on (rank, position)). Dropout is refused:
// it makes ids random.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class BpeModel {
 public:
  static BpeModel from_json(const nlohmann::json& j, const JsonPlace& at);

  // Appends the ids of `piece` (a pre-tokenized piece, valid UTF-8, non-empty).
  void tokenize(std::string_view piece, std::vector<std::int32_t>& ids) const;

  std::optional<std::int32_t> token_to_id(const std::string& token) const;
  // nullptr when no token has `id`.
  const std::string* id_to_token(std::int32_t id) const;
  // The number of vocabulary entries (what the library's get_vocab_size counts).
  std::size_t size() const { return vocab_.size(); }

 private:
  struct Merge {
    std::uint32_t rank;
    std::int32_t new_id;
  };
  static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  const Merge* merge_of(std::int32_t a, std::int32_t b) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::vector<const std::string*> by_id_;  // into vocab_'s keys; nullptr for unused ids
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::optional<std::string> unk_token_;
  std::optional<std::string> prefix_;
  std::optional<std::string> suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
};

}  // namespace draftgate::tokenizer
