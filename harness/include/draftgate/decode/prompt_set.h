#pragma once
// Prompt sets: JSONL, one prompt per line: {"id": "...", "input_ids": [1, 2, ...], "text": "..."
// (optional)}. The set is identified by the SHA-256 of its file bytes.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace draftgate::decode {

struct Prompt {
  std::string id;
  std::vector<std::int64_t> input_ids;
  std::string text;  // optional, informational
};

struct PromptSet {
  std::string path;
  std::string sha256;
  std::vector<Prompt> prompts;
};

// Throws draftgate::Error naming the file and line for malformed lines, empty or duplicate ids,
// empty or negative input_ids, or an empty set. Blank lines are skipped.
PromptSet read_prompt_set(const std::filesystem::path& path);

}  // namespace draftgate::decode
