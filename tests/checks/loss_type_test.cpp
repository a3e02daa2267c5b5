// loss_type, specified: the recipe's hard cross-entropy passes, soft KL, neither and wrong decay
// weights fail.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "draftgate/train/recipe.h"
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

// A record whose metadata says KL over a logged CE, with no teacher to compute a KL from: the
// loss is mislabelled (the other direction already was).
TEST(LossType, KlMetadataOverALoggedCrossEntropyIsMislabelled) {
  Artifacts a;
  a.step_record = record("kl_label", train::LossType::kHardCrossEntropy, [](auto& r) {
    r.loss = train::LossType::kSoftKl;
    r.teacher_logits = at::Tensor();
    r.teacher_positions.clear();
    r.teacher_dtype.reset();
  });
  const CheckResult r = run("loss_type", a);
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_THAT(r.message, HasSubstr("metadata says the loss is kl but the logged value is the ce"));
}

// Another hypothesis is named as the cause only within what the precision explains: a logged loss
// 2e-4 off the uniform CE (inside rtol 1e-3, far outside a float32 scalar's rounding) is not "it".
TEST(LossType, NamesAnotherHypothesisOnlyWithinThePrecision) {
  Artifacts a;
  double uniform = 0;
  auto uniform_ce = [&](train::StepRecord& r) {
    train::LossRecipe recipe = r.recipe();
    recipe.weighting = train::Weighting::kFixed, recipe.gamma = 0;
    const train::BlockTargets t = train::recorded_block_targets(r);
    const at::Tensor mask = (t.weight > 0).to(at::kDouble);
    const at::Tensor ce =
        train::elementwise_cross_entropy(r.drafter_logits.to(at::kDouble), t.labels);
    uniform = train::recipe_loss(recipe, ce, mask, train::recipe_weights(recipe, mask, ce),
                                 r.row_of_anchor, r.rows);
  };
  a.step_record = record("uniform", train::LossType::kHardCrossEntropy, [&](auto& r) {
    uniform_ce(r);
    r.logged_loss = uniform;
  });
  const CheckResult exact = run("loss_type", a);
  EXPECT_EQ(exact.status, Status::kFail);
  EXPECT_THAT(exact.message, HasSubstr("; it is the ce, uniform weights"));
  a.step_record = record("near_uniform", train::LossType::kHardCrossEntropy, [&](auto& r) {
    uniform_ce(r);
    r.logged_loss = uniform * (1 + 2e-4);
  });
  const CheckResult near = run("loss_type", a);
  EXPECT_EQ(near.status, Status::kFail);
  EXPECT_THAT(near.message, ::testing::Not(HasSubstr("; it is")));
  EXPECT_THAT(near.message,
              HasSubstr("other hypotheses (weightings, normalisations, the other loss, labels "
                        "shifted by one) is it within the precision: the closest, "));
}

// A batch's non-finite logits are named in their row and document, not at an index of the
// sequences joined end to end (an outside tester's case: "[12, 3, 5]" for row 1).
TEST(LossType, NonFiniteLogitsOfABatchAreNamedInTheirRow) {
  const testing::BatchFile b = testing::write_batch("loss_type_nan", [](io::NamedTensors& t) {
    for (auto& [name, tensor] : t)
      if (name == "drafter_logits") tensor[1][2][3][5] = NAN;
  });
  Artifacts a;
  a.step_record = b.path;
  const CheckResult r = run("loss_type", a);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("row 1: drafter_logits holds NaN at [2, 3, 5]"));
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
