// The greedy pick of each row of a block's logits (a verify block's 16 rows, the drafter's 15, a
// decode step's one) over Qwen3's 151936-token vocabulary: draftgate's argmax_rows beside the
// at::argmax it replaced. The logits stay in the CPU's caches between iterations, as a block's do
// right after its lm_head product.

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include "draftgate/model/argmax_rows.h"

namespace draftgate::model {
namespace {

constexpr std::int64_t kVocab = 151936;

void BM_ArgmaxRows(benchmark::State& state, bool aten) {
  const at::Tensor logits = at::randn({state.range(0), kVocab}, at::kFloat);
  for (auto _ : state) {
    if (aten)
      benchmark::DoNotOptimize(logits.argmax(-1));
    else
      benchmark::DoNotOptimize(argmax_rows(logits));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(logits.nbytes()));
  state.counters["threads"] = at::get_num_threads();
}

bool register_all() {
  for (const auto& [name, aten] : {std::pair{"draftgate", false}, std::pair{"aten", true}})
    benchmark::RegisterBenchmark((std::string("ArgmaxRows/qwen3/") + name).c_str(), BM_ArgmaxRows,
                                 aten)
        ->ArgName("rows")
        ->Arg(1)
        ->Arg(15)
        ->Arg(16)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.2);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace draftgate::model
