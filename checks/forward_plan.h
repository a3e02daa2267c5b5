#pragma once
// What the selected checks will ask of the target, told to the engine before any check runs (the
// record probe's walk included): a streamed walk over a checkpoint larger than memory computes
// together the forwards a run will ask for, and only those.

#include <vector>

#include "checks/check.h"

namespace draftgate::checks {

// Engine::plan_record_forwards for the run's step record, when an engine, a target and a record
// are given.
void plan_target_forwards(const Artifacts& artifacts, const std::vector<const Check*>& checks);

}  // namespace draftgate::checks
