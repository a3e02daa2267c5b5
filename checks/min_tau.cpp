// min_tau: the drafter's acceptance length on the golden's prompt set, decoded exactly as the
// golden was, is at least min_ratio × the reference's (and a floor), above the collapse tripwire,
// with drafts actually proposed and optional per-position floors.

#include "checks/check.h"
#include "draftgate/decode/evaluation.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"

namespace draftgate::checks {
namespace {

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
                         "a prompt-set path instead of the golden's (same sha256)")};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.golden) return skip(name(), "needs a golden file with the reference τ (--golden)");
    if (!a.target || !a.drafter)
      return skip(name(), "needs the target and the drafter (--target, --drafter)");
    const golden::Golden& g = *a.golden;
    const std::string prompts =
        p["prompts"].is_null() ? g.prompt_set.string() : p["prompts"].get<std::string>();
    const auto set = decode::read_prompt_set(prompts);
    if (set.sha256 != g.prompt_set_sha256)
      throw Error(prompts,
                  "prompt set sha256 " + set.sha256.substr(0, 12) + "… differs from the golden's " +
                      g.prompt_set_sha256.substr(0, 12) + "… (" + g.path + ")",
                  "τ is only comparable on the same prompts; use the golden's prompt set");
    const io::Checkpoint target_ckpt = io::Checkpoint::open(*a.target);
    model::TargetOptions options;
    options.dtype = model::parse_dtype_flag(g.dtype);
    options.gdn = model::parse_gdn_flag(g.gdn);
    const auto target = model::TargetModel::load(target_ckpt, options);
    const io::Checkpoint drafter_ckpt = io::Checkpoint::open(*a.drafter);
    const auto dflash = model::DFlashDrafter::load(drafter_ckpt, *target);
    if (dflash->block_size() != g.block_size)
      throw Error(a.drafter->string(),
                  "drafter block size " + std::to_string(dflash->block_size()) +
                      " but the golden was measured at block " + std::to_string(g.block_size));
    const auto drafter = decode::dflash_block_drafter(*dflash);
    const decode::Evaluation e = decode::evaluate(*target, *drafter, set, g.decode);
    const auto& s = e.stats;

    const double required =
        std::max(p["min_ratio"].get<double>() * g.tau_macro, p["floor"].get<double>());
    CheckResult r;
    r.measured["tau_macro"] = s.tau_macro;
    r.measured["tau_pooled"] = s.tau_pooled;
    r.measured["golden_tau_macro"] = g.tau_macro;
    r.measured["golden_tau_pooled"] = g.tau_pooled;
    r.measured["ratio"] = s.tau_macro / g.tau_macro;
    r.measured["histogram"] = s.histogram;
    r.measured["per_position_acceptance"] = s.per_position_acceptance;
    r.measured["drafted"] = s.drafted;
    r.thresholds["required_tau_macro"] = required;
    r.evidence["golden"] = g.path;
    r.evidence["prompt_set"] = set.path;
    std::vector<std::string> problems;
    const std::string where = " on " + std::to_string(set.prompts.size()) + " prompts of " +
                              set.path + " (golden " + g.path + ")";
    if (s.drafted == 0) problems.push_back("no draft tokens were proposed" + where);
    if (s.tau_macro <= p["collapse_tau"].get<double>())
      problems.push_back("τ collapsed to " + format_number(s.tau_macro, 4) +
                         ": almost nothing the drafter proposes is accepted; look for a "
                         "train/inference mismatch (train_infer_consistency) or a shortcut "
                         "(fc_excludes_target_layer)");
    if (s.tau_macro < required)
      problems.push_back("τ macro " + format_number(s.tau_macro, 4) + " < required " +
                         format_number(required, 4) + " (" +
                         format_number(p["min_ratio"].get<double>(), 4) + " × golden " +
                         format_number(g.tau_macro, 4) + ")" + where +
                         "; run the step-record checks (loss_type, target_logits_noise_free, "
                         "fc_excludes_target_layer) to find the cause");
    if (!p["per_position_min_ratio"].is_null()) {
      const double ratio = p["per_position_min_ratio"].get<double>();
      for (std::size_t d = 0;
           d < s.per_position_acceptance.size() && d < g.per_position_acceptance.size(); ++d)
        if (s.per_position_acceptance[d] < ratio * g.per_position_acceptance[d])
          problems.push_back("depth " + std::to_string(d + 1) + " acceptance " +
                             format_number(s.per_position_acceptance[d], 4) + " < " +
                             format_number(ratio, 4) + " × golden " +
                             format_number(g.per_position_acceptance[d], 4));
    }
    const std::string pass = "τ macro " + format_number(s.tau_macro, 4) + " ≥ " +
                             format_number(required, 4) + " (golden " +
                             format_number(g.tau_macro, 4) + ", ratio " +
                             format_number(s.tau_macro / g.tau_macro, 4) + ")";
    return conclude(std::move(r), problems, pass);
  }
};

const bool registered = register_as<MinTau>();

}  // namespace
}  // namespace draftgate::checks
