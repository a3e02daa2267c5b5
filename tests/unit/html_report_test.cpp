// The HTML report's writer: every string escaped, each chart drawn with one mark per value, values
// that are not finite written as text and never as a coordinate, nothing that loads from outside.

#include "checks/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "checks/svg_chart.h"
#include "draftgate/error.h"
#include "draftgate/golden/golden.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The <svg> whose data-chart is `id` ("" when there is none).
std::string chart(const std::string& html, const std::string& id) {
  const auto begin = html.find("data-chart=\"" + id + "\"");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</svg>", begin) - begin);
}

// Whether every byte sequence is valid UTF-8 and no control character but tab and newline occurs.
bool clean_text(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return false;
      ++i;
      continue;
    }
    const std::size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

// Every geometric attribute holds plain finite numbers (no nan, inf, or empty value).
void expect_finite_geometry(const std::string& svg) {
  static const std::regex attr(R"re( (x|y|x1|x2|y1|y2|cx|cy|r|width|height|d)="([^"]*)")re");
  static const std::regex plain(R"re(^[ML0-9. \-]+$)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), attr); it != std::sregex_iterator();
       ++it)
    EXPECT_TRUE(std::regex_match((*it)[2].str(), plain)) << (*it)[0].str();
}

CheckResult result(const std::string& name, Status status, const std::string& message) {
  CheckResult r = skip(name, message);
  r.status = status;
  return r;
}

TEST(HtmlReport, EscapesNamesPathsAndMessagesWhateverTheyHold) {
  const std::string hostile = "<script>alert(\"x\")</script> & 'q' \x01\x1b[31m \xff\xfe bad";
  CheckResult r = result(hostile, Status::kFail, "msg " + hostile + "\nline 2");
  r.evidence["path/<b>"] = "/tmp/a&b\"c/\xc3\x28";
  r.measured["label"] = hostile;
  const std::string html = html_check_report({{"suite </table>", {r}, {{hostile, Status::kPass}}}});
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("</table> ")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; 'q' "
                              "\\x01\\x1b[31m \\xff\\xfe bad"));
  EXPECT_THAT(html, HasSubstr("path/&lt;b&gt;"));
  EXPECT_THAT(html, HasSubstr("/tmp/a&amp;b&quot;c/\\xc3("));
  EXPECT_THAT(html, HasSubstr("suite &lt;/table&gt;"));
  EXPECT_TRUE(clean_text(html));
  // The unmet expectation is marked in the matrix.
  EXPECT_THAT(html, HasSubstr("class=\"verdict fail unmet\""));
  EXPECT_THAT(html, HasSubstr("(expected pass)"));
}

TEST(HtmlReport, LoadsNothingAndRunsNothing) {
  CheckResult r = result("min_tau", Status::kPass, "ok");
  r.measured["histogram"] = {0, 3, 1};
  const std::string html = html_check_report({{"draftgate", {r}, {}}});
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  // The only URL is the SVG namespace; links are in-page anchors.
  EXPECT_EQ(count(html, "://"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(count(html, "href=\""), count(html, "href=\"#"));
  EXPECT_THAT(html, HasSubstr("Content-Security-Policy\" content=\"default-src 'none'"));
}

TEST(HtmlReport, VerdictMatrixColoursEveryCheckOfEverySuite) {
  const SuiteRun a{"a", {result("x", Status::kPass, ""), result("y", Status::kFail, "")}, {}};
  const SuiteRun b{"b", {result("x", Status::kSkip, ""), result("y", Status::kError, "")}, {}};
  const std::string html = html_check_report({a, b});
  for (const char* cell : {"verdict pass", "verdict fail", "verdict skip", "verdict error"})
    EXPECT_EQ(count(html, cell), 1u) << cell;
  EXPECT_THAT(html, HasSubstr("<h2>Suite a</h2>"));
  EXPECT_THAT(html, HasSubstr("1 failed: a/y; 1 error: b/y; 1 passed; 1 skipped: b/x"));
}

TEST(HtmlReport, TauHistogramAndDepthAcceptanceStandBesideTheGoldens) {
  CheckResult r = result("min_tau", Status::kFail, "τ low");
  r.measured["histogram"] = {0, 5, 3, 2, 0};
  r.measured["golden_histogram"] = {0, 1, 2, 3, 4};
  r.measured["per_position_acceptance"] = {0.5, 0.2, 0.0};
  r.measured["golden_per_position_acceptance"] = {0.9, 0.7, 0.5};
  r.thresholds["required_tau"] = 2.5;
  const std::string html = html_check_report({{"draftgate", {r}, {}}});
  const std::string hist = chart(html, "s0c0-tau-histogram");
  ASSERT_FALSE(hist.empty()) << html;
  EXPECT_EQ(count(hist, "<rect class=\"bar s0\""), 4u);  // τ = 1..4, drafter
  EXPECT_EQ(count(hist, "<rect class=\"bar s1\""), 4u);  // and golden
  EXPECT_THAT(hist, HasSubstr("drafter, τ 1: 50%"));     // 5 of 10 steps
  EXPECT_THAT(hist, HasSubstr("golden, τ 4: 40%"));
  const std::string depth = chart(html, "s0c0-acceptance");
  EXPECT_EQ(count(depth, "<rect class=\"bar s0\""), 3u);
  EXPECT_EQ(count(depth, "<rect class=\"bar s1\""), 3u);
  expect_finite_geometry(hist + depth);
  EXPECT_THAT(html, HasSubstr("<th>required_tau</th><td class=\"v\">2.5</td>"));
}

TEST(HtmlReport, ParityCurveHasAPointPerFiniteLayerAndWritesTheRestAsText) {
  CheckResult r = result("hidden_state_parity", Status::kFail, "diverges");
  r.measured["layers"] = json::array();
  for (double nmse : {1e-6, 1e-5, kNaN, kInf, 1e-2})
    r.measured["layers"].push_back({{"layer", r.measured["layers"].size()}, {"nmse", nmse}});
  r.measured["logits_mean_kl"] = kNaN;
  r.thresholds["max_nmse"] = 1e-3;
  const std::string html = html_check_report({{"draftgate", {r}, {}}});
  const std::string curve = chart(html, "s0c0-parity");
  ASSERT_FALSE(curve.empty());
  EXPECT_EQ(count(curve, "<circle class=\"pt s0\""), 3u);
  EXPECT_EQ(count(curve, "class=\"nonfinite\""), 2u);
  EXPECT_THAT(curve, HasSubstr(">NaN</text>"));
  EXPECT_THAT(curve, HasSubstr(">+inf</text>"));
  EXPECT_THAT(curve, HasSubstr("log10 NMSE, layer 0: -6"));
  EXPECT_THAT(curve, HasSubstr("class=\"threshold\""));
  EXPECT_THAT(curve, HasSubstr("budget NMSE 0.001"));
  // The line breaks at the values it cannot draw: two pieces, M…L… M….
  EXPECT_EQ(count(curve, " M"), 1u);
  expect_finite_geometry(curve);
  // Measured non-finite values read as text in the tables too.
  EXPECT_THAT(html, HasSubstr("<th>logits_mean_kl</th><td class=\"v\">NaN</td>"));
}

TEST(HtmlReport, ParityCurveDrawsAnExactMatchBelowTheRestAndSaysSo) {
  CheckResult r = result("hidden_state_parity", Status::kPass, "identical");
  r.measured["layers"] = {{{"layer", 0}, {"nmse", 0.0}}, {{"layer", 1}, {"nmse", 1e-12}}};
  r.thresholds["max_nmse"] = 1e-8;
  const std::string curve = chart(html_check_report({{"draftgate", {r}, {}}}), "s0c0-parity");
  EXPECT_EQ(count(curve, "<circle class=\"pt s0\""), 2u);
  EXPECT_THAT(curve, HasSubstr("layer 0: NMSE 0 (exact match)"));
  EXPECT_THAT(curve, HasSubstr("layer 1: -12"));
  EXPECT_THAT(curve, Not(HasSubstr("nonfinite")));
  expect_finite_geometry(curve);
}

TEST(HtmlReport, AChartOfNothingButNonFiniteValuesStaysValid) {
  svg::Chart c;
  c.categories = {"a", "b"};
  c.series = {{"s", {kNaN, -kInf}}};
  const std::string bars = svg::bar_chart(c), lines = svg::line_chart(c);
  EXPECT_EQ(count(bars, "class=\"bar"), 0u);
  EXPECT_EQ(count(lines, "class=\"pt"), 0u);
  EXPECT_EQ(count(bars + lines, "class=\"nonfinite\""), 4u);
  EXPECT_THAT(lines, Not(HasSubstr("<path")));
  expect_finite_geometry(bars + lines);
  // Values too far apart to share a scale are text as well, not overflowing coordinates.
  svg::Chart wide = c;
  wide.series = {{"s", {-1.7e308, 1.7e308}}};
  expect_finite_geometry(svg::line_chart(wide) + svg::bar_chart(wide));
}

TEST(HtmlReport, SourceMapShowsDeclaredAndDetectedLayerPerSlice) {
  CheckResult r = result("fc_excludes_target_layer", Status::kFail, "slice 1");
  r.measured["target_layers"] = 4;
  r.measured["fed_slices"] = {
      {{"slice", 0}, {"declared_layer", 0}, {"came_from", 0}},
      {{"slice", 1}, {"declared_layer", 2}, {"came_from", 3}},
      {{"slice", 2}, {"declared_layer", 3}, {"came_from", 3}, {"after_final_norm", true}}};
  const std::string html = html_check_report({{"draftgate", {r}, {}}});
  const std::string map = chart(html, "s0c0-source-map");
  ASSERT_FALSE(map.empty());
  EXPECT_EQ(count(map, "<circle class=\"declared\""), 3u);
  EXPECT_EQ(count(map, "<circle class=\"detected match\""), 1u);
  EXPECT_EQ(count(map, "<circle class=\"detected mismatch\""), 2u);
  EXPECT_THAT(map, HasSubstr("slice 2 detected: layer 3 after the final norm"));
  EXPECT_THAT(map, HasSubstr(">emb</text>"));  // the embeddings' column
  expect_finite_geometry(map);
}

TEST(HtmlReport, ChecksWithoutChartableMeasurementsGetTablesOnly) {
  CheckResult r = result("layer_path", Status::kSkip, "needs a target");
  const std::string html = html_check_report({{"draftgate", {r}, {}}});
  EXPECT_THAT(html, Not(HasSubstr("<svg")));
  EXPECT_THAT(html, HasSubstr("needs a target"));
}

TEST(HtmlReport, EvalReportChartsItsHistogramAndDepthsAndListsPrompts) {
  const json eval = {{"tau_macro", 2.5},
                     {"tau_pooled", 2.4},
                     {"histogram", {{"1", 2}, {"2", 0}, {"3", 6}}},
                     {"per_position_acceptance", {0.75, 0.6}},
                     {"decoding", {{"mode", "dflash"}, {"block_size", 3}}},
                     {"drafter", "<d>"},
                     {"per_prompt",
                      {{{"id", "p&1"},
                        {"tau", 2.5},
                        {"steps", 8},
                        {"output_ids", {1, 2, 3}},
                        {"drafts", {{1, 2}, {3}}}}}}};
  const std::string html = html_eval_report(eval);
  const std::string hist = chart(html, "eval-tau-histogram");
  EXPECT_EQ(count(hist, "<rect class=\"bar s0\""), 3u);
  EXPECT_THAT(hist, HasSubstr("τ 3: 75%"));
  EXPECT_EQ(count(chart(html, "eval-acceptance"), "<rect class=\"bar s0\""), 2u);
  EXPECT_THAT(html, HasSubstr("τ macro 2.5, pooled 2.4"));
  EXPECT_THAT(html, HasSubstr("p&amp;1"));
  EXPECT_THAT(html, HasSubstr("&lt;d&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("output_ids")));
  EXPECT_THAT(html, Not(HasSubstr("<th>drafts</th>")));
}

// eval's "output_text": each prompt's text escaped in its own block (not in the table), a
// prompt's reason when it has none, and the run's reason once when the target has no tokenizer.
TEST(HtmlReport, EvalReportShowsEachPromptsGeneratedText) {
  const json decoded = {
      {"output_text", {{"tokenizer", "t/tokenizer.json"}, {"skip_special_tokens", false}}},
      {"per_prompt",
       {{{"id", "a"}, {"tau", 2.0}, {"output_ids", {1}}, {"output_text", "x < y & \"z\"\n</pre>"}},
        {{"id", "b"},
         {"tau", 1.0},
         {"output_ids", {99}},
         {"output_text", nullptr},
         {"output_text_unavailable", "t/tokenizer.json: no token has id 99"}}}}};
  const std::string html = html_eval_report(decoded);
  EXPECT_THAT(html, HasSubstr("<h2>Generated text</h2>\n<h3>a</h3><pre class=\"output\">x &lt; y "
                              "&amp; &quot;z&quot;&#10;&lt;/pre&gt;</pre>\n"));
  EXPECT_THAT(html, HasSubstr("<h3>b</h3><p class=\"message\">no text: t/tokenizer.json: no token "
                              "has id 99</p>"));
  // Not in the table of prompts (the run's own "output_text" is in the results table).
  const std::string table = html.substr(html.find("<h2>Per prompt</h2>"));
  EXPECT_THAT(table.substr(0, table.find("<h2>Generated text</h2>")),
              Not(HasSubstr("output_text")));

  const json none = {
      {"output_text", {{"tokenizer", nullptr}, {"unavailable", "no <file>"}}},
      {"per_prompt",
       {{{"id", "a"}, {"output_text", nullptr}}, {{"id", "b"}, {"output_text", nullptr}}}}};
  const std::string h = html_eval_report(none);
  EXPECT_EQ(count(h, "no text: no &lt;file&gt;"), 1u);
  EXPECT_THAT(h, Not(HasSubstr("<pre class=\"output\">")));
  // Older eval JSON, without texts: no section.
  EXPECT_THAT(html_eval_report({{"per_prompt", {{{"id", "a"}}}}}),
              Not(HasSubstr("Generated text")));
}

// min_tau reports the golden's histogram beside the drafter's: read from tau.histogram, validated.
TEST(HtmlReport, GoldenHistogramIsReadAsTheChartsExpectAndValidated) {
  const std::filesystem::path source = DRAFTGATE_SOURCE_DIR "/golden/qwen3-reference.json";
  json doc = json::parse(testing::read_file(source));
  const golden::Golden g = golden::read_golden(source);
  ASSERT_EQ(g.histogram.size(), static_cast<std::size_t>(g.block_size) + 1);
  EXPECT_EQ(g.histogram[0], 0);
  for (const auto& [k, n] : doc["tau"]["histogram"].items())
    EXPECT_EQ(g.histogram.at(std::stoul(k)), n.get<std::int64_t>()) << k;
  const auto dir = testing::fresh_dir("golden_histogram");
  for (const json& bad : {json{{"0", 1}}, json{{"1", -1}}, json{{"01", 1}}, json{{"1", 0.5}},
                          json{{std::to_string(g.block_size + 1), 1}}, json::array({1, 2})}) {
    doc["tau"]["histogram"] = bad;
    const auto path = testing::write_file(dir / "g.json", doc.dump());
    try {
      golden::read_golden(path);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("/tau/histogram")) << bad.dump();
    }
  }
  doc["tau"].erase("histogram");  // optional: older hand-written goldens lack it
  EXPECT_TRUE(
      golden::read_golden(testing::write_file(dir / "g.json", doc.dump())).histogram.empty());
}

}  // namespace
}  // namespace draftgate::checks
