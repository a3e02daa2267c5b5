#include "report.h"

#include <algorithm>
#include <sstream>

namespace draftgate::checks {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string text_table(const std::vector<CheckResult>& results) {
  std::size_t width = 5;
  for (const auto& r : results) width = std::max(width, r.check.size());
  std::ostringstream out;
  for (const auto& r : results) {
    std::string status = status_name(r.status);
    for (auto& c : status) c = static_cast<char>(std::toupper(c));
    out << r.check << std::string(width + 2 - r.check.size(), ' ') << status
        << std::string(7 - status.size(), ' ') << r.message << "\n";
  }
  return out.str();
}

nlohmann::json json_report(const std::vector<CheckResult>& results) {
  nlohmann::json out = {{"results", nlohmann::json::array()}};
  std::map<std::string, int> counts = {{"pass", 0}, {"fail", 0}, {"skip", 0}, {"error", 0}};
  for (const auto& r : results) {
    counts[status_name(r.status)] += 1;
    out["results"].push_back({{"check", r.check},
                              {"status", status_name(r.status)},
                              {"message", r.message},
                              {"measured", r.measured},
                              {"thresholds", r.thresholds},
                              {"evidence", r.evidence}});
  }
  out["summary"] = counts;
  return out;
}

namespace {

void junit_testsuite(std::ostringstream& out, const SuiteRun& run) {
  int failures = 0, errors = 0, skipped = 0;
  for (const auto& r : run.results) {
    failures += r.status == Status::kFail;
    errors += r.status == Status::kError;
    skipped += r.status == Status::kSkip;
  }
  out << "<testsuite name=\"" << xml_escape(run.name) << "\" tests=\"" << run.results.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped
      << "\">\n";
  for (const auto& r : run.results) {
    out << "  <testcase classname=\"" << xml_escape(run.name) << "\" name=\"" << xml_escape(r.check)
        << "\">";
    const std::string msg = xml_escape(r.message);
    if (r.status == Status::kFail) out << "<failure message=\"" << msg << "\"/>";
    if (r.status == Status::kError) out << "<error message=\"" << msg << "\"/>";
    if (r.status == Status::kSkip) out << "<skipped message=\"" << msg << "\"/>";
    out << "</testcase>\n";
  }
  out << "</testsuite>\n";
}

}  // namespace

std::string junit_report(const std::vector<SuiteRun>& runs) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (runs.size() != 1) out << "<testsuites>\n";
  for (const auto& run : runs) junit_testsuite(out, run);
  if (runs.size() != 1) out << "</testsuites>\n";
  return out.str();
}

std::vector<std::string> unmet_expectations(const SuiteRun& run) {
  std::vector<std::string> unmet;
  for (const auto& r : run.results) {
    auto it = run.expect.find(r.check);
    if (it != run.expect.end() && it->second != r.status) unmet.push_back(r.check);
  }
  return unmet;
}

nlohmann::json json_report(const std::vector<SuiteRun>& runs) {
  nlohmann::json out = {{"suites", nlohmann::json::array()}};
  std::map<std::string, int> totals = {{"pass", 0}, {"fail", 0}, {"skip", 0}, {"error", 0}};
  for (const auto& run : runs) {
    nlohmann::json s = json_report(run.results);
    s["name"] = run.name;
    if (!run.expect.empty()) s["unmet_expectations"] = unmet_expectations(run);
    for (auto& [k, v] : totals) v += s["summary"][k].get<int>();
    out["suites"].push_back(std::move(s));
  }
  out["summary"] = totals;
  return out;
}

std::string verdict_matrix(const std::vector<SuiteRun>& runs) {
  std::vector<std::string> columns;
  std::size_t row_width = 5;
  for (const auto& run : runs) {
    row_width = std::max(row_width, run.name.size());
    for (const auto& r : run.results)
      if (std::find(columns.begin(), columns.end(), r.check) == columns.end())
        columns.push_back(r.check);
  }
  std::ostringstream out;
  out << std::string(row_width + 2, ' ');
  for (const auto& c : columns) out << c << "  ";
  out << "\n";
  for (const auto& run : runs) {
    out << run.name << std::string(row_width + 2 - run.name.size(), ' ');
    for (const auto& c : columns) {
      std::string cell = "-";
      for (const auto& r : run.results) {
        if (r.check != c) continue;
        cell = status_name(r.status);
        if (r.status != Status::kPass && r.status != Status::kSkip)
          for (auto& ch : cell) ch = static_cast<char>(std::toupper(ch));
        auto it = run.expect.find(c);
        if (it != run.expect.end() && it->second != r.status) cell += "!";
      }
      out << cell << std::string(c.size() + 2 > cell.size() ? c.size() + 2 - cell.size() : 1, ' ');
    }
    out << "\n";
  }
  return out.str();
}

int exit_code(const std::vector<CheckResult>& results, bool fail_on_skip) {
  int code = 0;
  for (const auto& r : results) {
    if (r.status == Status::kError) return 2;
    if (r.status == Status::kFail || (fail_on_skip && r.status == Status::kSkip)) code = 1;
  }
  return code;
}

}  // namespace draftgate::checks
