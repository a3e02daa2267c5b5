#pragma once
// `draftgate probe` on a drafter directory (DFlash, DFlash2, speculators): header-only facts.

#include <filesystem>

namespace draftgate::cli {

// config.json names a DFlash-family drafter (dflash_config, speculators_model_type, or a
// DFlash* architecture).
bool is_drafter_dir(const std::filesystem::path& dir);
int run_probe_drafter(const std::filesystem::path& dir, bool as_json);

}  // namespace draftgate::cli
