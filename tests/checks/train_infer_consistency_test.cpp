// train_infer_consistency, specified: a clean record passes, a leaky mask fails at block position
// 1, a record masked with another token than the config fails.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "draftgate/model/dflash.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
using testing::Models;
using testing::run_on;
using train::LossType;
using train::StepRecord;

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

TEST(TrainInferConsistency, ARecordMaskedWithAnotherTokenThanTheConfigFails) {
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  const std::int64_t config_mask = rec.mask_token_id;
  rec.mask_token_id = config_mask == 1 ? 2 : 1;  // metadata only: the logits still agree
  const CheckResult r = run_on("train_infer_consistency", rec, "other_mask.safetensors");
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_THAT(
      r.message,
      HasSubstr("the trainer masked the block with token " + std::to_string(rec.mask_token_id) +
                " but the drafter's config.json says " + std::to_string(config_mask)));
  EXPECT_EQ(r.measured["mask_token_id"]["record"].dump(), std::to_string(rec.mask_token_id));
  EXPECT_LT(r.measured["max_rel_diff"].get<double>(), 1e-4) << "only the mask token is off";
}

}  // namespace
}  // namespace draftgate::checks
