#pragma once
// Strict JSON reading shared by every file kind draftgate reads (config, index, safetensors
// header, golden, suite, prompt lines, --param values), and bounded JSON text for messages.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace draftgate::io {

// Limits every JSON text is held to before anything else looks at it. The deepest real file
// (a golden) nests 4 levels; printing, copying and comparing values recurse, so the depth is
// bounded where the text is read.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::uint64_t kMaxJsonBytes = 256ull << 20;

// Parses `text`; rejects invalid JSON, invalid UTF-8, NUL bytes, nesting deeper than
// kMaxJsonDepth, text over `max_bytes` and duplicate keys at any depth (nlohmann would keep the
// last one silently), in time linear in the text. Errors name `file`.
nlohmann::json parse_json_strict(std::string_view text, const std::string& file,
                                 std::uint64_t max_bytes = kMaxJsonBytes);

// Reads (see read_input_file) and strictly parses a JSON file (size-capped at `max_bytes`).
nlohmann::json read_json_file(const std::filesystem::path& path,
                              std::uint64_t max_bytes = kMaxJsonBytes);

// A value as bounded one-line text for messages: at most about `max_chars` characters, nested
// values elided past a few levels, never more work than the characters it prints. Invalid UTF-8
// inside strings is replaced.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 60);

// Serialises a value for a file draftgate writes. Strings carried as bytes (file names that are
// not UTF-8) are written with each invalid byte escaped as the text "\xNN", never thrown on.
std::string dump_json(const nlohmann::json& value, int indent = 2);

}  // namespace draftgate::io
