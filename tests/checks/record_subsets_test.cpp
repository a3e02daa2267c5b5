// Cross-cutting: the record checks on subsets of a step (teacher rows at some positions,
// max_positions, a subset of anchors).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "check_runs.h"
#include "checks/check.h"
#include "checks/metrics.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

using metrics::rms;
using ::testing::HasSubstr;
using testing::Models;
using testing::run_on;
using train::LossType;
using train::StepRecord;

// A record holding the teacher rows of `positions` only.
StepRecord with_teacher_at(StepRecord rec, const std::vector<std::int64_t>& positions) {
  rec.teacher_logits = rec.teacher_logits.index_select(0, at::tensor(positions, at::kLong));
  rec.teacher_positions = positions;
  return rec;
}

TEST(RecordSubsets, TeacherAtSomePositionsIsJudgedThereAndSaysHowMuch) {
  const StepRecord full = testing::training_step(LossType::kHardCrossEntropy);
  const std::vector<std::int64_t> positions = {1, 4, 9, 12, 15};
  const StepRecord rec = with_teacher_at(full, positions);
  const CheckResult clean = run_on("target_logits_noise_free", rec, "subset.safetensors");
  EXPECT_EQ(clean.status, Status::kPass) << clean.message;
  EXPECT_THAT(clean.message,
              HasSubstr("(judged 5 of 16 positions; fc_input judged 16 of 16 positions)"));
  EXPECT_EQ(clean.measured["positions_judged"], 5);
  EXPECT_EQ(clean.measured["positions_recorded"], 16);
  EXPECT_LT(clean.measured["noise_ratio"].get<double>(), 1e-5);

  // Noise of twice the float32 budget on the recorded rows fails, and names a recorded position.
  StepRecord noisy = rec;
  noisy.teacher_logits =
      rec.teacher_logits + 2e-3 * rms(rec.teacher_logits) * at::randn(rec.teacher_logits.sizes());
  const CheckResult caught = run_on("target_logits_noise_free", noisy, "subset_noisy.safetensors");
  EXPECT_EQ(caught.status, Status::kFail);
  EXPECT_THAT(caught.message, HasSubstr("remove noise from the teacher path"));
  EXPECT_THAT(caught.message,
              HasSubstr("(judged 5 of 16 positions; fc_input judged 16 of 16 positions)"));
  const auto worst = caught.measured["worst_position"]["position"].get<std::int64_t>();
  EXPECT_NE(std::find(positions.begin(), positions.end(), worst), positions.end());
}

TEST(RecordSubsets, MaxPositionsRecomputesOnlyTheFirstPositions) {
  const StepRecord full = testing::training_step(LossType::kHardCrossEntropy);
  // Noise on the rows at positions 9 and later only: judged when they are recomputed, not
  // otherwise.
  StepRecord late_noise = full;
  late_noise.teacher_logits = full.teacher_logits.clone();
  late_noise.teacher_logits.narrow(0, 9, 7).add_(0.05 * rms(full.teacher_logits) *
                                                 at::randn({7, full.teacher_logits.size(1)}));
  const nlohmann::json first8 = {{"max_positions", 8}};
  const CheckResult early =
      run_on("target_logits_noise_free", late_noise, "late.safetensors", first8);
  EXPECT_EQ(early.status, Status::kPass) << early.message;
  EXPECT_THAT(early.message, HasSubstr("(judged 8 of 16 positions)"));
  EXPECT_GT(early.measured["labels_judged"].get<double>(), 0);
  const CheckResult all = run_on("target_logits_noise_free", late_noise, "late.safetensors");
  EXPECT_EQ(all.status, Status::kFail);
  EXPECT_THAT(all.message, HasSubstr("(judged 16 of 16 positions)"));

  // fc_excludes_target_layer: the fed features of the first 8 positions, the bug still found.
  const CheckResult fc = run_on("fc_excludes_target_layer", full, "fc8.safetensors", first8);
  EXPECT_EQ(fc.status, Status::kPass) << fc.message;
  EXPECT_THAT(fc.message, HasSubstr("(judged 8 of 16 positions)"));
  const Models m;
  StepRecord shifted = full;
  const auto r = m.target->forward(full.input_ids, {1, 3});
  shifted.fc_input = at::cat({r.taps.at(1), r.taps.at(3)}, -1);
  const CheckResult bad_fc =
      run_on("fc_excludes_target_layer", shifted, "fc8_bad.safetensors", first8);
  EXPECT_EQ(bad_fc.status, Status::kFail);
  EXPECT_THAT(bad_fc.message, HasSubstr("declared as layer 0 but matches layer 1"));

  // train_infer_consistency: anchors inside the first 8 positions (2 and 5 of 2, 5, 9).
  const CheckResult tic = run_on("train_infer_consistency", full, "tic8.safetensors", first8);
  EXPECT_EQ(tic.status, Status::kPass) << tic.message;
  EXPECT_THAT(tic.message, HasSubstr("(judged 2 of 3 anchors)"));
  StepRecord leak = full;
  leak.drafter_logits =
      m.drafter->training_logits(full.fc_input, full.input_ids, full.anchors,
                                 model::DFlashDrafter::ContextVisibility::kThroughAnchor);
  EXPECT_EQ(run_on("train_infer_consistency", leak, "tic8_leak.safetensors", first8).status,
            Status::kFail);
  // A limit before every anchor judges nothing, so it does not pass.
  EXPECT_EQ(
      run_on("train_infer_consistency", full, "tic1.safetensors", {{"max_positions", 1}}).status,
      Status::kSkip);
}

TEST(RecordSubsets, MaxPositionsIsATypedParameterWithARange) {
  const StepRecord full = testing::training_step(LossType::kHardCrossEntropy);
  for (const char* check :
       {"target_logits_noise_free", "fc_excludes_target_layer", "train_infer_consistency"}) {
    const CheckResult zero = run_on(check, full, "range.safetensors", {{"max_positions", 0}});
    EXPECT_EQ(zero.status, Status::kError) << check;
    EXPECT_THAT(zero.message, HasSubstr("max_positions")) << check;
    EXPECT_EQ(run_on(check, full, "range.safetensors", {{"max_positions", "8"}}).status,
              Status::kError)
        << check;
  }
}

TEST(RecordSubsets, LossTypeWithATeacherSubsetAndASubsetOfAnchors) {
  const StepRecord kl = testing::training_step(LossType::kSoftKl);
  // Every row a weighted block element reads (a + k − 1 for anchors 2, 5, 9): the KL recomputes.
  std::vector<std::int64_t> read;
  for (std::int64_t p = 2; p < 16; ++p) read.push_back(p);
  const CheckResult covered = run_on("loss_type", with_teacher_at(kl, read),
                                     "kl_covered.safetensors", {{"expected", "kl"}});
  EXPECT_EQ(covered.status, Status::kPass) << covered.message;
  EXPECT_DOUBLE_EQ(covered.measured["recomputed_kl"].get<double>(), kl.logged_loss);
  // A row missing: the KL cannot be recomputed, so a logged KL is neither confirmed nor failed...
  const StepRecord sparse = with_teacher_at(kl, {1, 4, 9, 12, 15});
  const CheckResult unknown =
      run_on("loss_type", sparse, "kl_sparse.safetensors", {{"expected", "kl"}});
  EXPECT_EQ(unknown.status, Status::kSkip) << unknown.message;
  // ...but it is not the CE the recipe requires.
  const CheckResult not_ce = run_on("loss_type", sparse, "kl_sparse_ce.safetensors");
  EXPECT_EQ(not_ce.status, Status::kFail);
  EXPECT_THAT(not_ce.message, HasSubstr("not the decay-weighted CE"));
  // A CE record with a sparse teacher is judged on its CE.
  const StepRecord ce = testing::training_step(LossType::kHardCrossEntropy);
  const CheckResult ce_sparse =
      run_on("loss_type", with_teacher_at(ce, {1, 4}), "ce_sparse.safetensors");
  EXPECT_EQ(ce_sparse.status, Status::kPass) << ce_sparse.message;
  EXPECT_THAT(ce_sparse.message, HasSubstr("KL n/a (teacher_logits recorded at 2 of 16 positions"));

  // Two of the step's three anchors, the loss logged over them; then the step's full loss.
  StepRecord two = ce;
  const at::Tensor kept = at::tensor(std::vector<std::int64_t>{0, 2}, at::kLong);
  two.anchors = {2, 9};
  two.anchors_in_step = 3;
  two.labels = ce.labels.index_select(0, kept);
  two.weights = ce.weights.index_select(0, kept);
  two.drafter_logits = ce.drafter_logits.index_select(0, kept);
  two.logged_loss = train::weighted_cross_entropy(two.drafter_logits.to(at::kDouble),
                                                  train::recorded_block_targets(two))
                        .item<double>();
  const CheckResult subset = run_on("loss_type", two, "anchors2.safetensors");
  EXPECT_EQ(subset.status, Status::kPass) << subset.message;
  EXPECT_THAT(subset.message, HasSubstr("judged 2 of 2 anchors (recorded of the step's 3)"));
  EXPECT_EQ(subset.measured["anchors_in_step"], 3);
  const CheckResult tic = run_on("train_infer_consistency", two, "anchors2_tic.safetensors");
  EXPECT_EQ(tic.status, Status::kPass) << tic.message;
  EXPECT_THAT(tic.message, HasSubstr("judged 2 of 2 anchors (recorded of the step's 3)"));
  two.logged_loss = ce.logged_loss;  // the whole step's loss: not what the recorded anchors give
  EXPECT_EQ(run_on("loss_type", two, "anchors2_step_loss.safetensors").status, Status::kFail);
}

}  // namespace
}  // namespace draftgate::checks
