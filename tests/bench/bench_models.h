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
// Random 16-block drafters: "tiny-qwen3_5" (taps 0 and 2) and "qwen3-0.6b" (2 layers of the
// target's shapes, taps 1, 13, 25: the shape of z-lab's small DFlash drafters).
std::filesystem::path drafter_dir(const std::string& target);

}  // namespace draftgate::bench
