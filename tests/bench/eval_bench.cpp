// The speculative loop end to end, and the drafter's block pass alone (BM_DrafterBlock).
// BM_GenerationCost: time per generated token from 256 to 2048 tokens on a tiny target (flat when
// no prefix is recomputed) and the share of it spent in the target vs the drafter.
// BM_SpeculativeLoop: `eval`'s loop on a Qwen3-0.6B-shaped target with a drafter of its shapes —
// tokens per second, the split target / drafter / bookkeeping, and the bound: the bytes each verify
// step reads (every target weight, every drafter weight, and the target's lm_head again for the
// drafter's block) per committed token, at the read bandwidth measured beside it; plus plain greedy
// decoding of the same target for contrast. The same loop on a Qwen3-8B-shaped target with a
// drafter of z-lab's Qwen3-8B-DFlash-b16 shapes (18.5 GB: written on first use, never by
// --make-models). tests/bench/peer/peer_speculative.py runs the same loop in eager PyTorch beside
// it.

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "bench_models.h"
#include "draftgate/decode/speculative.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "machine_bounds.h"

namespace draftgate::bench {
namespace {

// A benchmark target and its drafter, loaded as `eval` loads them (mapped, in their stored dtype);
// built in place, so the models never outlive a moved-from checkpoint.
struct TargetAndDrafter {
  explicit TargetAndDrafter(const std::string& name)
      : target_ckpt(io::Checkpoint::open(target_dir(name))),
        drafter_ckpt(io::Checkpoint::open(drafter_dir(name))),
        target(model::TargetModel::load(target_ckpt, {})),
        dflash(model::DFlashDrafter::load(drafter_ckpt, *target)) {}
  const io::Checkpoint target_ckpt, drafter_ckpt;
  const std::unique_ptr<model::TargetModel> target;
  const std::unique_ptr<model::DFlashDrafter> dflash;
};

void BM_GenerationCost(benchmark::State& state) {
  const TargetAndDrafter loaded("tiny-qwen3_5");
  const auto& target = loaded.target;
  const auto& dflash = loaded.dflash;
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

void BM_SpeculativeLoop(benchmark::State& state, const std::string& name) {
  const TargetAndDrafter loaded(name);
  const auto& target = loaded.target;
  const auto& dflash = loaded.dflash;
  const auto drafter = decode::dflash_block_drafter(*dflash);
  decode::DecodeConfig config;
  config.max_new_tokens = state.range(0);
  const std::vector<std::int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  decode::PromptRun run;
  for (auto _ : state) run = decode::speculative_generate(*target, *drafter, prompt, config);
  const double tokens = static_cast<double>(run.output.size());
  const double steps = static_cast<double>(run.acceptance.size());
  const auto greedy_start = std::chrono::steady_clock::now();
  const auto greedy = decode::greedy_generate(*target, prompt, state.range(0));
  const std::chrono::duration<double> greedy_s = std::chrono::steady_clock::now() - greedy_start;

  const std::int64_t vocab = target->config().vocab, hidden = target->config().hidden;
  const double step_bytes = checkpoint_bytes(loaded.target_ckpt) +
                            checkpoint_bytes(loaded.drafter_ckpt) +
                            static_cast<double>(vocab * hidden * 2);
  const double bound_ms = step_bytes * steps / tokens / read_bandwidth() * 1e3;
  // A row through a bf16 weight is one FLOP per byte of it: the prompt and every step's bonus and
  // drafted rows through the target, each step's block (its drafts and the bonus) through the
  // drafter's layers, the drafted rows through the target's lm_head.
  const double prompt_rows = static_cast<double>(prompt.size());
  const double drafted = static_cast<double>(run.drafted);
  const double flops = (prompt_rows + steps + drafted) * checkpoint_bytes(loaded.target_ckpt) +
                       (steps + drafted) * checkpoint_bytes(loaded.drafter_ckpt) +
                       drafted * static_cast<double>(vocab * hidden * 2);
  const double peak = dot_product_peak();
  const double compute_ms = peak > 0 ? flops / tokens / peak * 1e3 : 0;
  const double ms_per_token = run.seconds * 1e3 / tokens;
  state.counters["tokens_per_s"] = tokens / run.seconds;
  state.counters["ms_per_token"] = ms_per_token;
  state.counters["tau"] = tokens / steps;
  state.counters["target_share"] = run.target_seconds / run.seconds;
  state.counters["drafter_share"] = run.drafter_seconds / run.seconds;
  state.counters["bookkeeping_share"] =
      1 - (run.target_seconds + run.drafter_seconds) / run.seconds;
  state.counters["bytes_per_token_MB"] = step_bytes * steps / tokens / 1e6;
  state.counters["bound_ms_per_token"] = bound_ms;
  state.counters["of_bound"] = bound_ms / ms_per_token;
  state.counters["compute_bound_ms_per_token"] = compute_ms;
  state.counters["of_roofline"] = std::max(bound_ms, compute_ms) / ms_per_token;
  state.counters["greedy_ms_per_token"] =
      greedy_s.count() * 1e3 / static_cast<double>(greedy.size());
  state.counters["output_matches_greedy"] = run.output == greedy ? 1 : 0;
  state.counters["threads"] = at::get_num_threads();
}

// The drafter's block pass alone, as the speculative loop runs it: propose_tokens() of a full block
// (the picks taken in the lm_head product, no logits written) after `range(0)` committed positions
// of context (its K/V cached; the block's dropped after each pass, so every pass is alike), against
// the bytes it reads (every drafter weight and the target's lm_head for the block's rows) at the
// read bandwidth measured beside it.
void BM_DrafterBlock(benchmark::State& state, const std::string& name) {
  const TargetAndDrafter loaded(name);
  const auto& target = loaded.target;
  const auto& dflash = loaded.dflash;
  std::vector<std::int64_t> context(state.range(0)), rows;
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    context[i] = (i * 7919 + 1) % target->config().vocab;
    rows.push_back(i);
  }
  model::TargetState target_state = target->new_state();
  const model::ForwardResult forward =
      target->extend(target_state, context, {}, dflash->config().target_layer_ids);
  model::DrafterState drafter_state = dflash->new_state();
  dflash->add_context(drafter_state, dflash->features(forward, rows));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(dflash->propose_tokens(drafter_state, 5));
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  const double bytes = checkpoint_bytes(loaded.drafter_ckpt) +
                       static_cast<double>(target->config().vocab * target->config().hidden * 2);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  const double bound_ms = bytes / read_bandwidth() * 1e3;
  const double peak = dot_product_peak();
  const double compute_ms =
      peak > 0 ? static_cast<double>(dflash->block_size()) * bytes / peak * 1e3 : 0;
  const double ms = elapsed.count() * 1e3 / static_cast<double>(state.iterations());
  state.counters["bound_ms"] = bound_ms;
  state.counters["of_bound"] = bound_ms / ms;
  state.counters["compute_bound_ms"] = compute_ms;
  state.counters["of_roofline"] = std::max(bound_ms, compute_ms) / ms;
  state.counters["of_paired_bound"] = bench::paired_read_share(
      bytes, 7, [&] { benchmark::DoNotOptimize(dflash->propose_tokens(drafter_state, 5)); });
  state.counters["bytes_MB"] = bytes / 1e6;
  state.counters["threads"] = at::get_num_threads();
}

BENCHMARK_CAPTURE(BM_DrafterBlock, qwen3_0_6b, std::string("qwen3-0.6b"))
    ->Arg(64)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DrafterBlock, qwen3_8b, std::string("qwen3-8b"))
    ->Arg(64)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_SpeculativeLoop, qwen3_0_6b, std::string("qwen3-0.6b"))
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
// 16.4 GB of target and 2.1 GB of drafter, written on first use: run it by name.
BENCHMARK_CAPTURE(BM_SpeculativeLoop, qwen3_8b, std::string("qwen3-8b"))
    ->Arg(32)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace draftgate::bench
