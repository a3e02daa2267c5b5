// One Qwen3.5-0.8B linear-attention layer's gated delta rule over a verify block (16 heads, a
// 128 x 128 float32 state each) in the two forms the engine runs: chunked (one chunk, as
// GdnAlgorithm::kChunked runs a block: fused_delta_chunk.h) and recurrent (a fused step per token:
// fused_delta_rule.h). The state stays in the CPU's caches between iterations, as a layer's does
// within a verify pass.

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <utility>

#include "draftgate/model/gated_delta_net.h"

namespace draftgate::model {
namespace {

void BM_DeltaRule(benchmark::State& state, GdnAlgorithm algorithm) {
  const std::int64_t tokens = state.range(0), heads = 16, dk = 128, dv = 128;
  at::manual_seed(1);
  DeltaInputs in;
  in.q = at::randn({tokens, heads, dk}) / std::sqrt(static_cast<double>(dk));
  in.k = at::randn({tokens, heads, dk});
  in.k = in.k / in.k.norm(2, -1, true);
  in.v = at::randn({tokens, heads, dv});
  in.g = -at::rand({tokens, heads});
  in.beta = at::rand({tokens, heads});
  const at::Tensor s0 = at::randn({heads, dk, dv});
  for (auto _ : state)
    benchmark::DoNotOptimize(algorithm == GdnAlgorithm::kChunked ? delta_rule_chunked(in, s0)
                                                                 : delta_rule_recurrent(in, s0));
  state.counters["threads"] = at::get_num_threads();
}

bool register_all() {
  for (const auto& [name, algorithm] : {std::pair{"chunked", GdnAlgorithm::kChunked},
                                        std::pair{"recurrent", GdnAlgorithm::kRecurrent}})
    benchmark::RegisterBenchmark((std::string("DeltaRule/qwen3_5-0.8b/") + name).c_str(),
                                 BM_DeltaRule, algorithm)
        ->ArgName("tokens")
        ->Arg(8)
        ->Arg(16)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.2);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace draftgate::model
