// NaN and Inf never pass: every budget comparison is false for NaN, so each check looks for
// non-finite values in what it compares first and fails naming the tensor and the first position.
// Also: a library exception inside one check is that check's error verdict, not the run's end.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint_edit.h"
#include "checks/check.h"
#include "checks/model_engine.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/target.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/train/step_record.h"
#include "synthetic_step_record.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Runs `check` on the synthetic models with `rec` after `edit`.
CheckResult run_on(const std::string& check, const std::function<void(train::StepRecord&)>& edit,
                   const std::optional<fs::path>& target = std::nullopt) {
  static const fs::path dir = testing::fresh_dir("non_finite");
  train::StepRecord rec = testing::training_step(train::LossType::kHardCrossEntropy);
  edit(rec);
  const fs::path path = dir / (check + ".safetensors");
  train::write_step_record(path, rec);
  Artifacts a;
  a.target = target.value_or(testing::training_step_models() / "target");
  a.drafter = testing::training_step_models() / "drafter";
  a.step_record = path;
  a.engine = &model_engine();
  return run_check(*find_check(check), a, nullptr);
}

// Sets element `at` of the flattened `t`.
void poison(at::Tensor& t, double value, std::int64_t at = 5) {
  t = t.clone();
  t.view(-1)[at] = value;
}

TEST(NonFinite, NanTeacherLogitsFailNamingThePosition) {
  const CheckResult r =
      run_on("target_logits_noise_free", [](auto& rec) { poison(rec.teacher_logits, NAN); });
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("teacher_logits holds NaN at [0, 5]"));
}

TEST(NonFinite, NanDrafterLogitsFailLossTypeAndTrainInferConsistency) {
  for (const char* check : {"loss_type", "train_infer_consistency"}) {
    // Block row 1, the first row with a label (row 0 is the anchor itself).
    const CheckResult r = run_on(
        check, [](auto& rec) { poison(rec.drafter_logits, NAN, rec.drafter_logits.size(2) + 5); });
    EXPECT_EQ(r.status, Status::kFail) << check;
    EXPECT_THAT(r.message, HasSubstr("drafter_logits holds NaN at [0, ")) << check;
  }
  // Block row 0 (the anchor's own row, which carries no label and which train_infer_consistency
  // leaves out of its comparison) and a later anchor: still failed, at the record's position.
  for (const char* check : {"loss_type", "train_infer_consistency"}) {
    const CheckResult r = run_on(check, [](auto& rec) {
      poison(rec.drafter_logits, NAN, rec.drafter_logits.size(1) * rec.drafter_logits.size(2) + 3);
    });
    EXPECT_EQ(r.status, Status::kFail) << check;
    EXPECT_THAT(r.message, HasSubstr("drafter_logits holds NaN at [1, 0, 3]")) << check;
  }
}

TEST(NonFinite, InfFcInputFailsFcCheckAndTrainInferConsistency) {
  for (const char* check : {"fc_excludes_target_layer", "train_infer_consistency"}) {
    const CheckResult r = run_on(check, [](auto& rec) { poison(rec.fc_input, INFINITY); });
    EXPECT_EQ(r.status, Status::kFail) << check;
    EXPECT_THAT(r.message, HasSubstr("fc_input holds +Inf at [0, 5]")) << check;
  }
}

// A target with finite weights whose logits overflow float32: the final norm and lm_head scaled by
// 1e30 each.
fs::path overflowing_target() {
  static const fs::path dir = [] {
    const fs::path d = testing::fresh_dir("overflowing_target") / "target";
    fs::copy(testing::training_step_models() / "target", d, fs::copy_options::recursive);
    for (const char* name : {"model.norm.weight", "lm_head.weight"})
      testing::edit_tensor(d, name, [](at::Tensor w) { return w * 1e30; });
    return d;
  }();
  return dir;
}

TEST(NonFinite, ATargetWhoseLogitsOverflowFailsTheTeacherCheck) {
  const CheckResult r = run_on(
      "target_logits_noise_free", [](auto&) {}, overflowing_target());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("the target's own logits (float32) holds"));
}

TEST(NonFinite, HiddenStateParityFailsOnAnOverflowingTarget) {
  Artifacts a;
  a.target = overflowing_target();
  const CheckResult r = run_check(*find_check("hidden_state_parity"), a, nullptr);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("logits holds"));
}

TEST(NonFinite, HiddenStateParityFailsOnANanReferenceDump) {
  const fs::path target = testing::training_step_models() / "target";
  const io::Checkpoint ckpt = io::Checkpoint::open(target);
  model::TargetOptions o;
  o.dtype = at::kFloat;
  const auto model = model::TargetModel::load(ckpt, o);
  const std::vector<std::int64_t> tokens = {1, 5, 9, 2, 7, 3};
  std::vector<std::int64_t> taps(model->config().num_layers);
  for (std::size_t l = 0; l < taps.size(); ++l) taps[l] = static_cast<std::int64_t>(l);
  const auto fwd = model->forward(tokens, taps);
  io::NamedTensors tensors = {{"logits", fwd.logits}};
  for (auto l : taps) {
    at::Tensor h = fwd.taps.at(l).clone();
    if (l == 2) h[3][4] = NAN;
    tensors.emplace_back("hidden." + std::to_string(l), h);
  }
  const fs::path dump = testing::fresh_dir("nan_dump") / "dump.safetensors";
  io::write_tensors(dump, tensors, {{"tokens", "1,5,9,2,7,3"}, {"dtype", "f32"}});
  Artifacts a;
  a.target = target;
  a.reference_dump = dump;
  const CheckResult r = run_check(*find_check("hidden_state_parity"), a, nullptr);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("hidden.2 holds NaN at [3, 4]"));
}

// A check whose computation throws a library exception (here: out of range).
class ThrowingCheck : public Check {
 public:
  std::string name() const override { return "throwing"; }
  std::string summary() const override { return "throws"; }
  std::string needs() const override { return "nothing"; }
  std::vector<Param> params() const override { return {}; }
  CheckResult run(const Artifacts&, const nlohmann::json&) const override {
    CheckResult r;
    r.check = std::vector<int>{}.at(3) == 0 ? "" : "x";  // throws std::out_of_range
    return r;
  }
};

TEST(CheckIsolation, ALibraryExceptionIsThatChecksErrorNamingTheFile) {
  Artifacts a;
  a.step_record = "/records/step-3.safetensors";
  const CheckResult r = run_check(ThrowingCheck(), a, nullptr);
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_THAT(r.message, HasSubstr("/records/step-3.safetensors: throwing could not complete"));
  EXPECT_EQ(r.message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace draftgate::checks
