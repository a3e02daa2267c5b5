#pragma once
// Reports of a check run: a text table for people, JSON and JUnit XML for CI (HTML:
// html_report.h).

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/check.h"

namespace draftgate::checks {

// The results of one suite (or of one run from flags: name "draftgate").
struct SuiteRun {
  std::string name;
  std::vector<CheckResult> results;
  std::map<std::string, Status> expect;  // optional expected verdicts by instance name
  // What the run judged, for the reports' header: {"target"|"drafter"|"step_record"|"golden"|
  // "prompt_set"|...: {"path": ..., "identity": ...}} (empty: not known).
  nlohmann::json artifacts = nlohmann::json::object();
};

std::string text_table(const std::vector<CheckResult>& results);
// One line for people and CI logs, saying why a run failed and what was skipped:
// "1 failed: a; 5 passed; 2 skipped: b (needs a step record (--step-record)), c (…)".
std::string summary_line(const std::vector<CheckResult>& results);
// --fail-on-skip: every skip becomes a failure that names what was missing (evidence "skipped"),
// so the table, the summary, JSON, JUnit and the exit code all say the same.
void fail_skips(std::vector<CheckResult>& results);
// Every suite's results in one list, each named "suite/instance" when there are several suites.
std::vector<CheckResult> all_results(const std::vector<SuiteRun>& runs);
// Rows: suites; columns: check instances; a '!' marks a verdict that differs from the suite's
// expectation.
std::string verdict_matrix(const std::vector<SuiteRun>& runs);
// The names of instances whose verdict differs from the expectation.
std::vector<std::string> unmet_expectations(const SuiteRun& run);

nlohmann::json json_report(const std::vector<CheckResult>& results);
// {"suites": [{"name", "results", "summary", "unmet_expectations"}...], "summary"}.
nlohmann::json json_report(const std::vector<SuiteRun>& runs);
// One <testsuite> per suite (inside <testsuites>, with the totals, when there are several); every
// testcase and suite has its time, a failure or error its type and a body with the measured
// values, thresholds and evidence, every testcase a <system-out> with the full message.
std::string junit_report(const std::vector<SuiteRun>& runs);

enum class XmlPlace { kAttribute, kText };
// Text for XML 1.0 (and HTML): markup characters as entities; in an attribute also tab / newline /
// carriage return as character references (element text keeps tab and newline as they are); what
// XML cannot hold at all (other control characters, invalid UTF-8, U+FFFE/U+FFFF) as the visible
// text \xNN per byte.
std::string xml_escape(const std::string& s, XmlPlace place = XmlPlace::kAttribute);

// 0 all pass (skips pass unless fail_on_skip), 1 any check failed, 2 any error.
int exit_code(const std::vector<CheckResult>& results, bool fail_on_skip);

}  // namespace draftgate::checks
