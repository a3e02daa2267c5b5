// `draftgate check` end to end: the table, exit codes 0/1/2, JSON and JUnit reports.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_cli.h"
#include "synthetic_layouts.h"
#include "test_files.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

TEST(CheckCli, VerdictsExitCodesAndReports) {
  const fs::path dir = testing::fresh_dir("check_cli");
  ASSERT_EQ(run_draftgate("make-target --out " + (dir / "t").string()).exit_code, 0);
  ASSERT_EQ(run_draftgate("make-drafter --target " + (dir / "t").string() + " --taps 0,2 --out " +
                          (dir / "good").string())
                .exit_code,
            0);
  ASSERT_EQ(run_draftgate("make-drafter --target " + (dir / "t").string() + " --taps 1,3 --out " +
                          (dir / "bad").string())
                .exit_code,
            0);
  const std::string base = "check --target " + (dir / "t").string() + " --drafter ";

  auto r = run_draftgate(base + (dir / "good").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("fc_excludes_target_layer  PASS"));
  EXPECT_THAT(r.out, HasSubstr("loss_type                 SKIP   needs a step record"));
  EXPECT_EQ(run_draftgate(base + (dir / "good").string() + " --fail-on-skip").exit_code, 1);

  const fs::path json = dir / "report.json", junit = dir / "report.xml";
  r = run_draftgate(base + (dir / "bad").string() + " --report " + json.string() + " --junit " +
                    junit.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("tap 3 is the target's final layer"));
  const auto report = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(report["summary"]["fail"], 2);  // fc_excludes_target_layer and drafter_config
  std::ifstream xml(junit);
  const std::string text((std::istreambuf_iterator<char>(xml)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("<testsuite name=\"draftgate\" tests=\"8\" failures=\"2\""));

  EXPECT_EQ(run_draftgate(base + (dir / "bad").string() +
                          " --param fc_excludes_target_layer.allow_final_layer=true"
                          " --param drafter_config.allow_final_layer=true")
                .exit_code,
            0);
  r = run_draftgate("check --target " + std::string(DRAFTGATE_SOURCE_DIR) +
                    "/fixtures/real-layouts/qwen36-27b-awq-fantasylord");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("hidden_state_parity       SKIP   "));
  // A suite without a check list means every check, the structural ones alone being runnable
  // without libtorch notwithstanding.
  const fs::path suite = dir / "suite.json";
  std::ofstream(suite) << nlohmann::json{{"schema", "draftgate.suite/1"},
                                         {"name", "every-check"},
                                         {"artifacts", {{"target", "t"}, {"drafter", "good"}}}}
                              .dump();
  r = run_draftgate("check --suite " + suite.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("layer_path                PASS"));
  EXPECT_THAT(r.out, HasSubstr("loss_type                 SKIP   needs a step record"));
  r = run_draftgate("check --target /nonexistent --only layer_path");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent: no such directory"));
  EXPECT_EQ(run_draftgate("check --only nope").exit_code, 2);
}

// The gate label's list of checks (tests/CMakeLists.txt) is the registry's.
TEST(CheckCli, GateLabelCoversEveryCheck) {
  // Nothing configured: every check skips, naming its artifact, and the run is a usage error.
  const auto r = run_draftgate("check");
  EXPECT_EQ(r.exit_code, 2);
  std::string listed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("summary: ", 0) == 0) continue;
    listed += (listed.empty() ? "" : ",") + line.substr(0, line.find(' '));
    EXPECT_THAT(line, HasSubstr(" SKIP "));
  }
  EXPECT_EQ(listed, DRAFTGATE_GATE_CHECKS);
  EXPECT_EQ(run_draftgate("check --skip-exit-code 77").exit_code, 77);
}

// The gate label's ctest recipe (docs/development/testing.md) names artifacts relative to the
// repository root; ctest runs the gate tests in build/tests, so run_check.sh resolves them from
// the root.
TEST(CheckCli, GateTestsTakeRelativePathsFromTheRepositoryRoot) {
  const fs::path root = DRAFTGATE_SOURCE_DIR;
  const fs::path elsewhere = testing::fresh_dir("gate_cwd");
  const std::string cmd = "cd " + elsewhere.string() +
                          " && DRAFTGATE_TARGET=fixtures/trained/qwen3-target "
                          "DRAFTGATE_DRAFTER=fixtures/trained/qwen3-drafter-reference "
                          "DRAFTGATE_GOLDEN=golden/qwen3-reference.json sh " +
                          (root / "tests/gate/run_check.sh").string() + " " + DRAFTGATE_BINARY +
                          " layer_path " + root.string() + " >out 2>err";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::read_file(elsewhere / "err");
  EXPECT_THAT(testing::read_file(elsewhere / "out"), HasSubstr("layer_path  PASS"));
}

}  // namespace
}  // namespace draftgate
