// min_tau: the drafter's acceptance length on the golden's prompt set, decoded exactly as the
// golden was, is at least min_ratio × the reference's (and a floor), above the collapse tripwire,
// with drafts actually proposed and optional per-position floors.

#include "checks/check.h"
#include "draftgate/decode/evaluation.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/progress.h"

namespace draftgate::checks {
namespace {
namespace fs = std::filesystem;

class MinTau : public Check {
 public:
  std::string name() const override { return "min_tau"; }
  std::string summary() const override {
    return "held-out acceptance length τ is at least min_ratio × the golden's";
  }
  std::string needs() const override { return "the target, the drafter and a golden"; }
  std::vector<Param> params() const override {
    return {number_param("min_ratio", 0.95, 0, 10, "required τ macro as a share of the golden's"),
            number_param("floor", 1.0, 0, 256, "required τ macro at least"),
            number_param("collapse_tau", 1.05, 0, 256, "τ at or below this is a collapse"),
            number_param("per_position_min_ratio", nullptr, 0, 10,
                         "each depth's acceptance at least this × the golden's"),
            string_param("prompts", nullptr, {},
                         "a prompt-set path instead of the golden's (same sha256)"),
            string_param("device", "cpu", {"cpu", "cuda"},
                         "where to decode (cuda needs a CUDA build of libtorch; τ is the same)")};
  }

  // Decoding runs the drafter; comparing a measured τ with a measured golden does not.
  bool reads_drafter_weights(const Artifacts& a) const override {
    return !a.measured && !(a.golden && a.golden->measured);
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (a.measured || (a.golden && a.golden->measured)) return run_measured(a, p);
    if (!a.golden) return skip(name(), "needs a golden file with the reference τ (--golden)");
    if (!a.target || !a.drafter)
      return skip(name(), "needs the target and the drafter (--target, --drafter)");
    const golden::Golden& g = *a.golden;
    const bool own_prompts = !p["prompts"].is_null();
    const std::string prompts =
        own_prompts ? p["prompts"].get<std::string>() : g.prompt_set.string();
    // A golden or a measured-τ file given as the prompt set is named for what it is.
    if (own_prompts) io::require_slot(prompts, io::ArtifactKind::kPromptSet, "min_tau.prompts");
    std::error_code ec;
    if (!own_prompts && !fs::exists(g.prompt_set, ec))
      throw Error(g.prompt_set.string(),
                  "the prompt set of the golden " + g.path +
                      " is not there (prompt_set.path is relative to the golden's folder: was the "
                      "golden copied without it?)",
                  "copy the prompt set beside the golden, or name it: --param "
                  "min_tau.prompts=PATH (the same prompts, sha256 " +
                      g.prompt_set_sha256.substr(0, 12) + "…)");
    const auto set = decode::read_prompt_set(
        prompts, own_prompts ? "min_tau.prompts" : "the golden " + g.path + " (prompt_set.path)",
        decode::with_target_tokenizer(a.prompt_options, a.target->string()));
    // τ depends on how text and messages were rendered (template, thinking mode, tokenizer):
    // named before the ids, which then differ too.
    if (set.rendering && g.prompt_rendering && *set.rendering != *g.prompt_rendering)
      throw Error(prompts,
                  "rendered with " + decode::describe_rendering(set.rendering) +
                      " but the golden " + g.path + " was recorded on them rendered with " +
                      decode::describe_rendering(g.prompt_rendering),
                  "τ is only comparable on the same rendering: pass the golden's --enable-thinking "
                  "and --chat-template (and its target's tokenizer), or re-record the golden");
    // An older golden identifies its prompt set by the file's bytes; compare those then.
    const std::string& sha256 = g.prompt_set_sha256_of_file ? set.file_sha256 : set.sha256;
    if (sha256 != g.prompt_set_sha256)
      throw Error(prompts,
                  std::string(g.prompt_set_sha256_of_file ? "prompt file bytes' sha256 "
                                                          : "prompt set sha256 ") +
                      sha256.substr(0, 12) + "… of " + std::to_string(set.prompts.size()) +
                      " prompts differs from the golden's " + g.prompt_set_sha256.substr(0, 12) +
                      "…" +
                      (g.prompt_count ? " of " + std::to_string(*g.prompt_count) + " prompts"
                                      : std::string()) +
                      " (" + g.path + ")",
                  g.prompt_set_sha256_of_file
                      ? "the golden predates prompt sets identified by their prompts, so the "
                        "file's exact bytes count; re-record it (draftgate golden record --force)"
                  : own_prompts ? "τ is only comparable on the same prompts; use the golden's "
                                  "prompt set (" +
                                      g.prompt_set.string() + ")"
                                : "τ is only comparable on the same prompts: the file was "
                                  "edited after the golden was recorded; restore it, or "
                                  "re-record the golden on it (draftgate golden record "
                                  "--force)");
    // τ measured on another target says nothing about training: refuse it before decoding.
    if (const auto difference = golden::target_difference(g, *a.target))
      throw Error(a.target->string(),
                  "is not the target the golden was recorded with (" + *difference + "; golden " +
                      g.path + " recorded on " +
                      (g.target_path.empty() ? std::string("another target") : g.target_path) + ")",
                  "τ is only comparable on the golden's target: pass that target, or record a "
                  "golden on this one (draftgate golden record)");
    const io::Checkpoint target_ckpt = io::Checkpoint::open(*a.target);
    model::TargetOptions options;
    options.dtype = model::parse_dtype_flag(g.dtype);
    options.gdn = model::parse_gdn_flag(g.gdn);
    options.dtype_flag = "a golden recorded with golden record --dtype bf16";
    options.device = model::parse_device(p["device"].get<std::string>(), "min_tau.device");
    const auto target = model::TargetModel::load(target_ckpt, options);
    decode::check_eos_vocabulary(g.decode, *target, g.path);
    const io::Checkpoint drafter_ckpt = io::Checkpoint::open(*a.drafter);
    // Decoded with the golden's reading of the drafter's causality (z-lab's for older goldens).
    const auto reading = g.causality.empty() ? model::CausalityReading::kZLab
                                             : model::parse_causality_reading(g.causality, g.path);
    const auto dflash = model::DFlashDrafter::load(drafter_ckpt, *target, false, reading);
    // DFlash2's convolutions and selector draft differently: its τ is not a v1 drafter's bar.
    const std::string architecture = dflash->config().dflash2 ? "dflash2" : "dflash";
    if (!g.drafter_architecture.empty() && g.drafter_architecture != architecture)
      throw Error(a.drafter->string(),
                  "is a " + architecture + " drafter but the golden (" + g.path +
                      ") was measured with a " + g.drafter_architecture + " one",
                  "gate a drafter on a golden of its own architecture (draftgate golden record "
                  "with the reference drafter of that kind)");
    if (dflash->block_size() != g.block_size)
      throw Error(a.drafter->string(),
                  "drafter block size " + std::to_string(dflash->block_size()) +
                      " but the golden was measured at block " + std::to_string(g.block_size));
    const auto drafter = decode::dflash_block_drafter(*dflash);
    decode::Evaluation e;
    {
      Progress progress("check " + name(), "prompt", static_cast<std::int64_t>(set.prompts.size()));
      e = decode::evaluate(*target, *drafter, set, g.decode, [&](std::size_t done, std::size_t) {
        progress.update(static_cast<std::int64_t>(done));
      });
    }
    const auto& s = e.stats;

    Observed o{"τ macro",
               s.tau_macro,
               g.tau_macro,
               s.per_position_acceptance,
               g.per_position_acceptance,
               s.drafted,
               " on " + std::to_string(set.prompts.size()) + " prompts of " + set.path +
                   " (golden " + g.path + ")"};
    CheckResult r;
    r.measured["tau_macro"] = s.tau_macro;
    r.measured["tau_pooled"] = s.tau_pooled;
    r.measured["golden_tau_macro"] = g.tau_macro;
    r.measured["golden_tau_pooled"] = g.tau_pooled;
    r.measured["histogram"] = s.histogram;
    if (!g.histogram.empty()) r.measured["golden_histogram"] = g.histogram;
    r.evidence["golden"] = g.path;
    r.evidence["prompt_set"] = set.path;
    r.evidence["drafter_layers"] = model::describe_causality(dflash->config());
    std::vector<std::string> problems;
    if (!g.drafter_causal.empty() && g.drafter_causal != dflash->config().layer_causal)
      problems.push_back("the drafter's layers attend " +
                         model::describe_causality(dflash->config()) +
                         ", not as the golden's reference did (causal per layer: " +
                         causal_list(g.drafter_causal) +
                         "); τ then measures another attention — set is_causal in its config.json "
                         "to what it was trained with");
    return judge(o, p, std::move(r), problems);
  }

 private:
  // What both ways of measuring τ hand to the thresholds.
  struct Observed {
    std::string label;  // "τ macro", "τ pooled", …: the definition compared
    double tau, golden_tau;
    std::vector<double> per_position, golden_per_position;
    std::int64_t drafted;
    std::string where;  // " on … (golden …)"
  };

  // A measurement from a serving engine (--measured), compared with a golden measured the same
  // way; anything else is bad input.
  CheckResult run_measured(const Artifacts& a, const nlohmann::json& p) const {
    if (!a.golden) return skip(name(), "needs a golden measured the same way (--golden)");
    const golden::Golden& g = *a.golden;
    if (!a.measured)
      throw Error(g.path,
                  "the golden was measured by " + g.measured->engine + ", not decoded by draftgate",
                  "pass the drafter's measurement with --measured FILE (draftgate tau import)");
    const tau::MeasuredTau& m = *a.measured;
    if (!g.measured)
      throw Error(m.path,
                  "a measured τ is only compared with a measured golden, and " + g.path +
                      " was decoded by draftgate",
                  "record the golden from the reference drafter's measurement: draftgate golden "
                  "record --measured FILE --out GOLDEN");
    if (const auto reason = tau::unlike(m, *g.measured))
      throw Error(m.path, "not comparable with the golden: " + *reason,
                  "measure the drafter exactly as the reference was measured");
    if (!p["per_position_min_ratio"].is_null() &&
        (m.per_position_acceptance.empty() || g.measured->per_position_acceptance.empty()))
      throw Error(m.per_position_acceptance.empty() ? m.path : g.path,
                  "min_tau.per_position_min_ratio is set but the measurement reports no "
                  "per-position acceptance");
    // The golden's definition: unlike() made sure the measurement has it, counted the same way.
    const std::string& definition = g.measured->tau_definition;
    Observed o{"τ " + definition + " (" + m.engine + ")",
               *m.tau_of(definition),
               g.measured->tau(),
               m.per_position_acceptance,
               g.measured->per_position_acceptance,
               m.drafts,
               " measured by " + m.engine + " (" + m.path + ", golden " + g.path + ")"};
    CheckResult r;
    r.measured["tau_definition"] = definition;
    r.measured["tau_pooled"] = m.tau_pooled;
    r.measured["golden_tau_pooled"] = g.measured->tau_pooled;
    if (m.tau_macro) r.measured["tau_macro"] = *m.tau_macro;
    if (g.measured->tau_macro) r.measured["golden_tau_macro"] = *g.measured->tau_macro;
    r.evidence["golden"] = g.path;
    r.evidence["measured"] = m.path;
    r.evidence["engine"] = m.engine;
    if (m.prompt_set_sha256) r.evidence["prompt_set_sha256"] = *m.prompt_set_sha256;
    return judge(o, p, std::move(r));
  }

  // The thresholds, the same for decoded and measured τ.
  static std::string causal_list(const std::vector<bool>& causal) {
    std::string s;
    for (bool b : causal) s += std::string(s.empty() ? "" : ",") + (b ? "true" : "false");
    return "[" + s + "]";
  }

  CheckResult judge(const Observed& o, const nlohmann::json& p, CheckResult r,
                    std::vector<std::string> problems = {}) const {
    const double required =
        std::max(p["min_ratio"].get<double>() * o.golden_tau, p["floor"].get<double>());
    r.measured["ratio"] = o.tau / o.golden_tau;
    r.measured["per_position_acceptance"] = o.per_position;
    r.measured["golden_per_position_acceptance"] = o.golden_per_position;
    r.measured["drafted"] = o.drafted;
    r.thresholds["required_tau"] = required;  // of the definition named by "compared"
    r.thresholds["compared"] = o.label;
    if (o.drafted == 0) problems.push_back("no draft tokens were proposed" + o.where);
    if (o.tau <= p["collapse_tau"].get<double>())
      problems.push_back("τ collapsed to " + format_number(o.tau, 4) +
                         ": almost nothing the drafter proposes is accepted; look for a "
                         "train/inference mismatch (train_infer_consistency) or a shortcut "
                         "(fc_excludes_target_layer), or a drafter trained for another target "
                         "(drafter_config compares their configs; give the drafter its own)");
    if (o.tau < required)
      problems.push_back(o.label + " " + format_number(o.tau, 4) + " < required " +
                         format_number(required, 4) + " (" +
                         format_number(p["min_ratio"].get<double>(), 4) + " × golden " +
                         format_number(o.golden_tau, 4) + ")" + o.where +
                         "; run the step-record checks (loss_type, target_logits_noise_free, "
                         "fc_excludes_target_layer) to find the cause");
    if (!p["per_position_min_ratio"].is_null()) {
      const double ratio = p["per_position_min_ratio"].get<double>();
      for (std::size_t d = 0; d < o.per_position.size() && d < o.golden_per_position.size(); ++d)
        if (o.per_position[d] < ratio * o.golden_per_position[d])
          problems.push_back("depth " + std::to_string(d + 1) + " acceptance " +
                             format_number(o.per_position[d], 4) + " < " + format_number(ratio, 4) +
                             " × golden " + format_number(o.golden_per_position[d], 4));
    }
    const std::string pass =
        o.label + " " + format_number(o.tau, 4) + " ≥ " + format_number(required, 4) + " (golden " +
        format_number(o.golden_tau, 4) + ", ratio " + format_number(o.tau / o.golden_tau, 4) + ")";
    return conclude(std::move(r), problems, pass);
  }
};

const bool registered = register_as<MinTau>();

}  // namespace
}  // namespace draftgate::checks
