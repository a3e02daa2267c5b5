// One layer's softmax attention of a few query rows (a decode step, a verify block, the drafter's
// block) over a bf16 K/V cache at Qwen3-0.6B's 16 query heads of 128 over 8 KV heads: each
// few-row kernel this CPU runs beside the batched products a layer runs otherwise
// (batched_attention: oneDNN's bf16 bmm). The K/V rows stay in the CPU's caches between
// iterations, as a short context's do within a layer; the times decide which kernel
// few_row_attention_applies and best_few_row_attention_kernel pick (model/few_row_attention.h).

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "draftgate/model/attention.h"
#include "draftgate/model/few_row_attention.h"

namespace draftgate::model {
namespace {

constexpr int kBatched = -1;

void BM_FewRowAttention(benchmark::State& state, int kernel) {
  const std::int64_t queries = state.range(0), rows = state.range(1);
  const at::Tensor q = at::randn({queries, 16, 128}).to(at::kBFloat16);
  const at::Tensor keys = at::randn({8, rows, 128}).to(at::kBFloat16);
  const at::Tensor values = at::randn({8, rows, 128}).to(at::kBFloat16);
  const double scale = 1.0 / std::sqrt(128.0);
  for (auto _ : state)
    benchmark::DoNotOptimize(kernel == kBatched
                                 ? batched_attention(q, keys, values, {}, scale)
                                 : few_row_attention(q, keys, values, {}, scale,
                                                     static_cast<FewRowAttentionKernel>(kernel)));
  state.counters["threads"] = at::get_num_threads();
}

bool register_all() {
  const at::Tensor bf16_q = at::zeros({1, 1, 128}, at::kBFloat16);
  std::vector<std::pair<std::string, int>> kernels = {{"batched", kBatched}};
  for (const auto& [name, kernel] : {std::pair{"vectors", FewRowAttentionKernel::kVectors},
                                     std::pair{"tiles", FewRowAttentionKernel::kTiles},
                                     std::pair{"bf16-dots", FewRowAttentionKernel::kBf16Dots}})
    if (few_row_attention_kernel_takes(kernel, bf16_q))
      kernels.emplace_back(name, static_cast<int>(kernel));
  for (const auto& [name, kernel] : kernels)
    benchmark::RegisterBenchmark(("FewRowAttention/qwen3-0.6b/" + name).c_str(), BM_FewRowAttention,
                                 kernel)
        ->ArgNames({"queries", "rows"})
        ->ArgsProduct({{1, 4, 8, 16, 64}, {80, 1024}})
        ->Args({1, 8192})
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.2);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace draftgate::model
