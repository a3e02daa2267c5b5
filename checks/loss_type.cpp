// loss_type: which loss did the trainer actually compute? Recomputes the record's recipe (hard
// cross-entropy and soft KL under its weighting — decay γ, uniform, D-PACE — and its
// normalisation) and every other hypothesis (the other weightings and normalisations, the other
// loss, labels shifted by one), and fails when the logged loss is not the configured recipe or is
// another hypothesis by more than the precision explains.

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

// The recorded drafter logits [anchors, block, vocabulary] in float64, a few anchors at a time
// (metrics::per_row_slice): the per-element losses are row-wise, and a float64 copy of the whole is
// 1 GB at 512 positions of a 248k vocabulary (several such temporaries made this check the peak of
// a 27B-target run).
// How far recorded loss weights may be from the recipe's (float32 storage of exp(-(k-1)/γ)).
constexpr double kWeightTolerance = 1e-4;

// When the recorded weights differ from the recipe's only on block elements past the end of their
// anchor's sequence (a packed row's document, a padded row's tokens), supervised by the trainer:
// what to say instead of "the weights differ". speculators' anchor selection lets a block run into
// the next packed document, whose tokens the drafter cannot see from this one.
std::optional<std::string> supervised_past_sequence_end(const train::StepBatch& batch,
                                                        const at::Tensor& recorded,
                                                        const at::Tensor& expected,
                                                        double tolerance) {
  const at::Tensor got = recorded.to(at::kFloat).contiguous(),
                   want = expected.to(at::kFloat).contiguous();
  const auto g = got.accessor<float, 2>(), w = want.accessor<float, 2>();
  std::int64_t j = 0, past = 0;
  std::string first;
  for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
    const train::StepRecord& s = batch.sequences[i];
    const auto length = static_cast<std::int64_t>(s.input_ids.size());
    for (const std::int64_t a : s.anchors) {
      for (std::int64_t k = 1; k < got.size(1); ++k) {
        if (std::abs(g[j][k] - w[j][k]) <= tolerance) continue;
        if (a + k < length || w[j][k] != 0) return std::nullopt;  // another difference
        if (past++ == 0)
          first = (batch.names[i].empty() ? "" : batch.names[i] + ", ") + "anchor " +
                  std::to_string(a) + ", block element " + std::to_string(k) + " at position " +
                  std::to_string(a + k) + " of " + std::to_string(length);
      }
      ++j;
    }
  }
  if (past == 0) return std::nullopt;
  return "recorded weights supervise " + std::to_string(past) +
         " block element(s) past the end of their anchor's sequence (first: " + first +
         "); a block there predicts another document's tokens (or padding) that its attention "
         "never sees: the trainer must mask block elements past the document's end out of the loss "
         "(speculators' anchor selection lets a block cross into the next packed document)";
}

class DoubleLogits {
 public:
  explicit DoubleLogits(at::Tensor stored) : stored_(std::move(stored)) {}
  // f(float64 logits of anchors [first, first + n), first, n) → per-element [n, block],
  // concatenated.
  template <class F>
  at::Tensor per_element(F&& f) const {
    return metrics::per_row_slice(stored_, std::forward<F>(f));
  }
  // Elementwise CE against `labels` [anchors, block].
  at::Tensor cross_entropy(const at::Tensor& labels) const {
    return per_element([&](const at::Tensor& x, std::int64_t first, std::int64_t n) {
      return train::elementwise_cross_entropy(x, labels.narrow(0, first, n));
    });
  }

 private:
  at::Tensor stored_;
};

// The step's block targets with blocks supervised past their sequence's end, where the batch row
// goes on (StepBatch::loss_mask_past_ends): speculators' anchor selection keeps anchors up to the
// row's end, and its loss mask is read on the packed row, so a block near a document's end is
// supervised on the next document's first tokens. Nullopt when no block element is supervised so.
struct PastEnds {
  at::Tensor ce, mask;        // elementwise CE with those labels; the 0/1 supervision
  std::int64_t elements = 0;  // block elements supervised past their sequence's end
  std::string first;          // where the first is
};
std::optional<PastEnds> past_end_supervision(const train::StepBatch& batch,
                                             const DoubleLogits& logits) {
  if (batch.loss_mask_past_ends.empty()) return std::nullopt;
  const train::StepRecord& rec = batch.joined;
  train::BlockTargets t = train::block_targets(rec.input_ids, batch.loss_mask_past_ends,
                                               rec.anchors, rec.block_size, 0.0);
  if (rec.labels.defined()) {  // recorded labels where the trainer recorded them
    const at::Tensor ignored = rec.labels < 0;
    t.labels = at::where(ignored, t.labels, rec.labels);
    t.weight = t.weight.masked_fill(ignored, 0);
  }
  PastEnds out;
  out.mask = (t.weight > 0).to(at::kDouble);
  const at::Tensor within = (train::recorded_block_targets(rec).weight > 0).to(at::kDouble);
  const at::Tensor extra = (out.mask - within).clamp_min(0);
  out.elements = static_cast<std::int64_t>(extra.sum().item<double>());
  if (out.elements == 0) return std::nullopt;
  const auto e = extra.accessor<double, 2>();
  std::int64_t j = 0;
  for (std::size_t i = 0; i < batch.sequences.size() && out.first.empty(); ++i) {
    const train::StepRecord& s = batch.sequences[i];
    for (const std::int64_t a : s.anchors) {
      for (std::int64_t k = 1; k < rec.block_size && out.first.empty(); ++k)
        if (e[j][k] > 0)
          out.first = (batch.names[i].empty() ? "" : batch.names[i] + ", ") + "anchor " +
                      std::to_string(a) + ", block element " + std::to_string(k) + " at position " +
                      std::to_string(a + k) + " of " + std::to_string(s.input_ids.size());
      ++j;
    }
  }
  out.ce = logits.cross_entropy(t.labels);
  return out;
}

// First-order standard deviation of the weighted CE when every logit carries an independent
// rounding error, uniform within half an ulp of a `bits`-bit format: ΔCE_j = Σ_v (p_v − [v = y])
// δ_v.
double ce_rounding_std(const DoubleLogits& logits, const train::BlockTargets& t, int bits) {
  const at::Tensor variance =
      logits.per_element([&](const at::Tensor& x, std::int64_t first, std::int64_t n) {
        const at::Tensor labels = t.labels.narrow(0, first, n).unsqueeze(-1);
        at::Tensor coefficient = at::softmax(x, -1);
        coefficient.scatter_add_(-1, labels, -at::ones(labels.sizes(), x.options()));
        const at::Tensor ulp =
            at::exp2(at::floor(at::log2(x.abs().clamp_min(1e-30))) - static_cast<double>(bits - 1));
        return (coefficient.pow(2) * ulp.pow(2) / 12).sum(-1);
      });
  const at::Tensor w = t.weight.to(at::kDouble);
  return (w.pow(2) * variance).sum().sqrt().item<double>() / w.sum().item<double>();
}

// The trainer's scalar under `recipe` over the record's batch rows (weights from the elementwise
// loss for D-PACE).
double recipe_value(const train::StepRecord& rec, const train::LossRecipe& recipe,
                    const at::Tensor& elements, const at::Tensor& mask) {
  return train::recipe_loss(recipe, elements, mask, train::recipe_weights(recipe, mask, elements),
                            rec.row_of_anchor, rec.rows);
}

struct Candidate {
  std::string name;  // empty: none
  double value = 0;
  int tried = 0;  // hypotheses computed
};

// Every other hypothesis of what the trainer computed, closest to the logged loss: the other
// weightings (uniform, decay γ of the record and the trainers' defaults 4 and 7, D-PACE), the
// other normalisations, the other loss, and labels shifted by one position either way.
// Every hypothesis's value goes to `values`.
Candidate best_alternative(const train::StepRecord& rec, train::LossType judged_loss,
                           const DoubleLogits& logits, const train::BlockTargets& targets,
                           const at::Tensor& ce_elements, const at::Tensor& kl_elements,
                           std::vector<double>* values) {
  train::LossRecipe configured = rec.recipe();
  configured.loss = judged_loss;
  // Every weighting × every normalisation.
  std::vector<train::LossRecipe> weightings;
  auto fixed = [&](double gamma) {
    train::LossRecipe r = configured;
    r.weighting = train::Weighting::kFixed, r.gamma = gamma;
    weightings.push_back(r);
  };
  fixed(0);  // uniform
  for (double gamma : {rec.gamma, 4.0, 7.0})
    if (gamma > 0) fixed(gamma);
  for (auto variant : {train::Weighting::kDpace, train::Weighting::kDpaceCumulativeConfidence,
                       train::Weighting::kDpaceContinuationValue}) {
    train::LossRecipe dpace = configured;
    dpace.weighting = variant;
    weightings.push_back(dpace);
  }
  std::vector<train::LossRecipe> recipes;
  for (train::LossRecipe r : weightings)
    for (auto n : {train::Normalization::kWeightSum, train::Normalization::kMaskSum,
                   train::Normalization::kRows}) {
      r.normalization = n;
      recipes.push_back(r);
    }
  const at::Tensor mask = (targets.weight > 0).to(at::kDouble);
  struct LabelSet {
    std::string name;
    at::Tensor ce, mask;
  };
  std::vector<LabelSet> labels = {{"", ce_elements, mask}};
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  const at::Tensor ids = at::tensor(rec.input_ids, at::kLong);
  for (std::int64_t d : {1, -1}) {
    const at::Tensor pos = at::tensor(rec.anchors, at::kLong).unsqueeze(1) +
                           at::arange(rec.block_size, at::kLong).unsqueeze(0) + d;
    const at::Tensor inside = (pos >= 0) & (pos < s);
    const at::Tensor shifted = ids.index({pos.clamp(0, s - 1)});
    labels.push_back({", labels shifted to input_ids[a+k" + std::string(d > 0 ? "+1" : "-1") + "]",
                      logits.cross_entropy(shifted), mask * inside.to(at::kDouble)});
  }
  Candidate best;
  double best_distance = 0;
  auto consider = [&](const train::LossRecipe& recipe, const at::Tensor& elements,
                      const at::Tensor& m, const std::string& suffix) {
    if (suffix.empty() && recipe.loss == configured.loss &&
        recipe.weighting == configured.weighting && recipe.gamma == configured.gamma &&
        recipe.normalization == configured.normalization)
      return;  // the configured recipe itself
    if (!(m.sum().item<double>() > 0)) return;
    const double v = recipe_value(rec, recipe, elements, m);
    const double distance = std::abs(v - rec.logged_loss);
    ++best.tried;
    values->push_back(v);
    if (std::isfinite(v) && (best.name.empty() || distance < best_distance))
      best = {"the " + recipe.describe() + suffix, v, best.tried}, best_distance = distance;
  };
  for (train::LossRecipe recipe : recipes) {
    recipe.loss = train::LossType::kHardCrossEntropy;
    for (const auto& l : labels) consider(recipe, l.ce, l.mask, l.name);
    if (kl_elements.defined()) {
      recipe.loss = train::LossType::kSoftKl;
      consider(recipe, kl_elements, mask, "");
    }
  }
  return best;
}

class LossTypeCheck : public Check {
 public:
  std::string name() const override { return "loss_type"; }
  // The record's tensors only: no checkpoint's weights.
  bool reads_weight_values(const Artifacts& /*a*/) const override { return false; }
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
    // The step's loss is over every sequence of a batch: judged on them end to end.
    const train::StepBatch batch = train::read_step_batch(*a.step_record);
    const train::StepRecord& rec = batch.joined;
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
    // Per sequence, so that a batch's positions are named in its rows, not the joined record's.
    for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
      const train::StepRecord& seq = batch.sequences[i];
      for (const auto& [tensor, value] :
           {std::pair<std::string, at::Tensor>{"drafter_logits", seq.drafter_logits},
            {"teacher_logits", seq.teacher_logits}})
        if (value.defined())
          if (auto bad = metrics::non_finite_problem(tensor, value))
            problems.push_back((batch.names[i].empty() ? "" : batch.names[i] + ": ") + *bad +
                               "; the loss cannot be recomputed from non-finite logits");
    }
    if (!problems.empty()) return conclude_judged(std::move(r), problems, "", scope);
    const DoubleLogits logits(rec.drafter_logits);
    const train::LossRecipe configured = rec.recipe();
    const at::Tensor mask = (targets.weight > 0).to(at::kDouble);  // the 0/1 supervision
    const at::Tensor ce_elements = logits.cross_entropy(targets.labels);
    const double ce = recipe_value(rec, configured, ce_elements, mask);
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
    at::Tensor kl_elements;
    std::string no_kl = "no teacher_logits";  // why the KL is n/a
    if (rec.teacher_logits.defined()) {
      if (const auto teacher = train::recorded_block_teacher_logits(rec, targets)) {
        kl_elements =
            logits.per_element([&](const at::Tensor& x, std::int64_t first, std::int64_t n) {
              return train::elementwise_kl(x, teacher->narrow(0, first, n));
            });
        kl = recipe_value(rec, configured, kl_elements, mask);
        r.measured["recomputed_kl"] = *kl;
      } else {
        std::size_t recorded = 0, positions = 0;  // over the sequences, not the joined record
        for (const auto& seq : batch.sequences) {
          recorded += seq.teacher_positions.size();
          positions += seq.input_ids.size();
        }
        no_kl = "teacher_logits recorded at " + std::to_string(recorded) + " of " +
                std::to_string(positions) + " positions" +
                (batch.batched ? " of the judged sequences" : "") +
                ", not every block element's teacher position";
      }
    }
    // A CE whose blocks run on past their sequence's end (speculators' packed rows).
    const std::optional<PastEnds> past = expected == "ce" && rec.loss != train::LossType::kSoftKl
                                             ? past_end_supervision(batch, logits)
                                             : std::nullopt;
    std::optional<std::string> crossing;  // said instead of "the weights differ" / "neither"
    if (past) {
      const double across = recipe_value(rec, configured, past->ce, past->mask);
      r.measured["recomputed_ce_past_sequence_ends"] = across;
      const bool weights_cross =
          rec.weights.defined() &&
          (rec.weights - train::recipe_weights(configured, past->mask, past->ce).to(at::kFloat))
                  .abs()
                  .max()
                  .item<double>() <= kWeightTolerance;
      if ((close(across) && !close(ce)) || weights_cross)
        crossing =
            (close(across) ? "the logged loss " + format_number(rec.logged_loss, 6) + " is the "
                           : std::string("the recorded weights are the ")) +
            configured.describe() + ", with " + std::to_string(past->elements) +
            " block element(s) supervised past the end of their anchor's sequence (first: " +
            past->first + "), on the next packed document's tokens (" + format_number(across, 6) +
            "; within the sequences " + format_number(ce, 6) +
            "): a block there predicts another document's tokens that its attention never sees; "
            "mask block elements past the document's end out of the loss (speculators' anchor "
            "selection lets a block cross into the next packed document: its loss mask is read "
            "on the packed row)";
    }
    if (rec.weights.defined()) {
      const at::Tensor expect_w =
          train::recipe_weights(configured, mask,
                                rec.loss == train::LossType::kSoftKl && kl_elements.defined()
                                    ? kl_elements
                                    : ce_elements)
              .to(at::kFloat);
      const double diff = (rec.weights - expect_w).abs().max().item<double>();
      r.measured["weights_max_abs_diff"] = diff;
      if (diff > kWeightTolerance && !crossing)
        problems.push_back(
            supervised_past_sequence_end(batch, rec.weights, expect_w, kWeightTolerance)
                .value_or("recorded weights differ from the recipe's (" +
                          std::string(
                              train::is_dpace(configured.weighting)
                                  ? std::string(train::weighting_name(configured.weighting)) +
                                        " D-PACE, alpha " + format_number(configured.dpace_alpha, 6)
                              : configured.gamma > 0
                                  ? "w_0 = 0, w_k = exp(-(k-1)/" + format_number(rec.gamma, 6) + ")"
                                  : "uniform, w_0 = 0") +
                          " on the loss mask) by up to " + format_number(diff, 6)));
    }
    const bool is_ce = close(ce), is_kl = kl && close(*kl);
    r.measured["configured_recipe"] = configured.describe();
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
    std::vector<double> values;
    const Candidate best = best_alternative(
        rec, expected == "ce" ? train::LossType::kHardCrossEntropy : train::LossType::kSoftKl,
        logits, targets, ce_elements, kl_elements, &values);
    r.measured["best_alternative"] = {{"recipe", best.name}, {"loss", best.value}};
    // What the precision explains of the logged scalar: how near a hypothesis must be to be it.
    const double margin = std::max(atol, computed_rounding) + storage_rounding;
    const std::string ce_name = configured.weighting == train::Weighting::kFixed &&
                                        configured.gamma > 0 &&
                                        configured.normalization == train::Normalization::kWeightSum
                                    ? "decay-weighted CE"
                                    : "CE of the configured recipe (" + configured.describe() + ")";
    // Named as the cause only when the logged loss is that hypothesis within what the precision
    // explains (among a hundred hypotheses, one is often within rtol by chance), with how many
    // others are too.
    auto closest_alternative = [&]() -> std::string {
      if (best.name.empty() || !close(best.value)) return "";
      if (std::abs(best.value - rec.logged_loss) > margin)
        return "; none of " + std::to_string(best.tried) +
               " other hypotheses (weightings, normalisations, the other loss, labels shifted by "
               "one) is it within the precision: the closest, " +
               best.name + ", gives " + format_number(best.value, 8);
      const auto also =
          std::count_if(values.begin(), values.end(),
                        [&](double v) { return std::abs(v - rec.logged_loss) <= margin; }) -
          1;
      return "; it is " + best.name + " (" + format_number(best.value, 8) + ")" +
             (also > 0 ? ", as " + std::to_string(also) +
                             " other hypothesis(es) also are within the precision"
                       : "");
    };
    if (crossing && found != "ce")
      problems.push_back(*crossing);
    else if (found == "neither" && !kl && rec.teacher_logits.defined())
      problems.push_back("the logged loss is not the " + ce_name + " the recipe requires (" +
                         numbers + ")" + closest_alternative() +
                         "; check the loss code, the weights and the labels");
    else if (found == "neither")
      problems.push_back("the logged loss matches neither the " + ce_name + " nor the KL (" +
                         numbers + ")" + closest_alternative() +
                         "; check the loss code, the weights and the labels");
    else if (crossing)
      problems.push_back(*crossing);  // the weights say so; the loss matched the sequences' CE
    else if (found != "both" && found != expected && found != train::loss_name(rec.loss))
      problems.push_back(
          "the record's metadata says the loss is " + std::string(train::loss_name(rec.loss)) +
          " but the logged value is the " + found + " (" + numbers +
          "): the loss is mislabelled, and the recipe's is " + expected +
          "; switch the trainer to " + (expected == "ce" ? "hard cross-entropy" : "soft KL") +
          " and label the loss it computes");
    else if (found != "both" && found == expected && found != train::loss_name(rec.loss))
      problems.push_back("the record's metadata says the loss is " +
                         std::string(train::loss_name(rec.loss)) + " but the logged value is the " +
                         found + " (" + numbers + "): the loss is mislabelled; label the loss " +
                         "the trainer computes (metadata loss \"" + found + "\")");
    else if (found != "both" && found != expected)
      problems.push_back("expected the recipe's " + expected + " loss but the logged loss is the " +
                         found + " (" + numbers + "); switch the trainer to " +
                         (expected == "ce" ? "hard cross-entropy" : "soft KL"));
    if (problems.empty() && (found == expected || found == "both")) {
      // The configured recipe matches; does another hypothesis match clearly better? The margin
      // is what the precision explains (the logged scalar's rounding, the stored logits').
      const double configured_value = expected == "ce" ? ce : *kl;
      train::LossRecipe judged_recipe = configured;
      judged_recipe.loss =
          expected == "ce" ? train::LossType::kHardCrossEntropy : train::LossType::kSoftKl;
      const std::string configured_name = judged_recipe.describe();
      const double gap =
          std::abs(configured_value - rec.logged_loss) - std::abs(best.value - rec.logged_loss);
      if (!best.name.empty() && gap > margin)
        problems.push_back(
            "the logged loss " + format_number(rec.logged_loss, 8) + " is " + best.name + " (" +
            format_number(best.value, 8) + ") rather than the configured " + configured_name +
            " (" + format_number(configured_value, 8) + "): closer by " + format_number(gap, 3) +
            ", more than the " + format_number(margin, 3) +
            " the precision explains; make the trainer compute the configured recipe, or record "
            "the recipe it runs");
    }
    return conclude_judged(std::move(r), problems,
                           "logged loss is the " + expected + " (" + numbers + ")", scope);
  }
};

const bool registered = register_as<LossTypeCheck>();

}  // namespace
}  // namespace draftgate::checks
