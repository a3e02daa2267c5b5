#pragma once
// The target dtype `eval` and `golden record` decode at: one default for both, so a drafter's τ
// from `eval` and its golden's τ are measured alike (they differed, 1.008 vs 1.013 on one pair,
// when eval decoded as stored and golden record in float32).

#include <ATen/ATen.h>

#include <CLI/CLI.hpp>
#include <string>

#include "draftgate/io/checkpoint.h"

namespace draftgate::cli {

// --dtype f32|bf16 with the default stated in the help.
void add_decode_dtype_option(CLI::App* cmd, std::string& dtype);

// The flag's dtype; when empty, float32 if the target fits the memory budget in float32, else its
// stored dtype (decoding holds the whole target in memory, mapped rather than copied then).
at::ScalarType decode_dtype(const std::string& flag, const io::Checkpoint& target);

}  // namespace draftgate::cli
