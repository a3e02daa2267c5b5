// The family table at the CLI: make-target writes every family and layout of the table (and probe
// names each one's family, forward runs it, eval decodes it with a make-drafter drafter), and an
// unknown model type is refused with the same line by make-target (exit 2), by detection when
// loading (forward, exit 2) and by probe's engine verdict.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/arch/family_table.h"
#include "run_cli.h"
#include "target_families.h"
#include "test_files.h"

namespace draftgate {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::run_draftgate;

class FamilyCli : public ::testing::TestWithParam<testing::FamilyCase> {};

TEST_P(FamilyCli, MakeTargetWritesWhatProbeAndForwardRunAsThatFamily) {
  const auto& c = GetParam();
  const fs::path dir = testing::fresh_dir("family_cli_" + c.name);
  const auto made = run_draftgate(
      "make-target --family " + std::string(model::family_name(c.family)) + " --layout " +
      model::layout_name(c.layout) + " --layers 2 --out " + (dir / "t").string());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr(std::string("(") + model::layout_name(c.layout) + " layout)"));
  const auto probe = run_draftgate("probe " + (dir / "t").string() + " --json");
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const auto j = nlohmann::json::parse(probe.out);
  EXPECT_EQ(j["family"], model::family_name(c.family));
  EXPECT_EQ(j["engine_supported"], true) << j["engine_notes"].dump();
  const auto fwd = run_draftgate("forward --model " + (dir / "t").string() +
                                 " --tokens 1,2,3 --out " + (dir / "f.safetensors").string());
  EXPECT_EQ(fwd.exit_code, 0) << fwd.err;
}

// A drafter made for the family's random target, decoded with eval (the target's tapped layers,
// its head, verification of every block).
TEST_P(FamilyCli, MakeDrafterAndEvalRunOnIt) {
  const auto& c = GetParam();
  const fs::path dir = testing::fresh_dir("family_eval_" + c.name);
  const std::string t = (dir / "t").string(), d = (dir / "d").string();
  ASSERT_EQ(run_draftgate("make-target --family " + std::string(model::family_name(c.family)) +
                          " --layout " + model::layout_name(c.layout) + " --layers 2 --out " + t)
                .exit_code,
            0);
  const auto drafter = run_draftgate("make-drafter --target " + t + " --taps 0,1 --out " + d);
  ASSERT_EQ(drafter.exit_code, 0) << drafter.err;
  std::ofstream(dir / "p.jsonl") << "{\"id\": \"a\", \"input_ids\": [5, 9, 17, 3]}\n";
  const auto eval = run_draftgate("eval --target " + t + " --drafter " + d + " --prompts " +
                                  (dir / "p.jsonl").string() + " --max-new 6");
  EXPECT_EQ(eval.exit_code, 0) << eval.err;
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyCli, ::testing::ValuesIn(testing::every_family_layout()),
                         [](const auto& p) { return p.param.name; });

TEST(FamilyCliRefusal, UnknownModelTypeGetsTheSameLineFromMakeTargetDetectionAndProbe) {
  const std::string line = model::unknown_model_type("mystery");
  const fs::path dir = testing::fresh_dir("family_cli_unknown");

  const auto made = run_draftgate("make-target --family mystery --out " + (dir / "x").string());
  EXPECT_EQ(made.exit_code, 2);
  EXPECT_EQ(made.err, "draftgate: error: --family: " + line + "\n");
  EXPECT_FALSE(fs::exists(dir / "x"));

  ASSERT_EQ(run_draftgate("make-target --layers 2 --out " + (dir / "t").string()).exit_code, 0);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "t/config.json"));
  config["model_type"] = "mystery";
  std::ofstream(dir / "t/config.json") << config.dump(2);

  const auto fwd = run_draftgate("forward --model " + (dir / "t").string() + " --tokens 1 --out " +
                                 (dir / "f.safetensors").string());
  EXPECT_EQ(fwd.exit_code, 2);
  EXPECT_THAT(fwd.err, HasSubstr((dir / "t/config.json").string() + ": " + line));
  EXPECT_EQ(std::count(fwd.err.begin(), fwd.err.end(), '\n'), 1) << fwd.err;

  const auto probe = run_draftgate("probe " + (dir / "t").string() + " --json");
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const auto j = nlohmann::json::parse(probe.out);
  EXPECT_EQ(j["family"], nullptr);
  EXPECT_EQ(j["engine_supported"], false);
  EXPECT_THAT(j["engine_notes"], ::testing::Contains(line));
}

TEST(FamilyCliRefusal, MakeTargetTakesAModelTypeForItsFamilyAndRefusesAForeignLayout) {
  const fs::path dir = testing::fresh_dir("family_cli_alias");
  const auto made =
      run_draftgate("make-target --family qwen3_5_text --layers 4 --out " + (dir / "t").string());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr("wrote random qwen3_5 target (vlm layout)"));
  const auto bad =
      run_draftgate("make-target --family qwen3 --layout vlm --out " + (dir / "u").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "draftgate: error: --layout: layout \"vlm\" is not one of qwen3's (flat)\n");
  // The help lists the table's families.
  const auto help = run_draftgate("make-target --help");
  model::for_each_family([&](const model::FamilyEntry& f) {
    EXPECT_THAT(help.out, HasSubstr(f.name + " (" + f.display_name + ")"));
  });
}

}  // namespace
}  // namespace draftgate
