// `draftgate eval`: speculative decoding of a prompt set with a drafter (or the oracle), τ
// statistics.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "checks/drafter_provenance.h"
#include "checks/html_report.h"
#include "cli_options.h"
#include "decode_dtype.h"
#include "draftgate/decode/evaluation.h"
#include "draftgate/decode/speculative.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/output_file.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/progress.h"
#include "draftgate/tau/prompt_set.h"
#include "draftgate/tau/vllm_metrics.h"
#include "eval_text.h"
#include "prompt_options.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct EvalOptions {
  std::string target;
  std::string drafter;
  bool oracle = false;
  std::int64_t block_size = 16;
  std::string prompts;
  decode::PromptOptions prompt_options;  // how text and messages prompts are rendered
  decode::DecodeConfig decode;
  std::string dtype;
  std::string gdn = "chunked";
  std::string device = "cpu";
  std::string json;
  std::string html;
  std::string metrics_out;         // vLLM-format counters of the run
  std::string causality = "zlab";  // whose reading of dflash_config.causal
};

std::string fixed(double v, int digits = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

void print_row(const std::string& key, const std::string& value) {
  std::cout << key << std::string(key.size() < 14 ? 14 - key.size() : 1, ' ') << value << "\n";
}

// The run's counters in vLLM's /metrics format (draftgate/tau/vllm_metrics.h): drafts = verify
// steps, accepted = committed − steps, per position = steps that accepted that depth — so
// `tau import` of this file gives exactly the τ pooled and per-depth acceptance eval reports.
void write_vllm_metrics(const EvalOptions& opt, const decode::AcceptanceStats& stats) {
  std::vector<std::int64_t> per_pos;
  for (double share : stats.per_position_acceptance)
    per_pos.push_back(std::llround(share * static_cast<double>(stats.steps)));
  io::write_text_atomically(opt.metrics_out,
                            tau::vllm_metrics_text(opt.oracle ? "oracle" : opt.drafter, stats.steps,
                                                   stats.drafted, stats.accepted, per_pos));
}

// Every setting the run decoded with, so a reader can reproduce it (or see why τ differs).
std::string decoding_settings(const EvalOptions& opt, const std::string& mode, std::int64_t block,
                              const model::TargetModel& target) {
  const decode::DecodeConfig& d = opt.decode;
  std::string s = mode + ", block " + std::to_string(block);
  if (d.tree_budget > 0)
    s += ", tree budget " + std::to_string(d.tree_budget) + ", top-k " +
         (d.tree_top_k > 0 ? std::to_string(d.tree_top_k) : "= budget");
  s += ", max_new " + std::to_string(d.max_new_tokens) + ", EOS " +
       (d.eos_ids.empty() ? std::string("none") : format_ids(d.eos_ids)) + ", greedy, target " +
       (target.dtype() == at::kBFloat16 ? "bf16" : "f32") + ", gdn " + opt.gdn + ", device " +
       target.device().str();
  return s;
}

int run_eval(const EvalOptions& opt) {
  if (!opt.metrics_out.empty()) {
    if (opt.decode.tree_budget > 0)
      throw Error("--metrics-out", "vLLM's counters describe linear drafting; drop --tree-budget");
  }
  if (opt.decode.record_drafts && opt.json.empty())
    throw Error("--record-drafts", "the drafts go into --json FILE; give one");
  if (opt.oracle == !opt.drafter.empty())
    throw Error("eval", "give exactly one of --drafter DIR and --oracle");
  check_decoding_flags(opt.decode);
  std::vector<io::RunPath> inputs = prompt_option_inputs(opt.prompt_options);
  inputs.insert(inputs.end(), {{opt.target, "--target", true},
                               {opt.drafter, "--drafter", true},
                               {opt.prompts, "--prompts"}});
  io::check_outputs(
      {{opt.json, "--json"}, {opt.html, "--html"}, {opt.metrics_out, "--metrics-out"}}, inputs);
  require_slots({{opt.target, io::ArtifactKind::kTarget, "--target"},
                 {opt.drafter, io::ArtifactKind::kDrafter, "--drafter"},
                 {opt.prompts, io::ArtifactKind::kPromptSet, "--prompts"}});
  const auto set = read_prompts(opt.prompts, opt.prompt_options, opt.target);
  if (!opt.oracle) checks::refuse_foreign_drafter(opt.target, opt.drafter);
  const io::Checkpoint target_ckpt = io::Checkpoint::open(opt.target);
  model::TargetOptions options;
  options.dtype = decode_dtype(opt.dtype, target_ckpt);
  options.gdn = model::parse_gdn_flag(opt.gdn);
  options.device = model::parse_device(opt.device);
  const auto target = model::TargetModel::load(target_ckpt, options);
  decode::check_eos_vocabulary(opt.decode, *target, "--eos");
  // Read before decoding, so a tokenizer draftgate cannot read is said at once (eval goes on).
  std::optional<OutputDecoder> text_decoder;
  if (!opt.json.empty() || !opt.html.empty()) {
    text_decoder = output_decoder(opt.target);
    if (text_decoder->unreadable)
      std::cerr << "note: no output text: " << text_decoder->unavailable << "\n";
  }

  std::unique_ptr<io::Checkpoint> drafter_ckpt;
  std::unique_ptr<model::DFlashDrafter> dflash;
  std::unique_ptr<decode::BlockDrafter> drafter;
  if (opt.oracle) {
    if (opt.block_size < 2) throw Error("--block-size", "must be at least 2");
    drafter = decode::oracle_block_drafter(*target, opt.block_size, opt.decode.max_new_tokens);
  } else {
    drafter_ckpt = std::make_unique<io::Checkpoint>(io::Checkpoint::open(opt.drafter));
    dflash =
        model::DFlashDrafter::load(*drafter_ckpt, *target, false,
                                   model::parse_causality_reading(opt.causality, "--causality"));
    if (const auto note = model::causality_note(dflash->config(), drafter_ckpt->config().file()))
      std::cerr << "note: " << *note << "\n";
    drafter = decode::dflash_block_drafter(*dflash);
  }

  decode::Evaluation evaluation;
  {
    Progress progress("eval", "prompt", static_cast<std::int64_t>(set.prompts.size()));
    evaluation = decode::evaluate(
        *target, *drafter, set, opt.decode,
        [&](std::size_t done, std::size_t) { progress.update(static_cast<std::int64_t>(done)); });
  }
  const decode::AcceptanceStats& stats = evaluation.stats;
  const std::int64_t b = evaluation.block_size;

  const std::string mode =
      opt.oracle ? "oracle" : (opt.decode.tree_budget > 0 ? "ddtree" : "dflash");
  const std::string turns = set.turns() == set.prompts.size()
                                ? std::string()
                                : ", " + std::to_string(set.turns()) + " turns";
  print_row("prompts", std::to_string(set.prompts.size()) + turns + "  (" + set.path + ", sha256 " +
                           set.sha256.substr(0, 12) + "…; " +
                           decode::describe_rendering(set.rendering) + ")");
  print_row("decoding", decoding_settings(opt, mode, b, *target));
  if (dflash) print_row("drafter layers", model::describe_causality(dflash->config()));
  print_row("tau", "macro " + fixed(stats.tau_macro) + "   pooled " + fixed(stats.tau_pooled) +
                       "   (tokens committed per verify step)");
  std::string hist;
  for (std::size_t k = 1; k < stats.histogram.size(); ++k)
    if (stats.histogram[k] > 0)
      hist += std::to_string(k) + ":" + std::to_string(stats.histogram[k]) + " ";
  print_row("histogram", hist);
  std::string per_pos;
  for (double a : stats.per_position_acceptance) per_pos += fixed(a, 2) + " ";
  print_row("per position", per_pos);
  print_row("steps", std::to_string(stats.steps) + " verify steps, " +
                         std::to_string(stats.drafted) + " drafted, " +
                         std::to_string(stats.accepted) + " accepted, " +
                         std::to_string(stats.target_forwards) + " target forwards");
  print_row("throughput", std::to_string(stats.generated_tokens) + " tokens in " +
                              fixed(stats.seconds, 2) + " s (" +
                              fixed(stats.generated_tokens / std::max(stats.seconds, 1e-9), 1) +
                              " tok/s); target " + fixed(stats.target_seconds, 2) + " s, drafter " +
                              fixed(stats.drafter_seconds, 2) + " s");

  if (!opt.json.empty() || !opt.html.empty()) {
    nlohmann::json out = decode::evaluation_json(evaluation);
    out["prompt_set"] = set.path;
    out["prompt_set_sha256"] = set.sha256;
    out["prompt_set_rendering"] = decode::rendering_json(set.rendering);
    out["prompt_set_turns"] = set.turns();
    out["decoding"] = decode::decoding_json(opt.decode, mode, b);
    if (dflash) out["decoding"].update(model::causality_json(dflash->config()));
    out["target"] = {{"path", opt.target},
                     {"family", model::family_name(target->config().family)},
                     {"dtype", target->dtype() == at::kBFloat16 ? "bf16" : "f32"},
                     {"gdn", opt.gdn}};
    out["drafter"] = opt.oracle ? nlohmann::json("oracle") : nlohmann::json(opt.drafter);
    out["timing"] = decode::timing_json(stats);
    add_output_text(out, *text_decoder);
    if (!opt.json.empty()) io::write_text_atomically(opt.json, io::dump_json(out) + "\n");
    if (!opt.html.empty()) io::write_text_atomically(opt.html, checks::html_eval_report(out));
  }
  if (!opt.metrics_out.empty()) write_vllm_metrics(opt, stats);
  return 0;
}

}  // namespace

void add_eval(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Speculative decoding of a prompt set; acceptance-length statistics");
  cmd->add_option("--target", opt->target, "Target checkpoint directory")
      ->required()
      ->check(path_value());
  CLI::Option* drafter =
      cmd->add_option("--drafter", opt->drafter, "DFlash drafter checkpoint directory")
          ->check(path_value());
  cmd->add_flag("--oracle", opt->oracle,
                "Draft the target's own greedy tokens (self-test: τ = block size)");
  // A drafter's block size is its config's: the flag would be ignored beside one.
  cmd->add_option("--block-size", opt->block_size, "Block size for --oracle")
      ->check(integer_range(2, decode::kMaxBlockSize))
      ->excludes(drafter);
  cmd->add_option("--prompts", opt->prompts,
                  "Prompt set (JSONL: id and one of input_ids, text, messages)")
      ->required()
      ->check(path_value());
  add_prompt_options(cmd, opt->prompt_options);
  add_decoding_options(cmd, opt->decode);
  add_decode_dtype_option(cmd, opt->dtype);
  cmd->add_option("--gdn", opt->gdn, "Gated DeltaNet algorithm for prefill: chunked or recurrent");
  add_device_option(cmd, opt->device);
  cmd->add_option("--causality", opt->causality,
                  "Whose reading of the drafter's attention keys: zlab (the reference: is_causal, "
                  "layer_types, sliding_window) or vllm (also dflash_config.causal, use_swa, "
                  "swa_window_size)")
      ->check(CLI::IsMember({"zlab", "vllm"}))
      ->capture_default_str();
  cmd->add_option("--json", opt->json, "Write the full result as JSON")->check(path_value());
  cmd->add_flag("--record-drafts", opt->decode.record_drafts,
                "With --json: each prompt's drafted tokens at every verify step");
  cmd->add_option("--html", opt->html,
                  "Write a self-contained HTML report: τ histogram, per-depth acceptance, prompts")
      ->check(path_value());
  cmd->add_option("--metrics-out", opt->metrics_out,
                  "Write the run's acceptance counters as vLLM's /metrics shows them "
                  "(Prometheus text; linear DFlash only)")
      ->check(path_value());
  set_example(cmd,
              "draftgate eval --target fixtures/trained/qwen3-target --drafter "
              "fixtures/trained/qwen3-drafter-reference --prompts "
              "fixtures/trained/prompts/held-out.jsonl --max-new 16 --eos 0");
  cmd->callback([opt, runner] { *runner = [opt] { return run_eval(*opt); }; });
}

}  // namespace draftgate::cli
