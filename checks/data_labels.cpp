#include "checks/data_labels.h"

#include "checks/captured_hidden_states.h"
#include "checks/record_scope.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/train/recipe.h"

namespace draftgate::checks {
namespace {

// Agreement of the weighted labels with input_ids[a+k+d], over the elements that have a token
// there; the count judged in `judged`.
double agreement_at(const train::StepRecord& rec, const at::Tensor& weight, std::int64_t d,
                    std::int64_t* judged) {
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  const auto labels = rec.labels.accessor<std::int64_t, 2>();
  const auto w = weight.accessor<float, 2>();
  std::int64_t n = 0, agree = 0;
  for (std::size_t j = 0; j < rec.anchors.size(); ++j)
    for (std::int64_t k = 0; k < rec.block_size; ++k) {
      const std::int64_t pos = rec.anchors[j] + k + d;
      if (w[j][k] <= 0 || pos < 0 || pos >= s) continue;
      ++n;
      agree += labels[j][k] == rec.input_ids[pos];
    }
  *judged = n;
  return n == 0 ? 1.0 : static_cast<double>(agree) / static_cast<double>(n);
}

}  // namespace

LabelAlignment data_label_alignment(const train::StepRecord& rec, double min_agreement) {
  LabelAlignment out;
  const at::Tensor weight = train::recorded_block_targets(rec).weight.contiguous();
  out.agreement = agreement_at(rec, weight, 0, &out.elements);
  if (out.agreement >= min_agreement) {
    out.offset = 0;
    out.offset_agreement = out.agreement;
    return out;
  }
  for (std::int64_t d = 1; d < rec.block_size && !out.offset; ++d)
    for (std::int64_t signed_d : {d, -d}) {
      std::int64_t judged_count = 0;
      const double agree = agreement_at(rec, weight, signed_d, &judged_count);
      if (judged_count > 0 && agree >= min_agreement && agree > out.offset_agreement) {
        out.offset = signed_d;
        out.offset_agreement = agree;
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
    r.measured["label_alignment"] = {{"elements", al.elements}, {"agreement", al.agreement}};
    if (al.offset) r.measured["label_alignment"]["offset"] = *al.offset;
    judged_parts.push_back("labels against input_ids[a+k] (" + std::to_string(al.elements) +
                           " weighted elements)");
    if (al.offset && *al.offset != 0)
      problems.push_back("the labels are shifted by " + std::to_string(*al.offset) +
                         ": block row k of anchor a holds input_ids[a+k" +
                         (*al.offset > 0 ? "+" : "") + std::to_string(*al.offset) + "] (" +
                         format_number(al.offset_agreement) + " of the weighted elements), " +
                         "only " + format_number(al.agreement) +
                         " hold input_ids[a+k]; row k must predict input_ids[a+k] (same-position "
                         "labels, SpecForge dflash_family_model.py)");
    else if (!al.offset)
      problems.push_back("only " + format_number(al.agreement) + " of " +
                         std::to_string(al.elements) +
                         " weighted labels are input_ids[a+k] (budget " + format_number(min_top1) +
                         "), at no offset do they match the data tokens; the labels must be the "
                         "data tokens the record declares (labels_source \"data\")");
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
      scope = judge_captured_hidden_states(check, ckpt, p, rec, r, problems);
      judged_parts.push_back("fc_input against the target's taps [" +
                             format_ids(rec.target_layer_ids) + "]");
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
  return conclude_judged(std::move(r), problems,
                         "the data labels are aligned and the captured hidden states are the "
                         "target's own within what their precision explains",
                         scope + "; " + parts);
}

}  // namespace draftgate::checks
