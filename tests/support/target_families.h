#pragma once
// The tests' family lists, from the family table (arch/family_table.h): a family added to the
// table is tested by every suite instantiated on these, with no list to edit.

#include <ostream>
#include <string>
#include <vector>

#include "draftgate/arch/family_table.h"

namespace draftgate::testing {

struct FamilyCase {
  std::string name;  // "qwen3_5_text": the family, and its layout unless it is the default
  model::Family family;
  model::TargetLayout layout;
};
inline void PrintTo(const FamilyCase& c, std::ostream* os) { *os << c.name; }

// One case per family, at its default layout.
std::vector<FamilyCase> every_family();
// One case per (family, layout) of the table.
std::vector<FamilyCase> every_family_layout();

}  // namespace draftgate::testing
