#pragma once
// One registration function per CLI verb; each adds its subcommand and the callback that runs it.
// The callback returns the process exit code (0 pass, 1 a check failed, 2 bad input);
// draftgate::Error thrown from it becomes exit 2 in main.

#include <CLI/CLI.hpp>
#include <functional>

namespace draftgate::checks {
class Engine;
}

namespace draftgate::cli {

using VerbRunner = std::function<int()>;

// Thrown by a front-end verb that the engine must run instead.
struct NeedsEngine {};

void add_probe(CLI::App& app, VerbRunner* runner);
void add_forward(CLI::App& app, VerbRunner* runner);
void add_make_target(CLI::App& app, VerbRunner* runner);
void add_make_drafter(CLI::App& app, VerbRunner* runner);
void add_eval(CLI::App& app, VerbRunner* runner);
// `check`. The engine passes its model computations (checks/model_engine.h); the torch-free front
// end passes none and throws NeedsEngine (before printing anything) when a selected check, or
// reading the suites, needs the engine.
void add_check_verb(CLI::App& app, VerbRunner* runner, const checks::Engine* engine);
void add_golden(CLI::App& app, VerbRunner* runner);
void add_tau(CLI::App& app, VerbRunner* runner);
// `tau measure` under `tau` (tau_measure.cpp).
void add_tau_measure(CLI::App* tau, VerbRunner* runner);
void add_tokenize(CLI::App& app, VerbRunner* runner);
// `prompts build`: the z-lab benchmark's prompt sets from local dataset exports.
void add_prompts(CLI::App& app, VerbRunner* runner);

// `golden record --measured`: a golden from the reference drafter's measured τ
// (golden_measured.cpp).
int record_measured_golden(const std::string& measured, const std::string& out, bool force);

}  // namespace draftgate::cli
