// target_logits_noise_free, specified on a real (random-weight) training step: clean labels pass,
// noise above the budget fails and below passes, a teacher without the final norm and labels that
// are not the greedy tokens are named, captured hidden states are judged in teacher records too.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "checks/metrics.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/target.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

using metrics::rms;
using ::testing::HasSubstr;
using testing::Models;
using ::testing::Not;
using testing::run_on;
using train::LossType;
using train::StepRecord;

TEST(TargetLogitsNoiseFree, CleanPassesNoiseAboveTheBudgetFailsBelowPasses) {
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  const CheckResult clean = run_on("target_logits_noise_free", rec, "clean.safetensors");
  EXPECT_EQ(clean.status, Status::kPass) << clean.message;
  EXPECT_LT(clean.measured["noise_ratio"].get<double>(), 1e-5);
  EXPECT_EQ(clean.measured["label_agreement"], 1.0);

  // The f32 budget is a residual of 1e-3 of the teacher's RMS: that is the smallest noise std it
  // detects. Half of it passes, twice it fails.
  const double budget_std = 1e-3 * rms(rec.teacher_logits);
  StepRecord quiet = rec, noisy = rec;
  quiet.teacher_logits =
      rec.teacher_logits + 0.5 * budget_std * at::randn(rec.teacher_logits.sizes());
  noisy.teacher_logits =
      rec.teacher_logits + 2.0 * budget_std * at::randn(rec.teacher_logits.sizes());
  EXPECT_EQ(run_on("target_logits_noise_free", quiet, "quiet.safetensors").status, Status::kPass);
  const CheckResult caught = run_on("target_logits_noise_free", noisy, "noisy.safetensors");
  EXPECT_EQ(caught.status, Status::kFail);
  EXPECT_THAT(caught.message, HasSubstr("remove noise from the teacher path"));
}

TEST(TargetLogitsNoiseFree, NamesATeacherWithoutTheFinalNorm) {
  const Models m;
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  const auto fwd = m.target->forward(rec.input_ids, {3});
  rec.teacher_logits = model::dense(fwd.taps.at(3), m.target->lm_head_weight()).to(at::kFloat);
  const CheckResult r = run_on("target_logits_noise_free", rec, "no_norm.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("WITHOUT the final norm"));
}

TEST(TargetLogitsNoiseFree, LabelsThatAreNotTheGreedyTokensFail) {
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  rec.teacher_logits = at::Tensor();  // a labels-only record
  rec.labels = (rec.labels + 1) % 250 * (rec.weights > 0);
  const CheckResult r = run_on("target_logits_noise_free", rec, "labels.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.measured["label_agreement"], 0.0);
}

// A teacher-label trainer (speculators) takes fc_input from the target too: noise there fails
// target_logits_noise_free whatever the teacher. Measured on main before: 10% of the RMS passed
// every check of a teacher-label record (only fc_excludes_target_layer's max_nmse judged it).
TEST(TargetLogitsNoiseFree, TeacherRecordsHaveTheirCapturedHiddenStatesJudgedToo) {
  StepRecord clean = testing::training_step(LossType::kHardCrossEntropy);
  clean.hidden_dtype = train::ComputePrecision::kF32;  // undeclared is judged as bf16
  const CheckResult pass = run_on("target_logits_noise_free", clean, "teacher_fc.safetensors");
  ASSERT_EQ(pass.status, Status::kPass) << pass.message;
  EXPECT_EQ(pass.measured["fc_input_slices"].size(), clean.target_layer_ids.size());
  EXPECT_THAT(pass.message, HasSubstr("fc_input the target's taps"));
  StepRecord noisy = clean;
  noisy.fc_input = clean.fc_input + 5e-3 * rms(clean.fc_input) * at::randn(clean.fc_input.sizes());
  const CheckResult r = run_on("target_logits_noise_free", noisy, "teacher_fc_noisy.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("fc_input slice 0 (tap "));
  EXPECT_THAT(r.message, HasSubstr("before any augmentation noise"));
  EXPECT_THAT(r.message,
              Not(HasSubstr("remove noise from the teacher path")));  // the teacher is clean
  StepRecord quiet = clean;
  quiet.fc_input = clean.fc_input + 1e-5 * rms(clean.fc_input) * at::randn(clean.fc_input.sizes());
  EXPECT_EQ(run_on("target_logits_noise_free", quiet, "teacher_fc_quiet.safetensors").status,
            Status::kPass);
}

}  // namespace
}  // namespace draftgate::checks
