#pragma once
// How much of a step record a check judges. A long record (4–16k positions) need not be recomputed
// whole: `max_positions` limits the positions a check recomputes to the first K, and a record may
// hold teacher logits for a subset of positions or a subset of the step's anchors. Every report
// says how much was judged out of what was recorded ("judged 128 of 4096 positions").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"

namespace draftgate::checks {

// The optional `max_positions` parameter of the step-record checks (off: every position).
Param max_positions_param();

// The number of leading positions to recompute: `recorded`, or max_positions when given and
// smaller.
std::int64_t positions_to_recompute(const nlohmann::json& params, std::int64_t recorded);

// Adds `<unit>_judged` and `<unit>_recorded` to result.measured and returns the phrase "judged J of
// R <unit>".
std::string judged(CheckResult& result, std::int64_t judged_count, std::int64_t recorded,
                   const std::string& unit = "positions");

// judged(result, n, recorded, "anchors"), and when the record holds a subset of the step's
// anchors (`in_step`, anchors_in_step) adds that and says so: "judged 8 of 32 anchors (recorded of
// the step's 512)".
std::string judged_anchors(CheckResult& result, std::int64_t judged_count, std::int64_t recorded,
                           const std::optional<std::int64_t>& in_step);

// conclude() with the scope ("judged 128 of 4096 positions") at the end of the message either way.
CheckResult conclude_judged(CheckResult result, const std::vector<std::string>& problems,
                            const std::string& pass_message, const std::string& scope);

}  // namespace draftgate::checks
