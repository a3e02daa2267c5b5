// `draftgate tau import`: a serving engine's acceptance counters (vLLM /metrics scrapes, SGLang
// /generate responses) → a measured-τ file (draftgate/tau/measured_tau.h) that `check --measured`
// and `golden record --measured` read.

#include <iostream>

#include "cli_options.h"
#include "draftgate/decode/prompt_set.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/output_file.h"
#include "draftgate/tau/engine_import.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct TauImportOptions {
  std::string vllm_metrics, before, model_name;
  std::string sglang_requests;
  std::string prompts;
  std::int64_t num_speculative_tokens = 0;
  std::string engine_version;
  std::string out;
};

template <class T>
std::optional<T> given(const T& value, const T& unset) {
  return value == unset ? std::nullopt : std::optional<T>(value);
}

int import(const TauImportOptions& opt) {
  if (opt.vllm_metrics.empty() == opt.sglang_requests.empty())
    throw Error("--vllm-metrics", "give exactly one of --vllm-metrics and --sglang-requests");
  if (opt.vllm_metrics.empty() && (!opt.before.empty() || !opt.model_name.empty()))
    throw Error("--before", "--before and --model-name go with --vllm-metrics");
  io::check_outputs({{opt.out, "--out"}}, {{opt.vllm_metrics, "--vllm-metrics"},
                                           {opt.before, "--before"},
                                           {opt.sglang_requests, "--sglang-requests"},
                                           {opt.prompts, "--prompts"}});

  std::optional<decode::PromptSet> set;
  if (!opt.prompts.empty()) set = decode::read_prompt_set(opt.prompts, "--prompts");
  const auto k = given<std::int64_t>(opt.num_speculative_tokens, 0);
  tau::MeasuredTau m;
  if (!opt.vllm_metrics.empty()) {
    tau::VllmImport in{opt.vllm_metrics, std::nullopt, given<std::string>(opt.model_name, ""), k,
                       given<std::string>(opt.engine_version, "")};
    if (!opt.before.empty()) in.before = opt.before;
    m = tau::import_vllm_metrics(in);
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
                  "vLLM /metrics scrape taken after the benchmark run (Prometheus text)");
  cmd->add_option("--before", opt->before, "vLLM /metrics scrape taken before the run");
  cmd->add_option("--model-name", opt->model_name,
                  "The served model whose counters to read (label model_name)");
  cmd->add_option("--sglang-requests", opt->sglang_requests,
                  "SGLang /generate responses, one JSON response a line");
  cmd->add_option("--prompts", opt->prompts,
                  "The prompt set the run used (JSONL): recorded by its sha256; SGLang responses "
                  "are tied to it by meta_info.id or order");
  cmd->add_option("--num-speculative-tokens", opt->num_speculative_tokens,
                  "Draft tokens per step, when the input does not say")
      ->check(integer_range(1, 4096));
  cmd->add_option("--engine-version", opt->engine_version, "Engine version, recorded as given");
  cmd->add_option("--out", opt->out, "Measured-τ file to write (JSON)")->required();
  set_example(cmd,
              "draftgate tau import --vllm-metrics after.txt --before before.txt --prompts "
              "held-out.jsonl --out measured.json");
  set_example(tau,
              "draftgate tau import --sglang-requests responses.jsonl --prompts held-out.jsonl "
              "--out measured.json");
  cmd->callback([opt, runner] { *runner = [opt] { return import(*opt); }; });
}

}  // namespace draftgate::cli
