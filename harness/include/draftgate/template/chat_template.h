#pragma once
// A checkpoint's chat template, rendered as transformers' apply_chat_template renders it: Jinja2's
// ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension,
// transformers' tojson (ensure_ascii=False, indent/separators/sort_keys), raise_exception and
// strftime_now (huggingface/transformers src/transformers/utils/chat_template_utils.py,
// _compile_jinja_template and render_jinja_template, commit 5e43e2e). Torch-free.
//
// Every failure is a draftgate::Error naming the template file and its line: a template that
// does not parse, a construct draftgate does not implement (refused, never rendered another way),
// an error Jinja2 raises too, the template's own raise_exception (its message), a bound passed.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "draftgate/template/evaluator.h"
#include "draftgate/template/parser.h"

namespace draftgate::chat_template {

// What apply_chat_template passes the template (render_jinja_template's variables).
struct RenderRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: the template sees None
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset: undefined in the template, as without the kwarg
  // Further variables: the tokenizer's special tokens (bos_token, eos_token, ...), other kwargs.
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Parses `source`; errors name `file`.
  static ChatTemplate parse(const std::string& source, const std::string& file);
  // The rendered text (render(messages, options) for a prompt set or the tokenize verb).
  std::string render(const RenderRequest& request, const RenderLimits& limits = {}) const;

  const std::string& file() const { return file_; }
  const std::string& source() const { return source_; }

 private:
  std::string file_;
  std::string source_;
  std::shared_ptr<const Template> tpl_;
};

// A checkpoint's template and the special-token variables its tokenizer_config.json gives
// (transformers passes special_tokens_map: bos/eos/unk/sep/pad/cls/mask_token and
// additional_special_tokens, those that are set).
struct CheckpointTemplate {
  ChatTemplate chat_template;
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
};

// `dir` is a checkpoint directory (or a file in it, e.g. its tokenizer.json). The template is
// `override_file` when given, else DIR/chat_template.jinja, else tokenizer_config.json's
// `chat_template` (a string, or the list of {name, template} whose "default" is taken).
CheckpointTemplate load_checkpoint_template(
    const std::filesystem::path& dir, const std::optional<std::filesystem::path>& override_file);

// apply_chat_template(messages, add_generation_prompt=True, enable_thinking=…): the conversation
// as a prompt to generate its next reply from, with the checkpoint's special-token variables.
std::string render_generation_prompt(const CheckpointTemplate& t,
                                     const nlohmann::ordered_json& messages,
                                     std::optional<bool> enable_thinking);

// A messages file: a JSON array of objects, each with a string `role` and a `content` (string,
// null, or a list of parts); other keys (reasoning_content, tool_calls, ...) pass through.
nlohmann::ordered_json read_messages(const std::string& path);
// The same check on JSON already read; errors name `file`.
void check_messages(const nlohmann::ordered_json& messages, const std::string& file);

}  // namespace draftgate::chat_template
