// The fixture trainer end to end, at a few steps: two runs from the same seed give the same bytes
// (so does one family trained alone), and what it writes loads — targets probe, drafters
// evaluate, step records read back with their logged losses recomputing.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "run_cli.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

int run_trainer(const fs::path& out, const std::string& extra = "") {
  const std::string cmd = std::string(DRAFTGATE_FIXTURES_BINARY) + " --out " + out.string() +
                          " --target-steps 12 --drafter-steps 12" + extra + " 2>/dev/null";
  return std::system(cmd.c_str());
}

TEST(FixtureTrainer, SameSeedSameBytesAndEverythingLoads) {
  const fs::path dir = testing::fresh_dir("fixture_trainer");
  ASSERT_EQ(run_trainer(dir / "a"), 0);
  ASSERT_EQ(run_trainer(dir / "b"), 0);
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "a")) {
    if (!e.is_regular_file()) continue;
    ++files;
    const fs::path twin = dir / "b" / fs::relative(e.path(), dir / "a");
    EXPECT_EQ(testing::read_file(e.path()), testing::read_file(twin))
        << fs::relative(e.path(), dir / "a");
  }
  EXPECT_EQ(files, 3 * 2 + 9 * 2 + 10 + 1 + 1) << "targets, drafters, records, prompts, report";

  // --only-drafter beside an existing target gives the full run's bytes for that drafter.
  const fs::path c = dir / "c";
  fs::create_directories(c);
  fs::copy(dir / "a" / "qwen3-target", c / "qwen3-target");
  fs::copy_file(dir / "a" / "training-report.json", c / "training-report.json");
  ASSERT_EQ(run_trainer(c, " --only-drafter qwen3-drafter-dflash2"), 0);
  for (const char* file :
       {"qwen3-drafter-dflash2/config.json", "qwen3-drafter-dflash2/model.safetensors",
        "step-records/qwen3-drafter-dflash2.safetensors", "training-report.json"})
    EXPECT_EQ(testing::read_file(c / file), testing::read_file(dir / "a" / file)) << file;
  EXPECT_EQ(run_trainer(c, " --only-drafter qwen3-drafter-nope"), 2 << 8) << "unknown name: exit 2";

  // --only-family gives the full run's bytes for that family and touches no other fixture.
  const fs::path d = dir / "d";
  fs::create_directories(d);
  fs::copy_file(dir / "a" / "training-report.json", d / "training-report.json");
  ASSERT_EQ(run_trainer(d, " --only-family qwen35moe"), 0);
  int family_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(d)) {
    if (!e.is_regular_file()) continue;
    ++family_files;
    const fs::path rel = fs::relative(e.path(), d);
    EXPECT_EQ(testing::read_file(e.path()), testing::read_file(dir / "a" / rel)) << rel;
  }
  EXPECT_EQ(family_files, 2 + 3 * 2 + 3 + 1 + 1) << "target, drafters, records, prompts, report";
  EXPECT_EQ(run_trainer(d, " --only-family qwen9"), 2 << 8) << "unknown family: exit 2";
  EXPECT_EQ(run_trainer(d, " --only-family qwen35moe --only-drafter qwen3-drafter-dflash2"), 2 << 8)
      << "both selections: a usage error";

  const fs::path a = dir / "a";
  auto r = run_draftgate("probe " + (a / "qwen35-target").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model.language_model.layers  ×4"));
  r = run_draftgate("eval --target " + (a / "qwen35-target").string() + " --drafter " +
                    (a / "qwen35-drafter-final-layer-leak").string() + " --prompts " +
                    (a / "prompts/held-out.jsonl").string() + " --max-new 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* drafter : {"qwen3-drafter-dflash2", "qwen35moe-drafter-reference"}) {
    const std::string family = std::string(drafter).substr(0, std::string(drafter).find('-'));
    r = run_draftgate("eval --target " + (a / (family + "-target")).string() + " --drafter " +
                      (a / drafter).string() + " --prompts " +
                      (a / "prompts/held-out.jsonl").string() + " --max-new 4");
    EXPECT_EQ(r.exit_code, 0) << drafter << ": " << r.err;
  }
  for (const auto& e : fs::directory_iterator(a / "step-records")) {
    if (e.path().stem().string().find("kl-loss") != std::string::npos) continue;
    r = run_draftgate("check --only loss_type --step-record " + e.path().string());
    EXPECT_EQ(r.exit_code, 0) << e.path() << r.out;
  }
}

// Bad input to the trainer: exit 2, one stderr line naming the flag or file, nothing written.
TEST(FixtureTrainer, BadInputExitsTwoWithOneLineAndWritesNothing) {
  const fs::path dir = testing::fresh_dir("fixture_trainer_bad_input");
  const fs::path err = dir / "stderr.txt";
  const auto run = [&](const fs::path& out, const std::string& extra) {
    const std::string cmd = std::string(DRAFTGATE_FIXTURES_BINARY) + " --out '" + out.string() +
                            "'" + extra + " 2>" + err.string() + " >/dev/null";
    return std::system(cmd.c_str());
  };
  const auto expect_one_line = [&](const std::string& what, const std::string& message) {
    const std::string text = testing::read_file(err);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << what << ": " << text;
    EXPECT_THAT(text, HasSubstr(message)) << what;
    EXPECT_EQ(text.rfind("draftgate-fixtures: ", 0), 0u) << what << ": " << text;
  };

  const fs::path file = dir / "a-file";
  std::ofstream(file) << "keep";
  EXPECT_EQ(run(file, ""), 2 << 8);
  expect_one_line("--out a file", "--out: " + file.string() + " is not a directory");
  EXPECT_EQ(testing::read_file(file), "keep");

  const fs::path empty = dir / "empty";
  fs::create_directories(empty);
  EXPECT_EQ(run(empty, " --only-drafter ''"), 2 << 8);
  expect_one_line("empty --only-drafter", "usage error");
  EXPECT_EQ(run(empty, " --only-family ''"), 2 << 8);
  expect_one_line("empty --only-family", "usage error");
  EXPECT_EQ(run(empty, " --only-family qwen9"), 2 << 8);
  expect_one_line(
      "unknown family",
      "--only-family: no family named \"qwen9\" (hint: one of: qwen3, qwen35, qwen35moe)");
  EXPECT_EQ(run(empty, " --only-family qwen35moe --only-drafter qwen3-drafter-dflash2"), 2 << 8);
  expect_one_line("both selections", "usage error");
  EXPECT_EQ(run(empty, " --target-steps 0"), 2 << 8);
  expect_one_line("zero steps", "usage error");
  EXPECT_EQ(run(empty, " --drafter-steps 1000001"), 2 << 8);
  expect_one_line("a million and one steps", "usage error");
  EXPECT_EQ(run(empty, " --drafter-steps 2 --only-drafter qwen3-drafter-dflash2"), 2 << 8);
  expect_one_line("no target beside the drafter", "qwen3-target");
  EXPECT_TRUE(fs::is_empty(empty)) << "a missing target must not leave a drafter behind";

  const fs::path array_report = dir / "array-report";
  fs::create_directories(array_report);
  std::ofstream(array_report / "training-report.json") << "[1,2]";
  EXPECT_EQ(run(array_report, " --drafter-steps 2 --only-drafter qwen3-drafter-dflash2"), 2 << 8);
  expect_one_line("an array as training report", "training-report.json: is not a training report");
  EXPECT_EQ(run(array_report, " --target-steps 2 --only-family qwen35moe"), 2 << 8);
  expect_one_line("an array as training report, one family",
                  "training-report.json: is not a training report");
  EXPECT_EQ(testing::read_file(array_report / "training-report.json"), "[1,2]");
  EXPECT_FALSE(fs::exists(array_report / "qwen35moe-target")) << "refused before training";
}

}  // namespace
}  // namespace draftgate
