#pragma once
// The z-lab DFlash benchmark's prompts, built from a local JSONL export of each dataset: which
// field of a row the benchmark reads and the fixed text it puts around it, as data. Source:
// z-lab/dflash `dflash/benchmark.py` (commit 44947fb), its DATASETS table and _prepare_dataset:
// every row becomes a list of user turns (one for the single-turn datasets, the row's own list for
// mt-bench), later rendered with the checkpoint's chat template turn by turn.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace draftgate::prompts {

struct BenchmarkDataset {
  std::string name;     // as benchmark.py's --dataset names it
  std::string hf_name;  // the Hugging Face dataset (config, split) benchmark.py loads
  std::string field;    // the row's field holding the prompt
  bool multi_turn;      // the field is a list of user turns (mt-bench), else one string
  std::string prefix;   // text before the field's value
  std::string suffix;   // text after it
};

// The five datasets, in benchmark.py's order.
const std::vector<BenchmarkDataset>& benchmark_datasets();
// The dataset called `name`; throws draftgate::Error naming `flag` and the valid names.
const BenchmarkDataset& benchmark_dataset(const std::string& name, const std::string& flag);

struct BenchmarkPrompt {
  std::string id;                  // "<dataset>-<row>", the row counted from 0 in the export
  std::vector<std::string> turns;  // the user turns, in order
};

// The prompts of the first `limit` rows (all when limit is 0) of the JSONL export `file`, one
// object per line (blank lines skipped). Throws draftgate::Error naming the file and line for
// malformed JSON or UTF-8, a row that is not an object, a missing field or one of the wrong type,
// and an export without rows.
std::vector<BenchmarkPrompt> build_benchmark_prompts(const BenchmarkDataset& dataset,
                                                     const std::filesystem::path& file,
                                                     std::int64_t limit);

// benchmark.py's _limit_dataset (its transformers and MLX backends' --max-samples): when there are
// more than `max_samples` prompts, random.shuffle them as Python seeded with `seed` would, and keep
// the first `max_samples`; else all of them, in order.
std::vector<BenchmarkPrompt> limit_as_max_samples(std::vector<BenchmarkPrompt> prompts,
                                                  std::int64_t max_samples, std::uint64_t seed);

// benchmark.py's _run_server (its vLLM and SGLang backends, --num-prompts N --concurrency C): it
// takes rows 0 … N+C−1 (wrapping around a shorter export), each row's first turn only, sends the
// first max(C, 1) as warmup and measures the rest: those N, a wrapped row's id suffixed "-again-K".
std::vector<BenchmarkPrompt> as_server_benchmark(const std::vector<BenchmarkPrompt>& prompts,
                                                 std::int64_t num_prompts,
                                                 std::int64_t concurrency);

// The prompt-set line: {"id": ..., "messages": [{"role": "user", "content": turn}, ...]}.
nlohmann::ordered_json prompt_line(const BenchmarkPrompt& prompt);

}  // namespace draftgate::prompts
