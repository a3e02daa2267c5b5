#include "prompt_options.h"

#include "cli_options.h"

namespace draftgate::cli {

void add_prompt_options(CLI::App* cmd, decode::PromptOptions& options, bool tokenizer_flag) {
  cmd->add_option_function<std::string>(
         "--enable-thinking",
         [&options](const std::string& v) { options.enable_thinking = v == "true"; },
         "Pass enable_thinking to the chat template of \"messages\" prompts (unset: the "
         "template's default)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_option("--chat-template", options.chat_template,
                  "A Jinja chat template file for \"messages\" prompts instead of the checkpoint's")
      ->check(path_value());
  if (tokenizer_flag)
    cmd->add_option("--tokenizer", options.tokenizer,
                    "Checkpoint directory whose tokenizer.json (and chat template) render "
                    "\"text\" and \"messages\" prompts")
        ->check(path_value());
}

std::vector<io::RunPath> prompt_option_inputs(const decode::PromptOptions& options) {
  std::error_code ec;
  return {{options.chat_template, "--chat-template"},
          {options.tokenizer, "--tokenizer", std::filesystem::is_directory(options.tokenizer, ec)}};
}

decode::PromptSet read_prompts(const std::string& path, const decode::PromptOptions& options,
                               const std::string& target) {
  return decode::read_prompt_set(path, "--prompts", decode::with_target_tokenizer(options, target));
}

}  // namespace draftgate::cli
