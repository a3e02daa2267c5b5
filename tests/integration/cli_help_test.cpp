// The command line as people meet it: help pages with defaults and an example, global flags after
// the verb, unknown check names answered with the valid ones, ranges written as people write them,
// the same decoding flags for eval and golden record, and eval saying how it decoded.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_sources.h"
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

TEST(CliHelp, EveryVerbShowsAnExampleAndItsDefaults) {
  for (const char* verb :
       {"probe", "forward", "make-target", "make-drafter", "eval", "check", "golden record",
        "tau import", "tau measure", "tokenize", "prompts build"}) {
    const auto r = run_draftgate(std::string(verb) + " --help");
    EXPECT_EQ(r.exit_code, 0) << verb << r.err;
    EXPECT_THAT(r.out, HasSubstr("Example:\n  draftgate " + std::string(verb))) << verb;
  }
  const auto eval = run_draftgate("eval --help");
  EXPECT_THAT(eval.out, HasSubstr("=128"));  // --max-new
  EXPECT_THAT(eval.out, HasSubstr("=chunked"));
  EXPECT_THAT(run_draftgate("make-target --help").out, HasSubstr("=256"));  // --vocab
  const auto measure = run_draftgate("tau measure --help").out;
  EXPECT_THAT(measure, HasSubstr("=256"));  // --max-new
  EXPECT_THAT(measure, HasSubstr("=600"));  // --timeout
  // check --help lists every check of checks/ (the engine's registry, not the front end's).
  EXPECT_THAT(run_draftgate("check --help").out,
              HasSubstr("\n  " + testing::join(testing::check_source_names(), ", ") + "\n"));
}

TEST(CliHelp, GoldenRecordTakesEvalsDecodingFlags) {
  const std::string eval = run_draftgate("eval --help").out;
  const std::string record = run_draftgate("golden record --help").out;
  for (const char* flag : {"--max-new", "--eos", "--tree-budget", "--tree-top-k"}) {
    EXPECT_THAT(eval, HasSubstr(flag));
    EXPECT_THAT(record, HasSubstr(flag));
  }
}

TEST(CliFlags, GlobalFlagsWorkAfterTheVerb) {
  const std::string target = (kTrained / "qwen3-target").string();
  auto r = run_draftgate("probe " + target + " --threads 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_draftgate("check --only layer_path --target " + target + " --threads 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_draftgate("eval --oracle --target " + target + " --prompts " +
                    (kTrained / "prompts/held-out.jsonl").string() + " --max-new 2 --threads 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_draftgate("probe " + target + " --threads 0").exit_code, 2);
}

TEST(CliFlags, UnknownCheckNamesListTheValidOnes) {
  for (const char* args : {"check --only loss_typ", "check --param loss_typ.rtol=1"}) {
    const auto r = run_draftgate(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr("unknown check \"loss_typ\""));
    EXPECT_THAT(r.err,
                HasSubstr("the checks: " + testing::join(testing::check_source_names(), ", ")));
  }
}

TEST(CliFlags, RangesAreWrittenAsPeopleWriteThem) {
  const std::string eval = "eval --oracle --target " + (kTrained / "qwen3-target").string() +
                           " --prompts " + (kTrained / "prompts/held-out.jsonl").string();
  auto r = run_draftgate(eval + " --max-new 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-new: Value 0 is not in 1…65536"));
  r = run_draftgate(eval + " --eos -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--eos: Value -1 is not ≥ 0"));
  EXPECT_LT(r.err.size(), 200u) << r.err;
  EXPECT_THAT(run_draftgate("probe x --threads 100000").err, HasSubstr("is not in 1…"));
}

TEST(CliFlags, EvalPrintsTheDecodingSettingsItUsed) {
  const auto r = run_draftgate("eval --oracle --target " + (kTrained / "qwen3-target").string() +
                               " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                               " --max-new 3 --eos 0,7");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("max_new 3, EOS 0,7, greedy, target f32, gdn chunked"));
  const auto none = run_draftgate("eval --oracle --target " + (kTrained / "qwen3-target").string() +
                                  " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                                  " --max-new 2");
  EXPECT_THAT(none.out, HasSubstr("max_new 2, EOS none"));
  EXPECT_THAT(none.out, Not(HasSubstr("e+")));
}

}  // namespace
}  // namespace draftgate
