#pragma once
// What several verbs share on the command line: validators whose messages print ranges as people
// write them ("1…65536", "≥ 0"; CLI11's own print a type's limits as 300-digit floats), and the
// decoding flags `eval` and `golden record` both take, so τ is measured the same way by both.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "draftgate/io/artifact_kind.h"
#include "draftgate/tau/decode_config.h"

namespace draftgate::cli {

// An integer in [min, max].
CLI::Validator integer_range(std::int64_t min, std::int64_t max);
// An integer ≥ 0 (token ids).
CLI::Validator non_negative_integer();
// A comma-separated list of integers, each checked by `element` as written, into `values`
// (repeating the flag appends). CLI11's own delimiter dropped empty elements: "--tokens 1,,2"
// read as 1,2 and "--taps 3," as 3; here an empty element is refused by its position.
CLI::Option* add_integer_list(CLI::App* cmd, const std::string& name,
                              std::vector<std::int64_t>& values, const std::string& description,
                              const CLI::Validator& element);
// Refuses a list naming one id twice ("--taps: tap 0 is given twice"): a repeated tap would be one
// tensor in a dump, or an fc input the target feeds twice.
void require_distinct(const std::vector<std::int64_t>& ids, const char* flag, const char* what);
// A 64-bit unsigned seed, refused (not clamped) past 2^64 - 1.
CLI::Validator seed_value();
// Every path flag's value: an empty one (`--golden "$UNSET"`) is refused by name, never read as
// "not given", so an unset CI variable cannot turn a check off unnoticed.
CLI::Validator path_value();

// --max-new, --eos, --tree-budget, --tree-top-k into `decode` (run_cli shows every default).
void add_decoding_options(CLI::App* cmd, decode::DecodeConfig& decode);
// Flags that only mean something together: --tree-top-k without a tree is an error, not ignored.
void check_decoding_flags(const decode::DecodeConfig& decode);

// --device cpu|cuda[:N]: where the target (and the drafter) compute.
void add_device_option(CLI::App* cmd, std::string& device);

// io::require_slot for each (path, kind, flag) whose path was given (non-empty).
void require_slots(
    const std::vector<std::tuple<std::string, io::ArtifactKind, const char*>>& slots);

// A checkpoint written by make-target / make-drafter goes into a new or empty directory: written
// into one that holds files, it replaced another checkpoint's weights in place, and files it does
// not write (another checkpoint's shards and index) were read beside its config afterwards.
void require_empty_directory(const std::string& path, const char* flag);

// The help page's footer: "Example:" and the command line(s).
void set_example(CLI::App* cmd, const std::string& example);

}  // namespace draftgate::cli
