// `draftgate tokenize --tokenizer DIR (--text STRING | --text-file FILE) [--json]`: the ids the
// checkpoint's tokenizer.json gives a text, for checking that draftgate tokenizes what a trainer or
// an engine tokenizes. Torch-free: the front end runs it.

#include <filesystem>
#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
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
  bool json = false;
};

// The bytes of FILE exactly (an empty file is the empty text).
std::string read_text_file(const std::string& path) {
  std::error_code ec;
  io::refuse_pseudo_file(path);
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 && !ec) return {};
  return io::read_input_file(path, kMaxTextBytes, "a text");
}

int run_tokenize(const TokenizeOptions& opt, bool text_given) {
  if (text_given == !opt.text_file.empty())
    throw Error("--text", "give exactly one of --text STRING and --text-file FILE");
  const std::string text = text_given ? opt.text : read_text_file(opt.text_file);
  const std::string source = text_given ? std::string("--text") : opt.text_file;
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
  text->excludes(file);
  cmd->add_flag("--json", opt->json,
                "Print one JSON object {\"ids\": [...], \"rendered\": \"...\"}");
  set_example(cmd, "draftgate tokenize --tokenizer /models/Qwen3-8B --text 'Hello world'");
  cmd->callback([opt, runner, text] {
    const bool text_given = text->count() > 0;
    *runner = [opt, text_given] { return run_tokenize(*opt, text_given); };
  });
}

}  // namespace draftgate::cli
