// loss_type, specified: the recipe's hard cross-entropy passes, soft KL, neither and wrong decay
// weights fail.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "synthetic_step_record.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using testing::run;

fs::path record(const std::string& name, train::LossType loss,
                const std::function<void(train::StepRecord&)>& edit) {
  train::StepRecord r = testing::training_step(loss);
  edit(r);
  const fs::path p = testing::fresh_dir("loss_type_records") / (name + ".safetensors");
  train::write_step_record(p, r);
  return p;
}

TEST(LossType, CrossEntropyPassesAndKlFailsAndNeitherFails) {
  Artifacts a;
  a.step_record = record("ce", train::LossType::kHardCrossEntropy, [](auto&) {});
  const CheckResult ce = run("loss_type", a);
  EXPECT_EQ(ce.status, Status::kPass) << ce.message;
  EXPECT_EQ(ce.measured["logged_loss_matches"], "ce");

  a.step_record = record("kl", train::LossType::kSoftKl, [](auto&) {});
  const CheckResult kl = run("loss_type", a);
  EXPECT_EQ(kl.status, Status::kFail);
  EXPECT_THAT(kl.message, HasSubstr("expected the recipe's ce loss but the logged loss is the kl"));
  EXPECT_EQ(run("loss_type", a, {{"expected", "kl"}}).status, Status::kPass);

  a.step_record =
      record("neither", train::LossType::kHardCrossEntropy, [](auto& r) { r.logged_loss *= 1.5; });
  const CheckResult neither = run("loss_type", a);
  EXPECT_EQ(neither.status, Status::kFail);
  EXPECT_THAT(neither.message, HasSubstr("matches neither"));
}

TEST(LossType, WrongDecayWeightsFail) {
  Artifacts a;
  a.step_record = record("weights", train::LossType::kHardCrossEntropy,
                         [](auto& r) { r.weights = r.weights.clone().fill_(1.0); });
  const CheckResult r = run("loss_type", a);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("recorded weights differ from the recipe's"));
}

}  // namespace
}  // namespace draftgate::checks
