// The fixture trainer end to end, at a few steps: two runs from the same seed give the same bytes,
// and what it writes loads — targets probe, drafters evaluate, step records read back with their
// logged losses recomputing.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  EXPECT_EQ(files, 2 * 2 + 6 * 2 + 7 + 1 + 1) << "targets, drafters, records, prompts, report";

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

  const fs::path a = dir / "a";
  auto r = run_draftgate("probe " + (a / "qwen35-target").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model.language_model.layers  ×4"));
  r = run_draftgate("eval --target " + (a / "qwen35-target").string() + " --drafter " +
                    (a / "qwen35-drafter-final-layer-leak").string() + " --prompts " +
                    (a / "prompts/held-out.jsonl").string() + " --max-new 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_draftgate("eval --target " + (a / "qwen3-target").string() + " --drafter " +
                    (a / "qwen3-drafter-dflash2").string() + " --prompts " +
                    (a / "prompts/held-out.jsonl").string() + " --max-new 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : fs::directory_iterator(a / "step-records")) {
    if (e.path().stem().string().find("kl-loss") != std::string::npos) continue;
    r = run_draftgate("check --only loss_type --step-record " + e.path().string());
    EXPECT_EQ(r.exit_code, 0) << e.path() << r.out;
  }
}

}  // namespace
}  // namespace draftgate
