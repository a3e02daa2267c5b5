// The check framework and its reports: typed parameters and bad input, exit codes, JSON, JUnit,
// --fail-on-skip, the verdict matrix.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "checks/record_sequences.h"
#include "checks/report.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
using testing::kQwen36;
using ::testing::Not;
using testing::run;

TEST(CheckFramework, UnknownParametersAndBadInputAreErrors) {
  Artifacts a;
  a.target = kQwen36;
  const CheckResult unknown = run("layer_path", a, {{"bogus", 1}});
  EXPECT_EQ(unknown.status, Status::kError);
  EXPECT_THAT(unknown.message, HasSubstr("unknown parameter \"bogus\""));
  a.target = "/nonexistent";
  EXPECT_EQ(run("layer_path", a).status, Status::kError);
}

// Padding that restarts position_ids makes each pad token a one-token document: the message names
// a few of the sequences not judged and counts the rest; measured lists every one.
TEST(CheckFramework, ABatchVerdictNamesAFewSequencesNotJudgedAndCountsTheRest) {
  train::StepBatch batch;
  batch.path = "step.safetensors";
  batch.batched = true;
  batch.rows = 1;
  batch.sequences.resize(1);
  batch.names = {"row 0, document 0"};
  for (int d = 1; d <= 8; ++d)
    batch.unjudged.push_back("row 0, document " + std::to_string(d) + " (no kept anchor)");
  const CheckResult r = judge_each_sequence(batch, [](const train::StepRecord&) {
    CheckResult one;
    one.message = "agrees";
    return one;
  });
  EXPECT_EQ(r.message,
            "1 of 1 sequences of 1 batch row pass (row 0, document 0: agrees); not judged: row 0, "
            "document 1 (no kept anchor), row 0, document 2 (no kept anchor), row 0, document 3 "
            "(no kept anchor), row 0, document 4 (no kept anchor), row 0, document 5 (no kept "
            "anchor) and 3 more (measured.sequences_not_judged lists them)");
  EXPECT_EQ(r.measured["sequences_not_judged"].size(), 8u);
}

TEST(Reports, ExitCodesJsonAndJunit) {
  std::vector<CheckResult> results(3);
  results[0].check = "a";
  results[1].check = "b";
  results[1].status = Status::kSkip;
  results[1].message = "needs <x> & \"y\"";
  results[2].check = "c";
  EXPECT_EQ(exit_code(results, false), 0);
  EXPECT_EQ(exit_code(results, true), 1);
  results[2].status = Status::kFail;
  EXPECT_EQ(exit_code(results, false), 1);
  results[0].status = Status::kError;
  EXPECT_EQ(exit_code(results, false), 2);
  const auto j = json_report(results);
  EXPECT_EQ(j["summary"]["fail"], 1);
  EXPECT_EQ(j["results"][1]["status"], "skip");
  const std::string xml = junit_report({{"run", results, {}}});
  EXPECT_THAT(xml, HasSubstr("tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"1\""));
  EXPECT_THAT(xml, HasSubstr("needs &lt;x&gt; &amp; &quot;y&quot;"));
  EXPECT_THAT(xml, Not(HasSubstr("<testsuites")));
}

TEST(Reports, JunitFailuresCarryTypeTimeAndTheNumbers) {
  CheckResult fail;
  fail.check = "min_tau";
  fail.status = Status::kFail;
  fail.message = "τ macro 1.003 < required 3.1";
  fail.measured["tau_macro"] = 1.003;
  fail.thresholds["required_tau"] = 3.1;
  fail.evidence["golden"] = "g.json";
  fail.seconds = 1.25;
  const std::string xml = junit_report({{"run", {fail}, {}}});
  EXPECT_THAT(xml, HasSubstr("failures=\"1\" errors=\"0\" skipped=\"0\" time=\"1.250\""));
  EXPECT_THAT(xml, HasSubstr("name=\"min_tau\" time=\"1.250\""));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"τ macro 1.003 &lt; required 3.1\" "
                             "type=\"draftgate.fail\">τ macro 1.003 &lt; required 3.1\n"
                             "measured: {\n  \"tau_macro\": 1.003\n}\n"
                             "thresholds: {\n  \"required_tau\": 3.1\n}\n"
                             "evidence: {\n  \"golden\": \"g.json\"\n}\n</failure>"));
  EXPECT_THAT(xml, HasSubstr("<system-out>τ macro 1.003 &lt; required 3.1</system-out>"));
  const std::string several = junit_report({{"a", {fail}, {}}, {"b", {fail}, {}}});
  EXPECT_THAT(several, HasSubstr("<testsuites name=\"draftgate\" tests=\"2\" failures=\"2\" "
                                 "errors=\"0\" time=\"2.500\">"));
}

TEST(Reports, FailOnSkipMakesASkipAFailureNamingWhatWasMissing) {
  std::vector<CheckResult> results(3);
  results[0].check = "layer_path";
  results[1].check = "loss_type";
  results[1].status = Status::kSkip;
  results[1].message = "needs a step record (--step-record)";
  results[2].check = "min_tau";
  results[2].status = Status::kSkip;
  results[2].message = "needs a golden";
  EXPECT_EQ(
      summary_line(results),
      "1 passed; 2 skipped: loss_type (needs a step record (--step-record)), min_tau (needs a "
      "golden)");
  fail_skips(results);
  EXPECT_EQ(results[1].status, Status::kFail);
  EXPECT_EQ(results[1].evidence["skipped"], "needs a step record (--step-record)");
  EXPECT_EQ(summary_line(results),
            "2 failed: loss_type (skipped under --fail-on-skip: needs a step record "
            "(--step-record)), min_tau (skipped under --fail-on-skip: needs a golden); 1 passed");
  EXPECT_EQ(exit_code(results, false), 1);
  const std::string xml = junit_report({{"run", results, {}}});
  EXPECT_THAT(xml, HasSubstr("failures=\"2\" errors=\"0\" skipped=\"0\""));
  EXPECT_THAT(xml, HasSubstr("type=\"draftgate.skipped\""));
  EXPECT_THAT(xml, Not(HasSubstr("<skipped")));
}

TEST(Reports, VerdictMatrixMarksUnexpectedVerdicts) {
  CheckResult pass, fail;
  pass.check = "a";
  fail.check = "b";
  fail.status = Status::kFail;
  const std::vector<SuiteRun> runs = {
      {"ref", {pass, fail}, {{"a", Status::kPass}, {"b", Status::kPass}}},
      {"bug", {pass, fail}, {{"b", Status::kFail}}}};
  EXPECT_EQ(unmet_expectations(runs[0]), std::vector<std::string>{"b"});
  EXPECT_TRUE(unmet_expectations(runs[1]).empty());
  const std::string m = verdict_matrix(runs);
  EXPECT_THAT(m, HasSubstr("FAIL!"));
  EXPECT_EQ(m.find("FAIL!"), m.rfind("FAIL!")) << "only the reference's fail is unexpected";
  const auto j = json_report(runs);
  EXPECT_EQ(j["summary"]["fail"], 2);
  EXPECT_EQ(j["suites"][0]["unmet_expectations"], nlohmann::json::array({"b"}));
  EXPECT_THAT(junit_report(runs), HasSubstr("<testsuites name=\"draftgate\" tests=\"4\""));
}

}  // namespace
}  // namespace draftgate::checks
