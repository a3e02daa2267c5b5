// The checks' model computations in the engine. fc_excludes_target_layer's dynamic half: which
// target layer each slice of the fc input a trainer fed really came from.

#include "checks/model_engine.h"

#include <cmath>
#include <limits>

#include "checks/captured_hidden_states.h"
#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/recorded_precision.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

// NMSE at or above this between a fed slice and every target layer means the features share less
// than half their energy with anything this target computes: another model's features (measured
// 1.28 for a qwen3_5 fixture record against the qwen3 fixture target), not a tap off by one (which
// matches its neighbour below 1e-3 in the fixtures) or the recipe's fc-input noise (about 3e-3).
constexpr double kNoMatchNmse = 0.5;

// How one fed fc-input slice compares with the target's candidates: -1 = the embeddings (HF
// hidden_states[0]), 0..L-1 every layer's output, L the final layer's output after the final norm
// (what HF returns as hidden_states[-1]).
struct SliceMatch {
  std::int64_t best = -2;  // by NMSE; by mean squared difference under declared noise
  double best_nmse = 0;
  double declared_nmse = 0;
  // Under declared noise: the mean squared differences to the best and the declared candidate,
  // their mean squares, the RMS of their difference and the slice's element count.
  double best_mse = 0, declared_mse = 0, best_square = 0, declared_square = 0, separation = 0;
  double elements = 0;
  // Whether the slice holds the best / the declared candidate at all (metrics::holds): declared
  // noise explains a difference only from a candidate the slice holds.
  bool holds_best = false, holds_declared = false;
  bool by_mse = false;  // matched under declared noise

  // What declared noise of this variance leaves of the NMSE to the best / the declared candidate
  // (residual_nmse, only from a candidate the slice holds); the plain NMSE without declared noise.
  double best_residual(double noise_variance) const;
  double declared_residual(double noise_variance) const;
};

// Compares each declared slice with every candidate. Noise added to a slice adds its variance to
// the squared difference with every candidate alike, so under declared noise (`by_mse`) the best
// is the least mean squared difference: the NMSE divides that by each candidate's mean square and
// puts a noised slice nearest the layer of largest states.
std::vector<SliceMatch> match_slices(const model::SequenceTarget& target, const at::Tensor& fed,
                                     const std::vector<std::int64_t>& tokens,
                                     const std::vector<std::int64_t>& declared,
                                     const std::string& check, bool by_mse) {
  const std::int64_t h = target.config().hidden, layers = target.config().num_layers;
  std::vector<std::int64_t> all(layers);
  for (std::int64_t l = 0; l < layers; ++l) all[l] = l;
  const auto fwd = forward_with_progress(check, target, tokens, all, /*want_logits=*/false);
  std::vector<at::Tensor> candidates = {target.embed(tokens).to(at::kFloat)};
  for (auto l : all) candidates.push_back(fwd.taps.at(l));
  candidates.push_back(target.final_norm(fwd.taps.at(layers - 1)).to(at::kFloat));
  const auto mean_square = [](const at::Tensor& t) {
    return t.to(at::kDouble).pow(2).mean().item<double>();
  };
  std::vector<SliceMatch> matches;
  for (std::size_t i = 0; i < declared.size(); ++i) {
    const at::Tensor slice = fed.narrow(1, static_cast<std::int64_t>(i) * h, h);
    SliceMatch m;
    m.by_mse = by_mse;
    double best_key = 0;
    std::int64_t declared_c = -1, best_c = -1;
    for (std::int64_t c = 0; c <= layers + 1; ++c) {
      const double nmse = metrics::nmse(slice, candidates[c]);
      const double key = by_mse ? mean_square(slice - candidates[c]) : nmse;
      if (m.best == -2 || key < best_key)
        m.best = c - 1, m.best_nmse = nmse, best_key = key, best_c = c;
      if (c - 1 == declared[i]) m.declared_nmse = nmse, declared_c = c;
    }
    if (by_mse) {
      m.best_mse = best_key;
      m.best_square = mean_square(candidates[best_c]);
      m.elements = static_cast<double>(slice.numel());
      m.holds_best = metrics::holds(slice, candidates[best_c]);
      if (declared_c >= 0) {
        m.declared_mse = mean_square(slice - candidates[declared_c]);
        m.declared_square = mean_square(candidates[declared_c]);
        m.holds_declared = metrics::holds(slice, candidates[declared_c]);
        m.separation = std::sqrt(mean_square(candidates[best_c] - candidates[declared_c]));
      }
    }
    matches.push_back(m);
  }
  return matches;
}

// The variance of the augmentation noise a record declares in fc_input (train::FcInputNoise) with
// its margin (kDeclaredNoiseMargin: the sample's variance, noise drawn in bf16); 0 for none.
double declared_noise_variance(const train::StepRecord& rec) {
  return rec.fc_input_noise ? std::pow(kDeclaredNoiseMargin * rec.fc_input_noise->std_dev(), 2) : 0;
}

// Under declared noise, the NMSE to a candidate of what the noise leaves: the squared difference
// less the declared variance, over the candidate's mean square (at least 0).
double residual_nmse(double mse, double square, double noise_variance) {
  return square > 0 ? std::max(0.0, mse - noise_variance) / square : 0;
}

double SliceMatch::best_residual(double noise_variance) const {
  return by_mse ? residual_nmse(best_mse, best_square, holds_best ? noise_variance : 0) : best_nmse;
}

double SliceMatch::declared_residual(double noise_variance) const {
  return by_mse ? residual_nmse(declared_mse, declared_square, holds_declared ? noise_variance : 0)
                : declared_nmse;
}

// Under declared noise, what the noise explains of the declared layer's excess over the best in
// mean squared difference: 4 standard deviations of the noise's share in it (2·σ·separation/√n for
// independent noise of variance σ², no larger than what the best candidate leaves).
double noise_explained_gap(const SliceMatch& m, double noise_variance) {
  const double sigma = std::sqrt(std::min(noise_variance, m.best_mse));
  return 4 * 2 * sigma * m.separation / std::sqrt(m.elements);
}

class ModelEngine final : public Engine {
 public:
  std::string match_fed_features(const io::Checkpoint& target,
                                 const std::filesystem::path& step_record,
                                 const model::DrafterConfig& drafter, const nlohmann::json& params,
                                 CheckResult& result,
                                 std::vector<std::string>& problems) const override;
  std::optional<std::string> foreign_record(
      const io::Checkpoint& target, const std::filesystem::path& step_record) const override;
  void plan_record_forwards(const std::filesystem::path& step_record,
                            bool reproduces_precision) const override;

 private:
  void match_sequence_features(const io::Checkpoint& ckpt, const train::StepRecord& rec,
                               std::int64_t length, const std::vector<std::int64_t>& taps,
                               const nlohmann::json& params, CheckResult& r,
                               std::vector<std::string>& problems) const;
};

// Names the layer each fc_input slice of every sequence came from and reports slices that are not
// their declared tap.
std::string ModelEngine::match_fed_features(const io::Checkpoint& ckpt,
                                            const std::filesystem::path& record,
                                            const model::DrafterConfig& d,
                                            const nlohmann::json& params, CheckResult& r,
                                            std::vector<std::string>& problems) const {
  const train::StepBatch batch = train::read_step_batch(record);
  // The slices are judged against the taps the record declares: a record fed what it says or not
  // on its own. A drafter declaring other taps is one more finding, named below.
  const std::vector<std::int64_t>& taps = batch.sequences.front().target_layer_ids;
  const std::size_t earlier = problems.size();
  r.measured["fed_slices"] = nlohmann::json::array();
  std::int64_t judged_positions = 0, recorded = 0;
  for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
    const train::StepRecord& rec = batch.sequences[i];
    const auto positions = static_cast<std::int64_t>(rec.input_ids.size());
    const std::int64_t length = positions_to_recompute(params, positions);
    recorded += positions, judged_positions += length;
    // A batch's problems name the sequence.
    const std::string where = batch.batched ? batch.names[i] + ": " : "";
    std::vector<std::string> found;
    match_sequence_features(ckpt, rec, length, taps, params, r, found);
    for (auto& problem : found) problems.push_back(where + problem);
    if (batch.batched)
      for (auto& slice : r.measured["fed_slices"])
        if (!slice.contains("sequence")) slice["sequence"] = batch.names[i];
  }
  if (taps != d.target_layer_ids) {
    const std::string both = "the step record declares taps [" + format_ids(taps) +
                             "] but the drafter config [" + format_ids(d.target_layer_ids) + "]";
    // Features that are the record's own taps: a record of another drafter, or a config that
    // names other taps than the drafter was trained on — not a tap-indexing error.
    problems.push_back(problems.size() > earlier
                           ? both
                           : both +
                                 ", and the record's fc_input matches its own taps: is "
                                 "--drafter the checkpoint the record was made with? If it "
                                 "is, its config.json declares other taps than it was "
                                 "trained on, and inference would feed fc other layers");
  }
  return judged(r, judged_positions, recorded);
}

// One sequence's part of match_fed_features over its first `length` positions.
void ModelEngine::match_sequence_features(const io::Checkpoint& ckpt, const train::StepRecord& rec,
                                          std::int64_t length,
                                          const std::vector<std::int64_t>& taps,
                                          const nlohmann::json& params, CheckResult& r,
                                          std::vector<std::string>& problems) const {
  const double max_nmse = params["max_nmse"].get<double>();
  const std::vector<std::int64_t> tokens(rec.input_ids.begin(), rec.input_ids.begin() + length);
  const at::Tensor fed = rec.fc_input.narrow(0, 0, length);
  if (auto bad = metrics::non_finite_problem("fc_input", fed)) {
    problems.push_back(*bad + "; the features a trainer feeds fc must be finite");
    return;
  }
  const model::SequenceTarget& target = sequence_target(ckpt, at::kFloat);
  train::require_ids_in_vocabulary(rec, target.config().vocab, "the target's");
  const std::int64_t h = target.config().hidden, layers = target.config().num_layers;
  const auto n = static_cast<std::int64_t>(taps.size());
  if (rec.fc_input.size(1) != n * h)
    throw Error(rec.path, "fc_input is " + std::to_string(rec.fc_input.size(1)) + " wide, not " +
                              std::to_string(n) + " taps x " + std::to_string(h));
  const double noise = declared_noise_variance(rec);
  const auto matches = match_slices(target, fed, tokens, taps, "fc_excludes_target_layer",
                                    rec.fc_input_noise.has_value());
  const std::int64_t post_norm = layers;  // its id among the candidates' layer ids
  const std::string less_noise =
      rec.fc_input_noise ? ", less the declared fc_input_noise " + rec.fc_input_noise->describe()
                         : std::string();
  // How far the best candidate and the declared one are from the slice: their NMSEs, or under
  // declared noise their mean squared differences and how much more than the noise explains.
  const auto how_far = [&](const SliceMatch& m, double source_nmse, double declared_nmse) {
    if (!rec.fc_input_noise)
      return "NMSE " + std::to_string(source_nmse) + " vs " + std::to_string(declared_nmse) +
             " to the declared";
    const double explained = noise_explained_gap(m, noise);
    return "mean squared difference " + format_number(m.best_mse) + " vs " +
           format_number(m.declared_mse) + " to the declared, " +
           (explained > 0 ? format_number((m.declared_mse - m.best_mse) / explained) +
                                "x the gap the declared fc_input_noise " +
                                rec.fc_input_noise->describe() + " explains"
                          : "which no noise explains: the slice holds none of the declared "
                            "fc_input_noise " +
                                rec.fc_input_noise->describe());
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const SliceMatch& m = matches[static_cast<std::size_t>(i)];
    const std::int64_t want = taps[i];
    const auto name = [&](std::int64_t l) {
      if (l == post_norm)
        return "layer " + std::to_string(layers - 1) +
               " after the final norm (HF hidden_states[-1], which transformers returns post-norm)";
      return l < 0 ? std::string("the embeddings") : "layer " + std::to_string(l);
    };
    nlohmann::json slice_report = {{"slice", i},
                                   {"declared_layer", want},
                                   {"came_from", std::min(m.best, layers - 1)},
                                   {"nmse_to_declared", m.declared_nmse},
                                   {"nmse_to_source", m.best_nmse}};
    if (m.best == post_norm) slice_report["after_final_norm"] = true;
    // What the declared noise leaves (the plain NMSE without it).
    const double source_nmse = m.best_residual(noise);
    const double declared_nmse = m.declared_residual(noise);
    // Under declared noise another layer may come out nearest by chance: only a difference the
    // noise does not explain is a finding; otherwise the slice is named as not told apart.
    const bool other_layer =
        m.best != want &&
        (!rec.fc_input_noise || m.declared_mse - m.best_mse > noise_explained_gap(m, noise));
    if (rec.fc_input_noise) {
      slice_report["residual_nmse_to_declared"] = declared_nmse;
      if (m.best != want && !other_layer) slice_report["told_apart"] = false;
    }
    r.measured["fed_slices"].push_back(slice_report);
    if (source_nmse >= std::max(kNoMatchNmse, max_nmse))
      problems.push_back("fc input slice " + std::to_string(i) + " matches no target layer (NMSE " +
                         std::to_string(source_nmse) + " to the closest, " + name(m.best) +
                         less_noise + "): was the record made with this target?");
    else if (!other_layer && declared_nmse > max_nmse)
      problems.push_back(
          "fc input slice " + std::to_string(i) +
          (m.best == want ? " is closest to its declared " : " is as close to its declared ") +
          name(want) + (m.best == want ? "" : " as to " + name(m.best)) +
          " but differs from it by NMSE " + std::to_string(declared_nmse) + less_noise +
          " (max_nmse " + format_number(max_nmse) +
          "): noise on the captured hidden states; record fc_input as the target "
          "computed it, before any augmentation noise or with that noise declared "
          "(target_logits_noise_free judges it against the capture's precision)");
    else if (other_layer)
      problems.push_back("fc input slice " + std::to_string(i) + " is declared as " + name(want) +
                         " but matches " + name(m.best) + " (" +
                         how_far(m, source_nmse, declared_nmse) + ")" +
                         (m.best >= layers - 1 ? ", the target's FINAL layer" : "") +
                         "; fix the trainer's tap indexing (tap l = output of layer l = HF "
                         "hidden_states[l + 1])");
  }
}

// A short prefix suffices: features of another model miss every layer at every position.
constexpr std::int64_t kForeignProbePositions = 32;

std::optional<std::string> ModelEngine::foreign_record(const io::Checkpoint& ckpt,
                                                       const std::filesystem::path& record) const {
  // A record is one target's: its first sequence says whose.
  const train::StepRecord rec = train::read_step_batch(record).sequences.front();
  const model::SequenceTarget& target = sequence_target(ckpt, at::kFloat);
  const std::int64_t h = target.config().hidden;
  const auto n = static_cast<std::int64_t>(rec.target_layer_ids.size());
  // A width that does not fit is the checks' to name (against the drafter's fc, the target's taps).
  if (rec.fc_input.size(1) != n * h) return std::nullopt;
  // A streamed forward costs a read of the whole checkpoint at any length: there the probe runs
  // the sequence the checks recompute with their defaults (all of it), and its forward, kept by the
  // target cache, serves fc_excludes_target_layer and target_logits_noise_free instead of being
  // one more pass (on a 54 GB target: three passes became two) — unless keeping every layer's
  // output over the whole sequence would take over a quarter of the memory budget, which a run
  // limited by --max-positions would never have needed.
  const auto recorded = static_cast<std::int64_t>(rec.input_ids.size());
  const auto every_tap_bytes = static_cast<std::uint64_t>(target.config().num_layers) *
                               static_cast<std::uint64_t>(recorded * h) * sizeof(float);
  const std::uint64_t budget = model::available_memory_bytes();
  const bool whole = target.streamed() && (budget == 0 || every_tap_bytes <= budget / 4);
  const std::int64_t length =
      whole ? recorded : std::min<std::int64_t>(kForeignProbePositions, recorded);
  const at::Tensor fed = rec.fc_input.narrow(0, 0, length);
  if (metrics::non_finite_problem("fc_input", fed)) return std::nullopt;  // the checks say so
  const std::vector<std::int64_t> tokens(rec.input_ids.begin(), rec.input_ids.begin() + length);
  // Ids outside the target's vocabulary are the checks' to name, with the record file and key.
  for (const auto t : tokens)
    if (t < 0 || t >= target.config().vocab) return std::nullopt;
  const auto matches = match_slices(target, fed, tokens, rec.target_layer_ids, "step record",
                                    rec.fc_input_noise.has_value());
  const double noise = declared_noise_variance(rec);
  double closest = std::numeric_limits<double>::infinity();
  for (const SliceMatch& m : matches) {
    const double nmse = m.best_residual(noise);
    if (nmse < kNoMatchNmse) return std::nullopt;
    closest = std::min(closest, nmse);
  }
  return "no target layer matches this record (closest NMSE " + format_number(closest) +
         " over the first " + std::to_string(length) + " positions of its fc_input; " +
         format_number(kNoMatchNmse) + " or more is no match)";
}

// target_logits_noise_free models the teacher's precision (teacher_dtype) and the capture's
// (hidden_dtype, through captured_hidden_states.h); undeclared is bf16 (recorded_precision.h).
void ModelEngine::plan_record_forwards(const std::filesystem::path& record,
                                       bool reproduces_precision) const {
  bool wanted = false;
  if (reproduces_precision) {
    try {
      const train::StepRecord meta = train::read_step_metadata(record);
      for (const auto& [tensor, declared, key] :
           {std::tuple{"teacher_logits", meta.teacher_dtype, "teacher_dtype"},
            {"fc_input", meta.hidden_dtype, "hidden_dtype"}})
        wanted =
            wanted || recorded_precision(meta, tensor, declared, key).engine_dtype() != at::kFloat;
    } catch (const Error&) {
      wanted = true;  // a bad record is each check's error to report, with its check's name
    }
  }
  expect_bf16_forwards(wanted);
}

}  // namespace

const Engine& model_engine() {
  static const ModelEngine engine;
  return engine;
}
}  // namespace draftgate::checks
