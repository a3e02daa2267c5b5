// The HTML report in a real browser: headless Chromium (Debian's `chromium`) renders the reports
// of a fixture run, of `eval` and of hostile strings, logs no console message (a blocked
// load, a policy violation or a script error would log one), draws every chart with marks of
// positive size, and takes a screenshot. Skips, saying how to run it, where chromium is absent.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <regex>

#include "checks/html_report.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kSourceDir;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

#define REQUIRE_CHROMIUM()                                                                  \
  if (chromium().empty())                                                                   \
  GTEST_SKIP() << "chromium is not installed; to run the browser test: apt-get install -y " \
                  "--no-install-recommends chromium, then ctest --test-dir build -L browser"

struct Rendered {
  std::string dom;      // the probe page's DOM after load
  std::string console;  // every console line Chromium logged while rendering
  std::uintmax_t screenshot_bytes = 0;
};

// Renders `report` twice: inside a probe page whose script counts the report's charts and those
// with a mark of positive size (the report itself runs no script: its policy forbids it), and on
// its own to a screenshot.
Rendered render(const fs::path& report) {
  const fs::path dir = report.parent_path();
  testing::write_file(dir / "probe.html", R"(<!DOCTYPE html><html><body>
<iframe id="r" src=")" + report.filename().string() +
                                              R"(" width="1280" height="4000"></iframe>
<script>
window.addEventListener('load', () => {
  const d = document.getElementById('r').contentDocument;
  const charts = [...d.querySelectorAll('svg.chart')];
  const drawn = charts.filter(c => [...c.querySelectorAll('rect.bar, circle.pt, circle.detected')]
      .some(m => { const b = m.getBoundingClientRect(); return b.width > 0 && b.height > 0; }));
  document.body.setAttribute('data-charts', charts.length);
  document.body.setAttribute('data-drawn', drawn.length);
  document.body.setAttribute('data-bytes', d.documentElement.outerHTML.length);
  document.body.setAttribute('data-overflow', d.documentElement.scrollWidth > 1280 ? 1 : 0);
});
</script></body></html>)");
  const std::string common = "timeout 60 " + chromium() +
                             " --headless --no-sandbox --disable-gpu --no-first-run"
                             " --user-data-dir=" +
                             (dir / "profile").string() +
                             " --enable-logging=stderr --v=0 --virtual-time-budget=5000 ";
  const fs::path dom = dir / "dom.html", log1 = dir / "dom.log", log2 = dir / "shot.log";
  const fs::path shot = dir / "report.png";
  const std::string probe = common + "--allow-file-access-from-files --dump-dom file://" +
                            (dir / "probe.html").string() + " >" + dom.string() + " 2>" +
                            log1.string();
  EXPECT_EQ(std::system(probe.c_str()), 0) << testing::read_file(log1);
  const std::string screenshot = common + "--window-size=1280,2400 --screenshot=" + shot.string() +
                                 " file://" + report.string() + " 2>" + log2.string();
  EXPECT_EQ(std::system(screenshot.c_str()), 0) << testing::read_file(log2);
  Rendered r;
  r.dom = testing::read_file(dom);
  for (const fs::path& log : {log1, log2}) {
    const std::string text = testing::read_file(log);
    static const std::regex console_line(R"([^\n]*:CONSOLE[^\n]*)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), console_line);
         it != std::sregex_iterator(); ++it)
      r.console += it->str() + "\n";
  }
  if (fs::exists(shot)) r.screenshot_bytes = fs::file_size(shot);
  return r;
}

void expect_rendered(const fs::path& report, int charts) {
  const Rendered r = render(report);
  EXPECT_EQ(r.console, "") << "console messages while rendering " << report;
  EXPECT_THAT(r.dom, HasSubstr("data-charts=\"" + std::to_string(charts) + "\""));
  EXPECT_THAT(r.dom, HasSubstr("data-drawn=\"" + std::to_string(charts) + "\""));
  EXPECT_THAT(r.dom, Not(HasSubstr("data-bytes=\"0\"")));
  EXPECT_THAT(r.dom, HasSubstr("data-overflow=\"0\"")) << report << " is wider than 1280 px";
  // A blank 1280x2400 page compresses to a few kB; text and charts take tens.
  EXPECT_GT(r.screenshot_bytes, 20000u) << report;
}

TEST(HtmlReportBrowser, FixtureRunRendersEveryChart) {
  REQUIRE_CHROMIUM();
  const fs::path dir = testing::fresh_dir("html_browser_check");
  const auto run = run_draftgate("check --suite " +
                                 (kSourceDir / "fixtures/suites/qwen3-reference.json").string() +
                                 " --html " + (dir / "report.html").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Every check in the matrix (it overflowed 1280 px before); τ histogram, per-depth acceptance,
  // parity curve, source map.
  expect_rendered(dir / "report.html", 4);
}

TEST(HtmlReportBrowser, EvalReportRendersItsCharts) {
  REQUIRE_CHROMIUM();
  const fs::path dir = testing::fresh_dir("html_browser_eval");
  const fs::path trained = kSourceDir / "fixtures/trained";
  const auto run = run_draftgate("eval --target " + (trained / "qwen3-target").string() +
                                 " --drafter " + (trained / "qwen3-drafter-reference").string() +
                                 " --prompts " + (trained / "prompts/held-out.jsonl").string() +
                                 " --max-new 8 --eos 0 --html " + (dir / "report.html").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_rendered(dir / "report.html", 2);
}

TEST(HtmlReportBrowser, HostileStringsAndNonFiniteValuesRenderCleanly) {
  REQUIRE_CHROMIUM();
  const fs::path dir = testing::fresh_dir("html_browser_hostile");
  const std::string hostile = "</svg></table><script>console.error('x')</script>\x01\xff&'\"";
  checks::CheckResult r;
  r.check = hostile;
  r.status = checks::Status::kFail;
  r.message = hostile;
  r.evidence["path"] = "/tmp/" + hostile;
  r.measured["layers"] = nlohmann::json::array();
  for (double nmse : {1e-7, std::numeric_limits<double>::quiet_NaN(), 1e-3})
    r.measured["layers"].push_back({{"layer", r.measured["layers"].size()}, {"nmse", nmse}});
  r.thresholds["max_nmse"] = std::numeric_limits<double>::infinity();
  testing::write_file(dir / "report.html", checks::html_check_report({{hostile, {r}, {}}}));
  expect_rendered(dir / "report.html", 1);
}

}  // namespace
}  // namespace draftgate
