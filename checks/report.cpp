#include "checks/report.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace draftgate::checks {
namespace {

// Text for an XML 1.0 attribute: markup characters as entities, tab / newline / carriage return
// as character references, and what XML cannot hold at all (other control characters, invalid
// UTF-8, U+FFFE/U+FFFF) as the visible text \xNN per byte.
std::string xml_escape(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  auto byte_text = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xf];
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
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
        case '\t':
          out += "&#9;";
          break;
        case '\n':
          out += "&#10;";
          break;
        case '\r':
          out += "&#13;";
          break;
        default:
          if (c < 0x20 || c == 0x7f)
            byte_text(c);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: decode it and keep it only when it is a valid XML character.
    const std::size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    std::uint32_t cp = n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3f);
    }
    const std::uint32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    ok = ok && cp >= least && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe &&
         cp != 0xffff;
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      byte_text(c);
      ++i;
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
