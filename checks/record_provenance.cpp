#include "checks/record_provenance.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/golden/record_identity.h"

namespace draftgate::checks {

void refuse_foreign_record(const Artifacts& a, const std::vector<const Check*>& checks) {
  if (!a.step_record) return;
  const std::string record = a.step_record->string();
  const golden::RecordIdentity id = golden::read_record_identity(*a.step_record);
  for (const auto& [recorded, dir, role, flag] :
       {std::tuple{id.target, a.target, "target", "--target"},
        {id.drafter, a.drafter, "drafter", "--drafter"}})
    if (dir)
      if (auto mismatch = golden::identity_mismatch(recorded, *dir, role, flag))
        throw Error(record, "this step record was " + *mismatch,
                    std::string("give the ") + role +
                        " the record was made with, or record a step with this one");
  if (!id.target.is_null() || !a.target || a.engine == nullptr ||
      std::none_of(checks.begin(), checks.end(),
                   [](const Check* c) { return c->judges_record_against_target(); }))
    return;
  const io::Checkpoint target = io::Checkpoint::open(*a.target);
  if (target.metadata_only()) return;
  if (auto why = a.engine->foreign_record(target, *a.step_record))
    throw Error(record, *why + ": was it made with this target (" + a.target->string() + ")?",
                "give the target the record was made with; records written with target_dir= "
                "carry its identity and are refused by name");
}

}  // namespace draftgate::checks
