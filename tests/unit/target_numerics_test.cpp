// Target engines, every family and layout of the table: against a naive float64 implementation
// layer by layer, incremental against full-sequence, chunked against recurrent Gated DeltaNet,
// causality, rollback, tree verification, bf16 budgets.

#include <c10/core/InferenceMode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checks/metrics.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "naive_target.h"
#include "synthetic_layouts.h"
#include "target_families.h"

namespace draftgate::model {
namespace {

using checks::metrics::max_rel_diff;

constexpr double kF32Budget = 1e-5;

// Budget of a comparison that is exact (`dense`) but for rounding. Routed experts multiply a number
// of rows that depends on the whole sequence (the positions routed to each), so their float32
// rounding differs between two runs; the random qwen3_5_moe test model's hybrid layers amplify it
// (measured, a token changed at position 70, positions < 70: 3.8e-8, 1.1e-6, 1.1e-5, 1.4e-5
// relative at layers 0-3; chunked against recurrent Gated DeltaNet 1.3e-5, 1.6e-5 at layers 2-3
// and 1.8e-5 on the logits; qwen3_moe 5e-8..2e-7; the dense families bit-equal). A causal leak or a
// wrong Gated DeltaNet form moves outputs by > 1e-3.
double rounding_budget(const testing::FamilyCase& f, double dense) {
  const FamilyTraits t = traits_of(f.family);
  return t.mlp == MlpKind::kMoe && t.linear_attention ? 1e-4 : dense;
}

class TargetEngineTest : public ::testing::TestWithParam<testing::FamilyCase> {
 protected:
  // Writes (once per process and case) a random f32 checkpoint and loads it.
  const io::Checkpoint& checkpoint(at::ScalarType dtype = at::kFloat) {
    const std::string key = GetParam().name + (dtype == at::kFloat ? "_f32" : "_bf16");
    static std::map<std::string, std::unique_ptr<io::Checkpoint>> cache;
    auto& slot = cache[key];
    if (!slot) {
      RandomTargetSpec spec;
      spec.family = GetParam().family;
      spec.layout = GetParam().layout;
      spec.layers = 4;
      spec.dtype = dtype;
      spec.seed = 7;
      const auto dir = testing::fresh_dir("engine_" + key);
      write_random_target(dir, spec);
      slot = std::make_unique<io::Checkpoint>(io::Checkpoint::open(dir));
    }
    return *slot;
  }
  std::unique_ptr<TargetModel> load(GdnAlgorithm gdn = GdnAlgorithm::kChunked,
                                    at::ScalarType dtype = at::kFloat) {
    TargetOptions o;
    o.dtype = dtype;
    o.gdn = gdn;
    return TargetModel::load(checkpoint(dtype), o);
  }
  static std::vector<std::int64_t> tokens(std::size_t n, std::int64_t seed = 1) {
    std::vector<std::int64_t> t;
    for (std::size_t i = 0; i < n; ++i)
      t.push_back((seed * 37 + static_cast<std::int64_t>(i) * 101) % 256);
    return t;
  }
  static std::vector<std::int64_t> all_taps() { return {0, 1, 2, 3}; }
};

TEST_P(TargetEngineTest, MatchesNaiveFloat64ReferenceLayerByLayer) {
  const auto toks = tokens(12);
  const auto naive = testing::naive_forward(checkpoint(), toks);
  for (GdnAlgorithm gdn : {GdnAlgorithm::kChunked, GdnAlgorithm::kRecurrent}) {
    const ForwardResult r = load(gdn)->forward(toks, all_taps());
    for (std::int64_t l = 0; l < 4; ++l)
      EXPECT_LT(max_rel_diff(r.taps.at(l), naive.layer_outputs[l]), kF32Budget) << "layer " << l;
    EXPECT_LT(max_rel_diff(r.logits, naive.logits), kF32Budget);
  }
}

TEST_P(TargetEngineTest, IncrementalEqualsFullSequence) {
  const auto model = load();
  const auto toks = tokens(20);
  const ForwardResult full = model->forward(toks, all_taps());
  for (std::size_t block : {1u, 3u, 7u}) {
    TargetState state = model->new_state();
    std::vector<at::Tensor> logits, tap2;
    for (std::size_t s = 0; s < toks.size(); s += block) {
      const std::vector<std::int64_t> part(toks.begin() + s,
                                           toks.begin() + std::min(toks.size(), s + block));
      const ForwardResult r = model->extend(state, part, {}, {2});
      model->commit_all(state);
      logits.push_back(r.logits);
      tap2.push_back(r.taps.at(2));
    }
    EXPECT_LT(max_rel_diff(at::cat(logits), full.logits), kF32Budget) << "block " << block;
    EXPECT_LT(max_rel_diff(at::cat(tap2), full.taps.at(2)), kF32Budget) << "block " << block;
  }
}

TEST_P(TargetEngineTest, ChunkedEqualsRecurrentAcrossChunkBoundaries) {
  const auto toks = tokens(150);  // chunks of 64, 64, 22
  const ForwardResult chunked = load(GdnAlgorithm::kChunked)->forward(toks, all_taps());
  const ForwardResult recurrent = load(GdnAlgorithm::kRecurrent)->forward(toks, all_taps());
  const double budget = rounding_budget(GetParam(), kF32Budget);
  for (std::int64_t l = 0; l < 4; ++l)
    EXPECT_LT(max_rel_diff(chunked.taps.at(l), recurrent.taps.at(l)), budget) << "layer " << l;
  EXPECT_LT(max_rel_diff(chunked.logits, recurrent.logits), budget);
}

TEST_P(TargetEngineTest, LaterTokensNeverChangeEarlierOutputs) {
  const auto model = load();
  auto toks = tokens(80);
  const ForwardResult a = model->forward(toks, {3});
  toks[70] = (toks[70] + 1) % 256;
  const ForwardResult b = model->forward(toks, {3});
  EXPECT_LT(max_rel_diff(a.logits.narrow(0, 0, 70), b.logits.narrow(0, 0, 70)),
            rounding_budget(GetParam(), 1e-6));
  EXPECT_GT(max_rel_diff(a.logits.narrow(0, 70, 10), b.logits.narrow(0, 70, 10)), 1e-3)
      << "the change had no effect";
}

TEST_P(TargetEngineTest, RollbackThenReextendEqualsFreshForward) {
  const auto model = load();
  const auto prefix = tokens(10), draft = tokens(5, 9), more = tokens(4, 3);
  TargetState state = model->new_state();
  model->extend(state, prefix);
  model->commit_all(state);
  model->extend(state, draft);
  model->commit(state, {0, 1});  // keep two drafted tokens, reject three
  EXPECT_EQ(state.committed, 12);
  const ForwardResult r = model->extend(state, more, {}, {1});
  model->commit_all(state);

  std::vector<std::int64_t> seq = prefix;
  seq.insert(seq.end(), draft.begin(), draft.begin() + 2);
  seq.insert(seq.end(), more.begin(), more.end());
  const ForwardResult fresh = model->forward(seq, {1});
  EXPECT_LT(max_rel_diff(r.logits, fresh.logits.narrow(0, 12, 4)), kF32Budget);
  EXPECT_LT(max_rel_diff(r.taps.at(1), fresh.taps.at(1).narrow(0, 12, 4)), kF32Budget);
}

TEST_P(TargetEngineTest, TreeOfAChainEqualsLinearVerification) {
  const auto model = load();
  const auto prefix = tokens(9), draft = tokens(6, 5);
  TargetState linear = model->new_state(), tree = model->new_state();
  for (TargetState* s : {&linear, &tree}) {
    model->extend(*s, prefix);
    model->commit_all(*s);
  }
  const ForwardResult a = model->extend(linear, draft);
  const ForwardResult b = model->extend(tree, draft, {-1, 0, 1, 2, 3, 4});
  EXPECT_LT(max_rel_diff(b.logits, a.logits), kF32Budget);
}

TEST_P(TargetEngineTest, EveryTreeNodeSeesExactlyItsAncestors) {
  const auto model = load();
  const auto prefix = tokens(7);
  //        0 ─ 1 ─ 3
  //  tip ─┤    └ 4 ─ 6
  //        2 ─ 5
  const std::vector<std::int64_t> nodes = {11, 22, 33, 44, 55, 66, 77},
                                  parents = {-1, 0, -1, 1, 1, 2, 4};
  TargetState state = model->new_state();
  model->extend(state, prefix);
  model->commit_all(state);
  const ForwardResult tree = model->extend(state, nodes, parents, {3});
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::int64_t> path;
    for (auto n = static_cast<std::int64_t>(i); n >= 0; n = parents[n])
      path.insert(path.begin(), nodes[n]);
    std::vector<std::int64_t> seq = prefix;
    seq.insert(seq.end(), path.begin(), path.end());
    const ForwardResult ref = model->forward(seq, {3});
    EXPECT_LT(max_rel_diff(tree.logits[i], ref.logits[seq.size() - 1]), kF32Budget) << "node " << i;
  }
  // Commit the path 0 → 1 → 4 → 6 and continue: equals the linear sequence.
  model->commit(state, {0, 1, 4, 6});
  const ForwardResult next = model->extend(state, {99});
  std::vector<std::int64_t> seq = prefix;
  for (auto t : {11, 22, 55, 77, 99}) seq.push_back(t);
  EXPECT_LT(max_rel_diff(next.logits[0], model->forward(seq, {}).logits[seq.size() - 1]),
            kF32Budget);
}

// bf16 weights and activations against the f32 engine on the same (bf16-representable) weights.
// Measured on these 4-layer random models (40 tokens): logits rel. error 1.2e-2 (qwen3), 2.8e-2
// (qwen3_5), top-1 agreement 0.975 for both; per-layer errors are of the same order. Budgets: 5e-2
// and 0.9.
TEST_P(TargetEngineTest, Bf16WithinBudgetOfF32) {
  // Routed experts: bf16 router logits pick another expert than f32 where two are within bf16's
  // rounding, and that position's MLP output changes wholly (qwen3_moe here: median per-position
  // logits error 2.2e-2 as the dense families, one position at 0.16). A bf16-versus-f32 budget for
  // MoE targets needs a model of those flips; until then this dense budget does not apply.
  if (traits_of(GetParam().family).mlp == MlpKind::kMoe)
    GTEST_SKIP() << "no bf16-versus-f32 budget for routed experts yet (routing flips)";
  const auto toks = tokens(40);
  TargetOptions f32_opts;
  f32_opts.dtype = at::kFloat;
  const ForwardResult f32 =
      TargetModel::load(checkpoint(at::kBFloat16), f32_opts)->forward(toks, all_taps());
  const ForwardResult bf16 = load(GdnAlgorithm::kChunked, at::kBFloat16)->forward(toks, all_taps());
  for (std::int64_t l = 0; l < 4; ++l)
    EXPECT_LT(max_rel_diff(bf16.taps.at(l), f32.taps.at(l)), 5e-2) << "layer " << l;
  const double logits_err = max_rel_diff(bf16.logits, f32.logits);
  const double top1 =
      (bf16.logits.argmax(-1) == f32.logits.argmax(-1)).to(at::kDouble).mean().item<double>();
  RecordProperty("logits_rel_err", std::to_string(logits_err));
  RecordProperty("top1_agreement", std::to_string(top1));
  EXPECT_LT(logits_err, 5e-2);
  EXPECT_GE(top1, 0.9);
}

INSTANTIATE_TEST_SUITE_P(Families, TargetEngineTest,
                         ::testing::ValuesIn(testing::every_family_layout()),
                         [](const auto& p) { return p.param.name; });

// Recurrence inputs as the layer passes them: k L2-normalised, log decays <= 0, beta in [0, 1).
DeltaInputs random_delta_inputs(std::int64_t t, std::int64_t h, std::int64_t dk, std::int64_t dv) {
  DeltaInputs in;
  in.q = at::randn({t, h, dk});
  in.k = at::randn({t, h, dk});
  in.k = in.k / in.k.norm(2, -1, true);
  in.v = at::randn({t, h, dv});
  in.g = -at::rand({t, h});
  in.beta = at::rand({t, h});
  return in;
}

TEST(TargetEngine, GdnChunkedEqualsRecurrentOnRawInputs) {
  at::manual_seed(3);
  const std::int64_t t = 100, h = 3, dk = 8, dv = 5;
  const DeltaInputs in = random_delta_inputs(t, h, dk, dv);
  const at::Tensor s0 = at::randn({h, dk, dv});
  const DeltaOutputs rec = delta_rule_recurrent(in, s0);
  for (std::int64_t chunk : {1, 16, 64, 128}) {
    const DeltaOutputs ch = delta_rule_chunked(in, s0, chunk);
    EXPECT_LT(max_rel_diff(ch.out, rec.out), kF32Budget) << "chunk " << chunk;
    EXPECT_LT(max_rel_diff(ch.state, rec.state), kF32Budget) << "chunk " << chunk;
  }
}

// The chunked form runs ranges of heads on the threads: each head has the bits it has alone, in
// the fused loops (float32) and in the composition (float64).
TEST(TargetEngine, GdnChunkedHeadsHaveTheBitsOfEachHeadAlone) {
  at::manual_seed(4);
  const std::int64_t t = 40, h = 5, dk = 16, dv = 8;
  const DeltaInputs raw = random_delta_inputs(t, h, dk, dv);
  const at::Tensor raw_s0 = at::randn({h, dk, dv});
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const auto as = [&](const at::Tensor& x) { return x.to(dtype); };
    const DeltaInputs in{as(raw.q), as(raw.k), as(raw.v), as(raw.g), as(raw.beta)};
    const at::Tensor s0 = as(raw_s0);
    const DeltaOutputs all = delta_rule_chunked(in, s0, 16);
    {
      // The workers take the caller's modes: inference tensors written inside inference mode; no
      // graph under no-grad even for inputs that ask for one.
      const c10::InferenceMode inference;
      const DeltaOutputs inferred = delta_rule_chunked(in, s0, 16);
      EXPECT_TRUE(at::equal(inferred.out, all.out));
    }
    {
      const at::NoGradGuard no_grad;
      const DeltaOutputs untracked = delta_rule_chunked(in, s0.clone().requires_grad_(), 16);
      EXPECT_FALSE(untracked.out.requires_grad());
      EXPECT_TRUE(at::equal(untracked.state, all.state));
    }
    for (std::int64_t head = 0; head < h; ++head) {
      const auto one = [&](const at::Tensor& x) { return x.narrow(1, head, 1).contiguous(); };
      const DeltaOutputs alone =
          delta_rule_chunked({one(in.q), one(in.k), one(in.v), one(in.g), one(in.beta)},
                             s0.narrow(0, head, 1).contiguous(), 16);
      EXPECT_TRUE(at::equal(all.out.narrow(1, head, 1), alone.out)) << dtype << " head " << head;
      EXPECT_TRUE(at::equal(all.state.narrow(0, head, 1), alone.state))
          << dtype << " head " << head;
    }
  }
}

}  // namespace
}  // namespace draftgate::model
