// The fixture trainer's pieces: the task mix is what it says (deterministic answers, held-out
// prompts never trained on), autograd mode computes what inference mode computes and learns, and a
// recipe step records what it used.

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "draftgate/train/recipe.h"
#include "optimizer.h"
#include "synthetic_layouts.h"
#include "task_mix.h"
#include "train_drafter.h"

namespace draftgate::fixtures {
namespace {
namespace fs = std::filesystem;

std::vector<std::int64_t> args_of(const Instance& in) {  // between the tag and "="
  return {in.prompt.begin() + 2, in.prompt.end() - 1};
}

TEST(TaskMix, AnswersFollowFromTheirPrompts) {
  const TaskMix mix(7, 6);
  ASSERT_EQ(mix.held_out().size(), 30u);
  for (const auto& in : mix.held_out()) {
    std::vector<std::int64_t> a = args_of(in), answer(in.answer.begin(), in.answer.end() - 1);
    EXPECT_EQ(in.answer.back(), kSep);
    std::vector<std::int64_t> expected = a;
    if (in.task == Task::kReverse) std::reverse(expected.begin(), expected.end());
    if (in.task == Task::kSort) std::sort(expected.begin(), expected.end());
    if (in.task == Task::kArithmetic) {
      expected.clear();
      for (std::int64_t i = 0; i < 10; ++i)
        expected.push_back(kFirstSymbol +
                           (a[0] - kFirstSymbol + i * (a[1] - kFirstSymbol)) % kNumSymbols);
    }
    if (in.task == Task::kRepeat) {
      expected.clear();
      for (std::size_t i = 0; i < 12; ++i) expected.push_back(a[i % a.size()]);
    }
    EXPECT_EQ(answer, expected) << task_name(in.task);
    for (auto t : in.prompt) EXPECT_NE(t, kMaskId);
  }
}

TEST(TaskMix, TrainingSequencesNeverHoldAHeldOutPromptAndMaskOnlyAnswers) {
  TaskMix mix(7, 6);
  std::set<std::vector<std::int64_t>> held;
  for (const auto& in : mix.held_out()) held.insert({in.prompt.begin() + 1, in.prompt.end()});
  for (int n = 0; n < 200; ++n) {
    const Sequence s = mix.training_sequence(128);
    ASSERT_LE(s.input_ids.size(), 128u);
    ASSERT_EQ(s.loss_mask.size(), s.input_ids.size());
    for (std::size_t p = 0; p < s.input_ids.size(); ++p) {
      if (s.input_ids[p] == kEquals) {
        EXPECT_EQ(s.loss_mask[p], 0);
      }
      if (p > 0 && s.input_ids[p - 1] == kEquals) {
        EXPECT_EQ(s.loss_mask[p], 1);
      }
      if (s.input_ids[p] < 2 || s.input_ids[p] > 6 || p == 0 || s.input_ids[p - 1] != kSep)
        continue;
      const auto eq = std::find(s.input_ids.begin() + p, s.input_ids.end(), kEquals);
      EXPECT_EQ(held.count({s.input_ids.begin() + p, eq + 1}), 0u) << "held-out prompt trained on";
    }
  }
}

const fs::path& tiny_target() {
  static const fs::path dir = [] {
    const fs::path d = testing::fresh_dir("fixture_training") / "target";
    model::RandomTargetSpec s;
    s.family = model::Family::kQwen3_5;
    s.layout = model::TargetLayout::kVlm;
    s.vocab = kVocab;
    s.dtype = at::kFloat;
    model::write_random_target(d, s);
    return d;
  }();
  return dir;
}

TEST(AutogradMode, ComputesWhatInferenceComputesAndLearns) {
  const io::Checkpoint ckpt = io::Checkpoint::open(tiny_target());
  model::TargetOptions o;
  o.autograd = true;
  const auto trainable = model::TargetModel::load(ckpt, o);
  const auto frozen = model::TargetModel::load(ckpt, {});
  EXPECT_TRUE(frozen->parameters().empty());
  EXPECT_TRUE(trainable->parameters().count("model.language_model.layers.0.linear_attn.A_log"));
  TaskMix mix(3, 1);
  const Sequence seq = mix.training_sequence(48);
  const at::Tensor before = trainable->forward(seq.input_ids, {}).logits;
  EXPECT_TRUE(at::allclose(before, frozen->forward(seq.input_ids, {}).logits, 1e-5, 1e-5));

  Schedule schedule;
  schedule.steps = 30;
  TrainingOptimizer opt(trainable->parameters(), schedule);
  auto loss = [&] {
    const at::Tensor logits = trainable->forward(seq.input_ids, {}).logits;
    return at::cross_entropy_loss(logits.narrow(0, 0, logits.size(0) - 1),
                                  at::tensor(seq.input_ids).narrow(0, 1, logits.size(0) - 1));
  };
  // The short convolution's weight learns too (a 48-token chain takes the gathered windows).
  loss().backward();
  const at::Tensor conv =
      trainable->parameters().at("model.language_model.layers.0.linear_attn.conv1d.weight");
  ASSERT_TRUE(conv.grad().defined());
  EXPECT_GT(conv.grad().abs().sum().item<double>(), 0.0);
  for (const auto& [name, t] : trainable->parameters()) {
    at::Tensor p = t;
    p.mutable_grad().reset();
  }
  const double first = loss().item<double>();
  for (int s = 0; s < schedule.steps; ++s) opt.step(loss(), s);
  EXPECT_LT(loss().item<double>(), 0.5 * first) << "30 steps on one sequence must fit it";
}

TEST(DrafterStep, RecordsWhatItUsedAndTheBugVariantsDiffer) {
  const fs::path dir = tiny_target().parent_path();
  DrafterRun run;
  run.spec.vocab = kVocab;
  run.spec.mask_token_id = kMaskId;
  run.spec.dtype = at::kFloat;
  model::write_random_drafter(dir / "drafter", run.spec);
  const io::Checkpoint tc = io::Checkpoint::open(tiny_target());
  const io::Checkpoint dc = io::Checkpoint::open(dir / "drafter");
  const auto target = model::TargetModel::load(tc, {});
  const auto drafter = model::DFlashDrafter::load(dc, *target, /*autograd=*/true);
  for (const auto& [name, t] : drafter->parameters()) t.requires_grad_(true);
  TaskMix mix(5, 1);
  const Sequence seq = mix.training_sequence(96);
  auto step = [&](DrafterBug bug) {
    run.bug = bug;
    run.teacher_noise_std = bug == DrafterBug::kTeacherNoise ? 4.0 : 0.0;
    std::mt19937_64 rng(1);
    at::Generator noise = at::make_generator<at::CPUGeneratorImpl>(1);
    return drafter_step(*target, *drafter, seq, run, {0, 2}, rng, noise);
  };
  const DrafterStep ref = step(DrafterBug::kNone);
  ASSERT_FALSE(ref.record.anchors.empty());
  for (auto a : ref.record.anchors) EXPECT_EQ(seq.loss_mask[a + 1], 1);
  train::BlockTargets t = train::block_targets(ref.record.input_ids, ref.record.loss_mask,
                                               ref.record.anchors, 8, run.gamma);
  t.labels = ref.record.labels;
  EXPECT_NEAR(
      train::weighted_cross_entropy(ref.record.drafter_logits.to(at::kDouble), t).item<double>(),
      ref.record.logged_loss, 1e-5);
  ref.loss.backward();
  EXPECT_TRUE(drafter->parameters().at("fc.weight").grad().defined());

  const DrafterStep leak = step(DrafterBug::kFinalLayerLeak);
  EXPECT_FALSE(at::allclose(leak.record.drafter_logits, ref.record.drafter_logits));
  const DrafterStep noisy = step(DrafterBug::kTeacherNoise);
  EXPECT_FALSE(at::equal(noisy.record.labels, ref.record.labels));
  const DrafterStep kl = step(DrafterBug::kKlLoss);
  EXPECT_EQ(kl.record.loss, train::LossType::kSoftKl);
  EXPECT_TRUE(at::equal(kl.record.drafter_logits, ref.record.drafter_logits));
}

}  // namespace
}  // namespace draftgate::fixtures
