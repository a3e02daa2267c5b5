#include "checks/record_scope.h"

#include <algorithm>

namespace draftgate::checks {

Param max_positions_param() {
  return integer_param("max_positions", nullptr, 1, 1e9,
                       "recompute only the first K positions of the step record (off: all)");
}

std::int64_t positions_to_recompute(const nlohmann::json& params, std::int64_t recorded) {
  const nlohmann::json& k = params["max_positions"];
  return k.is_null() ? recorded : std::min(recorded, k.get<std::int64_t>());
}

std::string judged(CheckResult& result, std::int64_t judged_count, std::int64_t recorded,
                   const std::string& unit) {
  result.measured[unit + "_judged"] = judged_count;
  result.measured[unit + "_recorded"] = recorded;
  return "judged " + std::to_string(judged_count) + " of " + std::to_string(recorded) + " " + unit;
}

std::string judged_anchors(CheckResult& result, std::int64_t judged_count, std::int64_t recorded,
                           const std::optional<std::int64_t>& in_step) {
  std::string scope = judged(result, judged_count, recorded, "anchors");
  if (in_step && *in_step > recorded) {
    result.measured["anchors_in_step"] = *in_step;
    scope += " (recorded of the step's " + std::to_string(*in_step) + ")";
  }
  return scope;
}

CheckResult conclude_judged(CheckResult result, const std::vector<std::string>& problems,
                            const std::string& pass_message, const std::string& scope) {
  result = conclude(std::move(result), problems, pass_message);
  result.message += " (" + scope + ")";
  return result;
}

}  // namespace draftgate::checks
