// The chunked delta rule in plain loops (model/fused_delta_chunk.h) against the ATen composition
// (as autograd runs it) and both against float64, at a Qwen3.5-0.8B verify block's 16 heads of
// 128 x 128 and at ragged sizes that span several chunks; the input state untouched, a NaN kept to
// its head, and what it refuses.

#include "draftgate/model/fused_delta_chunk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace draftgate::model {
namespace {

struct Case {
  std::int64_t t, heads, dk, dv, chunk;
};

// Recurrence inputs as the layer passes them: q scaled, k L2-normalised, log decays <= 0, beta in
// [0, 1).
DeltaInputs inputs(const Case& c, std::int64_t seed) {
  at::manual_seed(seed);
  DeltaInputs in;
  in.q = at::randn({c.t, c.heads, c.dk}) / std::sqrt(static_cast<double>(c.dk));
  in.k = at::randn({c.t, c.heads, c.dk});
  in.k = in.k / in.k.norm(2, -1, true);
  in.v = at::randn({c.t, c.heads, c.dv});
  in.g = -at::rand({c.t, c.heads}) * 2;
  in.beta = at::rand({c.t, c.heads});
  return in;
}

DeltaInputs to_double(const DeltaInputs& in) {
  return {in.q.to(at::kDouble), in.k.to(at::kDouble), in.v.to(at::kDouble), in.g.to(at::kDouble),
          in.beta.to(at::kDouble)};
}

double distance(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

TEST(FusedDeltaChunk, IsAsCloseToFloat64AsTheComposition) {
  for (const Case& c : std::vector<Case>{{8, 16, 128, 128, 64},
                                         {16, 16, 128, 128, 64},
                                         {1, 4, 32, 16, 64},
                                         {37, 4, 32, 16, 16},
                                         {100, 3, 8, 8, 16}}) {
    const DeltaInputs in = inputs(c, c.t * 131 + c.heads);
    const at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
    ASSERT_TRUE(fused::takes_delta_rule_chunked(in, s0, c.chunk));
    const DeltaOutputs got = fused::delta_rule_chunked(in, s0, c.chunk);
    // The composition: the model's own path for inputs under autograd.
    const DeltaOutputs aten =
        delta_rule_chunked({in.q.clone().requires_grad_(), in.k, in.v, in.g, in.beta}, s0, c.chunk);
    // float64 through the recurrent form: an independent order of the same recurrence.
    const DeltaOutputs want = delta_rule_recurrent(to_double(in), s0.to(at::kDouble));
    const std::string where = "T " + std::to_string(c.t) + " chunk " + std::to_string(c.chunk) +
                              " dK " + std::to_string(c.dk);
    ASSERT_EQ(got.out.sizes(), want.out.sizes()) << where;
    ASSERT_EQ(got.state.sizes(), want.state.sizes()) << where;
    // Neither order of the float32 sums is the better one by more than a small factor, and both
    // are within float32's budget of the scale.
    EXPECT_LE(distance(got.out, want.out), 4 * distance(aten.out.detach(), want.out) + 1e-7)
        << where;
    EXPECT_LE(distance(got.state, want.state), 4 * distance(aten.state.detach(), want.state) + 1e-7)
        << where;
    EXPECT_LT(distance(got.out, want.out), 1e-5 * want.out.abs().max().item<double>()) << where;
    EXPECT_LT(distance(got.state, want.state), 1e-5 * want.state.abs().max().item<double>())
        << where;
  }
}

// One large decay and small ones after it in the chunk (a head that forgets at one token): a
// float32 running sum of g cancels in G_i − G_j to ~|G| · 2⁻²⁴ (found by an outside test: 1.7e-5 of
// the scale at g_0 = −100, 6.6e-5 at −300).
TEST(FusedDeltaChunk, ALargeDecayFollowedBySmallOnesKeepsItsPrecision) {
  for (const double first : {-100.0, -300.0, -1e4}) {
    const Case c{16, 2, 32, 32, 16};
    DeltaInputs in = inputs(c, 21);
    in.g.fill_(-0.05);
    in.g[0].fill_(first);
    const at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
    ASSERT_TRUE(fused::takes_delta_rule_chunked(in, s0, c.chunk));
    const DeltaOutputs got = fused::delta_rule_chunked(in, s0, c.chunk);
    const DeltaOutputs want = delta_rule_recurrent(to_double(in), s0.to(at::kDouble));
    EXPECT_LT(distance(got.out, want.out), 1e-5 * want.out.abs().max().item<double>())
        << "g_0 " << first;
    EXPECT_LT(distance(got.state, want.state), 1e-5 * want.state.abs().max().item<double>())
        << "g_0 " << first;
  }
}

TEST(FusedDeltaChunk, TheModelsChunkedFormTakesItAndLeavesTheStateAsItIs) {
  const Case c{16, 16, 128, 128, 64};
  const DeltaInputs in = inputs(c, 2);
  const at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
  const at::Tensor before = s0.clone();
  const DeltaOutputs direct = fused::delta_rule_chunked(in, s0, 64);
  const DeltaOutputs model = delta_rule_chunked(in, s0, 64);
  EXPECT_TRUE(at::equal(s0, before));
  EXPECT_TRUE(at::equal(direct.out, model.out));
  EXPECT_TRUE(at::equal(direct.state, model.state));
}

TEST(FusedDeltaChunk, NoTokensLeaveTheState) {
  const Case c{0, 2, 8, 8, 64};
  const DeltaInputs in = inputs(c, 3);
  const at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
  const DeltaOutputs got = fused::delta_rule_chunked(in, s0, 64);
  EXPECT_EQ(got.out.size(0), 0);
  EXPECT_TRUE(at::equal(got.state, s0));
}

TEST(FusedDeltaChunk, ANaNInOneHeadsStateStaysInThatHead) {
  const Case c{8, 4, 16, 16, 64};
  const DeltaInputs in = inputs(c, 9);
  at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
  s0[2][3][5] = NAN;
  const DeltaOutputs got = fused::delta_rule_chunked(in, s0, 64);
  EXPECT_TRUE(at::isnan(got.out.select(1, 2)).any().item<bool>());
  for (std::int64_t h : {0, 1, 3}) {
    EXPECT_TRUE(at::isfinite(got.out.select(1, h)).all().item<bool>()) << "head " << h;
    EXPECT_TRUE(at::isfinite(got.state[h]).all().item<bool>()) << "head " << h;
  }
}

TEST(FusedDeltaChunk, TakesShortFloat32ContiguousChunksOutsideAutogradOnly) {
  const Case c{8, 4, 16, 16, 64};
  const DeltaInputs in = inputs(c, 1);
  const at::Tensor s0 = at::randn({c.heads, c.dk, c.dv});
  EXPECT_TRUE(fused::takes_delta_rule_chunked(in, s0, c.chunk));
  EXPECT_FALSE(fused::takes_delta_rule_chunked(to_double(in), s0.to(at::kDouble), 64));
  EXPECT_FALSE(fused::takes_delta_rule_chunked(in, s0.transpose(1, 2), 64));  // not contiguous
  DeltaInputs other = in;
  other.v = in.v.narrow(2, 0, 12).contiguous();  // dV not a multiple of 8
  EXPECT_FALSE(fused::takes_delta_rule_chunked(other, s0.narrow(2, 0, 12).contiguous(), 64));
  other = in;
  other.g = in.g.narrow(0, 0, 3).contiguous();
  EXPECT_FALSE(fused::takes_delta_rule_chunked(other, s0, 64));
  other = in;
  other.q = in.q.clone().requires_grad_();
  EXPECT_FALSE(fused::takes_delta_rule_chunked(other, s0, 64));
  const DeltaInputs prefill = inputs({40, 4, 16, 16, 64}, 1);  // chunks of 64 tokens: not here
  EXPECT_FALSE(fused::takes_delta_rule_chunked(prefill, s0, 64));
  EXPECT_TRUE(fused::takes_delta_rule_chunked(prefill, s0, 16));
  const at::NoGradGuard no_grad;  // a tensor that asks for a graph gets none here
  EXPECT_TRUE(fused::takes_delta_rule_chunked(other, s0, 64));
}

}  // namespace
}  // namespace draftgate::model
