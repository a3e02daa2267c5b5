#pragma once
// "did you mean --golden?" for a mistyped flag or verb: CLI11 says only that an argument was not
// expected or that a subcommand is required.

#include <CLI/CLI.hpp>
#include <string>

namespace draftgate::cli {

// " (--golen: did you mean --golden?)" for the first argument of argv that names no flag of the
// verb it follows (nor a global one) or no verb, when a name is close to it (edit distance at most
// a third of its length, and at least 1); "" otherwise. Call after app.parse() failed.
std::string suggestion(const CLI::App& app, int argc, char** argv);

}  // namespace draftgate::cli
