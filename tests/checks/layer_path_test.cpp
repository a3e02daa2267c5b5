// layer_path, specified: it resolves the decoder stack of real and corrupted layouts and requires
// every drafter tap to name a target layer.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "check_runs.h"
#include "checks/check.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using testing::kQwen36;
using testing::run;
using testing::target_and;

TEST(LayerPath, PassesOnTheRealQwen36LayoutAndFailsOnACorruptedOne) {
  Artifacts a;
  a.target = kQwen36;
  const CheckResult ok = run("layer_path", a);
  EXPECT_EQ(ok.status, Status::kPass) << ok.message;
  EXPECT_EQ(ok.measured["decoder_prefix"], "model.language_model.layers");
  // The layout is right; that the engine cannot run int4 weights is evidence, not a layout failure.
  EXPECT_EQ(ok.measured["engine_supported"], false);
  EXPECT_THAT(ok.message, HasSubstr("the engine cannot run this target: quantised weights"));
  EXPECT_EQ(run("layer_path", target_and("good")).measured["engine_supported"], true);

  const fs::path broken = testing::fresh_dir("broken_layout");
  fs::copy(kQwen36 / "model.safetensors.index.json", broken / "model.safetensors.index.json");
  auto config = nlohmann::json::parse(std::ifstream(kQwen36 / "config.json"));
  config["text_config"]["num_hidden_layers"] = 60;
  auto& types = config["text_config"]["layer_types"];
  types.erase(types.begin() + 60, types.end());
  std::ofstream(broken / "config.json") << config.dump();
  a.target = broken;
  const CheckResult bad = run("layer_path", a);
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_THAT(bad.message, HasSubstr("count 64 != num_hidden_layers 60"));

  a.target = kQwen36;
  const CheckResult golden = run("layer_path", a, {{"expected_prefix", "model.layers"}});
  EXPECT_EQ(golden.status, Status::kFail);
  EXPECT_THAT(golden.message, HasSubstr("expected decoder prefix \"model.layers\""));
}

// What forward and eval refuse of the config (TargetConfig) is in layer_path's engine verdict as in
// probe's (an outside tester's case: probe said not supported, layer_path supported).
TEST(LayerPath, ReportsTheEngineVerdictProbeReports) {
  const fs::path dir = testing::fresh_dir("layer_path_config_refused") / "target";
  fs::copy(target_and("good").target.value(), dir, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["rms_norm_eps"] = -1;
  std::ofstream(dir / "config.json") << config.dump();
  Artifacts a;
  a.target = dir;
  const CheckResult r = run("layer_path", a);
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.measured["engine_supported"], false);
  EXPECT_THAT(r.measured["engine_notes"].dump(), HasSubstr("rms_norm_eps"));
}

TEST(LayerPath, DrafterTapsMustNameTargetLayers) {
  EXPECT_EQ(run("layer_path", target_and("good")).status, Status::kPass);
  const CheckResult r = run("layer_path", target_and("outside"));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("drafter tap 7 names no target layer"));
}

}  // namespace
}  // namespace draftgate::checks
