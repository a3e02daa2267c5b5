// Verdicts for a trainer that computes in bf16, as every GPU trainer does. The step-record checks
// judge a recorded tensor against the spread its computation's precision explains, measured by
// running the same computation at that precision, so on both target families:
//  - a correct bf16 trainer's record passes all four step-record checks, whether it stores f32
//    (`.float()` before saving), stores bf16, or does not declare its precision;
//  - every seeded bug still fails its check;
//  - the detection limits hold: noise or a train/inference difference of half the reported budget
//    passes, twice the budget fails.
// The trainer here is draftgate's own engine at bf16 with the other GDN algorithm; the `python`
// tests run an independent PyTorch trainer.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/model_engine.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/target.h"
#include "draftgate/train/recipe.h"
#include "draftgate/train/step_record.h"
#include "fixture_paths.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using train::ComputePrecision;
using train::StepRecord;

struct Family {
  std::string name, target, drafter, record;
};
const Family kQwen3{"qwen3", "qwen3-target", "qwen3-drafter-reference",
                    "qwen3-drafter-reference.safetensors"};
const Family kQwen35{"qwen35", "qwen35-target", "qwen35-drafter-reference",
                     "qwen35-drafter-reference.safetensors"};

// How the trainer wrote its record.
enum class Storage { kF32, kBF16, kUndeclaredF32 };
std::string storage_name(Storage s) {
  return s == Storage::kF32 ? "stored_f32" : s == Storage::kBF16 ? "stored_bf16" : "undeclared";
}

enum class Bug {
  kNone,
  kNoFinalNorm,
  kOffByOneTaps,
  kKlLoss,
  kContextThroughAnchor,
  kShiftedLabels
};

// A bf16 trainer's step on the fixture's recorded sequence: the target and the drafter run in
// bf16, the labels are the bf16 teacher's greedy tokens (-100 where the weight is 0), the loss is
// the decay-weighted CE.
StepRecord bf16_step(const Family& f, Storage storage, Bug bug = Bug::kNone) {
  StepRecord rec = train::read_step_record(kTrained / "step-records" / f.record);
  const io::Checkpoint target_ckpt = io::Checkpoint::open(kTrained / f.target);
  const io::Checkpoint drafter_ckpt = io::Checkpoint::open(kTrained / f.drafter);
  model::TargetOptions o;
  o.dtype = at::kBFloat16;
  o.gdn = model::GdnAlgorithm::kRecurrent;  // the checks' own forwards run chunked
  const auto target = model::TargetModel::load(target_ckpt, o);
  const auto drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
  const std::int64_t last = target->config().num_layers - 1;
  std::vector<std::int64_t> fed = rec.target_layer_ids;
  if (bug == Bug::kOffByOneTaps)
    for (auto& t : fed) ++t;
  std::vector<std::int64_t> taps = fed;
  taps.push_back(last);
  const model::ForwardResult fwd = target->forward(rec.input_ids, taps);
  std::vector<at::Tensor> parts;
  for (auto t : fed) parts.push_back(fwd.taps.at(t));
  rec.fc_input = at::cat(parts, -1);
  rec.teacher_logits = bug == Bug::kNoFinalNorm ? model::dense(fwd.taps.at(last).to(at::kBFloat16),
                                                               target->lm_head_weight())
                                                      .to(at::kFloat)
                                                : fwd.logits;
  train::BlockTargets targets =
      train::block_targets(rec.input_ids, rec.loss_mask, rec.anchors, rec.block_size, rec.gamma);
  const at::Tensor teacher_blocks =
      train::block_teacher_logits(rec.teacher_logits, rec.anchors, rec.block_size);
  at::Tensor greedy = teacher_blocks.argmax(-1);
  if (bug == Bug::kShiftedLabels) greedy = greedy.roll(-1, 1);
  targets.labels = greedy.masked_fill(targets.weight == 0, -100);
  rec.labels = targets.labels;
  rec.weights = targets.weight;
  rec.drafter_logits = drafter->training_logits(
      rec.fc_input, rec.input_ids, rec.anchors,
      bug == Bug::kContextThroughAnchor ? model::DFlashDrafter::ContextVisibility::kThroughAnchor
                                        : model::DFlashDrafter::ContextVisibility::kBeforeAnchor);
  const train::BlockTargets used = train::recorded_block_targets(rec);
  const at::Tensor logits = rec.drafter_logits.to(at::kDouble);
  rec.logged_loss =
      (bug == Bug::kKlLoss ? train::weighted_kl(logits, teacher_blocks.to(at::kDouble), used)
                           : train::weighted_cross_entropy(logits, used))
          .item<double>();
  rec.loss = train::LossType::kHardCrossEntropy;  // a KL trainer that says ce is the common case
  rec.teacher_dtype = rec.drafter_dtype = ComputePrecision::kBF16;
  if (storage == Storage::kUndeclaredF32) rec.teacher_dtype = rec.drafter_dtype = std::nullopt;
  if (storage == Storage::kBF16)
    for (at::Tensor* t : {&rec.fc_input, &rec.teacher_logits, &rec.drafter_logits})
      *t = t->to(at::kBFloat16);
  return rec;
}

CheckResult run_on(const Family& f, const std::string& check, const StepRecord& rec,
                   const std::string& file) {
  static const fs::path dir = testing::fresh_dir("precision_budget");
  const fs::path path = dir / (f.name + "-" + file + ".safetensors");
  train::write_step_record(path, rec);
  Artifacts a;
  a.target = kTrained / f.target;
  a.drafter = kTrained / f.drafter;
  a.step_record = path;
  a.engine = &model_engine();
  return run_check(*find_check(check), a, nullptr);
}

const std::vector<std::string> kStepRecordChecks = {
    "target_logits_noise_free", "fc_excludes_target_layer", "loss_type", "train_infer_consistency"};

class Bf16Trainer : public ::testing::TestWithParam<std::tuple<Family, Storage>> {
 protected:
  const Family& family() const { return std::get<0>(GetParam()); }
  Storage storage() const { return std::get<1>(GetParam()); }
  CheckResult check(const std::string& name, Bug bug, const std::string& file) const {
    return run_on(family(), name, bf16_step(family(), storage(), bug),
                  storage_name(storage()) + "-" + file);
  }
};

TEST_P(Bf16Trainer, CorrectRecordPassesEveryStepRecordCheck) {
  const StepRecord rec = bf16_step(family(), storage());
  for (const auto& name : kStepRecordChecks) {
    const CheckResult r = run_on(family(), name, rec, storage_name(storage()) + "-correct");
    EXPECT_EQ(r.status, Status::kPass) << name << ": " << r.message;
    if (name == "target_logits_noise_free" || name == "train_infer_consistency") {
      EXPECT_THAT(r.evidence["precision"].get<std::string>(), HasSubstr("computed in bf16"));
    }
  }
}

TEST_P(Bf16Trainer, EverySeededBugFailsItsCheck) {
  struct Seeded {
    Bug bug;
    std::string check, file, message;
  };
  for (const Seeded& s : std::vector<Seeded>{
           {Bug::kNoFinalNorm, "target_logits_noise_free", "no-norm", "WITHOUT the final norm"},
           {Bug::kShiftedLabels, "target_logits_noise_free", "shifted", "greedy tokens"},
           {Bug::kOffByOneTaps, "fc_excludes_target_layer", "off-by-one",
            "declared as layer 0 but matches layer 1"},
           {Bug::kKlLoss, "loss_type", "kl", "mislabelled"},
           {Bug::kContextThroughAnchor, "train_infer_consistency", "leak",
            "context strictly before the anchor"}}) {
    const CheckResult r = check(s.check, s.bug, s.file);
    EXPECT_EQ(r.status, Status::kFail) << s.file << ": " << r.message;
    EXPECT_THAT(r.message, HasSubstr(s.message)) << s.file;
  }
}

// The clean record passes `check`; perturbed by half its reported budget it passes, by twice it
// fails. `perturbed(rec, clean verdict, multiple of the budget)`.
void expect_half_passes_twice_fails(
    const Family& f, const StepRecord& rec, const std::string& check,
    const std::function<StepRecord(const StepRecord&, const CheckResult&, double)>& perturbed) {
  const CheckResult clean = run_on(f, check, rec, check + "-clean");
  ASSERT_EQ(clean.status, Status::kPass) << clean.message;
  const CheckResult half = run_on(f, check, perturbed(rec, clean, 0.5), check + "-half");
  EXPECT_EQ(half.status, Status::kPass) << half.message;
  const CheckResult twice = run_on(f, check, perturbed(rec, clean, 2.0), check + "-twice");
  EXPECT_EQ(twice.status, Status::kFail);
}

TEST_P(Bf16Trainer, TeacherNoiseOfHalfTheBudgetPassesTwiceFails) {
  at::manual_seed(7);
  const StepRecord rec = bf16_step(family(), storage());
  const at::Tensor unit = at::randn(rec.teacher_logits.sizes());
  expect_half_passes_twice_fails(
      family(), rec, "target_logits_noise_free",
      [&](const StepRecord& r, const CheckResult& clean, double multiple) {
        // The budget is a noise std relative to the float32 teacher's RMS.
        const double std = multiple * clean.measured["noise_ratio_budget"].get<double>() *
                           clean.measured["teacher_rms"].get<double>();
        StepRecord out = r;
        out.teacher_logits =
            (r.teacher_logits.to(at::kFloat) + std * unit).to(r.teacher_logits.scalar_type());
        return out;
      });
}

TEST_P(Bf16Trainer, TrainInferDifferenceOfHalfTheBudgetPassesTwiceFails) {
  const StepRecord rec = bf16_step(family(), storage());
  const double rms = metrics::rms(rec.drafter_logits.narrow(1, 1, rec.block_size - 1));
  expect_half_passes_twice_fails(
      family(), rec, "train_infer_consistency",
      [&](const StepRecord& r, const CheckResult& clean, double multiple) {
        // The budget is a max |Δ| relative to the logits' RMS: shift one logit of the first
        // anchor's block position 1 by a multiple of it.
        at::Tensor logits = r.drafter_logits.to(at::kFloat).clone();
        logits[0][1][0] += multiple * clean.measured["max_rel_diff_budget"].get<double>() * rms;
        StepRecord out = r;
        out.drafter_logits = logits.to(r.drafter_logits.scalar_type());
        return out;
      });
}

// A float32 trainer that stores its logits in bf16 took its loss before the rounding: the
// recomputed loss moves by the rounding's effect, which loss_type allows — and a KL loss still
// shows.
TEST(F32TrainerStoringBf16, LossTypePassesTheCeAndFailsTheKl) {
  for (const auto& [record, status] :
       std::vector<std::pair<std::string, Status>>{{"qwen35-drafter-reference", Status::kPass},
                                                   {"qwen35-drafter-kl-loss", Status::kFail}}) {
    StepRecord rec = train::read_step_record(kTrained / "step-records" / (record + ".safetensors"));
    ASSERT_EQ(rec.drafter_dtype, ComputePrecision::kF32);
    rec.drafter_logits = rec.drafter_logits.to(at::kBFloat16);
    rec.teacher_logits = rec.teacher_logits.to(at::kBFloat16);
    const CheckResult r = run_on(kQwen35, "loss_type", rec, record + "-stored-bf16");
    EXPECT_EQ(r.status, status) << record << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(BothFamilies, Bf16Trainer,
                         ::testing::Combine(::testing::Values(kQwen3, kQwen35),
                                            ::testing::Values(Storage::kF32, Storage::kBF16,
                                                              Storage::kUndeclaredF32)),
                         [](const auto& p) {
                           return std::get<0>(p.param).name + "_" +
                                  storage_name(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace draftgate::checks
