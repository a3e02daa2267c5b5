// min_tau at the check level (its CLI behaviour is specified in tests/integration:
// golden_suite_cli_test.cpp, tau_cli_test.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checks/check.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

TEST(MinTau, SkipsWithoutAGolden) {
  Artifacts a;
  a.target = testing::training_step_models() / "target";
  a.drafter = testing::training_step_models() / "drafter";
  EXPECT_EQ(run_check(*find_check("min_tau"), a, nullptr).status, Status::kSkip);
}

}  // namespace
}  // namespace draftgate::checks
