#pragma once
// The hidden states a trainer captured from the target and fed to the drafter's fc (a step
// record's fc_input), judged against the target's own taps: noise there (augmentation recorded
// after it was added, a capture server that drifts) trains the drafter on features the target
// never produces at inference. Both label sources take fc_input from the target, so
// target_logits_noise_free judges it for every record. Noise the trainer adds on purpose and the
// record declares (fc_input_noise, train::FcInputNoise) is allowed for, no more.

#include <string>
#include <vector>

#include "checks/check.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {

// The declared noise's share of a budget, over its standard deviation: a slice's sample standard
// deviation (10³ elements and more) is within a few percent of the law's; the rest is room for
// noise drawn in bf16 (speculators' rand_like keeps the dtype, rounding the noise itself).
inline constexpr double kDeclaredNoiseMargin = 1.1;

struct CapturedVerdict {
  std::string scope;  // "judged J of R positions"
  std::string note;   // slices that are another layer's output (not noise), or under half the
                      // declared noise; or ""
};

// Judges each fc_input slice of `record` (its leading max_positions positions) against the
// target's output of its declared layer, the budget max(max_noise_ratio, precision_factor × the
// noise the capture's precision (hidden_dtype) explains, measured), with declared fc_input_noise
// added in quadrature (kDeclaredNoiseMargin × its standard deviation over the layer's RMS); adds
// measured.fc_input_slices, evidence.hidden_precision and one problem per slice over budget —
// except a slice that is a neighbouring layer's or the final layer's output (before or after the
// final norm) within the budget:
// that is a tap-indexing error, fc_excludes_target_layer's finding, named in the note.
CapturedVerdict judge_captured_hidden_states(const std::string& check, const io::Checkpoint& target,
                                             const nlohmann::json& params,
                                             const train::StepRecord& record, CheckResult& result,
                                             std::vector<std::string>& problems);

}  // namespace draftgate::checks
