#include "checks/data_labels.h"

#include "checks/captured_hidden_states.h"
#include "checks/record_scope.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/train/recipe.h"

namespace draftgate::checks {
namespace {

struct Agreement {
  std::int64_t judged = 0, agreeing = 0;
  std::string first_mismatch;
  double fraction() const {
    return judged == 0 ? 1.0 : static_cast<double>(agreeing) / static_cast<double>(judged);
  }
};

// The weighted labels against input_ids[a+k+d], over the elements that have a token there.
Agreement agreement_at(const train::StepRecord& rec, const at::Tensor& weight, std::int64_t d) {
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  const auto labels = rec.labels.accessor<std::int64_t, 2>();
  const auto w = weight.accessor<float, 2>();
  Agreement out;
  for (std::size_t j = 0; j < rec.anchors.size(); ++j)
    for (std::int64_t k = 0; k < rec.block_size; ++k) {
      const std::int64_t pos = rec.anchors[j] + k + d;
      if (w[j][k] <= 0 || pos < 0 || pos >= s) continue;
      ++out.judged;
      if (labels[j][k] == rec.input_ids[pos]) {
        ++out.agreeing;
      } else if (out.first_mismatch.empty()) {
        out.first_mismatch =
            "anchor " + std::to_string(j) + " (position " + std::to_string(rec.anchors[j]) +
            "), block element " + std::to_string(k) + ": label " + std::to_string(labels[j][k]) +
            ", input_ids[" + std::to_string(pos) + "] " + std::to_string(rec.input_ids[pos]);
      }
    }
  return out;
}

}  // namespace

LabelAlignment data_label_alignment(const train::StepRecord& rec, double min_shift_agreement) {
  LabelAlignment out;
  const at::Tensor weight = train::recorded_block_targets(rec).weight.contiguous();
  const Agreement at_zero = agreement_at(rec, weight, 0);
  out.elements = at_zero.judged;
  out.agreeing = at_zero.agreeing;
  out.first_mismatch = at_zero.first_mismatch;
  if (out.aligned()) return out;
  for (std::int64_t d = 1; d < rec.block_size; ++d)
    for (std::int64_t signed_d : {d, -d}) {
      const Agreement shifted = agreement_at(rec, weight, signed_d);
      if (shifted.judged > 0 && shifted.fraction() >= min_shift_agreement &&
          shifted.fraction() > out.offset_agreement) {
        out.offset = signed_d;
        out.offset_agreement = shifted.fraction();
      }
    }
  return out;
}

CheckResult judge_data_label_record(const std::string& check, const Artifacts& a,
                                    const nlohmann::json& p, const train::StepRecord& rec) {
  CheckResult r;
  r.evidence["step_record"] = rec.path;
  r.evidence["labels_source"] = "data";
  std::vector<std::string> problems, judged_parts, not_judged;
  const double min_top1 = p["min_top1"].get<double>();
  if (rec.labels.defined()) {
    const LabelAlignment al = data_label_alignment(rec, min_top1);
    r.measured["label_alignment"] = {{"elements", al.elements}, {"agreeing", al.agreeing}};
    if (al.offset) r.measured["label_alignment"]["offset"] = *al.offset;
    judged_parts.push_back("labels against input_ids[a+k] (" + std::to_string(al.elements) +
                           " weighted elements)");
    const std::string counted = std::to_string(al.agreeing) + " of " + std::to_string(al.elements) +
                                " weighted labels are input_ids[a+k]";
    if (al.offset)
      problems.push_back("the labels are shifted by " + std::to_string(*al.offset) +
                         ": block row k of anchor a holds input_ids[a+k" +
                         (*al.offset > 0 ? "+" : "") + std::to_string(*al.offset) + "] (" +
                         format_number(100 * al.offset_agreement, 4) +
                         " % of the weighted elements), only " + counted +
                         "; row k must predict input_ids[a+k] (same-position labels, SpecForge "
                         "dflash_family_model.py)");
    else if (!al.aligned())
      problems.push_back("only " + counted + " (first not: " + al.first_mismatch +
                         "), and at no offset do they match the data tokens; data labels are "
                         "integers, so every weighted label must be the data token the record "
                         "declares (labels_source \"data\"): check the label gather and the "
                         "tokens recorded as input_ids");
  } else {
    not_judged.push_back("labels (not recorded; the recipe's input_ids[a+k] are used)");
  }
  if (rec.teacher_logits.defined())
    not_judged.push_back("teacher_logits (recorded, but a data-label loss does not read them)");
  else
    not_judged.push_back("teacher_logits (a data-label trainer has none)");
  std::string scope = "no fc_input positions recomputed";
  if (!a.target) {
    not_judged.push_back("fc_input (needs the target checkpoint, --target)");
  } else {
    const io::Checkpoint ckpt = io::Checkpoint::open(*a.target);
    if (ckpt.metadata_only()) {
      not_judged.push_back("fc_input (" + a.target->string() + " is metadata-only)");
    } else {
      const CapturedVerdict captured =
          judge_captured_hidden_states(check, ckpt, p, rec, r, problems);
      scope = captured.scope;
      judged_parts.push_back("fc_input against the target's taps [" +
                             format_ids(rec.target_layer_ids) + "]" +
                             (captured.note.empty() ? "" : " (" + captured.note + ")"));
    }
  }
  r.measured["judged"] = judged_parts;
  r.measured["not_judged"] = not_judged;
  std::string parts = "judged: ";
  for (std::size_t i = 0; i < judged_parts.size(); ++i) parts += (i ? "; " : "") + judged_parts[i];
  if (judged_parts.empty()) parts += "nothing";
  parts += "; not judged: ";
  for (std::size_t i = 0; i < not_judged.size(); ++i) parts += (i ? "; " : "") + not_judged[i];
  if (judged_parts.empty()) return skip(check, "a data-label record: " + parts);
  const bool labels_judged = rec.labels.defined(), fc_judged = judged_parts.size() > labels_judged;
  const std::string passed =
      labels_judged && fc_judged ? "the data labels are aligned and the captured hidden states are "
                                   "the target's own within what their precision explains"
      : labels_judged            ? "the data labels are aligned"
                      : "the captured hidden states are the target's own within what their "
                        "precision explains";
  return conclude_judged(std::move(r), problems, passed, scope + "; " + parts);
}

}  // namespace draftgate::checks
