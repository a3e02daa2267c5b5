// fc_excludes_target_layer, specified: structurally (the final layer, repeated taps, the opt-in)
// and on step records (the layer an off-by-one tap really fed, the post-norm final layer, noise on
// the declared layer).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "checks/metrics.h"
#include "draftgate/model/target.h"
#include "synthetic_step_record.h"

namespace draftgate::checks {
namespace {

using metrics::rms;
using ::testing::HasSubstr;
using testing::Models;
using ::testing::Not;
using testing::pair_dir;
using testing::run;
using testing::run_on;
using testing::target_and;
using train::LossType;
using train::StepRecord;

TEST(FcExcludesTargetLayer, FinalLayerRepeatsAndOptIn) {
  EXPECT_EQ(run("fc_excludes_target_layer", target_and("good")).status, Status::kPass);
  const CheckResult final_tap = run("fc_excludes_target_layer", target_and("final"));
  EXPECT_EQ(final_tap.status, Status::kFail);
  EXPECT_THAT(final_tap.message, HasSubstr("tap 3 is the target's final layer"));
  EXPECT_EQ(
      run("fc_excludes_target_layer", target_and("final"), {{"allow_final_layer", true}}).status,
      Status::kPass);
  EXPECT_THAT(run("fc_excludes_target_layer", target_and("repeat")).message,
              HasSubstr("repeat a layer"));
  Artifacts only_target;
  only_target.target = pair_dir() / "target";
  EXPECT_EQ(run("fc_excludes_target_layer", only_target).status, Status::kSkip);
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

// A record whose features are the taps it declares, beside a drafter declaring others: a record of
// another drafter (or a config naming other taps than trained), not a trainer's tap indexing.
TEST(FcExcludesTargetLayer, ARecordOfOtherTapsIsNamedAsSuch) {
  const Models m;
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);  // the drafter's 0,2
  const auto r = m.target->forward(rec.input_ids, {0, 1, 2});
  rec.target_layer_ids = {1, 2};
  rec.fc_input = at::cat({r.taps.at(1), r.taps.at(2)}, -1);
  const CheckResult other = run_on("fc_excludes_target_layer", rec, "other_taps.safetensors");
  EXPECT_EQ(other.status, Status::kFail);
  EXPECT_THAT(other.message, HasSubstr("the step record declares taps [1"));
  EXPECT_THAT(other.message, HasSubstr("and the record's fc_input matches its own taps: is "
                                       "--drafter the checkpoint the record was made with?"));
  EXPECT_THAT(other.message, Not(HasSubstr("fix the trainer's tap indexing")));
  // Fed from neither: the slices are named against the record's own taps.
  rec.fc_input = at::cat({r.taps.at(0), r.taps.at(2)}, -1);
  const CheckResult neither = run_on("fc_excludes_target_layer", rec, "neither_taps.safetensors");
  EXPECT_EQ(neither.status, Status::kFail);
  EXPECT_THAT(neither.message, HasSubstr("declared as layer 1 but matches layer 0"));
  EXPECT_THAT(neither.message, Not(HasSubstr("matches its own taps")));
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

// Noise above max_nmse on a slice that still came from its declared layer is named as noise, not
// as a tap-indexing error. Measured on main before: "declared as layer 0 but matches layer 0".
TEST(FcExcludesTargetLayer, HeavyNoiseOnTheDeclaredLayerIsNamedAsNoise) {
  StepRecord noisy = testing::training_step(LossType::kHardCrossEntropy);
  noisy.fc_input = noisy.fc_input + 0.3 * rms(noisy.fc_input) * at::randn(noisy.fc_input.sizes());
  const CheckResult r = run_on("fc_excludes_target_layer", noisy, "fc_heavy_noise.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("is closest to its declared layer"));
  EXPECT_THAT(r.message, HasSubstr("noise on the captured hidden states"));
  EXPECT_THAT(r.message, Not(HasSubstr("fix the trainer's tap indexing")));
}

}  // namespace
}  // namespace draftgate::checks
