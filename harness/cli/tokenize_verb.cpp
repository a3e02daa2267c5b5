// `draftgate tokenize --tokenizer DIR (--text STRING | --text-file FILE | --messages FILE.json)
// [--enable-thinking true|false] [--chat-template FILE] [--json]`: the ids the checkpoint's
// tokenizer.json gives a text, or a conversation rendered by the checkpoint's chat template (with
// the generation prompt, as apply_chat_template(add_generation_prompt=True) renders it), for
// checking that draftgate tokenizes what a trainer or an engine tokenizes. Torch-free: the front
// end runs it.

#include <filesystem>
#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/template/chat_template.h"
#include "draftgate/tokenizer/tokenizer.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

namespace fs = std::filesystem;

// A prompt file past this is not a prompt.
constexpr std::uint64_t kMaxTextBytes = 64ull << 20;

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string text_file;
  std::string messages;
  std::string enable_thinking;  // "", "true" or "false"
  std::string chat_template;
  bool json = false;
};

// The bytes of FILE exactly (an empty file is the empty text).
std::string read_text_file(const std::string& path) {
  std::error_code ec;
  io::refuse_pseudo_file(path);
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 && !ec) return {};
  return io::read_input_file(path, kMaxTextBytes, "a text");
}

// The conversation in `opt.messages` rendered by the checkpoint's (or --chat-template's) template.
std::string render_messages(const TokenizeOptions& opt) {
  const nlohmann::ordered_json messages = chat_template::read_messages(opt.messages);
  const std::optional<fs::path> override_file =
      opt.chat_template.empty() ? std::nullopt : std::optional<fs::path>(opt.chat_template);
  return chat_template::render_generation_prompt(
      chat_template::load_checkpoint_template(opt.tokenizer, override_file), messages,
      opt.enable_thinking.empty() ? std::nullopt
                                  : std::optional<bool>(opt.enable_thinking == "true"));
}

int run_tokenize(const TokenizeOptions& opt, bool text_given) {
  const int inputs =
      (text_given ? 1 : 0) + (opt.text_file.empty() ? 0 : 1) + (opt.messages.empty() ? 0 : 1);
  if (inputs != 1)
    throw Error("--text",
                "give exactly one of --text STRING, --text-file FILE and --messages FILE.json");
  if (opt.messages.empty() && (!opt.enable_thinking.empty() || !opt.chat_template.empty()))
    throw Error(opt.enable_thinking.empty() ? "--chat-template" : "--enable-thinking",
                "only a conversation (--messages FILE.json) is rendered by a chat template");
  const std::string text = text_given              ? opt.text
                           : !opt.messages.empty() ? render_messages(opt)
                                                   : read_text_file(opt.text_file);
  const std::string source = text_given              ? std::string("--text")
                             : !opt.messages.empty() ? opt.messages + " (rendered)"
                                                     : opt.text_file;
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(opt.tokenizer);
  const std::vector<std::int32_t> ids = tok.encode(text, source);
  if (opt.json) {
    std::cout << io::dump_json(nlohmann::json{{"ids", ids}, {"rendered", text}}, -1) << "\n";
    return 0;
  }
  std::cout << "tokenizer  " << tok.file() << "\n"
            << "tokens     " << ids.size() << "\n"
            << "ids       ";
  for (const std::int32_t id : ids) std::cout << " " << id;
  std::cout << "\n";
  // Each token's own text, quoted as JSON (a token may end inside a character: U+FFFD then).
  for (const std::int32_t id : ids)
    std::cout << "  " << id << "\t" << io::dump_json(tok.decode({id}, false), -1) << "\n";
  return 0;
}

}  // namespace

void add_tokenize(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Encode a text with a checkpoint's tokenizer.json as the Hugging Face library does");
  cmd->add_option("--tokenizer", opt->tokenizer,
                  "Directory with tokenizer.json (a checkpoint), or the file itself")
      ->required()
      ->check(path_value());
  CLI::Option* text = cmd->add_option("--text", opt->text, "The text to encode");
  CLI::Option* file =
      cmd->add_option("--text-file", opt->text_file, "A file whose bytes, exactly, are the text")
          ->check(path_value());
  CLI::Option* messages =
      cmd->add_option("--messages", opt->messages,
                      "A JSON array of {role, content} messages, rendered by the checkpoint's chat "
                      "template with the generation prompt")
          ->check(path_value());
  cmd->add_option("--enable-thinking", opt->enable_thinking,
                  "Pass enable_thinking to the chat template (unset: the template's default)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_option("--chat-template", opt->chat_template,
                  "A Jinja chat template file to use instead of the checkpoint's")
      ->check(path_value());
  text->excludes(file);
  text->excludes(messages);
  file->excludes(messages);
  cmd->add_flag("--json", opt->json,
                "Print one JSON object {\"ids\": [...], \"rendered\": \"...\"}");
  set_example(cmd,
              "draftgate tokenize --tokenizer /models/Qwen3-8B --messages chat.json "
              "--enable-thinking false");
  cmd->callback([opt, runner, text] {
    const bool text_given = text->count() > 0;
    *runner = [opt, text_given] { return run_tokenize(*opt, text_given); };
  });
}

}  // namespace draftgate::cli
