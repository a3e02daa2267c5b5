// The forward plan: a run expects bf16 target forwards only where a selected check measures what a
// record's precision explains and that precision is below float32 or undeclared — so a float32
// walk over a checkpoint larger than memory computes no bf16 forward that no check asks for.

#include "checks/forward_plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "check_runs.h"
#include "checks/model_engine.h"
#include "checks/target_cache.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

namespace fs = std::filesystem;
using train::ComputePrecision;
using train::StepRecord;

// The expectation the plan leaves for `record` written to a file and `checks` selected.
bool planned_bf16(const fs::path& file, const std::vector<std::string>& names) {
  Artifacts a;
  a.target = testing::training_step_models() / "target";
  a.step_record = file;
  a.engine = &model_engine();
  std::vector<const Check*> selected;
  for (const auto& name : names) selected.push_back(find_check(name));
  plan_target_forwards(a, selected);
  return bf16_forwards_expected();
}

bool planned_bf16(const StepRecord& record, const std::vector<std::string>& names) {
  const fs::path file = testing::fresh_dir("forward_plan") / "record.safetensors";
  train::write_step_record(file, record);
  return planned_bf16(file, names);
}

TEST(ForwardPlan, Bf16ForwardsAreExpectedWhereARecordedPrecisionIsBelowFloat32) {
  StepRecord f32 = testing::training_step(train::LossType::kHardCrossEntropy);
  f32.teacher_dtype = f32.hidden_dtype = ComputePrecision::kF32;
  const std::vector<std::string> noise = {"loss_type", "target_logits_noise_free"};
  EXPECT_FALSE(planned_bf16(f32, noise)) << "every precision declared float32";

  StepRecord bf16_teacher = f32, undeclared_capture = f32, f16_capture = f32;
  bf16_teacher.teacher_dtype = ComputePrecision::kBF16;
  undeclared_capture.hidden_dtype.reset();
  f16_capture.hidden_dtype = ComputePrecision::kF16;
  EXPECT_TRUE(planned_bf16(bf16_teacher, noise));
  EXPECT_TRUE(planned_bf16(undeclared_capture, noise)) << "undeclared is judged as bf16";
  EXPECT_TRUE(planned_bf16(f16_capture, noise)) << "f16 is judged against the bf16 spread";
  // No selected check reproduces a precision: nothing at bf16 is asked for.
  EXPECT_FALSE(planned_bf16(undeclared_capture, {"loss_type", "fc_excludes_target_layer"}));

  // A record whose metadata does not read is the checks' to name; the plan expects the bf16
  // forward (the cost of a forward, never a second read of the checkpoint).
  const fs::path bad = testing::fresh_dir("forward_plan_bad") / "record.safetensors";
  std::ofstream(bad) << "not a safetensors file";
  EXPECT_TRUE(planned_bf16(bad, noise));
  expect_bf16_forwards(true);  // as an unplanned run starts
}

}  // namespace
}  // namespace draftgate::checks
