#include "target_families.h"

namespace draftgate::testing {

std::vector<FamilyCase> every_family() {
  std::vector<FamilyCase> cases;
  model::for_each_family([&](const model::FamilyEntry& f) {
    cases.push_back({f.name, f.family, f.layouts.front()});
  });
  return cases;
}

std::vector<FamilyCase> every_family_layout() {
  std::vector<FamilyCase> cases;
  model::for_each_family([&](const model::FamilyEntry& f) {
    for (model::TargetLayout l : f.layouts)
      cases.push_back(
          {f.name + (l == f.layouts.front() ? "" : std::string("_") + model::layout_name(l)),
           f.family, l});
  });
  return cases;
}

}  // namespace draftgate::testing
