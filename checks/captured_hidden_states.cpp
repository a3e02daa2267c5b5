#include "checks/captured_hidden_states.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/recorded_precision.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/sequence_target.h"

namespace draftgate::checks {

CapturedVerdict judge_captured_hidden_states(const std::string& check, const io::Checkpoint& ckpt,
                                             const nlohmann::json& p, const train::StepRecord& rec,
                                             CheckResult& r, std::vector<std::string>& problems) {
  const auto recorded = static_cast<std::int64_t>(rec.input_ids.size());
  const std::int64_t length = positions_to_recompute(p, recorded);
  const std::string scope = judged(r, length, recorded);
  const at::Tensor fed = rec.fc_input.narrow(0, 0, length);
  if (auto bad = metrics::non_finite_problem("fc_input", fed)) {
    problems.push_back(*bad + "; the captured hidden states a trainer feeds fc must be finite");
    return {scope, ""};
  }
  const model::SequenceTarget& target = sequence_target(ckpt, at::kFloat);
  train::require_ids_in_vocabulary(rec, target.config().vocab, "the target's");
  const std::int64_t h = target.config().hidden, layers = target.config().num_layers;
  const auto n = static_cast<std::int64_t>(rec.target_layer_ids.size());
  for (auto l : rec.target_layer_ids)
    if (l < 0 || l >= layers)
      throw Error(rec.path, "target_layer_ids holds layer " + std::to_string(l) +
                                " but the target has layers 0.." + std::to_string(layers - 1));
  if (rec.fc_input.size(1) != n * h)
    throw Error(rec.path, "fc_input is " + std::to_string(rec.fc_input.size(1)) + " wide, not " +
                              std::to_string(n) + " taps x " + std::to_string(h));
  const std::vector<std::int64_t> tokens(rec.input_ids.begin(), rec.input_ids.begin() + length);
  const auto ref = forward_with_progress(check, target, tokens, rec.target_layer_ids, false);
  // What the capture's precision explains: the target run at that precision, rounded to storage.
  const RecordedPrecision precision =
      recorded_precision(rec, "fc_input", rec.hidden_dtype, "hidden_dtype");
  std::optional<model::ForwardResult> at_precision;
  if (precision.engine_dtype() != at::kFloat)
    at_precision = forward_with_progress(check, sequence_target(ckpt, precision.engine_dtype()),
                                         tokens, rec.target_layer_ids, false);
  const double floor = p["max_noise_ratio"].get<double>();
  const double factor = p["precision_factor"].get<double>();
  r.evidence["hidden_precision"] = precision.describe();
  const std::optional<train::FcInputNoise>& noise = rec.fc_input_noise;
  if (noise) r.evidence["fc_input_noise"] = noise->describe();
  r.measured["fc_input_slices"] = nlohmann::json::array();
  struct OverBudget {
    std::int64_t slice;
    double budget, ratio, precision_budget;
  };
  std::vector<OverBudget> over_budget;
  std::string note;
  // A precision budget against `layer` with the declared noise added in quadrature: independent of
  // the rounding, on an absolute scale (its share is over that layer's RMS), its standard deviation
  // known to a few percent over thousands of elements (kDeclaredNoiseMargin). Only for a slice that
  // holds the layer at all: noise excuses no features of another source.
  const auto with_noise = [&](double precision_budget, const at::Tensor& layer,
                              const at::Tensor& slice) {
    return noise && metrics::holds(slice, layer)
               ? std::hypot(precision_budget, kDeclaredNoiseMargin * noise->std_dev() /
                                                  std::max(metrics::rms(layer), 1e-30))
               : precision_budget;
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t layer = rec.target_layer_ids[i];
    const at::Tensor want = ref.taps.at(layer).to(at::kCPU).to(at::kFloat);
    const at::Tensor explained =
        precision.as_recorded(at_precision ? at_precision->taps.at(layer) : want);
    const double explained_ratio = metrics::noise_ratio(explained, want);
    const double precision_budget = std::max(floor, factor * explained_ratio);
    const at::Tensor got = fed.narrow(1, i * h, h);
    const double ratio = metrics::noise_ratio(got, want);
    nlohmann::json slice = {{"slice", i},
                            {"layer", layer},
                            {"noise_ratio", ratio},
                            {"noise_ratio_explained_by_precision", explained_ratio}};
    const double budget = with_noise(precision_budget, want, got);
    if (noise) {
      const double declared = noise->std_dev() / std::max(metrics::rms(want), 1e-30);
      slice["noise_ratio_declared"] = declared;
      // Far less noise than declared: fc_input recorded before the trainer's noise, while the
      // drafter's logits were computed after it (train_infer_consistency compares those).
      if (declared > precision_budget && ratio < declared / 2)
        note += std::string(note.empty() ? "" : "; ") + "fc_input slice " + std::to_string(i) +
                " holds noise of " + format_number(ratio) + " of its RMS, under half the " +
                "declared fc_input_noise " + noise->describe() + " (" + format_number(declared) +
                "): recorded before the trainer's noise? fc_input must be the features as fed";
    }
    slice["noise_ratio_budget"] = budget;
    r.measured["fc_input_slices"].push_back(slice);
    if (ratio > budget) over_budget.push_back({i, budget, ratio, precision_budget});
  }
  if (over_budget.empty()) return {scope, note};
  // A slice that is another layer's output within the budget is a tap-indexing error, which
  // fc_excludes_target_layer judges, not noise: the neighbouring layers (the embeddings below tap
  // 0), the final one, and the final one after the final norm (HF hidden_states[-1], post-norm).
  std::vector<std::int64_t> neighbours{layers - 1};
  for (const auto& o : over_budget)
    for (std::int64_t m : {rec.target_layer_ids[o.slice] - 1, rec.target_layer_ids[o.slice] + 1})
      if (m >= 0 && m < layers &&
          std::find(neighbours.begin(), neighbours.end(), m) == neighbours.end())
        neighbours.push_back(m);
  const auto other = forward_with_progress(check, target, tokens, neighbours, false);
  const auto tap = [&](std::int64_t m) { return other.taps.at(m).to(at::kCPU).to(at::kFloat); };
  const at::Tensor post_norm =
      target.final_norm(other.taps.at(layers - 1)).to(at::kCPU).to(at::kFloat);
  const at::Tensor embeddings = target.embed(tokens).to(at::kCPU).to(at::kFloat);
  // Against another candidate the declared noise's share is over that candidate's RMS (the
  // embeddings' is a hundredth of a layer's).
  const auto budget_against = [&](const OverBudget& o, const at::Tensor& candidate) {
    return with_noise(o.precision_budget, candidate, fed.narrow(1, o.slice * h, h));
  };
  for (const auto& o : over_budget) {
    const std::int64_t layer = rec.target_layer_ids[o.slice];
    const at::Tensor got = fed.narrow(1, o.slice * h, h);
    std::optional<std::string> came_from;
    for (std::int64_t m : neighbours)
      if (m != layer && (m == layer - 1 || m == layer + 1 || m == layers - 1) &&
          metrics::noise_ratio(got, tap(m)) <= budget_against(o, tap(m))) {
        came_from = "the target's output of layer " + std::to_string(m);
        r.measured["fc_input_slices"][o.slice]["came_from"] = m;
        break;
      }
    if (!came_from && layer == 0 &&
        metrics::noise_ratio(got, embeddings) <= budget_against(o, embeddings)) {
      came_from = "the embeddings (HF hidden_states[0])";
      r.measured["fc_input_slices"][o.slice]["came_from"] = -1;
    }
    if (!came_from && metrics::noise_ratio(got, post_norm) <= budget_against(o, post_norm)) {
      came_from = "the target's output of layer " + std::to_string(layers - 1) +
                  " after the final norm (HF hidden_states[-1])";
      r.measured["fc_input_slices"][o.slice]["came_from"] = layers - 1;
      r.measured["fc_input_slices"][o.slice]["after_final_norm"] = true;
    }
    if (came_from) {
      note += std::string(note.empty() ? "" : "; ") + "fc_input slice " + std::to_string(o.slice) +
              " (tap " + std::to_string(layer) + ") is " + *came_from +
              ", not noise: a tap-indexing error, fc_excludes_target_layer's to judge";
      continue;
    }
    problems.push_back(
        "fc_input slice " + std::to_string(o.slice) + " (tap " + std::to_string(layer) +
        ") deviates from the target's output of layer " + std::to_string(layer) + " by noise of " +
        format_number(o.ratio) + " of its RMS (budget " + format_number(o.budget) +
        " for hidden states " + precision.describe() +
        (noise ? " with the declared fc_input_noise " + noise->describe() +
                     "); more noise than the trainer declares: record the hidden states as the "
                     "target computed them plus that noise only, from tap l = HF "
                     "hidden_states[l + 1]"
               : "); record the hidden states as the target computed them (before any "
                 "augmentation noise), from tap l = HF hidden_states[l + 1] — or, where the "
                 "trainer adds noise to them before fc (speculators' --noise-std, 0.05 by "
                 "default), the features as fed with fc_input_noise declared "
                 "(docs/step-records.md)"));
  }
  return {scope, note};
}

}  // namespace draftgate::checks
