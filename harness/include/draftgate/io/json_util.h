#pragma once
// Strict JSON reading shared by every file kind draftgate reads.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace draftgate::io {

// Parses `text`; rejects invalid JSON, invalid UTF-8 and duplicate keys at any depth (nlohmann
// would keep the last one silently). Errors name `file`.
nlohmann::json parse_json_strict(std::string_view text, const std::string& file);

// Reads and strictly parses a JSON file (size-capped at `max_bytes`).
nlohmann::json read_json_file(const std::filesystem::path& path,
                              std::uint64_t max_bytes = 256ull << 20);

}  // namespace draftgate::io
