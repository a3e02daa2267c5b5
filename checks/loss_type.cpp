// loss_type: which loss did the trainer actually compute? Recomputes the decay-weighted hard
// cross-entropy and the soft KL from a step record with the recipe module and compares both with
// the logged loss.

#include <cmath>
#include <optional>

#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/recorded_precision.h"
#include "draftgate/format.h"
#include "draftgate/train/recipe.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

// Significant bits (with the implicit one) of a float format.
int mantissa_bits(train::ComputePrecision p) {
  switch (p) {
    case train::ComputePrecision::kF32:
      return 24;
    case train::ComputePrecision::kBF16:
      return 8;
    case train::ComputePrecision::kF16:
      return 11;
  }
  return 24;
}
std::optional<int> mantissa_bits(const std::string& stored_dtype) {
  if (stored_dtype == "BF16") return 8;
  if (stored_dtype == "F16") return 11;
  return std::nullopt;  // F32 or wider: the values are what the trainer computed
}

// First-order standard deviation of the weighted CE when every logit carries an independent
// rounding error, uniform within half an ulp of a `bits`-bit format: ΔCE_j = Σ_v (p_v − [v = y])
// δ_v.
double ce_rounding_std(const at::Tensor& logits, const train::BlockTargets& t, int bits) {
  at::Tensor coefficient = at::softmax(logits, -1);
  coefficient.scatter_add_(-1, t.labels.unsqueeze(-1),
                           -at::ones(t.labels.unsqueeze(-1).sizes(), logits.options()));
  const at::Tensor ulp =
      at::exp2(at::floor(at::log2(logits.abs().clamp_min(1e-30))) - static_cast<double>(bits - 1));
  const at::Tensor variance = (coefficient.pow(2) * ulp.pow(2) / 12).sum(-1);
  const at::Tensor w = t.weight.to(at::kDouble);
  return (w.pow(2) * variance).sum().sqrt().item<double>() / w.sum().item<double>();
}

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
    // The labels the trainer used, when recorded (e.g. the teacher's greedy tokens; negative =
    // ignored); their integrity is target_logits_noise_free's concern.
    const train::BlockTargets targets = train::recorded_block_targets(rec);
    CheckResult r;
    r.evidence["step_record"] = rec.path;
    const auto anchors = static_cast<std::int64_t>(rec.anchors.size());
    const std::string scope = judged_anchors(r, anchors, anchors, rec.anchors_in_step);
    std::vector<std::string> problems;
    for (const auto& [tensor, value] :
         {std::pair<std::string, at::Tensor>{"drafter_logits", rec.drafter_logits},
          {"teacher_logits", rec.teacher_logits}})
      if (value.defined())
        if (auto bad = metrics::non_finite_problem(tensor, value))
          problems.push_back(*bad + "; the loss cannot be recomputed from non-finite logits");
    if (!problems.empty()) return conclude_judged(std::move(r), problems, "", scope);
    const at::Tensor logits = rec.drafter_logits.to(at::kDouble);
    const double ce = train::weighted_cross_entropy(logits, targets).item<double>();
    // A trainer computing in bf16 or f16 may log its loss as a scalar of that dtype: allow its
    // rounding, half an ulp (reductions accumulate in float32, so the final rounding dominates).
    // Logits stored below the precision they were computed in moved by up to half an ulp each
    // after the trainer took its loss (always possible when the precision is not declared): allow 4
    // standard deviations of what that moves the CE.
    const RecordedPrecision precision =
        recorded_precision(rec, "drafter_logits", rec.drafter_dtype, "drafter_dtype");
    const double computed_rounding =
        std::ldexp(std::abs(rec.logged_loss), -mantissa_bits(precision.computed));
    const std::optional<int> stored_bits = mantissa_bits(precision.stored);
    const double storage_rounding =
        stored_bits && (!precision.declared || *stored_bits < mantissa_bits(precision.computed))
            ? 4 * ce_rounding_std(logits, targets, *stored_bits)
            : 0.0;
    const double tol =
        std::max(atol + rtol * std::abs(rec.logged_loss), computed_rounding) + storage_rounding;
    auto close = [&](double v) { return std::abs(v - rec.logged_loss) <= tol; };

    r.evidence["precision"] = precision.describe();
    r.measured["logged_loss"] = rec.logged_loss;
    r.measured["claimed_loss"] = train::loss_name(rec.loss);
    r.measured["tolerance"] = tol;
    r.measured["recomputed_ce"] = ce;
    std::optional<double> kl;
    std::string no_kl = "no teacher_logits";  // why the KL is n/a
    if (rec.teacher_logits.defined()) {
      if (const auto teacher = train::recorded_block_teacher_logits(rec, targets)) {
        kl = train::weighted_kl(logits, *teacher, targets).item<double>();
        r.measured["recomputed_kl"] = *kl;
      } else {
        no_kl = "teacher_logits recorded at " + std::to_string(rec.teacher_positions.size()) +
                " of " + std::to_string(rec.input_ids.size()) +
                " positions, not every block element's teacher position";
      }
    }
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
    const std::string numbers = "logged " + format_number(rec.logged_loss, 6) + ", recomputed CE " +
                                format_number(ce, 6) +
                                (kl ? ", KL " + format_number(*kl, 6) : ", KL n/a (" + no_kl + ")");
    // A KL that cannot be recomputed cannot be ruled out: only the CE is judged then.
    if (!kl && rec.teacher_logits.defined() && !is_ce && expected == "kl")
      return skip(name(), "the logged loss is not the CE (" + numbers +
                              ") and the expected KL cannot be recomputed; record teacher_logits "
                              "at every position a block element reads (a + k - 1)");
    if (found == "neither" && !kl && rec.teacher_logits.defined())
      problems.push_back("the logged loss is not the decay-weighted CE the recipe requires (" +
                         numbers + "); check the loss code, the weights and the labels");
    else if (found == "neither")
      problems.push_back("the logged loss matches neither the decay-weighted CE nor the KL (" +
                         numbers + "); check the loss code, the weights and the labels");
    else if (found != "both" && found != expected && found != train::loss_name(rec.loss))
      problems.push_back(
          "the record's metadata says the loss is " + std::string(train::loss_name(rec.loss)) +
          " but the logged value is the " + found + " (" + numbers +
          "): the loss is mislabelled, and the recipe's is " + expected +
          "; switch the trainer to " + (expected == "ce" ? "hard cross-entropy" : "soft KL") +
          " and label the loss it computes");
    else if (found != "both" && found != expected)
      problems.push_back("expected the recipe's " + expected + " loss but the logged loss is the " +
                         found + " (" + numbers + "); switch the trainer to " +
                         (expected == "ce" ? "hard cross-entropy" : "soft KL"));
    return conclude_judged(std::move(r), problems,
                           "logged loss is the " + expected + " (" + numbers + ")", scope);
  }
};

const bool registered = register_as<LossType>();

}  // namespace
}  // namespace draftgate::checks
