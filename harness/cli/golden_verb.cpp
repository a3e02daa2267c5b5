// `draftgate golden record`: measures the reference drafter and writes the golden baseline the
// checks compare against (format: draftgate/golden/golden.h).

#include <ctime>
#include <iostream>

#include "checks/check.h"
#include "checks/drafter_provenance.h"
#include "cli_options.h"
#include "decode_dtype.h"
#include "draftgate/decode/evaluation.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/golden/golden.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/output_file.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/progress.h"
#include "draftgate/tau/prompt_set.h"
#include "prompt_options.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {
namespace fs = std::filesystem;

struct GoldenOptions {
  std::string target;
  std::string drafter;
  std::string prompts;
  decode::PromptOptions prompt_options;  // how text and messages prompts are rendered
  std::string out;
  bool force = false;
  bool allow_collapsed = false;  // record a τ at or below min_tau's collapse tripwire, loudly
  decode::DecodeConfig decode;
  std::string dtype;  // empty: decode_dtype's default
  std::string gdn = "chunked";
  std::string device = "cpu";  // where to decode; τ does not depend on it (recorded all the same)
  std::string loss = "ce";
  std::string measured;            // record from a serving engine's measurement instead of decoding
  std::string causality = "zlab";  // whose reading of dflash_config.causal
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int record(const GoldenOptions& opt) {
  // The output policy first: a directory (or a device) at --out is named as one, not as a golden.
  std::vector<io::RunPath> inputs = prompt_option_inputs(opt.prompt_options);
  inputs.insert(inputs.end(), {{opt.target, "--target", true},
                               {opt.drafter, "--drafter", true},
                               {opt.prompts, "--prompts"}});
  io::check_outputs({{opt.out, "--out"}}, inputs);
  std::error_code ec;
  if (fs::exists(opt.out, ec) && !opt.force)
    throw Error(opt.out, "golden file exists; refusing to overwrite it",
                "pass --force to replace the baseline");
  require_slots({{opt.target, io::ArtifactKind::kTarget, "--target"},
                 {opt.drafter, io::ArtifactKind::kDrafter, "--drafter"},
                 {opt.prompts, io::ArtifactKind::kPromptSet, "--prompts"}});
  if (opt.loss != "ce" && opt.loss != "kl")
    throw Error("--loss", "unknown loss \"" + opt.loss + "\" (expected ce or kl)");
  check_decoding_flags(opt.decode);
  const auto set = read_prompts(opt.prompts, opt.prompt_options, opt.target);
  checks::refuse_foreign_drafter(opt.target, opt.drafter);
  const io::Checkpoint target_ckpt = io::Checkpoint::open(opt.target);
  model::TargetOptions options;
  options.dtype = decode_dtype(opt.dtype, target_ckpt);
  options.gdn = model::parse_gdn_flag(opt.gdn);
  options.device = model::parse_device(opt.device);
  const auto target = model::TargetModel::load(target_ckpt, options);
  decode::check_eos_vocabulary(opt.decode, *target, "--eos");
  const std::string dtype = *options.dtype == at::kFloat ? "f32" : "bf16";
  const io::Checkpoint drafter_ckpt = io::Checkpoint::open(opt.drafter);
  const auto dflash = model::DFlashDrafter::load(
      drafter_ckpt, *target, false, model::parse_causality_reading(opt.causality, "--causality"));
  if (const auto note = model::causality_note(dflash->config(), drafter_ckpt.config().file()))
    std::cerr << "note: " << *note << "\n";
  const auto drafter = decode::dflash_block_drafter(*dflash);
  decode::Evaluation e;
  {
    Progress progress("golden record", "prompt", static_cast<std::int64_t>(set.prompts.size()));
    e = decode::evaluate(*target, *drafter, set, opt.decode, [&](std::size_t done, std::size_t) {
      progress.update(static_cast<std::int64_t>(done));
    });
  }

  // A golden at the collapse tripwire fails every drafter compared with it, its own included.
  const double collapse =
      checks::find_check("min_tau")->default_params()["collapse_tau"].get<double>();
  std::string collapsed;
  if (e.stats.tau_macro <= collapse) {
    collapsed = "τ macro " + format_number(e.stats.tau_macro, 4) +
                " is at or below min_tau's collapse tripwire " + format_number(collapse, 4) +
                ": every drafter checked against this golden fails min_tau, this one included";
    if (!opt.allow_collapsed)
      throw Error(opt.drafter, collapsed,
                  "record the golden with the trained reference drafter and the target it was "
                  "trained for (--allow-collapsed records it anyway)");
    std::cerr << "WARNING: " << opt.out << ": recorded as asked (--allow-collapsed): " << collapsed
              << "\n";
  }

  nlohmann::json g;
  g["schema"] = golden::kGoldenSchema;
  g["decoding"] = decode::decoding_json(
      opt.decode, opt.decode.tree_budget > 0 ? "ddtree" : "dflash", e.block_size);
  g["decoding"]["dtype"] = dtype;
  g["decoding"]["gdn"] = opt.gdn;
  g["decoding"].update(model::causality_json(dflash->config()));
  g["decoding"]["drafter_architecture"] = dflash->config().dflash2 ? "dflash2" : "dflash";
  const fs::path out_dir = fs::absolute(opt.out).parent_path();
  g["prompt_set"] = {{"path", fs::relative(fs::absolute(opt.prompts), out_dir).generic_string()},
                     {"sha256", set.sha256},
                     {"sha256_of", decode::kPromptsIdentity},
                     {"prompts", set.prompts.size()},
                     {"turns", set.turns()},
                     {"rendering", decode::rendering_json(set.rendering)}};
  g["tau"] = decode::evaluation_json(e);
  const auto& stack = target->stack();
  g["target_layout"] = {{"prefix", stack.prefix},
                        {"num_layers", stack.num_layers},
                        {"layer_types", stack.layer_types}};
  g["taps"] = dflash->config().target_layer_ids;
  g["check_params"] = {{"loss_type", {{"expected", opt.loss}}}};
  if (const checks::Check* parity = checks::find_check("hidden_state_parity"))
    g["check_params"]["hidden_state_parity"] = parity->default_params();
  g["provenance"] = {
      {"target",
       {{"path", opt.target},
        {"files", golden::directory_hashes(opt.target)},
        {"identity", golden::target_identity(opt.target)}}},
      {"drafter", {{"path", opt.drafter}, {"files", golden::directory_hashes(opt.drafter)}}},
      {"device", target->device().str()},
      {"draftgate_version", DRAFTGATE_VERSION},
      {"recorded_at", utc_now()}};
  if (!collapsed.empty()) g["provenance"]["note"] = "recorded with --allow-collapsed: " + collapsed;
  // Without --force the golden is linked into place, never replacing one that appeared meanwhile.
  io::write_text_atomically(opt.out, io::dump_json(g) + "\n",
                            opt.force ? io::WriteMode::kReplace : io::WriteMode::kCreateNew);
  std::cout << "golden " << opt.out << ": tau macro " << e.stats.tau_macro << ", pooled "
            << e.stats.tau_pooled << " over " << set.prompts.size() << " prompts (block "
            << e.block_size << ", " << dtype << ")\n";
  return 0;
}

}  // namespace

void add_golden(CLI::App& app, VerbRunner* runner) {
  CLI::App* golden = app.add_subcommand("golden", "Golden baselines of a reference drafter");
  golden->require_subcommand(1);
  auto opt = std::make_shared<GoldenOptions>();
  CLI::App* cmd = golden->add_subcommand(
      "record", "Measure the reference drafter's τ and write the golden file the checks read");
  // --target, --drafter and --prompts are required unless --measured replaces the decoding.
  cmd->add_option("--target", opt->target, "Target checkpoint directory")->check(path_value());
  cmd->add_option("--drafter", opt->drafter, "Reference drafter checkpoint directory")
      ->check(path_value());
  cmd->add_option("--prompts", opt->prompts,
                  "Held-out prompt set (JSONL: id and one of input_ids, text, messages)")
      ->check(path_value());
  add_prompt_options(cmd, opt->prompt_options);
  cmd->add_option("--measured", opt->measured,
                  "Record from the reference drafter's measured τ (draftgate tau import) instead "
                  "of decoding; excludes --target, --drafter, --prompts")
      ->check(path_value());
  cmd->add_option("--out", opt->out, "Golden file to write (golden/NAME.json)")
      ->required()
      ->check(path_value());
  cmd->add_flag("--force", opt->force, "Replace an existing golden file");
  cmd->add_flag("--allow-collapsed", opt->allow_collapsed,
                "Record a golden whose τ is at or below min_tau's collapse tripwire (refused "
                "otherwise: every drafter would fail against it), with a warning and a note in it");
  add_decoding_options(cmd, opt->decode);
  add_decode_dtype_option(cmd, opt->dtype);
  cmd->add_option("--gdn", opt->gdn, "Gated DeltaNet algorithm: chunked or recurrent");
  add_device_option(cmd, opt->device);
  cmd->add_option("--causality", opt->causality,
                  "Whose reading of the drafter's attention keys (dflash_config.causal, use_swa, "
                  "swa_window_size): zlab or vllm")
      ->check(CLI::IsMember({"zlab", "vllm"}));
  cmd->add_option("--loss", opt->loss, "The loss the reference was trained with: ce or kl");
  const std::string example =
      "draftgate golden record --target fixtures/trained/qwen3-target --drafter "
      "fixtures/trained/qwen3-drafter-reference --prompts fixtures/trained/prompts/held-out.jsonl "
      "--max-new 16 --eos 0 --out golden/qwen3-reference.json";
  set_example(cmd, example);
  set_example(golden, example);
  cmd->callback([opt, runner] {
    *runner = [opt] {
      if (!opt->measured.empty()) {
        if (!opt->target.empty() || !opt->drafter.empty() || !opt->prompts.empty() ||
            opt->prompt_options.enable_thinking || !opt->prompt_options.chat_template.empty())
          throw Error("--measured",
                      "a measured golden is not decoded: drop --target, --drafter, --prompts "
                      "and the rendering flags (the prompt set is the measurement's)");
        return record_measured_golden(opt->measured, opt->out, opt->force);
      }
      for (const auto& [flag, value] : {std::pair{"--target", &opt->target},
                                        {"--drafter", &opt->drafter},
                                        {"--prompts", &opt->prompts}})
        if (value->empty())
          throw Error(flag, std::string(flag) + " is required (or --measured FILE)");
      return record(*opt);
    };
  });
}

}  // namespace draftgate::cli
