#include "report.h"

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

std::string junit_report(const std::vector<CheckResult>& results) {
  int failures = 0, errors = 0, skipped = 0;
  for (const auto& r : results) {
    failures += r.status == Status::kFail;
    errors += r.status == Status::kError;
    skipped += r.status == Status::kSkip;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuite name=\"draftgate\" tests=\"" << results.size() << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  for (const auto& r : results) {
    out << "  <testcase classname=\"draftgate\" name=\"" << xml_escape(r.check) << "\">";
    const std::string msg = xml_escape(r.message);
    if (r.status == Status::kFail) out << "<failure message=\"" << msg << "\"/>";
    if (r.status == Status::kError) out << "<error message=\"" << msg << "\"/>";
    if (r.status == Status::kSkip) out << "<skipped message=\"" << msg << "\"/>";
    out << "</testcase>\n";
  }
  out << "</testsuite>\n";
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
