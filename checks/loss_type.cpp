// loss_type: which loss did the trainer actually compute? Recomputes the decay-weighted hard
// cross-entropy and the soft KL from a step record with the recipe module and compares both with
// the logged loss.

#include <cmath>

#include "check.h"
#include "draftgate/format.h"
#include "draftgate/train/recipe.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

class LossType : public Check {
 public:
  std::string name() const override { return "loss_type"; }
  std::string summary() const override {
    return "the logged loss is the recipe's loss (hard CE by default)";
  }
  std::string needs() const override { return "a step record with drafter_logits"; }
  std::vector<Param> params() const override {
    return {string_param("expected", "ce", {"ce", "kl"}, "the loss the trainer must have logged"),
            number_param("rtol", 1e-3, 0, 1, "relative tolerance of logged vs recomputed loss"),
            number_param("atol", 1e-5, 0, 1e3, "absolute tolerance of logged vs recomputed loss")};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.step_record) return skip(name(), "needs a step record (--step-record)");
    const train::StepRecord rec = train::read_step_record(*a.step_record);
    if (!rec.drafter_logits.defined())
      return skip(name(),
                  rec.path + " records no drafter_logits, so its loss cannot be recomputed");
    const std::string expected = p["expected"].get<std::string>();
    const double rtol = p["rtol"].get<double>(), atol = p["atol"].get<double>();
    train::BlockTargets targets =
        train::block_targets(rec.input_ids, rec.loss_mask, rec.anchors, rec.block_size, rec.gamma);
    // The labels the trainer used, when recorded (e.g. the teacher's greedy tokens); their
    // integrity is target_logits_noise_free's concern.
    if (rec.labels.defined()) targets.labels = rec.labels;
    const at::Tensor logits = rec.drafter_logits.to(at::kDouble);
    auto close = [&](double v) {
      return std::abs(v - rec.logged_loss) <= atol + rtol * std::abs(rec.logged_loss);
    };

    CheckResult r;
    r.measured["logged_loss"] = rec.logged_loss;
    r.measured["claimed_loss"] = train::loss_name(rec.loss);
    const double ce = train::weighted_cross_entropy(logits, targets).item<double>();
    r.measured["recomputed_ce"] = ce;
    std::optional<double> kl;
    if (rec.teacher_logits.defined()) {
      kl = train::weighted_kl(
               logits, train::block_teacher_logits(rec.teacher_logits, rec.anchors, rec.block_size),
               targets)
               .item<double>();
      r.measured["recomputed_kl"] = *kl;
    }
    std::vector<std::string> problems;
    if (rec.weights.defined()) {
      const at::Tensor expect_w = targets.weight;
      const double diff = (rec.weights - expect_w).abs().max().item<double>();
      r.measured["weights_max_abs_diff"] = diff;
      if (diff > 1e-4)
        problems.push_back("recorded weights differ from the recipe's (w_0 = 0, w_k = exp(-(k-1)/" +
                           format_number(rec.gamma, 6) + ") on the loss mask) by up to " +
                           format_number(diff, 6));
    }
    const bool is_ce = close(ce), is_kl = kl && close(*kl);
    const std::string found = is_ce && is_kl ? "both" : is_ce ? "ce" : is_kl ? "kl" : "neither";
    r.measured["logged_loss_matches"] = found;
    r.evidence["step_record"] = rec.path;
    const std::string numbers =
        "logged " + format_number(rec.logged_loss, 6) + ", recomputed CE " + format_number(ce, 6) +
        (kl ? ", KL " + format_number(*kl, 6) : ", KL n/a (no teacher_logits)");
    if (found == "neither")
      problems.push_back("the logged loss matches neither the decay-weighted CE nor the KL (" +
                         numbers + "); check the loss code, the weights and the labels");
    else if (found != "both" && found != expected)
      problems.push_back("expected the recipe's " + expected + " loss but the logged loss is the " +
                         found + " (" + numbers + "); switch the trainer to " +
                         (expected == "ce" ? "hard cross-entropy" : "soft KL"));
    return conclude(std::move(r), problems,
                    "logged loss is the " + expected + " (" + numbers + ")");
  }
};

const bool registered = register_as<LossType>();

}  // namespace
}  // namespace draftgate::checks
