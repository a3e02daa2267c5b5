#pragma once
// Reports of a check run: a text table for people, JSON and JUnit XML for CI.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check.h"

namespace draftgate::checks {

std::string text_table(const std::vector<CheckResult>& results);
nlohmann::json json_report(const std::vector<CheckResult>& results);
std::string junit_report(const std::vector<CheckResult>& results);

// 0 all pass (skips pass unless fail_on_skip), 1 any check failed, 2 any error.
int exit_code(const std::vector<CheckResult>& results, bool fail_on_skip);

}  // namespace draftgate::checks
