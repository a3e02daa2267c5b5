// What `draftgate check` reports, end to end: one skip rule in the table, the summary, JSON, JUnit,
// the exit code and ci/gate.sh; JUnit that validates against the schema Jenkins and GitLab read.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/golden/golden.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kSourceDir;

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;
namespace fs = std::filesystem;
using json = nlohmann::json;

// A target with two drafters: taps that pass fc_excludes_target_layer, and taps that fail it.
struct Models {
  fs::path dir, target, good, bad;
};

const Models& models() {
  static const Models m = [] {
    Models out;
    out.dir = testing::fresh_dir("report_cli");
    out.target = out.dir / "t";
    out.good = out.dir / "good";
    out.bad = out.dir / "bad";
    EXPECT_EQ(run_draftgate("make-target --out " + out.target.string()).exit_code, 0);
    for (const auto& [dir, taps] : {std::pair{out.good, "0,2"}, {out.bad, "1,3"}})
      EXPECT_EQ(run_draftgate("make-drafter --target " + out.target.string() + " --taps " + taps +
                              " --out " + dir.string())
                    .exit_code,
                0);
    return out;
  }();
  return m;
}

// xmllint's verdict on `xml` against tests/schema/junit.xsd (ci/install-deps.sh installs it).
std::string schema_errors(const fs::path& xml) {
  const fs::path log = xml.string() + ".xmllint";
  const std::string cmd = "xmllint --noout --schema " +
                          (kSourceDir / "tests/schema/junit.xsd").string() + " " + xml.string() +
                          " >" + log.string() + " 2>&1";
  return std::system(cmd.c_str()) == 0 ? "" : "xmllint: " + testing::read_file(log);
}

TEST(SkipSemantics, WithoutFailOnSkipTheSummaryCountsSkipsAndNamesWhatIsMissing) {
  const Models& m = models();
  const auto r = run_draftgate("check --only layer_path,loss_type --target " + m.target.string() +
                               " --drafter " + m.good.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("summary: 1 passed; 1 skipped: loss_type (needs a step record"));
}

TEST(SkipSemantics, FailOnSkipIsAFailureInTheTableJsonJunitAndExitCode) {
  const Models& m = models();
  const fs::path dir = testing::fresh_dir("fail_on_skip");
  const auto r = run_draftgate("check --only layer_path,loss_type --fail-on-skip --target " +
                               m.target.string() + " --drafter " + m.good.string() + " --report " +
                               (dir / "r.json").string() + " --junit " + (dir / "j.xml").string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("loss_type   FAIL   not run, and --fail-on-skip fails a skip: "
                               "needs a step record"));
  EXPECT_THAT(r.out, Not(HasSubstr("SKIP")));
  EXPECT_THAT(r.out, HasSubstr("summary: 1 failed: loss_type (skipped under --fail-on-skip: "
                               "needs a step record"));
  const json report = json::parse(testing::read_file(dir / "r.json"));
  EXPECT_EQ(report["summary"]["fail"], 1);
  EXPECT_EQ(report["summary"]["skip"], 0);
  EXPECT_EQ(report["results"][1]["status"], "fail");
  EXPECT_THAT(report["summary_text"].get<std::string>(), HasSubstr("1 failed: loss_type"));
  const std::string xml = testing::read_file(dir / "j.xml");
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\""));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"not run, and --fail-on-skip fails a skip: needs a "
                             "step record"));
  EXPECT_THAT(xml, HasSubstr("type=\"draftgate.skipped\""));
  EXPECT_THAT(xml, Not(HasSubstr("<skipped")));
  EXPECT_EQ(schema_errors(dir / "j.xml"), "");
}

TEST(SkipSemantics, ARunInWhichNoCheckCanRunIsAUsageError) {
  auto r = run_draftgate("check");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no check could run"));
  EXPECT_THAT(r.err, HasSubstr("--target DIR"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_draftgate("check --only loss_type --target " + models().target.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("loss_type  SKIP"));
  EXPECT_THAT(r.err, HasSubstr("no check could run"));
  // ctest's gate label asks for its own code instead.
  EXPECT_EQ(run_draftgate("check --only loss_type --skip-exit-code 77").exit_code, 77);
}

TEST(SkipSemantics, GateShSaysWhatPassedFailedAndSkipped) {
  const Models& m = models();
  const fs::path dir = testing::fresh_dir("gate_sh");
  const std::string gate = "DRAFTGATE=" + std::string(DRAFTGATE_BINARY) + " bash " +
                           (kSourceDir / "ci/gate.sh").string() + " --out " + dir.string() +
                           " --target " + m.target.string() + " --drafter " + m.good.string() +
                           " --only layer_path,loss_type";
  auto run = [&](const std::string& extra) {
    const std::string cmd = gate + extra + " >" + (dir / "out").string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    return std::pair{WEXITSTATUS(status), testing::read_file(dir / "out")};
  };
  auto [code, out] = run("");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out,
              HasSubstr("gate.sh: PASSED: 1 passed; 1 skipped: loss_type (needs a step record"));
  EXPECT_THAT(out, Not(HasSubstr("all checks passed")));
  std::tie(code, out) = run(" --fail-on-skip");
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("gate.sh: FAILED: 1 failed: loss_type (skipped under --fail-on-skip"));
  EXPECT_THAT(out, HasSubstr("loss_type   FAIL"));
  EXPECT_EQ(schema_errors(dir / "draftgate.xml"), "");
  // The HTML beside the other reports, the failure first.
  const std::string html = testing::read_file(dir / "draftgate.html");
  ASSERT_NE(html.find("id=\"s0c1\""), std::string::npos) << html.substr(0, 400);
  EXPECT_LT(html.find("id=\"s0c1\""),
            html.find("id=\"s0c0\""));  // loss_type FAIL before layer_path
  EXPECT_LT(html.find("<th>loss_type</th>"), html.find("<th>layer_path</th>"));
  // A header names the artifacts with their identities (layer_path and loss_type read no weight
  // values: config hashes, no fingerprint); the verdict row is the drafter's.
  for (const std::string& named :
       {m.target.string(), m.good.string(), golden::config_sha256(m.target),
        std::string("not taken: no check of this run reads weights")})
    EXPECT_LT(html.find(named), html.find("<h2>Verdicts</h2>")) << named;
  EXPECT_THAT(html, HasSubstr("<tr><th>" + m.good.string() + "</th><td class=\"verdict"));
}

TEST(Junit, CarriesTimesTotalsTypedFailuresWithTheNumbersAndValidates) {
  const Models& m = models();
  const fs::path dir = testing::fresh_dir("junit_rich");
  const auto r =
      run_draftgate("check --target " + m.target.string() + " --drafter " + m.bad.string() +
                    " --only layer_path,fc_excludes_target_layer,"
                    "loss_type --junit " +
                    (dir / "j.xml").string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string xml = testing::read_file(dir / "j.xml");
  EXPECT_THAT(xml,
              HasSubstr("<testsuite name=\"draftgate\" tests=\"3\" failures=\"1\" errors=\"0\" "
                        "skipped=\"1\" time=\""));
  EXPECT_THAT(xml, HasSubstr("name=\"layer_path\" time=\""));
  EXPECT_THAT(xml, HasSubstr("<failure message=\""));
  EXPECT_THAT(xml, HasSubstr("type=\"draftgate.fail\">"));
  // The body holds the thresholds and evidence, not only the message.
  EXPECT_THAT(xml, HasSubstr("thresholds: {"));
  EXPECT_THAT(xml, HasSubstr("\"allow_final_layer\": false"));
  EXPECT_THAT(xml, HasSubstr("evidence: {"));
  EXPECT_THAT(xml, HasSubstr("<system-out>"));
  EXPECT_THAT(xml, HasSubstr("tap 3 is the target's final layer"));
  EXPECT_EQ(schema_errors(dir / "j.xml"), "");

  // Several suites: <testsuites> with the totals.
  for (const char* name : {"a", "b"})
    testing::write_file(
        dir / (std::string(name) + ".json"),
        json{{"schema", "draftgate.suite/1"},
             {"name", name},
             {"artifacts", {{"target", m.target.string()}, {"drafter", m.bad.string()}}},
             {"checks", {{{"check", "layer_path"}}, {{"check", "fc_excludes_target_layer"}}}}}
            .dump());
  const auto several =
      run_draftgate("check --suite " + (dir / "a.json").string() + " --suite " +
                    (dir / "b.json").string() + " --junit " + (dir / "s.xml").string());
  EXPECT_EQ(several.exit_code, 1) << several.err;
  EXPECT_THAT(several.out, HasSubstr("summary: 2 failed: a/fc_excludes_target_layer, "
                                     "b/fc_excludes_target_layer; 2 passed"));
  const std::string suites = testing::read_file(dir / "s.xml");
  EXPECT_THAT(suites, HasSubstr("<testsuites name=\"draftgate\" tests=\"4\" failures=\"2\" "
                                "errors=\"0\" time=\""));
  EXPECT_EQ(schema_errors(dir / "s.xml"), "");
}

TEST(Junit, TheSchemaRejectsWhatCiUisCannotRead) {
  // The validation can fail: a root total the schema does not know, or a time that is not seconds.
  const fs::path dir = testing::fresh_dir("junit_schema");
  testing::write_file(dir / "bad.xml",
                      "<?xml version=\"1.0\"?>\n<testsuite name=\"a\" tests=\"1\" failures=\"0\" "
                      "errors=\"0\" time=\"1s\"><testcase name=\"x\"/></testsuite>\n");
  EXPECT_THAT(schema_errors(dir / "bad.xml"), HasSubstr("time"));
  testing::write_file(dir / "noname.xml",
                      "<?xml version=\"1.0\"?>\n<testsuite tests=\"1\" failures=\"0\" "
                      "errors=\"0\"><testcase name=\"x\"/></testsuite>\n");
  EXPECT_THAT(schema_errors(dir / "noname.xml"), HasSubstr("name"));
}

}  // namespace
}  // namespace draftgate
