#include "checks/html_report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "checks/svg_chart.h"

namespace draftgate::checks {
namespace {

using nlohmann::json;

std::string esc(const std::string& s) { return xml_escape(s); }

// No script and nothing fetched: the policy makes the browser refuse (and log) any attempt.
const char* kHead = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:0 0 6px}
table{border-collapse:collapse;margin:6px 0;max-width:100%}
table.matrix th,table.matrix td{overflow-wrap:anywhere;font-size:12px}
.tables table,.message{overflow-wrap:anywhere}td,th{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}caption{text-align:left;font-weight:600;padding:4px 0}
.pass{background:#d2f4d3}.fail{background:#ffd7d5}.skip{background:#eaeef2}.error{background:#f1d4ff}
.unmet{outline:3px solid #cf222e;outline-offset:-3px}
section.check{border:1px solid #d0d7de;border-left-width:6px;border-radius:6px;padding:10px 12px;
margin:12px 0;background:#fff}section.check.pass{border-left-color:#1a7f37}
section.check.fail{border-left-color:#cf222e}section.check.skip{border-left-color:#8c959f}
section.check.error{border-left-color:#8250df}.badge{font-weight:700;padding:1px 6px;border-radius:4px}
.message{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px}
.time{color:#656d76;font-weight:400;font-size:12px}.tables{display:flex;flex-wrap:wrap;gap:16px}
pre.output{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:6px 8px;margin:0 0 10px}
.charts{display:flex;flex-wrap:wrap;gap:12px}td.v{font-family:ui-monospace,monospace;font-size:12px}
svg.chart{border:1px solid #d0d7de;border-radius:4px;background:#fff}
svg .title{font-weight:600;font-size:13px}svg .tick,svg .legend{font-size:10px;fill:#57606a}
svg .axis{font-size:11px;fill:#57606a}svg .grid{stroke:#eaeef2}
svg .s0{fill:#0969da;stroke:#0969da}svg .s1{fill:#8c959f;stroke:#8c959f}
svg path.line{fill:none;stroke-width:2}svg .threshold{stroke:#cf222e;stroke-dasharray:5 4}
svg .threshold-label{font-size:10px;fill:#cf222e}svg .nonfinite{font-size:10px;fill:#cf222e;font-weight:700}
svg .declared{fill:none;stroke:#57606a;stroke-width:2}svg .match{fill:#1a7f37}svg .mismatch{fill:#cf222e}
</style>
)";

std::string page(const std::string& title, const std::string& body) {
  return kHead + ("<title>" + esc(title) + "</title></head>\n<body>\n" + body + "</body></html>\n");
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return svg::number_text(v.get<double>(), 6);
  return v.dump();  // integers, booleans, null
}

// Any JSON value as HTML: scalars as text, lists of scalars inline (the first 32), lists of
// objects as a table (the first 64 rows), objects as key/value tables.
std::string value_html(const json& v) {
  if (v.is_primitive()) return esc(scalar_text(v));
  if (v.is_array() &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_primitive(); })) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size() && i < 32; ++i) s += (i ? ", " : "") + scalar_text(v[i]);
    if (v.size() > 32) s += ", … (" + std::to_string(v.size() - 32) + " more)";
    return esc(s + "]");
  }
  std::ostringstream o;
  if (v.is_array() &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_object(); })) {
    std::vector<std::string> columns;
    for (const auto& row : v)
      for (const auto& [k, _] : row.items())
        if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
    o << "<table><tr>";
    for (const auto& c : columns) o << "<th>" << esc(c) << "</th>";
    o << "</tr>";
    for (std::size_t i = 0; i < v.size() && i < 64; ++i) {
      o << "<tr>";
      for (const auto& c : columns)
        o << "<td class=\"v\">" << (v[i].contains(c) ? value_html(v[i][c]) : "") << "</td>";
      o << "</tr>";
    }
    if (v.size() > 64)
      o << "<tr><td colspan=\"" << columns.size() << "\">… " << v.size() - 64
        << " more rows (the JSON report has them all)</td></tr>";
    o << "</table>";
    return o.str();
  }
  o << "<table>";
  for (const auto& [k, e] : v.items())
    o << "<tr><th>" << esc(k) << "</th><td class=\"v\">" << value_html(e) << "</td></tr>";
  return o.str() + "</table>";
}

std::string kv_table(const std::string& caption, const json& object) {
  if (!object.is_object() || object.empty()) return "";
  std::ostringstream o;
  o << "<table class=\"kv\"><caption>" << esc(caption) << "</caption>";
  for (const auto& [k, v] : object.items())
    o << "<tr><th>" << esc(k) << "</th><td class=\"v\">" << value_html(v) << "</td></tr>";
  return o.str() + "</table>\n";
}

std::optional<std::vector<double>> numbers(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_array()) return std::nullopt;
  std::vector<double> out;
  for (const auto& e : object[key]) {
    if (!e.is_number()) return std::nullopt;
    out.push_back(e.get<double>());
  }
  return out;
}

std::string percent(double v) { return svg::number_text(100 * v, 3) + "%"; }

std::vector<std::string> one_based(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= n; ++i) out.push_back(std::to_string(i));
  return out;
}

// A τ histogram ([k] = verify steps that committed k tokens, [0] unused) as shares of the steps,
// so a drafter and a golden measured on different step counts compare.
std::vector<double> histogram_shares(const std::vector<double>& counts) {
  double total = 0;
  for (std::size_t k = 1; k < counts.size(); ++k) total += counts[k];
  std::vector<double> out;
  for (std::size_t k = 1; k < counts.size(); ++k) out.push_back(total > 0 ? counts[k] / total : 0);
  return out;
}

// τ histogram and per-depth acceptance of `m` (measured or eval JSON), each beside its "golden_"
// twin where present.
std::string tau_charts(const json& m, const std::string& id) {
  std::string out;
  // A chart of `values` (shown as `shown` makes them) beside the golden's under `golden_key`.
  auto beside_golden = [&](const std::string& suffix, const std::vector<double>& values,
                           const char* golden_key,
                           std::vector<double> (*shown)(const std::vector<double>&)) {
    svg::Chart c;
    c.id = id + suffix;
    c.series.push_back({"drafter", shown(values)});
    if (const auto g = numbers(m, golden_key)) c.series.push_back({"golden", shown(*g)});
    std::size_t n = 0;
    for (const auto& s : c.series) n = std::max(n, s.values.size());
    c.categories = one_based(n);
    c.value_text = percent;
    return c;
  };
  if (const auto h = numbers(m, "histogram")) {
    svg::Chart c = beside_golden("-tau-histogram", *h, "golden_histogram", histogram_shares);
    c.title = "τ histogram (share of verify steps)";
    c.x_label = "τ";
    c.y_label = "share of steps";
    out += svg::bar_chart(c);
  }
  if (const auto a = numbers(m, "per_position_acceptance")) {
    svg::Chart c = beside_golden("-acceptance", *a, "golden_per_position_acceptance",
                                 [](const std::vector<double>& v) { return v; });
    c.title = "acceptance per draft depth";
    c.x_label = "depth";
    c.y_label = "accepted share";
    out += svg::bar_chart(c);
  }
  return out;
}

// log10 NMSE by layer from measured "layers" [{layer, nmse, …}], against thresholds "max_nmse".
// An exact match (NMSE 0: two paths that compute the same) sits one decade below the lowest
// other value and says so in its tooltip.
std::string parity_chart(const CheckResult& r, const std::string& id) {
  const json& layers = r.measured.contains("layers") ? r.measured["layers"] : json();
  if (!layers.is_array() || layers.empty()) return "";
  svg::Chart c;
  c.id = id + "-parity";
  c.title = "hidden-state parity by layer (log10 NMSE)";
  c.x_label = "layer";
  c.y_label = "log10 NMSE";
  c.series = {{"log10 NMSE", {}}};
  std::vector<double> nmse;
  for (const auto& l : layers) {
    if (!l.is_object() || !l.contains("nmse") || !l["nmse"].is_number()) return "";
    c.categories.push_back(l.contains("layer") ? scalar_text(l["layer"])
                                               : std::to_string(c.categories.size()));
    nmse.push_back(l["nmse"].get<double>());
  }
  double floor = 0;
  if (r.thresholds.contains("max_nmse") && r.thresholds["max_nmse"].is_number()) {
    const double limit = r.thresholds["max_nmse"].get<double>();
    c.threshold = std::log10(limit);
    c.threshold_label = "budget NMSE " + svg::number_text(limit, 3);
    if (std::isfinite(*c.threshold)) floor = *c.threshold;
  }
  for (double v : nmse)
    if (v > 0 && std::isfinite(v)) floor = std::min(floor, std::log10(v));
  for (double v : nmse) {
    c.series[0].values.push_back(v == 0 ? floor - 1 : std::log10(v));
    c.notes.push_back(v == 0 ? "NMSE 0 (exact match)" : "");
  }
  return svg::line_chart(c);
}

// Declared vs detected layer of each fc-input slice, from measured "fed_slices".
std::string source_map_chart(const CheckResult& r, const std::string& id) {
  const json& fed = r.measured.contains("fed_slices") ? r.measured["fed_slices"] : json();
  if (!fed.is_array() || fed.empty()) return "";
  std::vector<svg::Slice> slices;
  for (const auto& s : fed) {
    if (!s.is_object() || !s.contains("declared_layer") || !s.contains("came_from") ||
        !s["declared_layer"].is_number_integer() || !s["came_from"].is_number_integer())
      return "";
    slices.push_back({s["declared_layer"].get<std::int64_t>(), s["came_from"].get<std::int64_t>(),
                      s.value("after_final_norm", false)});
  }
  const std::int64_t layers =
      r.measured.contains("target_layers") && r.measured["target_layers"].is_number_integer()
          ? r.measured["target_layers"].get<std::int64_t>()
          : 0;
  return svg::source_map(id + "-source-map", slices, layers);
}

std::string status_upper(Status s) {
  std::string out = status_name(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// An HTML id from a position (names may hold anything).
std::string anchor(std::size_t suite, std::size_t check) {
  return "s" + std::to_string(suite) + "c" + std::to_string(check);
}

// A verdict row is named after what it judged: the drafter (else the target) of a run from flags.
std::string row_name(const SuiteRun& run) {
  for (const char* role : {"drafter", "target"})
    if (run.name == "draftgate" && run.artifacts.contains(role))
      return run.artifacts[role].value("path", run.name);
  return run.name;
}

// Failures first: errors, failures, skips, then passes (each group in the run's order).
int severity(Status s) {
  switch (s) {
    case Status::kError:
      return 0;
    case Status::kFail:
      return 1;
    case Status::kSkip:
      return 2;
    case Status::kPass:
      return 3;
  }
  return 0;
}

std::vector<std::size_t> failures_first(const std::vector<CheckResult>& results) {
  std::vector<std::size_t> order(results.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return severity(results[a].status) < severity(results[b].status);
  });
  return order;
}

// The artifacts a run judged, with their identities.
std::string artifacts_table(const SuiteRun& run) {
  if (run.artifacts.empty()) return "";
  std::ostringstream o;
  o << "<table class=\"artifacts\"><tr><th>artifact</th><th>path</th><th>identity</th></tr>\n";
  for (const auto& [role, a] : run.artifacts.items())
    o << "<tr><th>" << esc(role) << "</th><td class=\"v\">" << esc(a.value("path", ""))
      << "</td><td class=\"v\">" << (a.contains("identity") ? value_html(a["identity"]) : "")
      << "</td></tr>\n";
  return o.str() + "</table>\n";
}

std::string verdict_table(const std::vector<SuiteRun>& runs) {
  std::vector<std::string> columns;
  for (const auto& run : runs)
    for (std::size_t i : failures_first(run.results))
      if (std::find(columns.begin(), columns.end(), run.results[i].check) == columns.end())
        columns.push_back(run.results[i].check);
  std::ostringstream o;
  o << "<table class=\"matrix\"><tr><th>suite</th>";
  for (const auto& c : columns) o << "<th>" << esc(c) << "</th>";
  o << "</tr>\n";
  for (std::size_t si = 0; si < runs.size(); ++si) {
    const SuiteRun& run = runs[si];
    o << "<tr><th>" << esc(row_name(run)) << "</th>";
    for (const auto& c : columns) {
      const auto it = std::find_if(run.results.begin(), run.results.end(),
                                   [&](const CheckResult& r) { return r.check == c; });
      if (it == run.results.end()) {
        o << "<td>–</td>";
        continue;
      }
      const auto expected = run.expect.find(c);
      const bool unmet = expected != run.expect.end() && expected->second != it->status;
      o << "<td class=\"verdict " << status_name(it->status) << (unmet ? " unmet" : "")
        << "\"><a href=\"#" << anchor(si, static_cast<std::size_t>(it - run.results.begin()))
        << "\">" << status_upper(it->status) << "</a>"
        << (unmet ? std::string(" (expected ") + status_name(expected->second) + ")" : "")
        << "</td>";
    }
    o << "</tr>\n";
  }
  return o.str() + "</table>\n";
}

std::string check_section(const CheckResult& r, const std::string& id) {
  const char* status = status_name(r.status);
  std::ostringstream o;
  o << "<section class=\"check " << status << "\" id=\"" << id << "\"><h3><span class=\"badge "
    << status << "\">" << status_upper(r.status) << "</span> " << esc(r.check)
    << " <span class=\"time\">" << svg::number_text(r.seconds, 3) << " s</span></h3>\n"
    << "<p class=\"message\">" << esc(r.message) << "</p>\n";
  const std::string charts =
      tau_charts(r.measured, id) + parity_chart(r, id) + source_map_chart(r, id);
  if (!charts.empty()) o << "<div class=\"charts\">" << charts << "</div>\n";
  o << "<div class=\"tables\">" << kv_table("measured", r.measured)
    << kv_table("thresholds", r.thresholds) << kv_table("evidence", r.evidence) << "</div>\n";
  return o.str() + "</section>\n";
}

// Each prompt's generated text (eval's "output_text"), as written, or why there is none (once for
// the run when the target's tokenizer is missing); the first 64 prompts, as the table.
std::string generated_texts(const json& per_prompt, const json& summary) {
  if (summary.contains("output_text") && summary["output_text"].is_object() &&
      summary["output_text"].contains("unavailable"))
    return "<h2>Generated text</h2>\n<p class=\"message\">no text: " +
           esc(scalar_text(summary["output_text"]["unavailable"])) + "</p>\n";
  std::ostringstream o;
  std::size_t shown = 0;
  for (const auto& p : per_prompt) {
    if (!p.is_object() || !p.contains("output_text")) continue;
    if (shown++ == 64) {
      o << "<p>… " << per_prompt.size() - 64
        << " more prompts (the JSON report has them all)</p>\n";
      break;
    }
    const std::string id = p.contains("id") ? scalar_text(p["id"]) : "";
    o << "<h3>" << esc(id) << "</h3>";
    if (p["output_text"].is_string())
      o << "<pre class=\"output\">" << esc(p["output_text"].get<std::string>()) << "</pre>\n";
    else
      o << "<p class=\"message\">no text: "
        << esc(p.contains("output_text_unavailable") ? scalar_text(p["output_text_unavailable"])
                                                     : "not given")
        << "</p>\n";
  }
  return shown == 0 ? "" : "<h2>Generated text</h2>\n" + o.str();
}

}  // namespace

std::string html_check_report(const std::vector<SuiteRun>& runs) {
  const std::vector<CheckResult> all = all_results(runs);
  Status worst = Status::kPass;
  for (const auto& r : all)
    if (r.status == Status::kError || (r.status == Status::kFail && worst != Status::kError))
      worst = r.status;
  std::ostringstream body;
  body << "<h1>draftgate check</h1>\n<p class=\"summary " << status_name(worst) << "\">"
       << esc(summary_line(all)) << "</p>\n";
  if (runs.size() == 1 && !runs[0].artifacts.empty())
    body << "<h2>Artifacts</h2>\n" << artifacts_table(runs[0]);
  body << "<h2>Verdicts</h2>\n" << verdict_table(runs);
  for (std::size_t si = 0; si < runs.size(); ++si) {
    body << "<h2>" << esc(runs.size() > 1 ? "Suite " + runs[si].name : "Checks") << "</h2>\n";
    if (runs.size() > 1) body << artifacts_table(runs[si]);
    for (std::size_t ci : failures_first(runs[si].results))
      body << check_section(runs[si].results[ci], anchor(si, ci));
  }
  return page("draftgate check: " + summary_line(all), body.str());
}

std::string html_eval_report(const nlohmann::json& evaluation) {
  json summary = evaluation, per_prompt = json::array();
  if (summary.is_object() && summary.contains("per_prompt")) {
    per_prompt = summary["per_prompt"];
    summary.erase("per_prompt");
  }
  // The histogram as eval writes it ({"1": steps, …}) in the layout the charts read.
  json m = summary;
  if (m.is_object() && m.contains("histogram") && m["histogram"].is_object()) {
    json counts = json::array({0});
    for (std::size_t k = 1; m["histogram"].contains(std::to_string(k)); ++k)
      counts.push_back(m["histogram"][std::to_string(k)]);
    m["histogram"] = counts;
  }
  std::ostringstream body;
  body << "<h1>draftgate eval</h1>\n";
  if (summary.contains("tau_macro") && summary.contains("tau_pooled"))
    body << "<p class=\"summary\">τ macro " << value_html(summary["tau_macro"]) << ", pooled "
         << value_html(summary["tau_pooled"]) << " (tokens committed per verify step)</p>\n";
  body << "<div class=\"charts\">" << tau_charts(m, "eval") << "</div>\n<div class=\"tables\">"
       << kv_table("results", summary) << "</div>\n";
  if (per_prompt.is_array() && !per_prompt.empty()) {
    const std::string texts = generated_texts(per_prompt, summary);
    // Token lists and texts are long: the table keeps the numbers (the JSON has the lists).
    for (auto& p : per_prompt)
      if (p.is_object())
        for (const auto& key : {"output_ids", "drafts", "output_text", "output_text_unavailable"})
          p.erase(key);
    body << "<h2>Per prompt</h2>\n" << value_html(per_prompt) << texts;
  }
  return page("draftgate eval", body.str());
}

}  // namespace draftgate::checks
