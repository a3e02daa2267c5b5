#include "checks/forward_plan.h"

#include <algorithm>

namespace draftgate::checks {

void plan_target_forwards(const Artifacts& a, const std::vector<const Check*>& checks) {
  if (a.engine == nullptr || !a.step_record || !a.target) return;
  a.engine->plan_record_forwards(
      *a.step_record, std::any_of(checks.begin(), checks.end(),
                                  [](const Check* c) { return c->reproduces_record_precision(); }));
}

}  // namespace draftgate::checks
