// `draftgate prompts build --dataset NAME --from EXPORT.jsonl --out PROMPTS.jsonl [--limit N
// [--shuffle-seed S] | --server-backend N,C]`: the z-lab DFlash benchmark's prompts
// (dflash/benchmark.py: each dataset's field and fixed text, mt-bench's turns) as a prompt set of
// `messages` lines, from a JSONL export of the dataset made beforehand (nothing is downloaded).
// Torch-free: the front end runs it.

#include <iostream>
#include <sstream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/output_file.h"
#include "draftgate/prompts/benchmark_datasets.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct PromptsBuildOptions {
  std::string dataset;
  std::string from;
  std::string out;
  std::int64_t limit = 0;  // 0: every row
  bool shuffle = false;    // pick --limit rows as benchmark.py's --max-samples does
  std::uint64_t shuffle_seed = 0;
  std::vector<std::int64_t> server;  // N, C: the rows the server backends measure
};

int run_prompts_build(const PromptsBuildOptions& opt) {
  io::check_outputs({{opt.out, "--out"}}, {{opt.from, "--from"}});
  const prompts::BenchmarkDataset& dataset = prompts::benchmark_dataset(opt.dataset, "--dataset");
  if (opt.shuffle && opt.limit == 0)
    throw Error("--shuffle-seed", "goes with --limit N: it picks N rows as --max-samples N does");
  if (!opt.server.empty() && opt.server[0] < 1)
    throw Error("--server-backend", "N (--num-prompts) must be at least 1, got 0");
  // A shuffle draws from every row, and the server backends wrap around them, so all are read;
  // else rows past --limit are not.
  const auto built =
      !opt.server.empty()
          ? prompts::as_server_benchmark(prompts::build_benchmark_prompts(dataset, opt.from, 0),
                                         opt.server[0], opt.server[1])
      : !opt.shuffle
          ? prompts::build_benchmark_prompts(dataset, opt.from, opt.limit)
          : prompts::limit_as_max_samples(prompts::build_benchmark_prompts(dataset, opt.from, 0),
                                          opt.limit, opt.shuffle_seed);
  std::ostringstream text;
  std::size_t turns = 0;
  for (const auto& p : built) {
    text << prompts::prompt_line(p).dump() << "\n";
    turns += p.turns.size();
  }
  io::write_text_atomically(opt.out, text.str());
  std::cout << "wrote " << opt.out << ": " << built.size() << " " << dataset.name << " prompts ("
            << turns << " user turns) from " << opt.from << "\n";
  return 0;
}

}  // namespace

void add_prompts(CLI::App& app, VerbRunner* runner) {
  CLI::App* prompts = app.add_subcommand("prompts", "Build prompt sets");
  prompts->require_subcommand(1);
  auto opt = std::make_shared<PromptsBuildOptions>();
  CLI::App* cmd = prompts->add_subcommand(
      "build",
      "The z-lab DFlash benchmark's prompts (dflash/benchmark.py) from a local JSONL export of a "
      "dataset, as a prompt set of messages");
  cmd->add_option("--dataset", opt->dataset,
                  "The benchmark's dataset: gsm8k, math500, humaneval, mbpp or mt-bench")
      ->required();
  cmd->add_option("--from", opt->from,
                  "The dataset exported as JSONL, one row per line (docs/prompts.md)")
      ->required()
      ->check(path_value());
  cmd->add_option("--out", opt->out, "The prompt set to write (JSONL)")
      ->required()
      ->check(path_value());
  cmd->add_option("--limit", opt->limit,
                  "Only N rows: the first N (default: all), or with --shuffle-seed those "
                  "benchmark.py's --max-samples N takes")
      ->check(integer_range(1, std::numeric_limits<std::int32_t>::max()));
  CLI::Option* seed =
      cmd->add_option(
             "--shuffle-seed", opt->shuffle_seed,
             "With --limit N: the N rows benchmark.py's --max-samples N takes, shuffled by "
             "Python's random seeded S (0: its transformers backend, 42: MLX)")
          ->check(seed_value());
  cmd->add_option("--server-backend", opt->server,
                  "N,C: the N prompts benchmark.py's vllm / sglang backends measure with "
                  "--num-prompts N --concurrency C (rows C … N+C−1, wrapping; first turns only)")
      ->delimiter(',')
      ->expected(2)
      ->check(integer_range(0, std::numeric_limits<std::int32_t>::max()))
      ->excludes("--limit")
      ->excludes(seed);
  set_example(cmd,
              "draftgate prompts build --dataset gsm8k --from gsm8k-test.jsonl --out "
              "gsm8k.prompts.jsonl --limit 128");
  cmd->callback([opt, runner, seed] {
    opt->shuffle = seed->count() > 0;
    *runner = [opt] { return run_prompts_build(*opt); };
  });
}

}  // namespace draftgate::cli
