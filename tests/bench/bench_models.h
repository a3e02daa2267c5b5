#pragma once
// The benchmark models, written on first use (or by `target_bench --make-models`) under
// $DRAFTGATE_BENCH_MODELS (default: bench-models/ in the working directory).

#include <filesystem>
#include <map>
#include <string>

#include "draftgate/model/random_checkpoint.h"

namespace draftgate::bench {

// tiny-qwen3, tiny-qwen3_5, qwen3-0.6b (Qwen3-0.6B shapes), qwen3_5-0.8b (Qwen3.5-0.8B shapes,
// Qwen3 vocab): the models `target_bench --make-models` writes.
const std::map<std::string, model::RandomTargetSpec>& target_models();
// qwen3-8b (Qwen3-8B shapes, 16.4 GB of bf16, written with a repeated block): written only when a
// benchmark asks for it.
const std::map<std::string, model::RandomTargetSpec>& large_target_models();
// The spec of either kind of model.
const model::RandomTargetSpec& target_spec(const std::string& name);
std::filesystem::path target_dir(const std::string& name);
// Random 16-block drafters: "tiny-qwen3_5" (taps 0 and 2), "qwen3-0.6b" (2 layers of the target's
// shapes, taps 1, 13, 25: the shape of z-lab's small DFlash drafters) and "qwen3-8b" (z-lab's
// Qwen3-8B-DFlash-b16 shapes: 5 layers, taps 1, 9, 17, 25, 33).
std::filesystem::path drafter_dir(const std::string& target);

}  // namespace draftgate::bench
