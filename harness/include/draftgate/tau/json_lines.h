#pragma once
// JSON lines (one JSON document a line), as the engines' responses are saved for `tau import`.

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace draftgate::tau {

constexpr std::uint64_t kMaxResponsesBytes = 1ull << 30;

// Calls `each(document, where)` for every non-blank line of `path` in order, `where` being
// "line N: ". draftgate::Error naming the file and the line when a line is not strict JSON (nesting
// capped), saying a `what` was expected there; an empty or unreadable file as read_input_file says.
void for_each_json_line(const std::filesystem::path& path, const std::string& what,
                        const std::function<void(const nlohmann::json&, const std::string&)>& each);

// The same over JSON lines already in memory (the responses `tau measure` collected), `source`
// naming where they came from and `unit` what a line is ("response": `where` is "response N: ").
void for_each_json_line(std::string_view text, const std::string& source, const std::string& unit,
                        const std::string& what,
                        const std::function<void(const nlohmann::json&, const std::string&)>& each);

}  // namespace draftgate::tau
