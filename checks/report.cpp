#include "checks/report.h"

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>

namespace draftgate::checks {

std::string xml_escape(const std::string& s, XmlPlace place) {
  static const char* hex = "0123456789abcdef";
  const bool attribute = place == XmlPlace::kAttribute;
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
          out += attribute ? "&quot;" : "\"";
          break;
        case '\t':
          out += attribute ? "&#9;" : "\t";
          break;
        case '\n':
          out += attribute ? "&#10;" : "\n";
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
  out["summary_text"] = summary_line(results);
  return out;
}

namespace {

struct Totals {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
};

Totals totals_of(const std::vector<CheckResult>& results) {
  Totals t;
  for (const auto& r : results) {
    t.tests += 1;
    t.failures += r.status == Status::kFail;
    t.errors += r.status == Status::kError;
    t.skipped += r.status == Status::kSkip;
    t.seconds += r.seconds;
  }
  return t;
}

// JUnit's time: seconds with a fixed number of decimals (the pattern Jenkins' schema accepts).
std::string junit_time(double seconds) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << std::max(seconds, 0.0);
  return s.str();
}

// The body of a <failure> or <error>: the message, then what was measured, the thresholds it was
// judged against and the evidence, so a CI UI shows the numbers without the JSON report.
std::string failure_body(const CheckResult& r) {
  std::string body = r.message + "\n";
  for (const auto& [label, value] : {std::pair{"measured", &r.measured},
                                     {"thresholds", &r.thresholds},
                                     {"evidence", &r.evidence}})
    if (!value->empty())
      body += std::string(label) + ": " +
              value->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return body;
}

void junit_testsuite(std::ostringstream& out, const SuiteRun& run) {
  const Totals t = totals_of(run.results);
  out << "<testsuite name=\"" << xml_escape(run.name) << "\" tests=\"" << t.tests
      << "\" failures=\"" << t.failures << "\" errors=\"" << t.errors << "\" skipped=\""
      << t.skipped << "\" time=\"" << junit_time(t.seconds) << "\">\n";
  for (const auto& r : run.results) {
    out << "  <testcase classname=\"" << xml_escape(run.name) << "\" name=\"" << xml_escape(r.check)
        << "\" time=\"" << junit_time(r.seconds) << "\">";
    const std::string msg = xml_escape(r.message);
    // A skip that --fail-on-skip turned into a failure says so in its type.
    const std::string type = r.status == Status::kFail && r.evidence.contains("skipped")
                                 ? "draftgate.skipped"
                                 : std::string("draftgate.") + status_name(r.status);
    if (r.status == Status::kFail || r.status == Status::kError) {
      const char* element = r.status == Status::kFail ? "failure" : "error";
      out << "\n    <" << element << " message=\"" << msg << "\" type=\"" << type << "\">"
          << xml_escape(failure_body(r), XmlPlace::kText) << "</" << element << ">";
    }
    if (r.status == Status::kSkip) out << "\n    <skipped message=\"" << msg << "\"/>";
    out << "\n    <system-out>" << xml_escape(r.message, XmlPlace::kText) << "</system-out>\n  ";
    out << "</testcase>\n";
  }
  out << "</testsuite>\n";
}

}  // namespace

std::string junit_report(const std::vector<SuiteRun>& runs) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (runs.size() != 1) {
    const Totals t = totals_of(all_results(runs));
    out << "<testsuites name=\"draftgate\" tests=\"" << t.tests << "\" failures=\"" << t.failures
        << "\" errors=\"" << t.errors << "\" time=\"" << junit_time(t.seconds) << "\">\n";
  }
  for (const auto& run : runs) junit_testsuite(out, run);
  if (runs.size() != 1) out << "</testsuites>\n";
  return out.str();
}

void fail_skips(std::vector<CheckResult>& results) {
  for (auto& r : results) {
    if (r.status != Status::kSkip) continue;
    r.status = Status::kFail;
    r.evidence["skipped"] = r.message;
    r.message = "not run, and --fail-on-skip fails a skip: " + r.message;
  }
}

std::string summary_line(const std::vector<CheckResult>& results) {
  std::vector<std::string> failed, errors, skipped;
  int passed = 0;
  for (const auto& r : results) {
    switch (r.status) {
      case Status::kPass:
        ++passed;
        break;
      case Status::kFail:
        failed.push_back(r.evidence.contains("skipped") && r.evidence["skipped"].is_string()
                             ? r.check + " (skipped under --fail-on-skip: " +
                                   r.evidence["skipped"].get<std::string>() + ")"
                             : r.check);
        break;
      case Status::kError:
        errors.push_back(r.check);
        break;
      case Status::kSkip:
        skipped.push_back(r.check + " (" + r.message + ")");
        break;
    }
  }
  auto group = [](std::size_t n, const char* word, const std::vector<std::string>& names) {
    std::string s = std::to_string(n) + " " + word;
    for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : ": ") + names[i];
    return s;
  };
  std::vector<std::string> parts;
  if (!failed.empty()) parts.push_back(group(failed.size(), "failed", failed));
  if (!errors.empty())
    parts.push_back(group(errors.size(), errors.size() == 1 ? "error" : "errors", errors));
  parts.push_back(group(passed, "passed", {}));
  if (!skipped.empty()) parts.push_back(group(skipped.size(), "skipped", skipped));
  std::string line;
  for (const auto& p : parts) line += (line.empty() ? "" : "; ") + p;
  return line;
}

std::vector<CheckResult> all_results(const std::vector<SuiteRun>& runs) {
  std::vector<CheckResult> all;
  for (const auto& run : runs)
    for (CheckResult r : run.results) {
      if (runs.size() > 1) r.check = run.name + "/" + r.check;
      all.push_back(std::move(r));
    }
  return all;
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
  out["summary_text"] = summary_line(all_results(runs));
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
