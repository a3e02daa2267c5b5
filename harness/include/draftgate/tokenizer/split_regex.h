#pragma once
// The pre-tokenizers' regular expressions, matched by Oniguruma — the engine the Hugging Face
// library compiles them with (src/utils/onig.rs: onig::Regex::new, the default syntax, no
// options) — so every construct a tokenizer.json may hold means what it means there (\w, \s, \p{…},
// case folding, \b, \h, lookarounds, …); a pattern Oniguruma refuses is refused naming it.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

class SplitRegex {
 public:
  // kRegex: an Oniguruma pattern (Split's {"Regex": …}); kLiteral: the text itself (Split's
  // {"String": …}, which the library escapes with regex::escape).
  enum class Syntax { kRegex, kLiteral };
  SplitRegex(const std::string& pattern, Syntax syntax, const JsonPlace& at);
  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  // The [start, end) byte ranges of the successive non-overlapping matches in valid UTF-8
  // `text`, iterated as the onig crate's find_iter does (after an empty match the search resumes
  // one character later).
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  JsonPlace at_;
};

}  // namespace draftgate::tokenizer
