// train_infer_consistency: the drafter block logits a trainer recorded equal what the inference
// path computes from the checkpoint for the same context and anchor: context features of the
// positions strictly before the anchor, the block [anchor, MASK…] at positions a…a+B−1. Catches
// training masks that leak (context through the anchor), causal blocks, and position offsets.

#include "check.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

class TrainInferConsistency : public Check {
 public:
  std::string name() const override { return "train_infer_consistency"; }
  std::string summary() const override {
    return "the recorded training-mode drafter logits equal the inference path's";
  }
  std::string needs() const override {
    return "a step record with drafter_logits, the target and the drafter it was recorded with";
  }
  std::vector<Param> params() const override {
    // Budgets by the recorded logits' stored dtype: max |Δ| relative to the logits' RMS.
    return {integer_param("max_anchors", 32, 1, 1e6, "anchors compared at most"),
            number_param("f32.max_rel_diff", 1e-3, 0, 1e3, "f32 logits: max |diff| / RMS budget"),
            number_param("f32.min_top1", 0.99, 0, 1, "f32 logits: top-1 agreement budget"),
            number_param("bf16.max_rel_diff", 8e-2, 0, 1e3, "bf16 logits: max |diff| / RMS budget"),
            number_param("bf16.min_top1", 0.95, 0, 1, "bf16 logits: top-1 agreement budget")};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.step_record || !a.target || !a.drafter)
      return skip(name(),
                  "needs a step record, the target and the drafter checkpoint it was "
                  "recorded with (--step-record, --target, --drafter)");
    const train::StepRecord rec = train::read_step_record(*a.step_record);
    if (!rec.drafter_logits.defined()) return skip(name(), rec.path + " records no drafter_logits");
    const io::Checkpoint target_ckpt = io::Checkpoint::open(*a.target);
    const io::Checkpoint drafter_ckpt = io::Checkpoint::open(*a.drafter);
    if (target_ckpt.metadata_only() || drafter_ckpt.metadata_only())
      return skip(name(), "needs checkpoints with weights, not metadata-only ones");
    model::TargetOptions options;
    options.dtype = at::kFloat;
    const auto target = model::TargetModel::load(target_ckpt, options);
    const auto drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
    const std::int64_t b = drafter->block_size();
    if (rec.block_size != b || rec.drafter_logits.size(1) != b)
      throw Error(rec.path, "recorded block size " + std::to_string(rec.block_size) +
                                " but the drafter's is " + std::to_string(b));
    const std::int64_t fc_width =
        static_cast<std::int64_t>(drafter->config().target_layer_ids.size()) *
        target->config().hidden;
    if (rec.fc_input.size(1) != fc_width)
      throw Error(rec.path, "fc_input is " + std::to_string(rec.fc_input.size(1)) +
                                " wide but the drafter's fc reads " + std::to_string(fc_width));
    const bool low = rec.stored_below_f32("drafter_logits");
    const nlohmann::json budget = low ? p["bf16"] : p["f32"];
    const double max_rel = budget["max_rel_diff"].get<double>();
    const double min_top1 = budget["min_top1"].get<double>();

    const auto n = std::min<std::int64_t>(static_cast<std::int64_t>(rec.anchors.size()),
                                          p["max_anchors"].get<std::int64_t>());
    if (n <= 0) return skip(name(), rec.path + " records no anchors to compare");
    std::vector<at::Tensor> recorded, inferred;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t anchor = rec.anchors[j];
      model::DrafterState state = drafter->new_state();
      if (anchor > 0) drafter->add_context(state, rec.fc_input.narrow(0, 0, anchor));
      inferred.push_back(drafter->draft(state, rec.input_ids[anchor]));
      recorded.push_back(rec.drafter_logits[j].narrow(0, 1, b - 1));
    }
    const at::Tensor want = at::stack(inferred), got = at::stack(recorded);
    const double rms = want.pow(2).mean().sqrt().item<double>();
    const at::Tensor diff = (got - want).abs().amax(-1);  // [n, B−1]
    const auto worst = diff.argmax().item<std::int64_t>();
    const double rel = diff.max().item<double>() / std::max(rms, 1e-30);
    const double top1 = (got.argmax(-1) == want.argmax(-1)).to(at::kDouble).mean().item<double>();
    // Per block position: where a leak shows (position 1 reads the anchor's own state).
    std::vector<double> per_position;
    for (std::int64_t k = 0; k < b - 1; ++k)
      per_position.push_back(diff.select(1, k).max().item<double>() / std::max(rms, 1e-30));
    CheckResult r;
    r.evidence["step_record"] = rec.path;
    r.evidence["budget"] = low ? "bf16" : "f32";
    r.measured["anchors_compared"] = n;
    r.measured["max_rel_diff"] = rel;
    r.measured["max_rel_diff_per_block_position"] = per_position;
    r.measured["top1_agreement"] = top1;
    r.measured["worst"] = {{"anchor", rec.anchors[worst / (b - 1)]},
                           {"block_position", worst % (b - 1) + 1}};
    std::vector<std::string> problems;
    if (rel > max_rel || top1 < min_top1)
      problems.push_back(
          "the recorded training-mode logits differ from the inference path's by " +
          format_number(rel) + " of their RMS (budget " + format_number(max_rel) +
          "), top-1 agreement " + format_number(top1) + " (budget " + format_number(min_top1) +
          "), worst at anchor " + std::to_string(rec.anchors[worst / (b - 1)]) +
          " block position " + std::to_string(worst % (b - 1) + 1) +
          "; check the training mask (context strictly before the anchor, bidirectional block, "
          "no cross-block visibility), the block positions a…a+B−1, and that --drafter is the "
          "checkpoint the record was made with");
    return conclude(std::move(r), problems,
                    "training and inference agree on " + std::to_string(n) + " anchors (" +
                        format_number(rel) + " of RMS)");
  }
};

const bool registered = register_as<TrainInferConsistency>();

}  // namespace
}  // namespace draftgate::checks
