#pragma once
// target_logits_noise_free for a trainer whose labels are the data tokens (labels_source "data",
// SpecForge): there is no teacher to judge, so it judges what such a trainer takes from the
// target — the captured hidden states fed to fc, against the target's own taps — and that every
// weighted label is input_ids[a+k] (a shift named with its offset).

#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {

// Data labels are integers: every weighted label must be input_ids[a+k], exactly. Where some are
// not, the offset d at which at least `min_shift_agreement` of them are input_ids[a+k+d] names a
// shift; the first mismatch at d = 0 names where to look.
struct LabelAlignment {
  std::int64_t elements = 0;  // weighted elements with a token at a+k
  std::int64_t agreeing = 0;  // of them, labels equal to input_ids[a+k]
  std::optional<std::int64_t> offset;
  double offset_agreement = 0;  // at `offset`
  std::string
      first_mismatch;  // "anchor 3 (position 17), block element 2: label 9, input_ids[19] 4"
  bool aligned() const { return agreeing == elements; }
};
LabelAlignment data_label_alignment(const train::StepRecord& record, double min_shift_agreement);

// The whole verdict for a data-label record; `target` may be absent (then fc_input is not
// judged, and the verdict says so).
CheckResult judge_data_label_record(const std::string& check, const Artifacts& artifacts,
                                    const nlohmann::json& params, const train::StepRecord& record);

}  // namespace draftgate::checks
