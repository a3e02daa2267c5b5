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

// The offset d at which the weighted recorded labels equal input_ids[a+k+d] in at least
// `min_agreement` of the elements that have a token there, preferring d = 0; nullopt when none.
struct LabelAlignment {
  std::int64_t elements = 0;  // weighted elements judged at offset 0
  double agreement = 1.0;     // at offset 0
  std::optional<std::int64_t> offset;
  double offset_agreement = 0;  // at `offset`
};
LabelAlignment data_label_alignment(const train::StepRecord& record, double min_agreement);

// The whole verdict for a data-label record; `target` may be absent (then fc_input is not
// judged, and the verdict says so).
CheckResult judge_data_label_record(const std::string& check, const Artifacts& artifacts,
                                    const nlohmann::json& params, const train::StepRecord& record);

}  // namespace draftgate::checks
