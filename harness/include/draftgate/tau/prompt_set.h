#pragma once
// Prompt sets: JSONL, one prompt per line, an "id" and exactly one of
//   "input_ids"  token ids, decoded as they are;
//   "text"       a string, tokenized as is by the target's tokenizer.json;
//   "messages"   [{role, content}], rendered by the checkpoint's chat template with the generation
//                prompt (apply_chat_template(add_generation_prompt=True, enable_thinking=…)),
//                then tokenized. Several user turns in a row are decoded turn by turn, as z-lab's
//                dflash/benchmark.py runs mt-bench: each turn's greedy reply (decoded text) is
//                appended as the assistant message before the next user turn is rendered.
// Other keys (a label, a task name) are ignored.
//
// The set is identified by what is decoded: the SHA-256 of the parsed prompts (ids and token ids,
// in order), so blank lines, CRLF line endings, whitespace and key order do not change it; for
// text and messages prompts also by their rendering (the tokenizer's and the template's hashes and
// the thinking flag). Goldens and measured-τ files written before that recorded the SHA-256 of the
// file's bytes (file_sha256), which is kept for comparing with them.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace draftgate::decode {

struct Prompt {
  std::string id;
  // What is decoded: the ids given, the text's, or the conversation's up to its first reply.
  std::vector<std::int64_t> input_ids;
  // A conversation of several turns: the file's messages up to the first reply (rendered into
  // input_ids), then per later turn the messages appended after the previous turn's reply.
  nlohmann::ordered_json messages;
  std::vector<nlohmann::ordered_json> later_turns;

  std::size_t turns() const { return 1 + later_turns.size(); }
};

// How a verb renders text and messages prompts (cli's add_prompt_options fills all but the
// tokenizer, which is the target checkpoint's, or --tokenizer where a verb has no target).
struct PromptOptions {
  std::string tokenizer;                // a directory holding tokenizer.json, or the file
  std::optional<bool> enable_thinking;  // unset: undefined in the template (its own default)
  std::string chat_template;            // a template file instead of the checkpoint's
  // The flag that named each setting, for errors.
  std::string tokenizer_origin = "the target";
};

// `options` with the tokenizer (and chat template) of `target`, a checkpoint directory, unless
// --tokenizer named another.
PromptOptions with_target_tokenizer(PromptOptions options, const std::string& target);

// How text and messages became token ids. Absent for a set of input_ids only.
struct PromptRendering {
  std::string tokenizer_sha256;                // of tokenizer.json's bytes
  std::optional<std::string> template_sha256;  // of the template and its special-token variables;
                                               // set when messages were rendered
  std::optional<bool> enable_thinking;         // as passed to the template (unset: not passed)

  bool operator==(const PromptRendering& o) const {
    return tokenizer_sha256 == o.tokenizer_sha256 && template_sha256 == o.template_sha256 &&
           enable_thinking == o.enable_thinking;
  }
  bool operator!=(const PromptRendering& o) const { return !(*this == o); }
};

// {"tokenizer_sha256", "template_sha256" (or null), "enable_thinking" (or null)}; null for none.
nlohmann::json rendering_json(const std::optional<PromptRendering>& r);
// Reads what rendering_json wrote (absent or null: none); errors name `file` and `where`.
std::optional<PromptRendering> rendering_from_json(const nlohmann::json& j, const std::string& file,
                                                   const std::string& where);
// "tokenizer 1a2b3c4d5e6f…, template 9f8e…, thinking off" (or "token ids as given").
std::string describe_rendering(const std::optional<PromptRendering>& r);

class PromptRenderer;

struct PromptSet {
  std::string path;
  std::string sha256;       // of the parsed prompts: the set's identity (with the rendering)
  std::string file_sha256;  // of the file's bytes: what older goldens and measurements recorded
  std::vector<Prompt> prompts;
  std::optional<PromptRendering> rendering;
  // Renders the later turns of conversations while they are decoded; null without messages.
  std::shared_ptr<const PromptRenderer> renderer;

  // Turns decoded: one per prompt, several for a conversation of several user turns.
  std::size_t turns() const;
};

// Throws draftgate::Error naming the file and line for malformed lines (none, two or a wrong
// type of input_ids / text / messages, invalid UTF-8, an unknown role, a template that fails),
// empty or duplicate ids, empty or negative input_ids, or an empty set; and naming the flag for
// rendering options a set without messages would ignore. Blank lines are skipped. `origin` says
// where the path came from ("--prompts", "the golden g.json (prompt_set.path)", ...); every error
// names it. The tokenizer and template are read only when a line needs them.
PromptSet read_prompt_set(const std::filesystem::path& path, const std::string& origin,
                          const PromptOptions& options = {});

// The identity: SHA-256 over "draftgate.prompt_set/1\n" and, per prompt in order, the JSON array
// [id, [token ids]] (and, for a conversation of several turns, the messages of its later turns)
// and a newline.
std::string prompts_sha256(const std::vector<Prompt>& prompts);

// The JSON value of "sha256_of" in the prompt_set object of goldens and measured-τ files written
// with the content identity; files without it hold the SHA-256 of the file's bytes.
inline constexpr const char* kPromptsIdentity = "prompts";

}  // namespace draftgate::decode
