#pragma once
// Refuses, before any check computes a number, a step record made with other checkpoints than the
// run's. A check's numbers over another target's record name wrong causes (a tap bug, noise on
// the teacher path, the mask); the one cause is the mix-up, so it is bad input (exit 2), one line
// naming both identities.

#include "checks/check.h"

namespace draftgate::checks {

// By the identities the record carries (golden/record_identity.h) against --target and
// --drafter; for a record without a target identity, by the engine's fed-feature match
// (Engine::foreign_record) when an engine and a target with weights are at hand and one of
// `checks` judges the record against the target (a forward over 32 positions; it would run
// anyway). draftgate::Error naming the record otherwise.
void refuse_foreign_record(const Artifacts& artifacts, const std::vector<const Check*>& checks);

}  // namespace draftgate::checks
