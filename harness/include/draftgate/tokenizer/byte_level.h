#pragma once
// GPT-2's byte-to-character alphabet (Hugging Face tokenizers, src/pre_tokenizers/byte_level.rs,
// bytes_char): the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the
// other 68 bytes, in order, become U+0100, U+0101, …

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "draftgate/tokenizer/json_place.h"

namespace draftgate::tokenizer {

// The library's one ByteLevel struct, read as its pre-tokenizer, decoder and post-processor:
// add_prefix_space and trim_offsets required, use_regex true when absent.
struct ByteLevelFlags {
  bool add_prefix_space, trim_offsets, use_regex;
};
ByteLevelFlags byte_level_flags(const nlohmann::json& j, const JsonPlace& at);

// Each byte of `bytes` as its character, UTF-8 encoded.
std::string bytes_to_alphabet(std::string_view bytes);
// The byte character `c` stands for, or -1 when `c` is not in the alphabet.
int alphabet_byte(char32_t c);

}  // namespace draftgate::tokenizer
