#pragma once
// Text and conversations to token ids for a prompt set: the target's tokenizer.json and, for
// conversations, its chat template rendered as apply_chat_template(messages,
// add_generation_prompt=True, enable_thinking=…) renders it; and a reply's ids back to the text
// the next turn appends (z-lab dflash/benchmark.py @44947fb: tokenizer.decode(generated_ids,
// skip_special_tokens=True)). Torch-free.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/tau/prompt_set.h"

namespace draftgate::decode {

class PromptRenderer {
 public:
  // Reads the tokenizer, and the template when `with_template`; errors name their files.
  PromptRenderer(const PromptOptions& options, bool with_template);
  ~PromptRenderer();

  // Throws Error naming `where` for text that is not valid UTF-8.
  std::vector<std::int64_t> text_ids(const std::string& text, const std::string& where) const;
  // The conversation rendered with the generation prompt, then tokenized; template errors name
  // the template file, and `where` says which prompt.
  std::vector<std::int64_t> conversation_ids(const nlohmann::ordered_json& messages,
                                             const std::string& where) const;
  // The reply as the next turn's assistant message: special tokens skipped, and ids no token has
  // (a target's padded vocabulary) skipped, as the library's decode skips them.
  std::string reply_text(const std::vector<std::int64_t>& ids) const;

  const PromptRendering& rendering() const { return rendering_; }

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
  PromptRendering rendering_;
};

// Where a conversation is decoded: after each user message followed by another user message, and
// at its end (a conversation must not end with an assistant message). The groups of messages
// between those points, in order; the first is rendered first.
std::vector<nlohmann::ordered_json> split_turns(const nlohmann::ordered_json& messages);

// The conversation after `turn` replies (turn ≥ 1): the prompt's first messages, then per earlier
// turn its reply as an assistant message followed by that turn's messages.
nlohmann::ordered_json conversation_at(const Prompt& prompt,
                                       const std::vector<std::string>& replies);

}  // namespace draftgate::decode
