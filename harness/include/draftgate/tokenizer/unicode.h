#pragma once
// The Unicode facts the tokenizer needs, from utf8proc (Debian's libutf8proc, Unicode 15.0 in
// 2.8): UTF-8 validation and decoding, the four normalization forms, and the character classes
// the Hugging Face library tests with Rust's `\s` and `\w` (added tokens' lstrip, rstrip and
// single_word).

#include <cstddef>
#include <string>
#include <string_view>

namespace draftgate::tokenizer {

// The byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates and
// code points above U+10FFFF are invalid, as in Rust's str), or npos when all of it is valid.
std::size_t invalid_utf8_at(std::string_view text);

// The code point at `pos` of valid UTF-8 `text`, and its length in bytes.
char32_t decode_utf8(std::string_view text, std::size_t pos, std::size_t* length);
void append_utf8(std::string& out, char32_t c);

// `bytes` as UTF-8 with every maximal invalid subsequence replaced by U+FFFD, as Rust's
// String::from_utf8_lossy does (the decoders' last step).
std::string utf8_lossy(std::string_view bytes);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// `text` (valid UTF-8) in the normal form.
std::string normalize(std::string_view text, NormalForm form);

// Unicode White_Space (Rust's and Oniguruma's `\s`).
bool is_white_space(char32_t c);
// Rust regex's `\w`: Alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t c);

}  // namespace draftgate::tokenizer
