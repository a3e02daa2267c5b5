// The step-record checks proven both ways on a real (random-weight) training step: the clean
// record passes; the record with its bug fails and the message names it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/model_engine.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/target.h"
#include "synthetic_layouts.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using train::LossType;
using train::StepRecord;

// Writes `rec` and runs `check` on it with the synthetic target and drafter.
CheckResult run_on(const std::string& check, const StepRecord& rec, const std::string& file,
                   const nlohmann::json& params = nullptr) {
  const fs::path dir = testing::training_step_models();
  const fs::path path = dir / file;
  train::write_step_record(path, rec);
  Artifacts a;
  a.target = dir / "target";
  a.drafter = dir / "drafter";
  a.step_record = path;
  a.engine = &model_engine();
  return run_check(*find_check(check), a, params);
}

struct Models {
  io::Checkpoint target_ckpt = io::Checkpoint::open(testing::training_step_models() / "target");
  io::Checkpoint drafter_ckpt = io::Checkpoint::open(testing::training_step_models() / "drafter");
  std::unique_ptr<model::TargetModel> target = model::TargetModel::load(target_ckpt, {});
  std::unique_ptr<model::DFlashDrafter> drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
};

using metrics::rms;

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

TEST(TrainInferConsistency, CleanPassesALeakyMaskFailsAtBlockPositionOne) {
  const Models m;
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  const CheckResult clean = run_on("train_infer_consistency", rec, "consistent.safetensors");
  EXPECT_EQ(clean.status, Status::kPass) << clean.message;
  EXPECT_LT(clean.measured["max_rel_diff"].get<double>(), 1e-4);

  rec.drafter_logits =
      m.drafter->training_logits(rec.fc_input, rec.input_ids, rec.anchors,
                                 model::DFlashDrafter::ContextVisibility::kThroughAnchor);
  const CheckResult leak = run_on("train_infer_consistency", rec, "leak.safetensors");
  EXPECT_EQ(leak.status, Status::kFail);
  EXPECT_THAT(leak.message, HasSubstr("context strictly before the anchor"));
  const auto per_position = leak.measured["max_rel_diff_per_block_position"];
  EXPECT_GT(per_position[0].get<double>(), 1e-2) << "the anchor's own state leaks everywhere";
}

TEST(FcExcludesTargetLayer, NamesTheLayerAnOffByOneTapReallyFed) {
  const Models m;
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  const CheckResult clean = run_on("fc_excludes_target_layer", rec, "taps_ok.safetensors");
  EXPECT_EQ(clean.status, Status::kPass) << clean.message;
  EXPECT_EQ(clean.measured["fed_slices"][1]["came_from"], 2);

  const auto r = m.target->forward(rec.input_ids, {1, 3});  // taps 0,2 declared, 1,3 fed
  rec.fc_input = at::cat({r.taps.at(1), r.taps.at(3)}, -1);
  const CheckResult shifted = run_on("fc_excludes_target_layer", rec, "taps_shifted.safetensors");
  EXPECT_EQ(shifted.status, Status::kFail);
  EXPECT_THAT(shifted.message, HasSubstr("declared as layer 0 but matches layer 1"));
  EXPECT_THAT(shifted.message, HasSubstr("declared as layer 2 but matches layer 3"));
  EXPECT_THAT(shifted.message, HasSubstr("FINAL layer"));
}

TEST(FcExcludesTargetLayer, NamesTheFinalLayerAfterTheFinalNormAsHfReturnsIt) {
  const Models m;
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  // taps 0,2 declared; the second slice fed HF's hidden_states[-1], the final layer post-norm.
  const auto r = m.target->forward(rec.input_ids, {0, 3});
  rec.fc_input = at::cat({r.taps.at(0), m.target->final_norm(r.taps.at(3)).to(at::kFloat)}, -1);
  const CheckResult fed = run_on("fc_excludes_target_layer", rec, "post_norm.safetensors");
  EXPECT_EQ(fed.status, Status::kFail);
  EXPECT_THAT(fed.message,
              HasSubstr("declared as layer 2 but matches layer 3 after the final norm"));
  EXPECT_EQ(fed.measured["fed_slices"][1]["after_final_norm"], true);
}

TEST(MinTau, SkipsWithoutAGolden) {
  Artifacts a;
  a.target = testing::training_step_models() / "target";
  a.drafter = testing::training_step_models() / "drafter";
  EXPECT_EQ(run_check(*find_check("min_tau"), a, nullptr).status, Status::kSkip);
}

}  // namespace
}  // namespace draftgate::checks
