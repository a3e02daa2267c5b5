#pragma once
// A small tokenizer.json and chat template for the tests of text and messages prompts
// (`tokenize`, prompt sets): byte-level ids (id = byte), "Ġh" = 256, the special <|end|> = 257;
// the template "ROLE: CONTENT<|end|>\n" per message, then "a:" (" h" with enable_thinking false).

#include <filesystem>

namespace draftgate::testing {

// DIR/tokenizer.json; returns DIR.
std::filesystem::path write_tokenizer(const std::filesystem::path& dir);
// write_tokenizer, and DIR/tokenizer_config.json with eos_token and the chat template.
std::filesystem::path write_chat_checkpoint(const std::filesystem::path& dir);

}  // namespace draftgate::testing
