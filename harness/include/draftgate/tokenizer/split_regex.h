#pragma once
// The pre-tokenizers' regular expressions. tokenizer.json writes them for Oniguruma, the engine
// the Hugging Face library matches with (src/utils/onig.rs); draftgate matches with PCRE2 (UTF
// mode, JIT) after rewriting the constructs whose meaning differs between the two:
//   \s \S   Oniguruma: Unicode White_Space           -> \p{White_Space} / \P{White_Space}
//   \d \D   Unicode decimal digits                   -> \p{Nd} / \P{Nd}
//   \w \W   letters, marks, decimal digits, Pc       -> explicit property classes
//   \v      a vertical tab (PCRE2: any vertical space) -> \x{0B}
//   (?i:…)  passes as is: PCRE2 in UTF mode folds as Oniguruma does here ("'ſs" splits as
//           "'ſ", "s" in both: s, S and ſ are one case set)
//   ^ $     line anchors in Oniguruma's Ruby syntax  -> PCRE2_MULTILINE
// A construct outside this set (\b, \h, \R, \X, \G, \K, backreferences, …) is refused, never
// guessed.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

// The PCRE2 pattern for Oniguruma pattern `onig`; errors name `at`.
std::string translate_oniguruma(const std::string& onig, const JsonPlace& at);
// A literal string as a pattern (Split's {"String": …}).
std::string escape_literal(const std::string& literal);

class SplitRegex {
 public:
  // `pattern` is PCRE2 syntax (translate_oniguruma's output).
  SplitRegex(const std::string& pattern, const JsonPlace& at);
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
