// Cost of the speculative loop as generation grows: time per generated token from 256 to 2048
// tokens (flat when no prefix is recomputed) and the share of it spent in the target vs the
// drafter.

#include <benchmark/benchmark.h>

#include "bench_models.h"
#include "draftgate/decode/speculative.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"

namespace draftgate::bench {
namespace {

void BM_GenerationCost(benchmark::State& state) {
  const auto target_ckpt = io::Checkpoint::open(target_dir("tiny-qwen3_5"));
  const auto drafter_ckpt = io::Checkpoint::open(tiny_drafter_dir());
  const auto target = model::TargetModel::load(target_ckpt, {});
  const auto dflash = model::DFlashDrafter::load(drafter_ckpt, *target);
  const auto drafter = decode::dflash_block_drafter(*dflash);
  decode::DecodeConfig config;
  config.max_new_tokens = state.range(0);
  decode::PromptRun run;
  for (auto _ : state)
    run = decode::speculative_generate(*target, *drafter, {1, 2, 3, 4, 5, 6, 7, 8}, config);
  const double tokens = static_cast<double>(run.output.size());
  state.counters["ms_per_token"] = run.seconds * 1e3 / tokens;
  state.counters["target_share"] = run.target_seconds / run.seconds;
  state.counters["drafter_share"] = run.drafter_seconds / run.seconds;
  state.counters["steps"] = static_cast<double>(run.acceptance.size());
}

BENCHMARK(BM_GenerationCost)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace draftgate::bench
