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

// Weights the trainer put on block elements past the end of the anchor's sequence (speculators'
// anchors near a packed document's end): named as such, not as weights that merely differ.
TEST(LossType, WeightsPastTheSequenceEndAreNamed) {
  Artifacts a;
  std::int64_t last = 0, length = 0;
  a.step_record = record("past_end", train::LossType::kHardCrossEntropy, [&](auto& r) {
    length = static_cast<std::int64_t>(r.input_ids.size());
    last = length - 2;  // the last anchor's elements 2… lie past the end
    r.anchors.back() = last;
    r.weights = r.weights.clone();
    r.weights[-1].fill_(1.0);
    r.weights[-1][0] = 0.0;
    r.weights[-1][1] = r.loss_mask.back() ? 1.0 : 0.0;  // the recipe's at the last position
    if (r.labels.defined()) {
      r.labels = r.labels.clone();
      r.labels[-1].narrow(0, 1, r.block_size - 1).fill_(r.input_ids.back());
    }
  });
  const CheckResult r = run("loss_type", a);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message,
              HasSubstr("block element(s) past the end of their anchor's sequence (first: anchor " +
                        std::to_string(last) + ", block element 2 at position " +
                        std::to_string(length) + " of " + std::to_string(length) + ")"));
  EXPECT_THAT(r.message, HasSubstr("mask block elements past the document's end"));
}

}  // namespace
}  // namespace draftgate::checks
