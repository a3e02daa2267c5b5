#pragma once
// GPT-2's byte-to-character alphabet (Hugging Face tokenizers, src/pre_tokenizers/byte_level.rs,
// bytes_char): the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the
// other 68 bytes, in order, become U+0100, U+0101, …

#include <string>
#include <string_view>

namespace draftgate::tokenizer {

// Each byte of `bytes` as its character, UTF-8 encoded.
std::string bytes_to_alphabet(std::string_view bytes);
// The byte character `c` stands for, or -1 when `c` is not in the alphabet.
int alphabet_byte(char32_t c);

}  // namespace draftgate::tokenizer
