#pragma once
// The exit-code contract shared by the front end and the engine: parse with CLI11, run the chosen
// verb, and map every outcome onto 0 success, 1 a check failed, 2 bad input or usage — with one
// line on stderr for errors.

#include <functional>
#include <vector>

#include "verbs.h"

namespace draftgate::cli {

using AddVerb = void (*)(CLI::App&, VerbRunner*);

// `apply_threads` receives the --threads value after a successful parse.
int run_cli(int argc, char** argv, const std::vector<AddVerb>& verbs,
            const std::function<void(int)>& apply_threads);

}  // namespace draftgate::cli
