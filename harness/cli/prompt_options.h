#pragma once
// The prompt-rendering flags every verb that reads a prompt set takes (--enable-thinking,
// --chat-template, and --tokenizer where the verb has no target), and the one call that reads the
// prompt set with them, so text and messages prompts are rendered the same way by every verb.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "draftgate/io/output_file.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::cli {

// Adds the flags to `cmd`, filling `options`. `tokenizer_flag`: also --tokenizer DIR (for verbs
// without a target; elsewhere the tokenizer is the target checkpoint's tokenizer.json).
void add_prompt_options(CLI::App* cmd, decode::PromptOptions& options, bool tokenizer_flag = false);

// The files the flags name, as inputs an output must not overwrite (io::check_outputs).
std::vector<io::RunPath> prompt_option_inputs(const decode::PromptOptions& options);

// `path` (given by --prompts) read with `options`; text and messages prompts use `target`'s
// tokenizer.json and chat template unless --tokenizer named others.
decode::PromptSet read_prompts(const std::string& path, const decode::PromptOptions& options,
                               const std::string& target = {});

}  // namespace draftgate::cli
