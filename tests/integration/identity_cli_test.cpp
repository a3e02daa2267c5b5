// What a golden is compared with: the prompt set by its parsed prompts (not its bytes), the target
// by its identity; errors about a prompt-set path say where the path came from.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "draftgate/io/sha256.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;
namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kPrompts = kTrained / "prompts/held-out.jsonl";

// A golden of the trained Qwen3 reference, recorded short (2 new tokens) for speed.
fs::path record_golden(const fs::path& dir) {
  const fs::path out = dir / "g.json";
  const auto r = run_draftgate("golden record --target " + (kTrained / "qwen3-target").string() +
                               " --drafter " + (kTrained / "qwen3-drafter-reference").string() +
                               " --prompts " + kPrompts.string() + " --max-new 4 --eos 0 --out " +
                               out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

std::string min_tau(const fs::path& golden, const std::string& extra = "") {
  return "check --only min_tau --target " + (kTrained / "qwen3-target").string() + " --drafter " +
         (kTrained / "qwen3-drafter-reference").string() + " --golden " + golden.string() + extra;
}

// The same prompts as kPrompts, written differently: CRLF line endings and a trailing blank line.
fs::path reformatted_prompts(const fs::path& dir) {
  std::string text;
  for (char c : testing::read_file(kPrompts))
    text += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return testing::write_file(dir / "crlf.jsonl", text + "\r\n\r\n");
}

TEST(PromptSetIdentity, CrlfAndBlankLinesDoNotChangeWhichPromptsAGoldenWasMeasuredOn) {
  const fs::path dir = testing::fresh_dir("prompt_identity");
  const fs::path golden = record_golden(dir);
  const json g = json::parse(testing::read_file(golden));
  EXPECT_EQ(g["prompt_set"]["sha256_of"], "prompts");
  const fs::path crlf = reformatted_prompts(dir);
  auto r = run_draftgate(min_tau(golden, " --param min_tau.prompts=" + crlf.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("min_tau  PASS"));
  // Other prompts are still refused.
  const fs::path fewer = testing::write_file(
      dir / "fewer.jsonl",
      testing::read_file(kPrompts).substr(0, testing::read_file(kPrompts).find('\n') + 1));
  r = run_draftgate(min_tau(golden, " --param min_tau.prompts=" + fewer.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("differs from the golden's"));
}

TEST(PromptSetIdentity, AnOlderGoldenIsComparedByTheFileBytesItRecorded) {
  const fs::path dir = testing::fresh_dir("prompt_identity_legacy");
  json g = json::parse(testing::read_file(record_golden(dir)));
  g["prompt_set"].erase("sha256_of");
  g["prompt_set"]["sha256"] = io::sha256_hex(testing::read_file(kPrompts));
  const fs::path legacy = testing::write_file(dir / "legacy.json", g.dump());
  auto r = run_draftgate(min_tau(legacy));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_draftgate(
      min_tau(legacy, " --param min_tau.prompts=" + reformatted_prompts(dir).string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("prompt file bytes' sha256"));
  EXPECT_THAT(r.err, HasSubstr("re-record it"));
}

TEST(PromptSetIdentity, AGoldenCopiedElsewhereSaysItsPromptPathCameFromTheGolden) {
  const fs::path dir = testing::fresh_dir("prompt_identity_copied");
  const fs::path golden = record_golden(dir);
  const fs::path elsewhere = testing::fresh_dir("prompt_identity_copied/deeper/still") / "g.json";
  fs::copy_file(golden, elsewhere);
  const auto r = run_draftgate(min_tau(elsewhere));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("the prompt set of the golden " + elsewhere.string() +
                        " is not there (prompt_set.path is relative to the golden's folder"));
  EXPECT_THAT(r.err, HasSubstr("--param min_tau.prompts=PATH"));
  const auto flag = run_draftgate("eval --oracle --target " + (kTrained / "qwen3-target").string() +
                                  " --prompts " + (dir / "nope.jsonl").string());
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_THAT(flag.err, HasSubstr("(the prompt set named by --prompts)"));
}

TEST(TargetIdentity, AGoldenRecordedOnAnotherTargetOfTheSameShapesIsRefusedNamingBoth) {
  const fs::path dir = testing::fresh_dir("target_identity");
  for (const char* seed : {"1", "2"})
    ASSERT_EQ(run_draftgate("make-target --seed " + std::string(seed) + " --out " +
                            (dir / (std::string("t") + seed)).string())
                  .exit_code,
              0);
  ASSERT_EQ(testing::read_file(dir / "t1/config.json"), testing::read_file(dir / "t2/config.json"))
      << "the two targets differ only in their weights";
  ASSERT_EQ(run_draftgate("make-drafter --target " + (dir / "t1").string() + " --taps 0,2 --out " +
                          (dir / "d").string())
                .exit_code,
            0);
  testing::write_file(dir / "p.jsonl",
                      "{\"id\": \"a\", \"input_ids\": [1, 2, 3, 4]}\n"
                      "{\"id\": \"b\", \"input_ids\": [5, 6, 7]}\n");
  auto r = run_draftgate("golden record --target " + (dir / "t1").string() + " --drafter " +
                         (dir / "d").string() + " --prompts " + (dir / "p.jsonl").string() +
                         " --max-new 4 --allow-collapsed --out " + (dir / "g.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json g = json::parse(testing::read_file(dir / "g.json"));
  EXPECT_EQ(g["provenance"]["target"]["identity"]["weights_fingerprint"].get<std::string>().size(),
            64u);
  const std::string check = "check --only min_tau --drafter " + (dir / "d").string() +
                            " --golden " + (dir / "g.json").string() + " --target ";
  r = run_draftgate(check + (dir / "t1").string());
  EXPECT_NE(r.exit_code, 2) << r.err;
  r = run_draftgate(check + (dir / "t2").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr((dir / "t2").string() +
                               ": is not the target the golden was recorded with (weights "
                               "fingerprint"));
  EXPECT_THAT(r.err, HasSubstr("recorded on " + (dir / "t1").string()));
  EXPECT_THAT(r.err, Not(HasSubstr("train/inference mismatch")));

  // An older golden (no identity) still catches another config.
  json legacy = g;
  legacy["provenance"]["target"].erase("identity");
  testing::write_file(dir / "legacy.json", legacy.dump());
  fs::copy(dir / "t1", dir / "t3", fs::copy_options::recursive);
  json config = json::parse(testing::read_file(dir / "t3/config.json"));
  config["rope_theta"] = 12345.0;
  testing::write_file(dir / "t3/config.json", config.dump());
  r = run_draftgate("check --only min_tau --drafter " + (dir / "d").string() + " --golden " +
                    (dir / "legacy.json").string() + " --target " + (dir / "t3").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("config.json sha256"));
}

}  // namespace
}  // namespace draftgate
