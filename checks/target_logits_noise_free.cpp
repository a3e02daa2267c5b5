// target_logits_noise_free: the teacher a trainer used is the target's own output. Recomputes
// lm_head(final_norm(h_last)) for the recorded ids in float32 and judges the recorded teacher
// logits against the spread that the trainer's precision explains — measured by running the
// target at that precision too and rounding to the stored dtype. Position by position, top-1 flips
// count only where the float32 top-2 margin is above that precision's deviation there, and the
// recorded labels must be the teacher's greedy tokens on the same terms. Names a teacher computed
// without the final norm when that is what the record holds. fc_input, which every trainer takes
// from the target, is judged against the target's taps the same way (captured_hidden_states.h).

#include <algorithm>

#include "checks/captured_hidden_states.h"
#include "checks/check.h"
#include "checks/data_labels.h"
#include "checks/metrics.h"
#include "checks/record_scope.h"
#include "checks/record_sequences.h"
#include "checks/recorded_precision.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/train/recipe.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

// Per row of [rows, vocabulary] logits: std(got − ref) / RMS(ref over the whole tensor), a few
// rows at a time (metrics::per_row_slice).
at::Tensor row_noise_ratio(const at::Tensor& got, const at::Tensor& ref) {
  const double scale = std::max(metrics::rms(ref), 1e-30);
  return metrics::per_row_slice(ref,
                                [&](const at::Tensor& r, std::int64_t first, std::int64_t n) {
                                  return (got.narrow(0, first, n).to(at::kDouble) - r).std(-1);
                                }) /
         scale;
}

class TargetLogitsNoiseFree : public Check {
 public:
  std::string name() const override { return "target_logits_noise_free"; }
  bool judges_record_against_target() const override { return true; }
  bool reproduces_record_precision() const override { return true; }
  std::string summary() const override {
    return "the recorded teacher logits / labels are the target's own, without noise";
  }
  std::string needs() const override { return "a step record and the target with weights"; }
  std::vector<Param> params() const override {
    // The noise ratio is std(recorded − float32 recomputation) / RMS. Budget: max(max_noise_ratio,
    // precision_factor × the ratio the trainer's precision explains); top-1 is judged where the
    // top-2 margin exceeds margin_factor × that precision's deviation at the position. Independent
    // PyTorch bf16 trainers (bf16 weights, autocast) measured 0.6–1.15× the explained ratio.
    std::vector<Param> params = precision_budget_params("max_noise_ratio", "noise / RMS", 2.0);
    params.push_back(max_positions_param());
    return params;
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.step_record) return skip(name(), "needs a step record (--step-record)");
    return judge_each_sequence(train::read_step_batch(*a.step_record),
                               [&](const train::StepRecord& rec) { return judge(a, p, rec); });
  }

 private:
  CheckResult judge(const Artifacts& a, const nlohmann::json& p,
                    const train::StepRecord& rec) const {
    // A data-label trainer has no teacher: what it takes from the target is fc_input.
    if (rec.labels_source == train::LabelsSource::kData)
      return judge_data_label_record(name(), a, p, rec);
    if (!a.target) return skip(name(), "needs the target checkpoint (--target)");
    const io::Checkpoint ckpt = io::Checkpoint::open(*a.target);
    if (ckpt.metadata_only())
      return skip(name(), a.target->string() + " is metadata-only: no weights to recompute with");
    const double floor = p["max_noise_ratio"].get<double>();
    const double factor = p["precision_factor"].get<double>();
    const double min_top1 = p["min_top1"].get<double>();

    // The leading positions recomputed: max_positions, and without labels nothing past the last
    // recorded teacher row.
    const auto recorded = static_cast<std::int64_t>(rec.input_ids.size());
    std::int64_t length = positions_to_recompute(p, recorded);
    if (!rec.labels.defined()) length = std::min(length, rec.teacher_positions.back() + 1);
    const auto teacher_rows = static_cast<std::int64_t>(
        std::lower_bound(rec.teacher_positions.begin(), rec.teacher_positions.end(), length) -
        rec.teacher_positions.begin());
    if (rec.teacher_logits.defined() && teacher_rows == 0)
      return skip(name(), "max_positions " + std::to_string(length) +
                              " leaves none of the recorded teacher positions (the first is " +
                              std::to_string(rec.teacher_positions.front()) + ")");
    const std::vector<std::int64_t> tokens(rec.input_ids.begin(), rec.input_ids.begin() + length);

    const model::SequenceTarget& target = sequence_target(ckpt, at::kFloat);
    train::require_ids_in_vocabulary(rec, target.config().vocab, "the target's");
    const std::int64_t last = target.config().num_layers - 1;
    const auto fwd = forward_with_progress(name(), target, tokens, {last});
    const at::Tensor ref = fwd.logits;  // [length, V]
    CheckResult r;
    r.evidence["step_record"] = rec.path;
    r.evidence["labels_source"] = "teacher";
    // Which parts the verdict rests on, and which the record does not hold.
    const std::string scope = rec.teacher_logits.defined() ? judged(r, teacher_rows, recorded)
                                                           : judged(r, length, recorded);
    std::string not_recorded;
    for (const auto& [part, held] :
         {std::pair<std::string, bool>{"teacher_logits", rec.teacher_logits.defined()},
          {"labels", rec.labels.defined()}}) {
      r.measured[held ? "judged" : "not_recorded"].push_back(part);
      if (!held) not_recorded += part;
    }
    std::vector<std::string> problems;
    if (auto bad = metrics::non_finite_problem("the target's own logits (float32)", ref)) {
      problems.push_back(*bad + "; the target overflows on these ids, so no teacher can be judged");
      return conclude_judged(std::move(r), problems, "", scope);
    }
    if (rec.teacher_logits.defined() && rec.teacher_logits.size(1) != ref.size(1))
      throw Error(rec.path, "teacher_logits have a vocabulary of " +
                                std::to_string(rec.teacher_logits.size(1)) +
                                " but the target gives " + std::to_string(ref.size(1)));

    // What the trainer's precision explains, measured on the same ids.
    const RecordedPrecision precision =
        recorded_precision(rec, rec.teacher_logits.defined() ? "teacher_logits" : "labels",
                           rec.teacher_dtype, "teacher_dtype");
    at::Tensor at_precision = ref;
    if (precision.engine_dtype() != at::kFloat)
      at_precision =
          forward_with_progress(name(), sequence_target(ckpt, precision.engine_dtype()), tokens, {})
              .logits;
    const at::Tensor explained = precision.as_recorded(at_precision);
    // The recomputed rows the recorded teacher rows belong to.
    const at::Tensor judged_rows =
        at::tensor(std::vector<std::int64_t>(rec.teacher_positions.begin(),
                                             rec.teacher_positions.begin() + teacher_rows),
                   at::kLong);
    const auto at_teacher = [&](const at::Tensor& t) {
      return rec.teacher_logits.defined() ? t.index_select(0, judged_rows) : t;
    };
    const double explained_ratio = metrics::noise_ratio(at_teacher(explained), at_teacher(ref));
    const double budget = std::max(floor, factor * explained_ratio);
    // A flip needs the top-2 gap to close: rows whose gap the precision's deviation could close
    // are near-ties, not evidence.
    const at::Tensor min_margin =
        p["margin_factor"].get<double>() *
        (explained - ref).abs().amax(-1).to(at::kDouble).clamp_min(floor * metrics::rms(ref));
    r.evidence["precision"] = precision.describe();
    r.measured["noise_ratio_explained_by_precision"] = explained_ratio;
    r.measured["noise_ratio_budget"] = budget;
    r.measured["teacher_rms"] = metrics::rms(at_teacher(ref));

    if (rec.teacher_logits.defined()) {
      const at::Tensor got = rec.teacher_logits.narrow(0, 0, teacher_rows);
      if (auto bad = metrics::non_finite_problem("teacher_logits", got)) {
        problems.push_back(*bad + "; the trainer's teacher must be finite");
      } else {
        judge_teacher(got, rec.teacher_positions, target, at_teacher(fwd.taps.at(last)),
                      at_teacher(ref), budget, at_teacher(min_margin), min_top1, precision, r,
                      problems);
      }
    }
    if (rec.labels.defined()) {
      const train::BlockTargets targets = train::recorded_block_targets(rec);
      const at::Tensor greedy =
          train::block_teacher_logits(ref, rec.anchors, rec.block_size).argmax(-1);
      const at::Tensor decided =
          train::block_teacher_logits(metrics::top2_margin(ref).unsqueeze(-1), rec.anchors,
                                      rec.block_size)
              .squeeze(-1) >
          train::block_teacher_logits(min_margin.unsqueeze(-1), rec.anchors, rec.block_size)
              .squeeze(-1);
      // Only elements whose teacher position (a + k − 1) was recomputed.
      const at::Tensor read_position =
          at::tensor(rec.anchors, at::kLong).unsqueeze(1) +
          (at::arange(rec.block_size, at::kLong) - 1).clamp_min(0).unsqueeze(0);
      const at::Tensor used = (targets.weight > 0) & decided & (read_position < length);
      const double n = used.sum().item<double>();
      const double agree =
          n == 0 ? 1.0 : ((targets.labels == greedy) & used).sum().item<double>() / n;
      r.measured["label_agreement"] = agree;
      r.measured["labels_judged"] = n;
      if (agree < min_top1)
        problems.push_back(
            "only " + format_number(agree) + " of " + format_number(n) +
            " recorded labels outside near-ties are the target's greedy tokens "
            "(budget " +
            format_number(min_top1) +
            "); the labels must be argmax of the clean teacher at the same position");
    }
    // The teacher's trainer takes fc_input from the target too.
    CheckResult captured;
    const CapturedVerdict fc =
        judge_captured_hidden_states(name(), ckpt, p, rec, captured, problems);
    for (const auto& [key, value] : captured.measured.items())
      if (key.rfind("positions_", 0) != 0) r.measured[key] = value;
    for (const auto& [key, value] : captured.evidence.items()) r.evidence[key] = value;
    r.measured["judged"].push_back("fc_input");
    CheckResult out = conclude_judged(
        std::move(r), problems,
        "the recorded teacher is the target's own output within what its precision explains (" +
            precision.describe() + "), and fc_input the target's taps [" +
            format_ids(rec.target_layer_ids) + "] within what theirs explains" +
            (fc.note.empty() ? "" : " (" + fc.note + ")"),
        fc.scope == scope ? scope : scope + "; fc_input " + fc.scope);
    if (!not_recorded.empty()) out.message += " (" + not_recorded + " not recorded, not judged)";
    return out;
  }

 private:
  // `got` are the recorded teacher rows at `positions` (their first rows), `h_last`, `ref` and
  // `min_margin` the recomputation at those positions.
  static void judge_teacher(const at::Tensor& got, const std::vector<std::int64_t>& positions,
                            const model::SequenceTarget& target, const at::Tensor& h_last,
                            const at::Tensor& ref, double budget, const at::Tensor& min_margin,
                            double min_top1, const RecordedPrecision& precision, CheckResult& r,
                            std::vector<std::string>& problems) {
    const double ratio = metrics::noise_ratio(got, ref);
    // Per position, evidence only: an independent bf16 implementation's error is not proportional
    // to draftgate's position by position (measured up to 6x at single positions).
    const at::Tensor rows = row_noise_ratio(got, ref);
    const auto worst_row = rows.argmax().item<std::int64_t>();
    const std::int64_t worst = positions[worst_row];
    const double worst_ratio = rows[worst_row].item<double>();
    const metrics::Top1 top1 = metrics::top1_agreement(got, ref, min_margin);
    r.measured["noise_ratio"] = ratio;
    r.measured["worst_position"] = {{"position", worst}, {"noise_ratio", worst_ratio}};
    r.measured["max_abs_diff"] = metrics::max_abs_diff(got, ref);
    r.measured["mean_kl"] = metrics::mean_kl(ref, got);
    r.measured["top1_agreement"] = top1.agreement;
    r.measured["top1_judged_positions"] = top1.judged;
    r.measured["top1_near_ties"] = top1.near_ties;
    if (ratio <= budget && top1.agreement >= min_top1) return;
    // Is it a teacher computed without the final norm?
    const at::Tensor no_norm = target.lm_head(h_last);
    const double no_norm_ratio = metrics::noise_ratio(got, no_norm);
    r.measured["noise_ratio_vs_teacher_without_final_norm"] = no_norm_ratio;
    if (no_norm_ratio <= budget) {
      problems.push_back(
          "the recorded teacher logits equal lm_head(h_last) WITHOUT the final norm (residual " +
          format_number(no_norm_ratio) + " of RMS against that, " + format_number(ratio) +
          " against the real logits); apply the target's final norm before lm_head");
      return;
    }
    std::string where = "worst at position " + std::to_string(worst) + " (" +
                        format_number(worst_ratio) + " of RMS there)";
    if (top1.first_disagreement)
      where += ", first top-1 flip outside near-ties at position " +
               std::to_string(positions[*top1.first_disagreement]);
    problems.push_back("the recorded teacher logits deviate from the target's by noise of " +
                       format_number(ratio) + " of their RMS (budget " + format_number(budget) +
                       " for a teacher " + precision.describe() + "), top-1 agreement " +
                       format_number(top1.agreement) + " on " + std::to_string(top1.judged) +
                       " judged positions outside near-ties (budget " + format_number(min_top1) +
                       "), " + where +
                       "; remove noise from the teacher path (noise belongs on fc inputs only)"
                       ", or give the target the record was made with if it was another copy of "
                       "this one (fine-tuned, quantized or re-converted: a record written with "
                       "the target's identity is matched by it)");
  }
};

const bool registered = register_as<TargetLogitsNoiseFree>();

}  // namespace
}  // namespace draftgate::checks
