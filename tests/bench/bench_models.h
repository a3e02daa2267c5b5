#pragma once
// The benchmark models, written on first use (or by `target_bench --make-models`) under
// $DRAFTGATE_BENCH_MODELS (default: bench-models/ in the working directory).

#include <filesystem>
#include <map>
#include <string>

#include "draftgate/model/random_checkpoint.h"

namespace draftgate::bench {

// tiny-qwen3, tiny-qwen3_5, qwen3-0.6b (Qwen3-0.6B shapes), qwen3_5-0.8b (Qwen3.5-0.8B shapes,
// Qwen3 vocab).
const std::map<std::string, model::RandomTargetSpec>& target_models();
std::filesystem::path target_dir(const std::string& name);
// A random 16-block drafter for tiny-qwen3_5 (taps 0 and 2).
std::filesystem::path tiny_drafter_dir();

}  // namespace draftgate::bench
