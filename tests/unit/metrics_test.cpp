// The metrics every check compares with reduce [positions, vocabulary]-sized tensors a slice at a
// time (checks/metrics.cpp): each must equal the whole-tensor float64 formula it replaces, on
// tensors several slices long, in float32 and bf16, with NaN, broadcasting and a large mean.

#include "checks/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace draftgate::checks {
namespace {

at::Tensor f64(const at::Tensor& t) { return t.to(at::kDouble); }

// [300, 20011]: 6 M elements, three slices and a ragged one, rows straddling slice boundaries.
struct Pair {
  at::Tensor ref, got;
};
Pair logits(at::ScalarType dtype, double offset = 0) {
  at::manual_seed(7);
  const at::Tensor ref = (at::randn({300, 20011}) * 3 + offset).to(dtype);
  const at::Tensor got = (ref.to(at::kFloat) + 0.01 * at::randn({300, 20011})).to(dtype);
  return {ref, got};
}

// Both sides sum millions of float64 terms in different orders: measured apart by up to 4.5e-12
// of the value here; a sum's own error bound is n · 2^-53 ≈ 7e-10 at n = 6 M.
void expect_near_relative(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-10 * std::abs(want)) << what;
}

TEST(Metrics, SlicedReductionsEqualTheWholeTensorFormulas) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    const auto [ref, got] = logits(dtype);
    const at::Tensor r = f64(ref), g = f64(got);
    expect_near_relative(metrics::rms(ref), r.pow(2).mean().sqrt().item<double>(), "rms");
    expect_near_relative(metrics::nmse(got, ref),
                         ((g - r).pow(2).sum() / r.pow(2).sum()).item<double>(), "nmse");
    EXPECT_EQ(metrics::max_abs_diff(got, ref), (g - r).abs().max().item<double>());
    EXPECT_EQ(metrics::max_rel_diff(got, ref),
              (g - r).abs().max().item<double>() / r.abs().max().item<double>());
    expect_near_relative(metrics::noise_ratio(got, ref),
                         ((g - r).std() / r.pow(2).mean().sqrt()).item<double>(), "noise_ratio");
    const at::Tensor p = at::log_softmax(r, -1), q = at::log_softmax(g, -1);
    expect_near_relative(metrics::mean_kl(ref, got),
                         (p.exp() * (p - q)).sum(-1).mean().item<double>(), "mean_kl");
    const at::Tensor top = std::get<0>(r.topk(2, -1));
    EXPECT_TRUE(at::equal(metrics::top2_margin(ref), top.select(-1, 0) - top.select(-1, 1)));
  }
}

TEST(Metrics, NoiseRatioIsStableUnderALargeMean) {
  // A residual whose mean is far above its spread: merging per-slice means and squared deviations
  // must not lose the spread to cancellation (a one-pass Σd² − (Σd)²/n would).
  const at::Tensor ref = at::randn({300, 20011}, at::kDouble);
  const at::Tensor got = ref + 1e6 + 1e-3 * at::randn({300, 20011}, at::kDouble);
  expect_near_relative(metrics::noise_ratio(got, ref),
                       ((got - ref).std() / ref.pow(2).mean().sqrt()).item<double>(),
                       "noise_ratio, mean 1e6");
}

TEST(Metrics, NanAnywhereAndBroadcastingBehaveAsTheWholeTensor) {
  auto [ref, got] = logits(at::kFloat);
  got[299][20010] = NAN;  // in the last, ragged slice
  EXPECT_TRUE(std::isnan(metrics::max_abs_diff(got, ref)));
  EXPECT_TRUE(std::isnan(metrics::max_rel_diff(got, ref)));
  EXPECT_TRUE(std::isnan(metrics::noise_ratio(got, ref)));
  EXPECT_TRUE(std::isnan(metrics::nmse(got, ref)));
  // One row against many: broadcast as the whole-tensor formula broadcasts.
  const at::Tensor row = ref[0];
  EXPECT_EQ(metrics::max_abs_diff(ref, row), (f64(ref) - f64(row)).abs().max().item<double>());
  EXPECT_TRUE(std::isnan(metrics::rms(at::empty({0}))));
}

TEST(Metrics, RowSlicesCoverEveryRowOnceInOrder) {
  const at::Tensor rows =
      at::zeros({300, 20011});  // 104 rows a slice: three slices, the last short
  int calls = 0;
  const at::Tensor seen =
      metrics::per_row_slice(rows, [&](const at::Tensor& x, std::int64_t first, std::int64_t n) {
        ++calls;
        EXPECT_EQ(x.scalar_type(), at::kDouble);
        EXPECT_EQ(x.size(0), n);
        return at::arange(first, first + n, at::kLong);
      });
  EXPECT_TRUE(at::equal(seen, at::arange(300, at::kLong)));
  EXPECT_EQ(calls, 3);
  const at::Tensor none = metrics::per_row_slice(
      at::zeros({0, 7}), [](const at::Tensor& x, std::int64_t, std::int64_t) { return x.sum(-1); });
  EXPECT_EQ(none.numel(), 0);
}

}  // namespace
}  // namespace draftgate::checks
