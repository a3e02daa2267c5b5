// train_infer_consistency: the drafter block logits a trainer recorded equal what the inference
// path computes from the checkpoint for the same context and anchor: context features of the
// positions strictly before the anchor, the block [anchor, MASK…] at positions a…a+B−1. Catches
// training masks that leak (context through the anchor), causal blocks, and position offsets.

#include <algorithm>
#include <optional>

#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/record_sequences.h"
#include "checks/recorded_precision.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

// Inference-path logits [n, B−1, V] (float32) for the recorded anchors `which` (indices).
at::Tensor inference_logits(const model::DFlashDrafter& drafter, const train::StepRecord& rec,
                            const std::vector<std::int64_t>& which) {
  std::vector<at::Tensor> out;
  for (std::int64_t j : which) {
    const std::int64_t anchor = rec.anchors[j];
    model::DrafterState state = drafter.new_state();
    if (anchor > 0) drafter.add_context(state, rec.fc_input.narrow(0, 0, anchor));
    out.push_back(drafter.draft(state, rec.input_ids[anchor]).to(at::kFloat));
  }
  return at::stack(out);
}

// Which sliding layers the trainer ran with another mask than inference's, when the recorded
// logits are the training forward with those layers (each alone, then all) masked so: the window
// dropped with the block kept causal, a full layer's mask, or (a window below the block size) the
// window on the context only — the message naming them, or nullopt.
std::optional<std::string> sliding_layers_masked_otherwise(const model::DFlashDrafter& drafter,
                                                           const train::StepRecord& rec,
                                                           const std::vector<std::int64_t>& which,
                                                           const at::Tensor& got, double rms,
                                                           double budget, CheckResult& r) {
  using model::SlidingMask;
  const auto& config = drafter.config();
  std::vector<std::int64_t> sliding;
  for (std::size_t i = 0; i < config.layer_types.size(); ++i)
    if (config.layer_types[i] == "sliding_attention")
      sliding.push_back(static_cast<std::int64_t>(i));
  if (sliding.empty()) return std::nullopt;
  std::vector<std::vector<std::int64_t>> layer_sets;
  for (auto i : sliding) layer_sets.push_back({i});
  if (sliding.size() > 1) layer_sets.push_back(sliding);
  std::vector<std::int64_t> anchors;
  for (auto j : which) anchors.push_back(rec.anchors[j]);
  const std::int64_t window = *config.sliding_window;
  std::vector<SlidingMask> masks = {SlidingMask::kNoWindow, SlidingMask::kFullLayer};
  if (window < config.block_size) masks.push_back(SlidingMask::kContextWindowOnly);
  for (const SlidingMask mask : masks)
    for (const auto& layers : layer_sets) {
      const at::Tensor other =
          drafter
              .training_logits(rec.fc_input, rec.input_ids, anchors,
                               model::DFlashDrafter::ContextVisibility::kBeforeAnchor,
                               {layers, mask})
              .narrow(1, 1, config.block_size - 1);
      const double rel = (got - other).abs().max().item<double>() / rms;
      if (rel > budget) continue;
      const char* names[] = {"no_window", "full_layer", "context_window_only"};
      r.measured["sliding_layers_masked_otherwise"] = layers;
      r.measured["sliding_layers_mask"] = names[static_cast<int>(mask)];
      const std::string those = layers.size() > 1 ? "those layers" : "that layer";
      const std::string named = "drafter layer" + std::string(layers.size() > 1 ? "s " : " ") +
                                format_ids(layers) + " (sliding_attention, window " +
                                std::to_string(window) + ")";
      const std::string from = " (" + format_number(rel) + " of RMS from that); ";
      if (mask == SlidingMask::kContextWindowOnly)
        return "the recorded logits are the training forward with " + named +
               " windowed on the context only, its block " +
               (config.layer_causal[static_cast<std::size_t>(layers.front())] ? "causal"
                                                                              : "bidirectional") +
               " without the window (SpecForge's sliding mask, create_dflash_sdpa_mask, which "
               "inference matches only where the window is at least block_size " +
               std::to_string(config.block_size) + ")" + from +
               "z-lab's inference windows the block too: apply the window inside the block in "
               "the trainer's mask for " +
               those + ", or train with a window of at least the block size";
      return "the recorded logits are the training forward with " + named +
             " run as full attention" +
             (mask == SlidingMask::kFullLayer
                  ? ", no window and a bidirectional block (a full layer's mask)"
                  : "") +
             from + "apply the sliding window in the trainer's mask for " + those +
             " (keys fewer than sliding_window positions behind each query" +
             (mask == SlidingMask::kFullLayer
                  ? ", causal inside the block, as z-lab's inference runs a sliding layer; a "
                    "trainer that builds one mask for every layer gives it a full layer's)"
                  : ")");
    }
  return std::nullopt;
}

class TrainInferConsistency : public Check {
 public:
  std::string name() const override { return "train_infer_consistency"; }
  bool judges_record_against_target() const override { return true; }
  std::string summary() const override {
    return "the recorded training-mode drafter logits equal the inference path's";
  }
  std::string needs() const override {
    return "a step record with drafter_logits, the target and the drafter it was recorded with";
  }
  std::vector<Param> params() const override {
    // max |Δ| relative to the logits' RMS. Budget: max(max_rel_diff, precision_factor × what the
    // drafter's precision explains, measured); top-1 judged where the top-2 margin exceeds
    // margin_factor × that precision's deviation. The maximum is an extreme-value statistic:
    // independent PyTorch bf16 trainers measured up to 1.6× the explained maximum.
    std::vector<Param> params = precision_budget_params("max_rel_diff", "max |diff| / RMS", 3.0);
    params.insert(params.begin(),
                  integer_param("max_anchors", 32, 1, 1e6, "anchors compared at most"));
    params.push_back(max_positions_param());  // anchors inside the first K positions only
    return params;
  }

  bool reads_drafter_weights(const Artifacts& /*a*/) const override { return true; }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.step_record || !a.target || !a.drafter)
      return skip(name(),
                  "needs a step record, the target and the drafter checkpoint it was "
                  "recorded with (--step-record, --target, --drafter)");
    return judge_each_sequence(train::read_step_batch(*a.step_record),
                               [&](const train::StepRecord& rec) { return judge(a, p, rec); });
  }

 private:
  CheckResult judge(const Artifacts& a, const nlohmann::json& p,
                    const train::StepRecord& rec) const {
    if (!rec.drafter_logits.defined()) return skip(name(), rec.path + " records no drafter_logits");
    const io::Checkpoint target_ckpt = io::Checkpoint::open(*a.target);
    const io::Checkpoint drafter_ckpt = io::Checkpoint::open(*a.drafter);
    if (target_ckpt.metadata_only() || drafter_ckpt.metadata_only())
      return skip(name(), "needs checkpoints with weights, not metadata-only ones");
    // The drafter reads the target's embedding and lm_head only: no decoder layer is loaded.
    const model::TargetModel& target = target_head(target_ckpt, at::kFloat);
    const auto drafter = model::DFlashDrafter::load(drafter_ckpt, target);
    // A trainer's logits over a reduced draft vocabulary have no training-mode counterpart here
    // yet (inference scatters them onto target ids, -inf elsewhere): said, not judged as -inf.
    if (const auto& draft_vocab = drafter->config().draft_vocab_size;
        draft_vocab && *draft_vocab != target.config().vocab)
      return skip(name(), "the drafter has a reduced vocabulary (draft_vocab_size " +
                              std::to_string(*draft_vocab) + " of the target's " +
                              std::to_string(target.config().vocab) +
                              "): training-mode logits over a draft vocabulary are not judged");
    const std::int64_t b = drafter->block_size();
    if (rec.block_size != b || rec.drafter_logits.size(1) != b)
      throw Error(rec.path, "recorded block size " + std::to_string(rec.block_size) +
                                " but the drafter's is " + std::to_string(b));
    const std::int64_t fc_width =
        static_cast<std::int64_t>(drafter->config().target_layer_ids.size()) *
        target.config().hidden;
    if (rec.fc_input.size(1) != fc_width)
      throw Error(rec.path, "fc_input is " + std::to_string(rec.fc_input.size(1)) +
                                " wide but the drafter's fc reads " + std::to_string(fc_width));
    train::require_ids_in_vocabulary(rec, target.config().vocab, "the target's");
    if (rec.drafter_logits.size(2) != target.config().vocab)
      throw Error(rec.path, "drafter_logits have a vocabulary of " +
                                std::to_string(rec.drafter_logits.size(2)) +
                                " but the target's is " + std::to_string(target.config().vocab));
    const double floor = p["max_rel_diff"].get<double>();
    const double min_top1 = p["min_top1"].get<double>();
    // The first max_anchors recorded anchors inside the first max_positions positions.
    const std::int64_t length =
        positions_to_recompute(p, static_cast<std::int64_t>(rec.input_ids.size()));
    std::vector<std::int64_t> which;
    for (std::size_t j = 0; j < rec.anchors.size(); ++j)
      if (rec.anchors[j] < length &&
          static_cast<std::int64_t>(which.size()) < p["max_anchors"].get<std::int64_t>())
        which.push_back(static_cast<std::int64_t>(j));
    if (which.empty())
      return skip(name(),
                  "max_positions " + std::to_string(length) +
                      " leaves none of the recorded anchors (the first is at " +
                      std::to_string(*std::min_element(rec.anchors.begin(), rec.anchors.end())) +
                      ")");
    const auto n = static_cast<std::int64_t>(which.size());
    CheckResult r;
    r.evidence["step_record"] = rec.path;
    const std::string scope =
        judged_anchors(r, n, static_cast<std::int64_t>(rec.anchors.size()), rec.anchors_in_step);
    std::vector<std::string> problems;
    // Every recorded value is judged finite, block position 0 and unjudged anchors too, so the
    // positions named are the record's own.
    for (const auto& [tensor, value] :
         {std::pair<std::string, at::Tensor>{"fc_input", rec.fc_input},
          {"drafter_logits", rec.drafter_logits}})
      if (auto bad = metrics::non_finite_problem(tensor, value))
        problems.push_back(*bad + "; the trainer's drafter step must be finite");
    if (!problems.empty()) return conclude_judged(std::move(r), problems, "", scope);

    // Inference fills the block with the config's mask token; a record naming another was trained
    // on inputs inference never gives. Said by name: the logits comparison would blame it only
    // vaguely, and not at all when just the record's metadata is off.
    const std::int64_t config_mask = drafter->config().mask_token_id;
    r.measured["mask_token_id"] = {{"record", rec.mask_token_id}, {"drafter_config", config_mask}};
    if (rec.mask_token_id != config_mask)
      problems.push_back("the trainer masked the block with token " +
                         std::to_string(rec.mask_token_id) +
                         " but the drafter's config.json says " + std::to_string(config_mask) +
                         ", which is what engines fill the block with; make the trainer and the "
                         "config use one mask_token_id");

    const at::Tensor got =
        rec.drafter_logits.index_select(0, at::tensor(which, at::kLong)).narrow(1, 1, b - 1);
    const at::Tensor want = inference_logits(*drafter, rec, which);
    if (auto bad = metrics::non_finite_problem("the inference path's drafter logits", want)) {
      problems.push_back(*bad + "; the drafter checkpoint overflows on this record's features");
      return conclude_judged(std::move(r), problems, "", scope);
    }
    // What the drafter's precision explains, measured on the same features.
    const RecordedPrecision precision =
        recorded_precision(rec, "drafter_logits", rec.drafter_dtype, "drafter_dtype");
    at::Tensor at_precision = want;
    if (precision.engine_dtype() != at::kFloat)
      at_precision =
          inference_logits(*model::DFlashDrafter::load(
                               drafter_ckpt, target_head(target_ckpt, precision.engine_dtype())),
                           rec, which);
    const at::Tensor explained = precision.as_recorded(at_precision);
    const double rms = std::max(metrics::rms(want), 1e-30);
    const double explained_rel = (explained - want).abs().max().item<double>() / rms;
    const double budget = std::max(floor, p["precision_factor"].get<double>() * explained_rel);
    const at::Tensor min_margin =
        p["margin_factor"].get<double>() *
        (explained - want).abs().amax(-1).to(at::kDouble).clamp_min(floor * rms);

    const at::Tensor diff = (got - want).abs().amax(-1);  // [n, B−1]
    const auto worst = diff.argmax().item<std::int64_t>();
    const double rel = diff.max().item<double>() / rms;
    const metrics::Top1 top1 = metrics::top1_agreement(got, want, min_margin);
    // Per block position: where a leak shows (position 1 reads the anchor's own state).
    std::vector<double> per_position;
    for (std::int64_t k = 0; k < b - 1; ++k)
      per_position.push_back(diff.select(1, k).max().item<double>() / rms);
    r.evidence["precision"] = precision.describe();
    r.measured["max_rel_diff"] = rel;
    r.measured["max_rel_diff_explained_by_precision"] = explained_rel;
    r.measured["max_rel_diff_budget"] = budget;
    r.measured["max_rel_diff_per_block_position"] = per_position;
    r.measured["top1_agreement"] = top1.agreement;
    r.measured["top1_judged"] = top1.judged;
    r.measured["top1_near_ties"] = top1.near_ties;
    r.measured["worst"] = {{"anchor", rec.anchors[which[worst / (b - 1)]]},
                           {"block_position", worst % (b - 1) + 1}};
    if (rel > budget || top1.agreement < min_top1) {
      const std::string found =
          "the recorded training-mode logits differ from the inference path's by " +
          format_number(rel) + " of their RMS (budget " + format_number(budget) +
          " for drafter logits " + precision.describe() + "), top-1 agreement " +
          format_number(top1.agreement) + " outside near-ties (budget " + format_number(min_top1) +
          "), worst at anchor " + std::to_string(rec.anchors[which[worst / (b - 1)]]) +
          " block position " + std::to_string(worst % (b - 1) + 1) + "; ";
      // A cause named replaces the checklist of the usual ones.
      if (auto layers = sliding_layers_masked_otherwise(*drafter, rec, which, got, rms, budget, r))
        problems.push_back(found + *layers);
      else
        problems.push_back(
            found +
            "check the training mask (context strictly before the anchor, bidirectional block, "
            "no cross-block visibility), the block positions a…a+B−1, its rows 1…B−1 filled "
            "with mask_token_id " +
            std::to_string(config_mask) + " (not the pad or eos token), " +
            (drafter->is_dflash2() ? "each block's DFlash2 convolutions over its own B rows only "
                                     "(zeros before row 0), "
                                   : "") +
            "that --drafter is the checkpoint the record was made with, and that fc_input is the "
            "features the drafter was fed: " +
            (rec.fc_input_noise
                 ? "the record declares fc_input_noise " + rec.fc_input_noise->describe() +
                       ", so fc_input must be recorded after that noise"
                 : std::string("a trainer that adds noise to them before fc (speculators' "
                               "--noise-std, 0.05 by default) computed these logits from other "
                               "features: record them as fed, with fc_input_noise declared")));
    }
    return conclude_judged(std::move(r), problems,
                           "training and inference agree (" + format_number(rel) +
                               " of RMS, budget " + format_number(budget) + ", " +
                               precision.describe() + ")",
                           scope);
  }
};

const bool registered = register_as<TrainInferConsistency>();

}  // namespace
}  // namespace draftgate::checks
