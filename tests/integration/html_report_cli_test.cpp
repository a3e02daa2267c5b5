// `check --html` and `eval --html` end to end on the bundled fixtures: a passing and a failing run
// draw the verdicts and one chart mark per value the JSON report holds; the output policy applies.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kSourceDir;
using testing::kTrained;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using json = nlohmann::json;
using testing::run_draftgate;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string chart(const std::string& html, const std::string& suffix) {
  const auto begin = html.find(suffix + "\"");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</svg>", begin) - begin);
}

const json& result_of(const json& report, const std::string& check) {
  for (const auto& r : report["results"])
    if (r["check"] == check) return r;
  static const json none;
  return none;
}

struct HtmlRun {
  int exit_code;
  std::string html;
  json report;
};

HtmlRun check_suite(const std::string& suite, const std::string& only) {
  const fs::path dir = testing::fresh_dir("html_cli_" + suite);
  const auto r = run_draftgate("check --suite " +
                               (kSourceDir / "fixtures/suites" / (suite + ".json")).string() +
                               " --only " + only + " --html " + (dir / "r.html").string() +
                               " --report " + (dir / "r.json").string());
  EXPECT_EQ(r.err, "");
  const json report = json::parse(testing::read_file(dir / "r.json"));
  return {r.exit_code, testing::read_file(dir / "r.html"), report["suites"][0]};
}

// Each chart holds one mark per value of the JSON report.
void expect_charts_match(const HtmlRun& run) {
  if (const json& min_tau = result_of(run.report, "min_tau"); !min_tau.is_null()) {
    const json& tau = min_tau["measured"];
    const std::string hist = chart(run.html, "-tau-histogram");
    EXPECT_EQ(count(hist, "<rect class=\"bar s0\""), tau["histogram"].size() - 1);
    EXPECT_EQ(count(hist, "<rect class=\"bar s1\""), tau["golden_histogram"].size() - 1);
    const std::string depth = chart(run.html, "-acceptance");
    EXPECT_EQ(count(depth, "<rect class=\"bar s0\""), tau["per_position_acceptance"].size());
    EXPECT_EQ(count(depth, "<rect class=\"bar s1\""), tau["golden_per_position_acceptance"].size());
  }
  if (const json& parity = result_of(run.report, "hidden_state_parity"); !parity.is_null()) {
    const std::string curve = chart(run.html, "-parity");
    EXPECT_EQ(count(curve, "<circle class=\"pt s0\"") + count(curve, "class=\"nonfinite\""),
              parity["measured"]["layers"].size());
    EXPECT_THAT(curve, HasSubstr("class=\"threshold\""));
  }
  const json& fc = result_of(run.report, "fc_excludes_target_layer");
  const json& fed = fc["measured"]["fed_slices"];
  ASSERT_FALSE(fed.empty()) << "the fixtures record the fc input";
  const std::string map = chart(run.html, "-source-map");
  EXPECT_EQ(count(map, "<circle class=\"declared\""), fed.size());
  std::size_t mismatched = 0;
  for (const auto& s : fed) mismatched += s["declared_layer"] != s["came_from"];
  EXPECT_EQ(count(map, "<circle class=\"detected mismatch\""), mismatched);
  EXPECT_EQ(count(map, "<circle class=\"detected match\""), fed.size() - mismatched);
}

TEST(HtmlReportCli, PassingFixtureRunIsGreenWithEveryChart) {
  const HtmlRun run =
      check_suite("qwen3-reference", "min_tau,hidden_state_parity,fc_excludes_target_layer");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(count(run.html, "class=\"verdict pass\""), 3u);
  EXPECT_THAT(run.html, HasSubstr("<p class=\"summary pass\">3 passed</p>"));
  EXPECT_EQ(count(run.html, "<svg class=\"chart\""), 4u);
  expect_charts_match(run);
}

// The artifacts table: a run that reads weights shows the checkpoints' fingerprints; a structural
// run reads headers only, so it shows config hashes and says the fingerprint was not taken (it
// read 16 samples of every shard: 146 MB of a 235B target).
TEST(HtmlReportCli, AStructuralRunTakesNoWeightsFingerprint) {
  const HtmlRun weights = check_suite("qwen3-reference", "min_tau,fc_excludes_target_layer");
  EXPECT_THAT(weights.html, HasSubstr("weights_fingerprint"));
  EXPECT_THAT(weights.html, ::testing::Not(HasSubstr("not taken")));
  const HtmlRun structural = check_suite("qwen3-reference", "layer_path,drafter_config");
  EXPECT_EQ(structural.exit_code, 0);
  EXPECT_THAT(structural.html, HasSubstr("config_sha256"));
  EXPECT_THAT(structural.html, HasSubstr("not taken: no check of this run reads weights"));
}

TEST(HtmlReportCli, FailingFixtureRunShowsTheSliceFedFromAnotherLayer) {
  const HtmlRun run =
      check_suite("qwen35-tap-off-by-one", "fc_excludes_target_layer,hidden_state_parity");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(count(run.html, "class=\"verdict fail\""), 1u);  // fc_excludes_target_layer
  EXPECT_EQ(count(run.html, "class=\"verdict pass\""), 1u);  // hidden_state_parity
  EXPECT_THAT(run.html, HasSubstr("<p class=\"summary fail\">1 failed: fc_excludes_target_layer"));
  expect_charts_match(run);
  EXPECT_GE(count(run.html, "detected mismatch"), 1u);
}

TEST(HtmlReportCli, EvalReportChartsTheRunItsJsonDescribes) {
  const fs::path dir = testing::fresh_dir("html_cli_eval");
  const auto r = run_draftgate("eval --target " + (kTrained / "qwen3-target").string() +
                               " --drafter " + (kTrained / "qwen3-drafter-reference").string() +
                               " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                               " --max-new 8 --eos 0 --html " + (dir / "e.html").string() +
                               " --json " + (dir / "e.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json eval = json::parse(testing::read_file(dir / "e.json"));
  const std::string html = testing::read_file(dir / "e.html");
  EXPECT_EQ(count(chart(html, "eval-tau-histogram"), "<rect class=\"bar s0\""),
            eval["histogram"].size());
  EXPECT_EQ(count(chart(html, "eval-acceptance"), "<rect class=\"bar s0\""),
            eval["per_position_acceptance"].size());
  for (const auto& p : eval["per_prompt"])
    EXPECT_THAT(html, HasSubstr(">" + p["id"].get<std::string>() + "<"));
  // Without --json, --html alone writes the report and no JSON.
  const auto alone =
      run_draftgate("eval --target " + (kTrained / "qwen3-target").string() +
                    " --oracle --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                    " --max-new 4 --html " + (dir / "o.html").string());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_THAT(testing::read_file(dir / "o.html"), HasSubstr("eval-tau-histogram"));
}

TEST(HtmlReportCli, TheOutputPolicyGuardsHtmlLikeTheOtherReports) {
  const fs::path dir = testing::fresh_dir("html_cli_policy");
  const fs::path golden = dir / "golden.json";
  fs::copy_file(kSourceDir / "golden/qwen3-reference.json", golden);
  const std::string before = testing::read_file(golden);
  auto r = run_draftgate("check --only fc_excludes_target_layer --target " +
                         (kTrained / "qwen3-target").string() + " --drafter " +
                         (kTrained / "qwen3-drafter-reference").string() + " --golden " +
                         golden.string() + " --html " + golden.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--html"));
  EXPECT_EQ(testing::read_file(golden), before);
  r = run_draftgate("check --only layer_path --target " + (kTrained / "qwen3-target").string() +
                    " --html /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--html"));
  const fs::path prompts = kTrained / "prompts/held-out.jsonl";
  r = run_draftgate("eval --target " + (kTrained / "qwen3-target").string() +
                    " --oracle --prompts " + prompts.string() + " --html " + prompts.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--html"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace draftgate
