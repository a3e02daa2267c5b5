// The strict JSON parser (io/json_util.h) on objects of N nested members: its duplicate-key scan
// must stay linear in N (the callback parser it replaced rescanned the parent at every nested
// object's end: 200,000 members took minutes). Google Benchmark fits the complexity: run
// build/json_bench and read the BigO line (N, not N^2).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "draftgate/io/json_util.h"

namespace {

std::string nested_members(std::int64_t n) {
  std::string text = "{";
  for (std::int64_t i = 0; i < n; ++i) text += "\"k" + std::to_string(i) + "\":{\"a\":1},";
  return text + "\"last\":0}";
}

void BM_ParseStrictNestedMembers(benchmark::State& state) {
  const std::string text = nested_members(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(draftgate::io::parse_json_strict(text, "bench"));
  state.SetComplexityN(state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_ParseStrictNestedMembers)
    ->RangeMultiplier(4)
    ->Range(1 << 12, 1 << 18)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oN);

}  // namespace

BENCHMARK_MAIN();
