// Valid runs that used to break the input contract: check --list from the declarations, dotted
// --param overrides reaching the check, a JUnit report from a suite name with control characters,
// a JSON report for a checkpoint whose path is not UTF-8, and two concurrent golden records of
// one new file.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "check_sources.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;
using nlohmann::json;

TEST(CheckList, PrintsEveryCheckWithItsDeclaredParameters) {
  const auto text = run_draftgate("check --list");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("loss_type: the logged loss is the recipe's loss"));
  EXPECT_THAT(text.out, HasSubstr("  expected (string, default \"ce\"; one of ce, kl)"));
  EXPECT_THAT(text.out, HasSubstr("  f32.max_nmse (number, default 1e-08; a number in"));
  const auto j = run_draftgate("check --list --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json list = json::parse(j.out);
  std::vector<std::string> names;
  for (const auto& c : list["checks"]) {
    names.push_back(c["name"]);
    EXPECT_FALSE(c["summary"].get<std::string>().empty());
    EXPECT_FALSE(c["needs"].get<std::string>().empty());
    EXPECT_FALSE(c["params"].empty()) << c["name"];
  }
  EXPECT_EQ(names, testing::check_source_names());
  const json& fc = list["checks"][1];
  ASSERT_EQ(fc["name"], "fc_excludes_target_layer");
  EXPECT_EQ(fc["params"][1]["name"], "max_nmse");
  EXPECT_EQ(fc["params"][1]["range"], json({0, 1000}));
}

TEST(CheckParams, DottedOverridesReachTheNestedBudget) {
  const fs::path dir = testing::fresh_dir("dotted_param");
  const auto r =
      run_draftgate("check --only loss_type --step-record " +
                    (kTrained / "step-records/qwen3-drafter-reference.safetensors").string() +
                    " --param loss_type.rtol=0.002 --param loss_type.expected=kl --report " +
                    (dir / "r.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the reference logs CE; expecting KL fails
  const json report = json::parse(testing::read_file(dir / "r.json"));
  EXPECT_EQ(report["results"][0]["thresholds"]["rtol"], 0.002);
  EXPECT_EQ(report["results"][0]["thresholds"]["expected"], "kl");

  const auto nested = run_draftgate(
      "check --only hidden_state_parity --target " + (kTrained / "qwen3-target").string() +
      " --param hidden_state_parity.f32.max_nmse=0.5 --report " + (dir / "r.json").string());
  EXPECT_EQ(nested.exit_code, 0) << nested.err;
  const json thresholds =
      json::parse(testing::read_file(dir / "r.json"))["results"][0]["thresholds"];
  EXPECT_EQ(thresholds["f32"]["max_nmse"], 0.5);
  EXPECT_EQ(thresholds["f32"]["min_cosine"], 0.99999) << "the sibling keeps its default";

  std::ofstream(dir / "s.json") << json{
      {"schema", "draftgate.suite/1"},
      {"artifacts",
       {{"step_record", (kTrained / "step-records/qwen3-drafter-reference.safetensors")}}},
      {"checks", {{{"check", "loss_type"}, {"params", {{"rtol", 0.25}}}}}}};
  const auto suite =
      run_draftgate("check --suite " + (dir / "s.json").string() +
                    " --param loss_type.rtol=0.125 --report " + (dir / "r.json").string());
  EXPECT_EQ(suite.exit_code, 0) << suite.err;
  EXPECT_EQ(json::parse(testing::read_file(
                dir / "r.json"))["suites"][0]["results"][0]["thresholds"]["rtol"],
            0.125)
      << "--param wins over the suite's params";
}

TEST(ReportHardening, JunitFromASuiteNameWithControlCharactersIsWellFormed) {
  const fs::path dir = testing::fresh_dir("junit_control");
  std::ofstream(dir / "s.json") << json{
      {"schema", "draftgate.suite/1"},
      {"name", std::string("bad\x01name\x1b[31m\t\"<&>\"\x7f") + "\xff"},
      {"artifacts", {{"target", kTrained / "qwen3-target"}}},
      {"checks",
       {{{"check", "layer_path"}}}}}.dump(-1, ' ', false, json::error_handler_t::ignore);
  const auto r = run_draftgate("check --suite " + (dir / "s.json").string() + " --junit " +
                               (dir / "j.xml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string xml = testing::read_file(dir / "j.xml");
  for (char c : xml)
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << "control byte in XML";
  EXPECT_THAT(xml, HasSubstr("name=\"bad\\x01name\\x1b[31m&#9;&quot;&lt;&amp;&gt;&quot;\\x7f\""));
}

TEST(ReportHardening, AReportSurvivesAPathThatIsNotUtf8) {
  const fs::path dir = testing::fresh_dir("latin1_path");
  const fs::path target = dir / "caf\xe9-target";
  fs::copy(kTrained / "qwen3-target", target, fs::copy_options::recursive);
  const auto r =
      run_draftgate("check --only layer_path --target " + target.string() + " --report " +
                    (dir / "r.json").string() + " --junit " + (dir / "j.xml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(testing::read_file(dir / "r.json"));
  EXPECT_THAT(report["results"][0]["evidence"]["target"].get<std::string>(),
              HasSubstr("caf\\xe9-target"));
  EXPECT_EQ(r.err, "");
  const auto probe = run_draftgate("probe --json " + target.string());
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  EXPECT_THAT(json::parse(probe.out)["checkpoint"].get<std::string>(), HasSubstr("caf\\xe9"));
}

TEST(GoldenRecord, OfTwoConcurrentRecordsToOneNewFileExactlyOneSucceeds) {
  const fs::path dir = testing::fresh_dir("golden_race");
  const std::string record = std::string(DRAFTGATE_BINARY) + " golden record --target " +
                             (kTrained / "qwen3-target").string() + " --drafter " +
                             (kTrained / "qwen3-drafter-reference").string() + " --prompts " +
                             (kTrained / "prompts/held-out.jsonl").string() +
                             " --max-new 2 --allow-collapsed --out " + (dir / "g.json").string();
  const std::string script = "(" + record + " >/dev/null 2>" + (dir / "e1").string() +
                             "; echo $? >" + (dir / "c1").string() + ") & (" + record +
                             " >/dev/null 2>" + (dir / "e2").string() + "; echo $? >" +
                             (dir / "c2").string() + ") & wait";
  ASSERT_EQ(std::system(script.c_str()), 0);
  const std::string c1 = testing::read_file(dir / "c1"), c2 = testing::read_file(dir / "c2");
  EXPECT_EQ((c1 == "0\n") + (c2 == "0\n"), 1) << c1 << c2;
  EXPECT_EQ((c1 == "2\n") + (c2 == "2\n"), 1) << c1 << c2;
  const std::string loser = testing::read_file(dir / (c1 == "2\n" ? "e1" : "e2"));
  EXPECT_THAT(loser, HasSubstr("g.json: "));
  EXPECT_THAT(loser, HasSubstr("exists"));
  EXPECT_TRUE(json::parse(testing::read_file(dir / "g.json")).is_object());
}

}  // namespace
}  // namespace draftgate
