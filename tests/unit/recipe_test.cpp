// The training recipe: decay weights, same-position labels, losses, and the training-mode drafter
// forward equal to inference mode for every anchor.

#include "draftgate/train/recipe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checks/metrics.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/random_checkpoint.h"
#include "synthetic_layouts.h"
#include "test_files.h"

namespace draftgate::train {
namespace {

TEST(Recipe, DecayWeights) {
  const at::Tensor w = position_weights(16, 7.0);
  EXPECT_FLOAT_EQ(w[0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(w[1].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(w[2].item<float>(), std::exp(-1.0f / 7.0f));
  EXPECT_FLOAT_EQ(w[15].item<float>(), std::exp(-14.0f / 7.0f));
}

TEST(Recipe, SamePositionLabelsMaskedAndCutAtTheEnd) {
  const std::vector<std::int64_t> ids = {10, 11, 12, 13, 14, 15}, mask = {0, 1, 1, 0, 1, 1};
  const BlockTargets t = block_targets(ids, mask, {1, 4}, 4, 4.0);
  EXPECT_EQ(t.labels[0][1].item<std::int64_t>(), 12);  // anchor 1, k = 1 → token at position 2
  EXPECT_EQ(t.weight[0][0].item<float>(), 0.0f);       // the anchor itself carries no label
  EXPECT_EQ(t.weight[0][2].item<float>(), 0.0f);       // loss_mask[3] = 0
  EXPECT_FLOAT_EQ(t.weight[0][3].item<float>(), std::exp(-2.0f / 4.0f));
  EXPECT_EQ(t.labels[1][1].item<std::int64_t>(), 15);
  EXPECT_EQ(t.weight[1][2].item<float>(), 0.0f);  // past the sequence end
}

TEST(Recipe, LossesOnAHandExample) {
  const std::vector<std::int64_t> ids = {0, 1, 2}, mask = {1, 1, 1};
  const BlockTargets t = block_targets(ids, mask, {0}, 3, 1.0);  // weights 0, 1, e^-1
  at::Tensor logits = at::zeros({1, 3, 3}, at::kDouble);
  logits[0][1][1] = 2.0;
  const double ce1 = -std::log(std::exp(2.0) / (std::exp(2.0) + 2.0)), ce2 = std::log(3.0);
  // The decay weights are float32.
  EXPECT_NEAR(weighted_cross_entropy(logits, t).item<double>(),
              (ce1 + std::exp(-1.0) * ce2) / (1 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(weighted_kl(logits, logits, t).item<double>(), 0.0, 1e-12);
  EXPECT_GT(weighted_kl(logits, at::zeros({1, 3, 3}), t).item<double>(), 0.0);
}

TEST(Recipe, GammaNoneIsUniform) {
  const at::Tensor w = position_weights(4, 0.0);  // SpecForge's loss_decay_gamma None
  EXPECT_FLOAT_EQ(w[0].item<float>(), 0.0f);
  for (int k = 1; k < 4; ++k) EXPECT_FLOAT_EQ(w[k].item<float>(), 1.0f);
}

// D-PACE against a loop over the definition (SpecForge _dpace_weight, speculators
// dpace_loss_decay): s_k = (1−α)e^{−CE_k} + α on supervised elements, 1 elsewhere; P = prefix
// product; W_k = Σ_{j≥k} P_j m_j.
TEST(Recipe, DpaceWeightsByTheDefinition) {
  const at::Tensor ce = at::rand({3, 5}, at::kDouble) * 3;
  at::Tensor mask = at::ones({3, 5}, at::kDouble);
  mask.select(1, 0).zero_();
  mask[1][3] = 0;
  const double alpha = 0.3;
  const at::Tensor got = dpace_weights(ce, mask, alpha);
  // SpecForge's other D-PACE loss types: P_k alone, and W_k / P_k.
  const at::Tensor prefix_only =
      dpace_weights(ce, mask, alpha, Weighting::kDpaceCumulativeConfidence);
  const at::Tensor continuation =
      dpace_weights(ce, mask, alpha, Weighting::kDpaceContinuationValue);
  auto prefix_at = [&](int j, int i) {
    double prefix = 1;
    for (int q = 0; q <= i; ++q)
      if (mask[j][q].item<double>() > 0)
        prefix *= (1 - alpha) * std::exp(-ce[j][q].item<double>()) + alpha;
    return prefix;
  };
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 5; ++k) {
      double want = 0;
      for (int i = k; i < 5; ++i) want += prefix_at(j, i) * mask[j][i].item<double>();
      EXPECT_NEAR(got[j][k].item<double>(), want, 1e-12) << j << "," << k;
      EXPECT_NEAR(prefix_only[j][k].item<double>(), prefix_at(j, k), 1e-12) << j << "," << k;
      EXPECT_NEAR(continuation[j][k].item<double>(), want / prefix_at(j, k), 1e-12)
          << j << "," << k;
    }
}

// The three normalisations on a hand example: two anchors in two rows.
TEST(Recipe, NormalisationsByHand) {
  const at::Tensor loss = at::tensor({0.0, 1.0, 2.0, 0.0, 3.0, 5.0}, at::kDouble).view({2, 3});
  const at::Tensor mask = at::tensor({0.0, 1.0, 1.0, 0.0, 1.0, 0.0}, at::kDouble).view({2, 3});
  LossRecipe r;  // uniform
  const at::Tensor w = recipe_weights(r, mask, loss);
  EXPECT_DOUBLE_EQ(recipe_loss(r, loss, mask, w), (1.0 + 2.0 + 3.0) / 3.0);
  r.normalization = Normalization::kRows;
  EXPECT_DOUBLE_EQ(recipe_loss(r, loss, mask, w, {0, 1}), (3.0 + 3.0) / 2.0);
  r.normalization = Normalization::kMaskSum;
  EXPECT_NEAR(recipe_loss(r, loss, mask, w, {0, 1}), (3.0 / (2 + 1e-5) + 3.0 / (1 + 1e-5)) / 2,
              1e-15);
  EXPECT_NEAR(recipe_loss(r, loss, mask, w), 6.0 / (3 + 1e-5), 1e-15);  // one row
}

TEST(Recipe, TeacherRowsPredictTheNextPosition) {
  const at::Tensor teacher = at::arange(5, at::kFloat).unsqueeze(1).expand({5, 2}).contiguous();
  const at::Tensor blocks = block_teacher_logits(teacher, {1, 3}, 3);
  EXPECT_EQ(blocks[0][1][0].item<float>(), 1.0f);  // k = 1 → position a + k − 1 = 1
  EXPECT_EQ(blocks[0][2][0].item<float>(), 2.0f);
  EXPECT_EQ(blocks[1][2][0].item<float>(), 4.0f);
}

// Also for causal drafter layers (is_causal true) and an input_embedding_scale: both modes apply
// them the same way.
TEST(Recipe, TrainingModeLogitsEqualInferenceModeForEveryAnchor) {
  const auto dir = testing::fresh_dir("recipe");
  model::RandomTargetSpec t;
  t.family = model::Family::kQwen3_5;
  t.layout = model::TargetLayout::kVlm;
  t.dtype = at::kFloat;
  model::write_random_target(dir / "target", t);
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  const auto target = model::TargetModel::load(target_ckpt, {});
  for (const bool causal_scaled : {false, true}) {
    const auto drafter_dir = dir / (causal_scaled ? "drafter_causal_scaled" : "drafter");
    model::RandomDrafterSpec d;
    d.dtype = at::kFloat;
    model::write_random_drafter(drafter_dir, d);
    if (causal_scaled) {
      auto config = nlohmann::json::parse(testing::read_file(drafter_dir / "config.json"));
      config["is_causal"] = true;
      config["dflash_config"]["input_embedding_scale"] = 1.5;
      testing::write_file(drafter_dir / "config.json", config.dump());
    }
    const auto drafter_ckpt = io::Checkpoint::open(drafter_dir);
    const auto drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
    ASSERT_EQ(drafter->config().layer_causal, std::vector<bool>(2, causal_scaled));

    std::vector<std::int64_t> ids;
    for (int i = 0; i < 20; ++i) ids.push_back((i * 29 + 3) % 250);
    const model::ForwardResult r = target->forward(ids, drafter->config().target_layer_ids, false);
    std::vector<std::int64_t> all(ids.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    const at::Tensor features = drafter->features(r, all);
    const std::vector<std::int64_t> anchors = {0, 3, 7, 12};
    const at::Tensor training = drafter->training_logits(features, ids, anchors);
    ASSERT_EQ(training.sizes().vec(), (std::vector<std::int64_t>{4, 8, 256}));
    for (std::size_t j = 0; j < anchors.size(); ++j) {
      model::DrafterState state = drafter->new_state();
      if (anchors[j] > 0) drafter->add_context(state, features.narrow(0, 0, anchors[j]));
      const at::Tensor inference = drafter->draft(state, ids[anchors[j]]);
      const at::Tensor rows = training[j].narrow(0, 1, 7);
      EXPECT_LT(checks::metrics::max_rel_diff(rows, inference), 1e-5)
          << "anchor " << anchors[j] << (causal_scaled ? ", causal and scaled" : "");
    }
  }
}

// Sliding drafter layers in training mode (is_causal absent: z-lab's rule, sliding layers causal
// inside the block, full layers not), the window inside the block (3) or reaching the context (10):
// every anchor's block equals inference; the sliding layer run as full attention does not.
TEST(Recipe, SlidingLayersInTrainingModeEqualInferenceForEveryAnchor) {
  const auto dir = testing::fresh_dir("recipe_sliding");
  model::RandomTargetSpec t;
  t.dtype = at::kFloat;
  model::write_random_target(dir / "target", t);
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  const auto target = model::TargetModel::load(target_ckpt, {});
  for (const std::int64_t window : {3, 10}) {
    const auto drafter_dir = dir / ("drafter" + std::to_string(window));
    model::RandomDrafterSpec d;
    d.dtype = at::kFloat;
    model::write_random_drafter(drafter_dir, d);
    auto config = nlohmann::json::parse(testing::read_file(drafter_dir / "config.json"));
    config["layer_types"] = {"sliding_attention", "full_attention"};
    config["sliding_window"] = window;
    config["use_sliding_window"] = true;
    config.erase("is_causal");
    testing::write_file(drafter_dir / "config.json", config.dump());
    const auto drafter = model::DFlashDrafter::load(io::Checkpoint::open(drafter_dir), *target);
    ASSERT_EQ(drafter->config().layer_causal, (std::vector<bool>{true, false}));
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 24; ++i) ids.push_back((i * 17 + 1) % 250);
    const model::ForwardResult r = target->forward(ids, drafter->config().target_layer_ids, false);
    std::vector<std::int64_t> all(ids.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    const at::Tensor features = drafter->features(r, all);
    const std::vector<std::int64_t> anchors = {0, 4, 15, 16};
    const at::Tensor training = drafter->training_logits(features, ids, anchors);
    for (std::size_t j = 0; j < anchors.size(); ++j) {
      model::DrafterState state = drafter->new_state();
      if (anchors[j] > 0) drafter->add_context(state, features.narrow(0, 0, anchors[j]));
      const at::Tensor inference = drafter->draft(state, ids[anchors[j]]);
      EXPECT_LT(checks::metrics::max_rel_diff(training[j].narrow(0, 1, 7), inference), 1e-5)
          << "window " << window << " anchor " << anchors[j];
    }
    const at::Tensor as_full = drafter->training_logits(
        features, ids, anchors, model::DFlashDrafter::ContextVisibility::kBeforeAnchor, {{0}});
    EXPECT_GT(checks::metrics::max_rel_diff(as_full, training), 1e-3) << "window " << window;
  }
}

}  // namespace
}  // namespace draftgate::train
