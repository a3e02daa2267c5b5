// `draftgate tau import`: a serving engine's acceptance counters (vLLM /metrics scrapes, SGLang
// /generate responses) → a measured-τ file (draftgate/tau/measured_tau.h) that `check --measured`
// and `golden record --measured` read.

#include <sys/wait.h>

#include <cstdlib>
#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/output_file.h"
#include "draftgate/tau/http_scrape.h"
#include "draftgate/tau/prometheus.h"
#include "draftgate/tau/prompt_set.h"
#include "draftgate/tau/sglang_requests.h"
#include "draftgate/tau/vllm_metrics.h"
#include "draftgate/tau/vllm_requests.h"
#include "prompt_options.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct TauImportOptions {
  std::string vllm_metrics, before, model_name;
  std::string vllm_metrics_url, run;
  std::string sglang_requests;
  std::string vllm_responses;
  std::string prompts;
  decode::PromptOptions prompt_options;  // how text and messages prompts are rendered
  std::int64_t num_speculative_tokens = 0;
  std::string engine_version;
  std::string out;
};

template <class T>
std::optional<T> given(const T& value, const T& unset) {
  return value == unset ? std::nullopt : std::optional<T>(value);
}

// Runs `command` with /bin/sh, its output passed through; anything but exit 0 is an error, since
// the counters around a failed benchmark measure nothing the gate should trust.
void run_benchmark(const std::string& command) {
  std::cout.flush();
  const int status = std::system(command.c_str());
  if (status == -1) throw Error("--run", "cannot start /bin/sh");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("--run",
                "\"" + command + "\" " +
                    (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                       : std::string("was killed by a signal")) +
                    "; nothing was measured");
}

// The run's two scrapes: from files, or from a live server around --run.
std::pair<tau::Scrape, std::optional<tau::Scrape>> vllm_scrapes(const TauImportOptions& opt) {
  if (opt.vllm_metrics_url.empty()) {
    std::optional<tau::Scrape> before;
    if (!opt.before.empty()) before = tau::read_scrape_file(opt.before);
    return {tau::read_scrape_file(opt.vllm_metrics), std::move(before)};
  }
  tau::Scrape before = tau::scrape_url(opt.vllm_metrics_url);
  run_benchmark(opt.run);
  return {tau::scrape_url(opt.vllm_metrics_url), std::move(before)};
}

int import(const TauImportOptions& opt) {
  const int sources = !opt.vllm_metrics.empty() + !opt.vllm_metrics_url.empty() +
                      !opt.vllm_responses.empty() + !opt.sglang_requests.empty();
  if (sources != 1)
    throw Error("--vllm-metrics",
                "give exactly one of --vllm-metrics, --vllm-metrics-url, --vllm-responses and "
                "--sglang-requests");
  if (!opt.vllm_metrics_url.empty() && opt.run.empty())
    throw Error("--vllm-metrics-url", "needs --run \"COMMAND\": the benchmark to measure",
                "draftgate scrapes before and after the command");
  if (opt.vllm_metrics_url.empty() && !opt.run.empty())
    throw Error("--run", "goes with --vllm-metrics-url");
  if (!opt.vllm_metrics_url.empty() && !opt.before.empty())
    throw Error("--before", "--vllm-metrics-url scrapes before the run itself; drop --before");
  if (!opt.sglang_requests.empty() && (!opt.before.empty() || !opt.model_name.empty()))
    throw Error("--before", "--before and --model-name go with --vllm-metrics");
  if (!opt.vllm_responses.empty() && !opt.before.empty())
    throw Error("--before", "goes with --vllm-metrics: per-request metrics need no earlier scrape");
  std::vector<io::RunPath> inputs = prompt_option_inputs(opt.prompt_options);
  inputs.insert(inputs.end(), {{opt.vllm_metrics, "--vllm-metrics"},
                               {opt.before, "--before"},
                               {opt.sglang_requests, "--sglang-requests"},
                               {opt.vllm_responses, "--vllm-responses"},
                               {opt.prompts, "--prompts"}});
  io::check_outputs({{opt.out, "--out"}}, inputs);
  require_slots({{opt.vllm_metrics, io::ArtifactKind::kEngineOutput, "--vllm-metrics"},
                 {opt.before, io::ArtifactKind::kEngineOutput, "--before"},
                 {opt.sglang_requests, io::ArtifactKind::kEngineOutput, "--sglang-requests"},
                 {opt.vllm_responses, io::ArtifactKind::kEngineOutput, "--vllm-responses"},
                 {opt.prompts, io::ArtifactKind::kPromptSet, "--prompts"}});

  std::optional<decode::PromptSet> set;
  if (!opt.prompts.empty()) set = read_prompts(opt.prompts, opt.prompt_options);
  const auto k = given<std::int64_t>(opt.num_speculative_tokens, 0);
  tau::MeasuredTau m;
  if (!opt.vllm_responses.empty()) {
    tau::VllmRequestsImport in{opt.vllm_responses,
                               k,
                               given<std::string>(opt.model_name, ""),
                               given<std::string>(opt.engine_version, ""),
                               std::nullopt,
                               opt.prompts};
    if (set) in.prompts = set->prompts.size();
    m = tau::import_vllm_requests(in);
  } else if (opt.sglang_requests.empty()) {
    auto [after, before] = vllm_scrapes(opt);
    tau::VllmImport in{std::move(after), std::move(before), given<std::string>(opt.model_name, ""),
                       k, given<std::string>(opt.engine_version, "")};
    m = tau::import_vllm_metrics(in);
    if (!opt.run.empty()) m.inputs["run"] = opt.run;
  } else {
    tau::SglangImport in{opt.sglang_requests, k, given<std::string>(opt.engine_version, ""),
                         std::nullopt, opt.prompts};
    if (set) {
      std::vector<std::string> ids;
      for (const auto& p : set->prompts) ids.push_back(p.id);
      in.prompt_ids = std::move(ids);
    }
    m = tau::import_sglang_requests(in);
  }
  if (set) {  // the identity goldens use: the SHA-256 of the parsed prompts
    m.prompt_set_path = opt.prompts;
    m.prompt_set_sha256 = set->sha256;
    m.prompt_set_prompts = static_cast<std::int64_t>(set->prompts.size());
    m.prompt_set_rendering = set->rendering;
    m.inputs["prompts"] = opt.prompts;
  }
  m.path = opt.out;
  io::write_text_atomically(opt.out, tau::to_json(m).dump(2) + "\n");
  std::cout << "measured τ " << opt.out << ": " << m.engine << ", τ pooled "
            << format_number(m.tau_pooled, 6);
  if (m.tau_macro) std::cout << ", τ macro " << format_number(*m.tau_macro, 6);
  std::cout << " (gated on " << m.tau_definition << "), " << m.drafts << " drafts, "
            << m.num_speculative_tokens << " speculative tokens";
  if (!m.per_position_acceptance.empty()) {
    std::cout << ", acceptance by depth";
    for (double a : m.per_position_acceptance) std::cout << " " << format_number(a, 3);
  }
  std::cout << (set ? ", prompt set " + set->sha256.substr(0, 12) + "…" : ", no prompt set")
            << "\n";
  return 0;
}

}  // namespace

void add_tau(CLI::App& app, VerbRunner* runner) {
  CLI::App* tau = app.add_subcommand("tau", "τ measured by a serving engine");
  tau->require_subcommand(1);
  auto opt = std::make_shared<TauImportOptions>();
  CLI::App* cmd = tau->add_subcommand(
      "import", "Turn vLLM /metrics scrapes or SGLang /generate responses into a measured-τ file");
  cmd->add_option("--vllm-metrics", opt->vllm_metrics,
                  "vLLM /metrics scrape taken after the benchmark run (Prometheus text)")
      ->check(path_value());
  cmd->add_option("--before", opt->before, "vLLM /metrics scrape taken before the run")
      ->check(path_value());
  cmd->add_option("--vllm-metrics-url", opt->vllm_metrics_url,
                  "A live vLLM /metrics URL: scraped before and after --run");
  cmd->add_option("--run", opt->run,
                  "With --vllm-metrics-url: the benchmark command (run by /bin/sh) between the "
                  "scrapes");
  cmd->add_option("--model-name", opt->model_name,
                  "The served model whose counters to read (label model_name; the responses' "
                  "model)");
  cmd->add_option("--vllm-responses", opt->vllm_responses,
                  "vLLM responses with per-request metrics (--per-request-spec-decode-metrics), "
                  "one JSON response a line")
      ->check(path_value());
  cmd->add_option("--sglang-requests", opt->sglang_requests,
                  "SGLang /generate responses, one JSON response a line")
      ->check(path_value());
  cmd->add_option("--prompts", opt->prompts,
                  "The prompt set the run used (JSONL): recorded by its sha256; SGLang responses "
                  "are tied to it by meta_info.id or order, vLLM responses by order")
      ->check(path_value());
  add_prompt_options(cmd, opt->prompt_options, true);
  cmd->add_option("--num-speculative-tokens", opt->num_speculative_tokens,
                  "Draft tokens per step, when the input does not say")
      ->check(integer_range(1, 4096));
  cmd->add_option("--engine-version", opt->engine_version, "Engine version, recorded as given");
  cmd->add_option("--out", opt->out, "Measured-τ file to write (JSON)")
      ->required()
      ->check(path_value());
  set_example(cmd,
              "draftgate tau import --vllm-metrics after.txt --before before.txt --prompts "
              "held-out.jsonl --out measured.json");
  set_example(tau,
              "draftgate tau import --sglang-requests responses.jsonl --prompts held-out.jsonl "
              "--out measured.json");
  cmd->callback([opt, runner] { *runner = [opt] { return import(*opt); }; });
  add_tau_measure(tau, runner);
}

}  // namespace draftgate::cli
