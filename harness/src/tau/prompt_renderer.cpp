#include "draftgate/tau/prompt_renderer.h"

#include <optional>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/sha256.h"
#include "draftgate/template/chat_template.h"
#include "draftgate/tokenizer/tokenizer.h"

namespace draftgate::decode {
namespace fs = std::filesystem;

// tokenizer.json of the real checkpoints is ~11 MB (Qwen3) to ~20 MB (Qwen3.5).
constexpr std::uint64_t kMaxTokenizerBytes = 256ull << 20;

struct PromptRenderer::Loaded {
  tokenizer::Tokenizer tokenizer;
  std::optional<chat_template::CheckpointTemplate> chat_template;
  std::optional<bool> enable_thinking;
};

PromptRenderer::PromptRenderer(const PromptOptions& options, bool with_template) {
  if (options.tokenizer.empty())
    throw Error(options.tokenizer_origin, "text and messages prompts need a tokenizer.json");
  auto tok = [&] {
    try {
      return tokenizer::Tokenizer::load(options.tokenizer);
    } catch (const Error& e) {
      throw Error(e.file(), e.problem(),
                  e.hint().empty()
                      ? "text and messages prompts are tokenized by " + options.tokenizer_origin +
                            "'s tokenizer.json (the checkpoint's tokenizer files)"
                      : e.hint());
    }
  }();
  rendering_.tokenizer_sha256 =
      io::sha256_hex(io::read_input_file(tok.file(), kMaxTokenizerBytes, "a tokenizer.json"));
  loaded_ = std::make_unique<Loaded>(Loaded{std::move(tok), std::nullopt, options.enable_thinking});
  if (!with_template) return;
  const std::optional<fs::path> override_file =
      options.chat_template.empty() ? std::nullopt : std::optional<fs::path>(options.chat_template);
  loaded_->chat_template =
      chat_template::load_checkpoint_template(options.tokenizer, override_file);
  // The rendering depends on the template text and on the special-token variables it sees.
  io::Sha256 h;
  h.update(loaded_->chat_template->chat_template.source());
  h.update("\n");
  h.update(loaded_->chat_template->special_tokens.dump());
  rendering_.template_sha256 = h.hex_digest();
  rendering_.enable_thinking = options.enable_thinking;
}

PromptRenderer::~PromptRenderer() = default;

std::vector<std::int64_t> PromptRenderer::text_ids(const std::string& text,
                                                   const std::string& where) const {
  const std::vector<std::int32_t> ids = loaded_->tokenizer.encode(text, where);
  return {ids.begin(), ids.end()};
}

std::vector<std::int64_t> PromptRenderer::conversation_ids(const nlohmann::ordered_json& messages,
                                                           const std::string& where) const {
  if (!loaded_->chat_template)
    throw Error(where, "a conversation needs the chat template, which was not read");
  std::string text;
  try {
    text = chat_template::render_generation_prompt(*loaded_->chat_template, messages,
                                                   loaded_->enable_thinking);
  } catch (const Error& e) {
    throw Error(e.file(), e.problem() + " (rendering " + where + ")", e.hint());
  }
  return text_ids(text, where + " (rendered)");
}

std::string PromptRenderer::reply_text(const std::vector<std::int64_t>& ids) const {
  // huggingface/tokenizers tokenizer/mod.rs, decode: ids without a token are filtered out.
  std::vector<std::int32_t> known;
  for (const std::int64_t id : ids)
    if (id >= 0 && id <= INT32_MAX && loaded_->tokenizer.has_id(static_cast<std::int32_t>(id)))
      known.push_back(static_cast<std::int32_t>(id));
  return loaded_->tokenizer.decode(known, true);
}

std::vector<nlohmann::ordered_json> split_turns(const nlohmann::ordered_json& messages) {
  std::vector<nlohmann::ordered_json> turns(1, nlohmann::ordered_json::array());
  for (std::size_t k = 0; k < messages.size(); ++k) {
    turns.back().push_back(messages[k]);
    const bool next_user = k + 1 < messages.size() && messages[k + 1]["role"] == "user";
    if (messages[k]["role"] == "user" && next_user)
      turns.push_back(nlohmann::ordered_json::array());
  }
  return turns;
}

nlohmann::ordered_json conversation_at(const Prompt& prompt,
                                       const std::vector<std::string>& replies) {
  nlohmann::ordered_json conversation = prompt.messages;
  for (std::size_t t = 0; t < replies.size() && t < prompt.later_turns.size(); ++t) {
    conversation.push_back({{"role", "assistant"}, {"content", replies[t]}});
    for (const auto& m : prompt.later_turns[t]) conversation.push_back(m);
  }
  return conversation;
}

}  // namespace draftgate::decode
