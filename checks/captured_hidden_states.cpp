#include "checks/captured_hidden_states.h"

#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/recorded_precision.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/sequence_target.h"

namespace draftgate::checks {

std::string judge_captured_hidden_states(const std::string& check, const io::Checkpoint& ckpt,
                                         const nlohmann::json& p, const train::StepRecord& rec,
                                         CheckResult& r, std::vector<std::string>& problems) {
  const auto recorded = static_cast<std::int64_t>(rec.input_ids.size());
  const std::int64_t length = positions_to_recompute(p, recorded);
  const std::string scope = judged(r, length, recorded);
  const at::Tensor fed = rec.fc_input.narrow(0, 0, length);
  if (auto bad = metrics::non_finite_problem("fc_input", fed)) {
    problems.push_back(*bad + "; the captured hidden states a trainer feeds fc must be finite");
    return scope;
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
  r.measured["fc_input_slices"] = nlohmann::json::array();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t layer = rec.target_layer_ids[i];
    const at::Tensor want = ref.taps.at(layer).to(at::kCPU).to(at::kFloat);
    const at::Tensor explained =
        precision.as_recorded(at_precision ? at_precision->taps.at(layer) : want);
    const double explained_ratio = metrics::noise_ratio(explained, want);
    const double budget = std::max(floor, factor * explained_ratio);
    const double ratio = metrics::noise_ratio(fed.narrow(1, i * h, h), want);
    r.measured["fc_input_slices"].push_back(
        {{"slice", i},
         {"layer", layer},
         {"noise_ratio", ratio},
         {"noise_ratio_explained_by_precision", explained_ratio},
         {"noise_ratio_budget", budget}});
    if (ratio > budget)
      problems.push_back(
          "fc_input slice " + std::to_string(i) + " (tap " + std::to_string(layer) +
          ") deviates from the target's output of layer " + std::to_string(layer) +
          " by noise of " + format_number(ratio) + " of its RMS (budget " + format_number(budget) +
          " for hidden states " + precision.describe() +
          "); record the hidden states as the target computed them (before any augmentation "
          "noise), from tap l = HF hidden_states[l + 1] (fc_excludes_target_layer names the "
          "layer a slice came from)");
  }
  return scope;
}

}  // namespace draftgate::checks
