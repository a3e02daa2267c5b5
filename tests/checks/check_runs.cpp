#include "check_runs.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "checks/model_engine.h"
#include "draftgate/model/random_checkpoint.h"
#include "test_files.h"

namespace draftgate::testing {

namespace fs = std::filesystem;

checks::CheckResult run(const std::string& name, const checks::Artifacts& a,
                        const nlohmann::json& params) {
  const checks::Check* c = checks::find_check(name);
  EXPECT_NE(c, nullptr) << name;
  return checks::run_check(*c, a, params);
}

const fs::path& pair_dir() {
  static const fs::path dir = [] {
    const fs::path d = fresh_dir("checks");
    model::RandomTargetSpec t;
    model::write_random_target(d / "target", t);
    for (const auto& [name, taps] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
             {"good", {0, 2}}, {"final", {0, 3}}, {"repeat", {2, 2}}, {"outside", {1, 7}}}) {
      model::RandomDrafterSpec s;
      s.target_layer_ids = taps;
      model::write_random_drafter(d / name, s);
    }
    return d;
  }();
  return dir;
}

checks::Artifacts target_and(const std::string& drafter) {
  checks::Artifacts a;
  a.target = pair_dir() / "target";
  a.drafter = pair_dir() / drafter;
  return a;
}

checks::CheckResult run_on(const std::string& check, const train::StepRecord& rec,
                           const std::string& file, const nlohmann::json& params) {
  const fs::path dir = training_step_models();
  const fs::path path = dir / file;
  train::write_step_record(path, rec);
  checks::Artifacts a;
  a.target = dir / "target";
  a.drafter = dir / "drafter";
  a.step_record = path;
  a.engine = &checks::model_engine();
  return checks::run_check(*checks::find_check(check), a, params);
}

}  // namespace draftgate::testing
