#include "draftgate/prompts/benchmark_datasets.h"

#include <algorithm>
#include <sstream>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/prompts/python_random.h"

namespace draftgate::prompts {
namespace {

// benchmark.py's gsm8k and math500 instruction, after "{question}" / "{problem}" (its format
// strings write the braces of \boxed{} as "{{}}").
constexpr const char* kReasonSuffix =
    "\nPlease reason step by step, and put your final answer within \\boxed{}.";

std::string names_of(const std::vector<BenchmarkDataset>& all) {
  std::string s;
  for (const auto& d : all) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

// The user turns of one row: the field as the benchmark's format lambda reads it.
std::vector<std::string> row_turns(const BenchmarkDataset& d, const nlohmann::json& row,
                                   const std::string& where) {
  if (!row.is_object())
    throw Error(where, "a row must be a JSON object, not " + io::json_excerpt(row));
  const std::string hint = "export " + d.hf_name + " as described in docs/prompts.md";
  if (!row.contains(d.field))
    throw Error(where, "the row has no \"" + d.field + "\" field, which " + d.name + " reads",
                row.contains("turns") ? hint +
                                            "; rows of \"turns\" are benchmark.py's cache/ "
                                            "files (already formatted) or LMSYS's question.jsonl"
                                      : hint);
  const nlohmann::json& v = row[d.field];
  if (!d.multi_turn) {
    if (!v.is_string())
      throw Error(where, "\"" + d.field + "\" must be a string, not " + io::json_excerpt(v), hint);
    return {d.prefix + v.get<std::string>() + d.suffix};
  }
  if (!v.is_array() || v.empty())
    throw Error(where,
                "\"" + d.field + "\" must be a non-empty list of turns (strings), not " +
                    io::json_excerpt(v),
                hint);
  std::vector<std::string> turns;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw Error(where,
                  "\"" + d.field + "\"[" + std::to_string(i) + "] must be a string, not " +
                      io::json_excerpt(v[i]),
                  hint);
    turns.push_back(d.prefix + v[i].get<std::string>() + d.suffix);
  }
  return turns;
}

}  // namespace

const std::vector<BenchmarkDataset>& benchmark_datasets() {
  // z-lab/dflash dflash/benchmark.py (commit 44947fb), DATASETS: the load_args and each format.
  static const std::vector<BenchmarkDataset> all = {
      {"gsm8k", "openai/gsm8k (config main, split test)", "question", false, "", kReasonSuffix},
      {"math500", "HuggingFaceH4/MATH-500 (split test)", "problem", false, "", kReasonSuffix},
      {"humaneval", "openai/openai_humaneval (split test)", "prompt", false,
       "Write a solution to the following problem and make sure that it passes the tests:\n"
       "```python\n",
       "\n```"},
      // The sanitized config's "prompt"; the full config names its text "text" (not read).
      {"mbpp", "google-research-datasets/mbpp (config sanitized, split test)", "prompt", false, "",
       ""},
      // Multi-turn: the row's "prompt" is the list of user turns, each used as is.
      {"mt-bench", "HuggingFaceH4/mt_bench_prompts (split train)", "prompt", true, "", ""},
  };
  return all;
}

const BenchmarkDataset& benchmark_dataset(const std::string& name, const std::string& flag) {
  for (const auto& d : benchmark_datasets())
    if (d.name == name) return d;
  throw Error(flag, "unknown dataset \"" + name +
                        "\"; the benchmark's datasets: " + names_of(benchmark_datasets()));
}

std::vector<BenchmarkPrompt> build_benchmark_prompts(const BenchmarkDataset& dataset,
                                                     const std::filesystem::path& file,
                                                     std::int64_t limit) {
  const std::string bytes = io::read_input_file(file, io::kMaxJsonBytes, "a JSONL dataset export");
  std::vector<BenchmarkPrompt> out;
  std::istringstream lines(bytes);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (limit > 0 && static_cast<std::int64_t>(out.size()) == limit) break;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file.string() + ":" + std::to_string(number);
    const nlohmann::json row = io::parse_json_strict(line, where);
    out.push_back(
        {dataset.name + "-" + std::to_string(out.size()), row_turns(dataset, row, where)});
  }
  if (out.empty())
    throw Error(file.string(), "the export holds no rows (one JSON object per line)",
                "export " + dataset.hf_name + " as described in docs/prompts.md");
  return out;
}

std::vector<BenchmarkPrompt> limit_as_max_samples(std::vector<BenchmarkPrompt> prompts,
                                                  std::int64_t max_samples, std::uint64_t seed) {
  if (static_cast<std::int64_t>(prompts.size()) <= max_samples) return prompts;
  PythonRandom(seed).shuffle(prompts);
  prompts.resize(static_cast<std::size_t>(max_samples));
  return prompts;
}

std::vector<BenchmarkPrompt> as_server_benchmark(const std::vector<BenchmarkPrompt>& prompts,
                                                 std::int64_t num_prompts,
                                                 std::int64_t concurrency) {
  const auto rows = static_cast<std::int64_t>(prompts.size());
  const std::int64_t warmup = std::max<std::int64_t>(concurrency, 1);
  std::vector<BenchmarkPrompt> out;
  for (std::int64_t j = 0; j < num_prompts; ++j) {
    const std::int64_t at = warmup + j;
    BenchmarkPrompt p = prompts[static_cast<std::size_t>(at % rows)];
    p.turns.resize(1);  // item["turns"][0]
    if (at >= rows) p.id += "-again-" + std::to_string(at / rows);
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::ordered_json prompt_line(const BenchmarkPrompt& prompt) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& t : prompt.turns) messages.push_back({{"role", "user"}, {"content", t}});
  return {{"id", prompt.id}, {"messages", messages}};
}

}  // namespace draftgate::prompts
