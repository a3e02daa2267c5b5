#pragma once
// What the checks' tests share: running a check by name, a random target with drafters of chosen
// taps, and a real (random-weight) training step's models with its records.

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "checks/check.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/train/step_record.h"
#include "fixture_paths.h"
#include "synthetic_step_record.h"

namespace draftgate::testing {

// A real Qwen3.6-27B VLM layout (config and index only).
inline const std::filesystem::path kQwen36 = kRealLayouts / "qwen36-27b-awq-fantasylord";

// Runs the registered check `name` (a test failure when there is none).
checks::CheckResult run(const std::string& name, const checks::Artifacts& a,
                        const nlohmann::json& params = nullptr);

// A random 4-layer target ("target") and drafters with taps good {0, 2}, final {0, 3}, repeat
// {2, 2} and outside {1, 7}, written once.
const std::filesystem::path& pair_dir();
// The artifacts of pair_dir()'s target with one of its drafters.
checks::Artifacts target_and(const std::string& drafter);

// Writes `rec` as `file` beside the training step's models and runs `check` on it with them.
checks::CheckResult run_on(const std::string& check, const train::StepRecord& rec,
                           const std::string& file, const nlohmann::json& params = nullptr);

// The training step's target and drafter, loaded.
struct Models {
  io::Checkpoint target_ckpt = io::Checkpoint::open(training_step_models() / "target");
  io::Checkpoint drafter_ckpt = io::Checkpoint::open(training_step_models() / "drafter");
  std::unique_ptr<model::TargetModel> target = model::TargetModel::load(target_ckpt, {});
  std::unique_ptr<model::DFlashDrafter> drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
};

}  // namespace draftgate::testing
