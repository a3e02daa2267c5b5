#pragma once
// Prompt sets: JSONL, one prompt per line: {"id": "...", "input_ids": [1, 2, ...], "text": "..."
// (optional)}. The set is identified by its content: the SHA-256 of the parsed prompts (ids and
// token ids, in order), so blank lines, CRLF line endings, whitespace, key order and the
// informational "text" do not change it. Goldens and measured-τ files written before that
// recorded the SHA-256 of the file's bytes (file_sha256), which is kept for comparing with them.

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
  std::string sha256;       // of the parsed prompts: the set's identity
  std::string file_sha256;  // of the file's bytes: what older goldens and measurements recorded
  std::vector<Prompt> prompts;
};

// Throws draftgate::Error naming the file and line for malformed lines, empty or duplicate ids,
// empty or negative input_ids, or an empty set. Blank lines are skipped. `origin` says where the
// path came from ("--prompts", "the golden g.json (prompt_set.path)", ...); every error names it.
PromptSet read_prompt_set(const std::filesystem::path& path, const std::string& origin);

// The identity: SHA-256 over "draftgate.prompt_set/1\n" and, per prompt in order, the JSON array
// [id, [token ids]] and a newline.
std::string prompts_sha256(const std::vector<Prompt>& prompts);

// The JSON value of "sha256_of" in the prompt_set object of goldens and measured-τ files written
// with the content identity; files without it hold the SHA-256 of the file's bytes.
inline constexpr const char* kPromptsIdentity = "prompts";

}  // namespace draftgate::decode
