// The gate on the bundled fixtures, one test per (fixture suite x check instance): each suite's
// "expect" is the verdict its check must give — the reference drafters pass everything, each buggy
// fixture fails its own check. The suites are fixtures/suites/*.json (what `ci/run-gate.sh` runs).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "checks/check.h"
#include "checks/model_engine.h"
#include "checks/suite.h"

namespace draftgate::checks {
namespace {
namespace fs = std::filesystem;

struct Case {
  std::string suite;     // path
  std::string instance;  // check instance name
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << fs::path(c.suite).filename().string() << " / " << c.instance;
}

std::vector<Case> cases() {
  std::vector<fs::path> suites;
  for (const auto& e : fs::directory_iterator(fs::path(DRAFTGATE_SOURCE_DIR) / "fixtures/suites"))
    if (e.path().extension() == ".json") suites.push_back(e.path());
  std::sort(suites.begin(), suites.end());
  std::vector<Case> out;
  for (const auto& path : suites)
    for (const auto& [name, status] : read_suite(path).expect) out.push_back({path.string(), name});
  return out;
}

class FixtureGate : public ::testing::TestWithParam<Case> {};

TEST_P(FixtureGate, GivesTheExpectedVerdict) {
  const Case& c = GetParam();
  const Suite s = read_suite(c.suite);
  const Status expected = s.expect.at(c.instance);
  std::vector<CheckInstance> one;  // ctest runs each case in its own process: run just this one
  for (const auto& in : s.checks)
    if (in.name == c.instance) one.push_back(in);
  Artifacts artifacts = open_artifacts(s.artifacts);
  artifacts.engine = &model_engine();
  const CheckResult r = run_instances(one, artifacts).at(0);
  EXPECT_EQ(status_name(r.status), std::string(status_name(expected)))
      << s.name << " / " << c.instance << ": " << r.message;
  EXPECT_FALSE(r.message.empty()) << "every verdict explains itself";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = fs::path(info.param.suite).stem().string() + "__" + info.param.instance;
  for (auto& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(BundledFixtures, FixtureGate, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace draftgate::checks
