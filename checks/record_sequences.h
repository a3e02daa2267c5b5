#pragma once
// A step record's verdict over its sequences. A batch record (train::StepBatch) holds several — its
// rows, or the documents of packed rows — and a check that recomputes the target or the drafter
// judges each on its own: any failing sequence fails the check, by name.

#include <functional>

#include "checks/check.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {

// `judge` on every sequence of `batch`, merged. A single-sequence record's verdict is judge's own.
// A batch's: fail when any sequence fails (the message names each failing sequence with its
// reason), else pass when any passes, else skip; `measured` and `evidence` are the first failing
// sequence's (the first judged one's otherwise) plus "sequences" ([{sequence, status, message}])
// and "sequences_not_judged" (sequences with no kept anchor or nothing supervised).
CheckResult judge_each_sequence(const train::StepBatch& batch,
                                const std::function<CheckResult(const train::StepRecord&)>& judge);

}  // namespace draftgate::checks
