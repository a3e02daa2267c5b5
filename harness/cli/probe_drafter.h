#pragma once
// `draftgate probe` on a drafter directory (DFlash, DFlash2, speculators): header-only facts.

#include <filesystem>

namespace draftgate::cli {

// config.json names a DFlash-family drafter (io::recognize_artifact: dflash_config, z-lab's
// top-level target_layer_ids, speculators_model_type, or a DFlash* architecture); a drafter of
// another kind (EAGLE, Medusa) is refused.
bool is_drafter_dir(const std::filesystem::path& dir);
int run_probe_drafter(const std::filesystem::path& dir, bool as_json);

}  // namespace draftgate::cli
