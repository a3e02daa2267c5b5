#pragma once
// The target a drafter's config.json says it was made for, against --target, before any check
// computes a number with the pair. SpecForge generates a drafter's config from its target's
// (sgl-project/SpecForge scripts/train_dflash.py, build_models at 0201117:
// AutoConfig.from_pretrained( target_model_path), then save_pretrained), and transformers saves
// where a config was loaded from as `_name_or_path`: such a drafter records its target's path or
// hub name. The key says only where the writer's config came from (a --draft-config-path file, a
// resumed checkpoint, a hub name that may be the drafter's own), so it is compared only where it is
// unambiguous: an absolute path to a directory that holds a target checkpoint on this machine, by
// identity (golden::target_identity: config.json sha256 and weights fingerprint; a copy of the same
// target is the same). Anything else is a note, never a refusal. z-lab's and SpecForge's exported
// configs record no other target key (fixtures/real-layouts); speculators' verifier.name_or_path is
// not compared yet.

#include <optional>
#include <string>

#include "checks/check.h"

namespace draftgate::checks {

// Nullopt when the drafter records no target, or records this one (or nothing to compare without
// --target); a note when what it records cannot be compared with --target. draftgate::Error
// naming the drafter's config.json and both targets when it records another target checkpoint.
std::optional<std::string> recorded_target_note(const Artifacts& artifacts);

// The same refusal for the verbs that decode a pair without running the checks (eval, golden
// record), before any decoding; both checkpoints are opened first, so a broken one is named by its
// own reader. A record that cannot be compared is drafter_config's note, not these verbs' concern.
void refuse_foreign_drafter(const std::filesystem::path& target,
                            const std::filesystem::path& drafter);

}  // namespace draftgate::checks
