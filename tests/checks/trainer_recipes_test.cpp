// Cross-cutting: records as real trainers write them (SpecForge data labels, speculators teachers,
// D-PACE and the trainers' normalisations, sliding layers) through every record check.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "check_runs.h"
#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/model_engine.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "synthetic_layouts.h"
#include "synthetic_step_record.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using metrics::rms;
using testing::Models;
using testing::run_on;
using train::LossType;
using train::StepRecord;

// The trainer's scalar by a loop over the elements, independent of the recipe module: per element
// CE = logsumexp − logit[label]; weights from `weight_of(j, k, ce)`; `normalise(Σ w·CE, Σ w)`.
double hand_loss(const StepRecord& rec, const at::Tensor& labels,
                 const std::function<double(int, int, const std::vector<double>&)>& weight_of,
                 const std::function<double(double, double)>& normalise) {
  const at::Tensor logits = rec.drafter_logits.to(at::kDouble);
  double num = 0, weights = 0;
  for (int j = 0; j < logits.size(0); ++j) {
    std::vector<double> ce(rec.block_size);
    for (int k = 0; k < rec.block_size; ++k) {
      const at::Tensor row = logits[j][k];
      const double m = row.max().item<double>();
      ce[k] = m + std::log((row - m).exp().sum().item<double>()) -
              row[labels[j][k].item<std::int64_t>()].item<double>();
    }
    for (int k = 0; k < rec.block_size; ++k) {
      const double w = weight_of(j, k, ce);
      num += w * ce[k];
      weights += w;
    }
  }
  return normalise(num, weights);
}

// SpecForge's DFlash step (dflash_family_model.py @a6b6b023): data labels input_ids[a+k], no
// teacher logits, loss_decay_gamma None (uniform), Σ CE·w / Σ w.
StepRecord specforge_step() {
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  rec.labels_source = train::LabelsSource::kData;
  rec.teacher_logits = at::Tensor();
  rec.teacher_positions.clear();
  rec.teacher_dtype.reset();
  rec.hidden_dtype = train::ComputePrecision::kF32;
  rec.gamma = 0;
  const train::BlockTargets t =
      train::block_targets(rec.input_ids, rec.loss_mask, rec.anchors, rec.block_size, 0.0);
  rec.labels = t.labels.masked_fill(t.weight == 0, -100);
  rec.weights = t.weight;
  const at::Tensor w = t.weight;
  rec.logged_loss = hand_loss(
      rec, t.labels, [&](int j, int k, const auto&) { return w[j][k].item<double>(); },
      [](double num, double den) { return num / den; });
  return rec;
}

TEST(TrainerRecipes, ASpecForgeStepPassesEveryCheckAndSaysWhatItJudged) {
  const StepRecord rec = specforge_step();
  for (const char* check : {"target_logits_noise_free", "loss_type", "train_infer_consistency",
                            "fc_excludes_target_layer"}) {
    const CheckResult r = run_on(check, rec, std::string("specforge_") + check + ".safetensors");
    EXPECT_EQ(r.status, Status::kPass) << check << ": " << r.message;
  }
  const CheckResult r = run_on("target_logits_noise_free", rec, "specforge.safetensors");
  EXPECT_THAT(r.message, HasSubstr("judged: labels against input_ids[a+k]"));
  EXPECT_THAT(r.message, HasSubstr("fc_input against the target's taps [0,2]"));
  EXPECT_THAT(r.message, HasSubstr("not judged: teacher_logits (a data-label trainer has none)"));
  EXPECT_EQ(r.measured["label_alignment"]["agreeing"], r.measured["label_alignment"]["elements"]);
}

// Data labels are integers: one wrong label among many fails (an outside tester's case: 1 of 132
// passed under the teacher's near-tie budget, 0.99), naming where.
TEST(TrainerRecipes, OneWrongDataLabelFailsNamingIt) {
  StepRecord rec = specforge_step();
  std::int64_t weighted = 0;
  for (std::size_t j = 0; j < rec.anchors.size(); ++j)
    for (std::int64_t k = 0; k < rec.block_size; ++k)
      weighted += rec.weights[j][k].item<float>() > 0;
  ASSERT_GE(weighted, 2);
  const std::int64_t j = 1, k = 2;
  ASSERT_GT(rec.weights[j][k].item<float>(), 0);
  const std::int64_t right = rec.labels[j][k].item<std::int64_t>();
  rec.labels[j][k] = (right + 1) % 256;
  const CheckResult r = run_on("target_logits_noise_free", rec, "specforge_one_wrong.safetensors");
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_THAT(r.message,
              HasSubstr("only " + std::to_string(weighted - 1) + " of " + std::to_string(weighted) +
                        " weighted labels are input_ids[a+k]"));
  EXPECT_THAT(r.message,
              HasSubstr("first not: anchor 1 (position " + std::to_string(rec.anchors[1]) +
                        "), block element 2: label " + std::to_string((right + 1) % 256)));
}

TEST(TrainerRecipes, DataLabelsShiftedAreNamedWithTheirOffset) {
  StepRecord rec = specforge_step();
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  for (std::size_t j = 0; j < rec.anchors.size(); ++j)
    for (std::int64_t k = 1; k < rec.block_size; ++k)
      if (rec.labels[j][k].item<std::int64_t>() >= 0)
        rec.labels[j][k] =
            rec.anchors[j] + k + 1 < s ? rec.input_ids[rec.anchors[j] + k + 1] : std::int64_t{0};
  const CheckResult r = run_on("target_logits_noise_free", rec, "specforge_shift.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("the labels are shifted by 1: block row k of anchor a holds "
                                   "input_ids[a+k+1]"));
  // Unrecorded labels, the loss logged with the shifted ones: loss_type names the shift.
  const at::Tensor shifted = rec.labels.clamp_min(0);
  StepRecord unrecorded = specforge_step();
  const at::Tensor w = unrecorded.weights;
  unrecorded.logged_loss = hand_loss(
      unrecorded, shifted,
      [&](int j, int k, const auto&) {
        return unrecorded.anchors[j] + k + 1 < s ? w[j][k].item<double>() : 0.0;
      },
      [](double num, double den) { return num / den; });
  unrecorded.labels = at::Tensor();
  const CheckResult loss = run_on("loss_type", unrecorded, "specforge_shift_loss.safetensors");
  EXPECT_EQ(loss.status, Status::kFail);
  EXPECT_THAT(loss.message, HasSubstr("labels shifted to input_ids[a+k+1]"));
}

TEST(TrainerRecipes, CapturedHiddenStatesWithNoiseOrFromAnotherLayerFail) {
  const StepRecord clean = specforge_step();
  StepRecord noisy = clean;
  noisy.fc_input = clean.fc_input + 5e-3 * rms(clean.fc_input) * at::randn(clean.fc_input.sizes());
  const CheckResult r = run_on("target_logits_noise_free", noisy, "specforge_noisy.safetensors");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_THAT(r.message, HasSubstr("fc_input slice 0 (tap 0) deviates from the target's output of "
                                   "layer 0 by noise of"));
  EXPECT_THAT(r.message, HasSubstr("before any augmentation noise"));
  // Noise well inside the float32 floor passes.
  StepRecord quiet = clean;
  quiet.fc_input = clean.fc_input + 1e-5 * rms(clean.fc_input) * at::randn(clean.fc_input.sizes());
  EXPECT_EQ(run_on("target_logits_noise_free", quiet, "specforge_quiet.safetensors").status,
            Status::kPass);
  // Tap 2 fed from layer 3 (off by one): the target's own states, not noise — noise-free passes and
  // says so; fc_excludes_target_layer fails naming the layer.
  Models m;
  const auto fwd = m.target->forward(clean.input_ids, {3});
  StepRecord shifted = clean;
  const std::int64_t h = m.target->config().hidden;
  shifted.fc_input = clean.fc_input.clone();
  shifted.fc_input.narrow(1, h, h).copy_(fwd.taps.at(3));
  const CheckResult off = run_on("target_logits_noise_free", shifted, "specforge_tap.safetensors");
  EXPECT_EQ(off.status, Status::kPass) << off.message;
  EXPECT_THAT(off.message, HasSubstr("fc_input slice 1 (tap 2) is the target's output of layer 3, "
                                     "not noise: a tap-indexing error"));
  EXPECT_EQ(off.measured["fc_input_slices"][1]["came_from"], 3);
  const CheckResult taps = run_on("fc_excludes_target_layer", shifted, "specforge_tap.safetensors");
  EXPECT_EQ(taps.status, Status::kFail);
  EXPECT_THAT(taps.message,
              HasSubstr("fc input slice 1 is declared as layer 2 but matches layer 3"));
}

// speculators' input augmentation (AddUniformNoise: fc fed the captured states plus U(−0.05, 0.05),
// the drafter's logits computed from them): declared, the features as fed pass every check that
// reads them; undeclared, or more than declared, target_logits_noise_free fails saying so; the
// clean states recorded beside logits of the noised ones fail train_infer_consistency, which
// names the declaration.
TEST(TrainerRecipes, DeclaredInputNoiseIsAllowedForAndNoMore) {
  const StepRecord clean = specforge_step();
  Models m;
  at::manual_seed(7);
  const auto noised = [&](double half_width, double declared = 0.05) {
    StepRecord rec = clean;
    rec.fc_input = clean.fc_input + (2 * at::rand(clean.fc_input.sizes()) - 1) * half_width;
    rec.drafter_logits = m.drafter->training_logits(rec.fc_input, rec.input_ids, rec.anchors);
    rec.fc_input_noise = train::FcInputNoise{train::FcInputNoise::Law::kUniform, declared};
    return rec;
  };
  const StepRecord declared = noised(0.05);
  for (const char* check :
       {"target_logits_noise_free", "train_infer_consistency", "fc_excludes_target_layer"}) {
    const CheckResult r = run_on(check, declared, std::string("noise_") + check + ".safetensors");
    EXPECT_EQ(r.status, Status::kPass) << check << ": " << r.message;
  }
  const CheckResult judged = run_on("target_logits_noise_free", declared, "noise.safetensors");
  EXPECT_EQ(judged.evidence["fc_input_noise"], "uniform:0.05");
  const nlohmann::json& slice = judged.measured["fc_input_slices"][0];
  EXPECT_NEAR(slice["noise_ratio"].get<double>(), slice["noise_ratio_declared"].get<double>(),
              0.1 * slice["noise_ratio_declared"].get<double>())
      << "the measured noise is the declared one";

  // Loud declared noise (half width the states' RMS): the NMSEs are taken less the noise (plain,
  // a noised slice is nearest the layer of largest states), so the right taps pass and a tap off by
  // one is still named.
  const double rms_states = rms(clean.fc_input);
  const CheckResult loud =
      run_on("fc_excludes_target_layer", noised(rms_states, rms_states), "loud.safetensors");
  EXPECT_EQ(loud.status, Status::kPass) << loud.message;
  EXPECT_THAT(loud.message, HasSubstr("fed features match their taps"));
  StepRecord off_by_one = noised(rms_states, rms_states);
  const std::int64_t h = m.target->config().hidden;
  const auto three = m.target->forward(clean.input_ids, {3}).taps.at(3);
  off_by_one.fc_input.narrow(1, h, h).copy_(three + (2 * at::rand(three.sizes()) - 1) *
                                                        rms_states);  // tap 2 fed from layer 3
  const CheckResult shifted =
      run_on("fc_excludes_target_layer", off_by_one, "loud_tap.safetensors");
  EXPECT_EQ(shifted.status, Status::kFail) << shifted.message;
  EXPECT_THAT(shifted.message,
              HasSubstr("fc input slice 1 is declared as layer 2 but matches layer 3"));
  // Noise three times the states' RMS: ranked by mean squared difference the right taps still
  // come out nearest (by NMSE the largest layer did: "matches layer 3"); a tap off by one is named
  // where the difference stands out of the noise's share, else the verdict says it cannot tell.
  const double deafening = 3 * rms_states;
  const CheckResult right =
      run_on("fc_excludes_target_layer", noised(deafening, deafening), "deafening.safetensors");
  EXPECT_EQ(right.status, Status::kPass) << right.message;
  EXPECT_THAT(right.message, HasSubstr("fed features match their taps"));
  StepRecord deaf_shift = noised(deafening, deafening);
  deaf_shift.fc_input.narrow(1, h, h).copy_(three + (2 * at::rand(three.sizes()) - 1) * deafening);
  const CheckResult deaf = run_on("fc_excludes_target_layer", deaf_shift, "deaf_tap.safetensors");
  if (deaf.status == Status::kPass)
    EXPECT_THAT(deaf.message, HasSubstr("(slices [1] as closely as another layer: the record's "
                                        "fc_input_noise hides which)"));
  else
    EXPECT_THAT(deaf.message,
                HasSubstr("fc input slice 1 is declared as layer 2 but matches layer 3"));
  // Declared but absent: clean states with a tap off by one are not excused by the declaration.
  StepRecord absent = clean;
  absent.fc_input = clean.fc_input.clone();
  absent.fc_input.narrow(1, h, h).copy_(three);
  absent.fc_input_noise = train::FcInputNoise{train::FcInputNoise::Law::kUniform, deafening};
  const CheckResult excused = run_on("fc_excludes_target_layer", absent, "absent.safetensors");
  EXPECT_EQ(excused.status, Status::kFail) << excused.message;
  EXPECT_THAT(excused.message,
              HasSubstr("fc input slice 1 is declared as layer 2 but matches layer 3"));

  // Features from no layer at all (random, at the states' RMS) under a declaration ten times as
  // loud: no noise excuses a slice that does not hold its layer (it was named "matches the
  // embeddings" by one check and passed as "not noise" by the other).
  StepRecord garbage = clean;
  garbage.fc_input = at::randn(clean.fc_input.sizes()) * rms_states;
  garbage.drafter_logits =
      m.drafter->training_logits(garbage.fc_input, garbage.input_ids, garbage.anchors);
  garbage.fc_input_noise = train::FcInputNoise{train::FcInputNoise::Law::kUniform, 10 * rms_states};
  for (const char* check : {"target_logits_noise_free", "fc_excludes_target_layer"}) {
    const CheckResult r = run_on(check, garbage, std::string("garbage_") + check + ".safetensors");
    EXPECT_NE(r.status, Status::kPass) << check << ": " << r.message;
    EXPECT_THAT(r.message, ::testing::Not(HasSubstr("matches the embeddings"))) << check;
  }

  StepRecord undeclared = declared;
  undeclared.fc_input_noise.reset();
  const CheckResult bare = run_on("target_logits_noise_free", undeclared, "undeclared.safetensors");
  EXPECT_EQ(bare.status, Status::kFail);
  EXPECT_THAT(bare.message, HasSubstr("speculators' --noise-std, 0.05 by default), the features "
                                      "as fed with fc_input_noise declared"));

  const CheckResult over =
      run_on("target_logits_noise_free", noised(0.2), "over_declared.safetensors");
  EXPECT_EQ(over.status, Status::kFail);
  EXPECT_THAT(over.message, HasSubstr("with the declared fc_input_noise uniform:0.05); more noise "
                                      "than the trainer declares"));

  StepRecord before = declared;
  before.fc_input = clean.fc_input;  // the logits stay those of the noised features
  const CheckResult consistency =
      run_on("train_infer_consistency", before, "recorded_before.safetensors");
  EXPECT_EQ(consistency.status, Status::kFail);
  EXPECT_THAT(consistency.message, HasSubstr("the record declares fc_input_noise uniform:0.05, so "
                                             "fc_input must be recorded after that noise"));
  const CheckResult quiet = run_on("target_logits_noise_free", before, "before.safetensors");
  EXPECT_EQ(quiet.status, Status::kPass) << quiet.message;
  EXPECT_THAT(quiet.message, HasSubstr("under half the declared fc_input_noise uniform:0.05"));
}

TEST(TrainerRecipes, LossTypeTellsTheWeightingsApart) {
  // Decay configured (γ 4), uniform weights logged: the seeded bug that passed within 1e-3.
  StepRecord decay = specforge_step();
  decay.gamma = 4.0;
  decay.weights =
      train::block_targets(decay.input_ids, decay.loss_mask, decay.anchors, decay.block_size, 4.0)
          .weight;
  const CheckResult uniform_logged = run_on("loss_type", decay, "uniform_logged.safetensors");
  EXPECT_EQ(uniform_logged.status, Status::kFail);
  EXPECT_THAT(uniform_logged.message, HasSubstr("uniform weights"));
  EXPECT_THAT(uniform_logged.message,
              HasSubstr(format_number(decay.logged_loss, 8)));  // the logged number
  // The same record with the decay actually logged passes.
  const at::Tensor wd = decay.weights;
  decay.logged_loss = hand_loss(
      decay, decay.labels.clamp_min(0),
      [&](int j, int k, const auto&) { return wd[j][k].item<double>(); },
      [](double num, double den) { return num / den; });
  EXPECT_EQ(run_on("loss_type", decay, "decay_logged.safetensors").status, Status::kPass);
  // Uniform configured, decay logged.
  StepRecord none = specforge_step();
  none.logged_loss = decay.logged_loss;
  const CheckResult decay_logged = run_on("loss_type", none, "decay_where_none.safetensors");
  EXPECT_EQ(decay_logged.status, Status::kFail);
  EXPECT_THAT(decay_logged.message, HasSubstr("decay gamma 4"));
}

// D-PACE by its definition (a loop), SpecForge's normalisation (/ rows) and speculators' (per row
// Σ ℓ·w / (Σ m + 1e-5)).
TEST(TrainerRecipes, DpaceAndTheTrainersNormalisations) {
  StepRecord rec = specforge_step();
  rec.weights = at::Tensor();
  const at::Tensor mask = train::recorded_block_targets(rec).weight;
  const double alpha = 0.5;
  auto dpace = [&](int j, int k, const std::vector<double>& ce) {
    if (mask[j][k].item<float>() == 0) return 0.0;
    double total = 0;
    for (int i = k; i < rec.block_size; ++i) {
      double prefix = 1;
      for (int q = 0; q <= i; ++q)
        if (mask[j][q].item<float>() > 0) prefix *= (1 - alpha) * std::exp(-ce[q]) + alpha;
      total += prefix * mask[j][i].item<float>();
    }
    return total;
  };
  rec.weighting = train::Weighting::kDpace;
  rec.normalization = train::Normalization::kRows;
  rec.logged_loss =
      hand_loss(rec, rec.labels.clamp_min(0), dpace, [](double num, double) { return num / 1.0; });
  const CheckResult specforge = run_on("loss_type", rec, "dpace_rows.safetensors");
  EXPECT_EQ(specforge.status, Status::kPass) << specforge.message;
  // Logged with D-PACE, configured fixed: named.
  StepRecord fixed = rec;
  fixed.weighting = train::Weighting::kFixed;
  fixed.normalization = train::Normalization::kWeightSum;
  const CheckResult named = run_on("loss_type", fixed, "dpace_unconfigured.safetensors");
  EXPECT_EQ(named.status, Status::kFail);
  EXPECT_THAT(named.message, HasSubstr("D-PACE alpha 0.5"));
  // speculators: CE, D-PACE, Σ ℓ·m·W / (Σ m + 1e-5) over the (one) row.
  const double supervised = mask.gt(0).sum().item<double>();
  rec.normalization = train::Normalization::kMaskSum;
  rec.logged_loss = hand_loss(rec, rec.labels.clamp_min(0), dpace,
                              [&](double num, double) { return num / (supervised + 1e-5); });
  const CheckResult speculators = run_on("loss_type", rec, "dpace_mask_sum.safetensors");
  EXPECT_EQ(speculators.status, Status::kPass) << speculators.message;
}

// A sliding drafter layer (window 3 < the block) in training mode: the record made with the
// window passes; made with layer 0 under another mask, it fails naming layer 0 and the mask.
TEST(TrainerRecipes, ASlidingLayerRunAsFullFailsNamingTheLayer) {
  const fs::path dir = testing::training_step_models();
  const fs::path sliding = dir / "drafter_sliding";
  if (!fs::exists(sliding)) fs::copy(dir / "drafter", sliding, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(testing::read_file(dir / "drafter" / "config.json"));
  config["layer_types"] = {"sliding_attention", "full_attention"};
  config["sliding_window"] = 3;
  config["use_sliding_window"] = true;
  testing::write_file(sliding / "config.json", config.dump());
  Models m;
  const auto drafter = model::DFlashDrafter::load(io::Checkpoint::open(sliding), *m.target);
  StepRecord rec = testing::training_step(LossType::kHardCrossEntropy);
  auto run = [&](const StepRecord& r, const std::string& file) {
    train::write_step_record(dir / file, r);
    Artifacts a;
    a.target = dir / "target";
    a.drafter = sliding;
    a.step_record = dir / file;
    a.engine = &model_engine();
    return run_check(*find_check("train_infer_consistency"), a, nullptr);
  };
  rec.drafter_logits = drafter->training_logits(rec.fc_input, rec.input_ids, rec.anchors);
  const CheckResult clean = run(rec, "sliding.safetensors");
  EXPECT_EQ(clean.status, Status::kPass) << clean.message;
  // Each mask a trainer may run layer 0 with, and how the failure names it: the window dropped;
  // a full layer's mask (a trainer that builds one mask for every layer); SpecForge's sliding mask,
  // the window on the context only and the block causal without it (the same as inference only
  // where the window is at least the block size).
  const struct {
    model::SlidingMask mask;
    const char* name;
    const char* message;
  } masks[] = {
      {model::SlidingMask::kNoWindow, "no_window",
       "drafter layer 0 (sliding_attention, window 3) run as full attention ("},
      {model::SlidingMask::kFullLayer, "full_layer",
       "drafter layer 0 (sliding_attention, window 3) run as full attention, no window and a "
       "bidirectional block"},
      {model::SlidingMask::kContextWindowOnly, "context_window_only",
       "drafter layer 0 (sliding_attention, window 3) windowed on the context only, its block "
       "causal without the window (SpecForge's sliding mask"},
  };
  for (const auto& [mask, name, message] : masks) {
    rec.drafter_logits = drafter->training_logits(
        rec.fc_input, rec.input_ids, rec.anchors,
        model::DFlashDrafter::ContextVisibility::kBeforeAnchor, {{0}, mask});
    const CheckResult r = run(rec, std::string("sliding_") + name + ".safetensors");
    EXPECT_EQ(r.status, Status::kFail) << name;
    EXPECT_THAT(r.message, HasSubstr(message)) << name;
    // The cause named, not the checklist of the usual ones beside it.
    EXPECT_THAT(r.message, Not(HasSubstr("check the training mask"))) << name;
    EXPECT_EQ(r.measured["sliding_layers_mask"], name);
  }
}

}  // namespace
}  // namespace draftgate::checks
