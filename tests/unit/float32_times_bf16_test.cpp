// A float32 x times a bf16 weight (the checks' float32 forward over a bf16 checkpoint), and the two
// kernels that take it — the AMX tiles (model/amx_matmul.h) and, on a CPU without them, AVX-512
// FMAs (model/fma_gemm.h) — each against a float64 product of the same values on the error bound
// its header states: 3K exact products accumulated in float32 for the tiles, K for the FMAs.
// dense() is checked on whichever path this CPU takes (AMX tiles, FMAs, else the weight widened a
// block at a time); each kernel is skipped, saying so, on a CPU without its instructions.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "draftgate/model/amx_matmul.h"
#include "draftgate/model/fma_gemm.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {
namespace {

// |y - y64| <= (terms · K + 32) · 2^-24 · Σ|w||x|, plus half an ulp of the output dtype.
double error_ratio(const at::Tensor& y, const at::Tensor& x, const at::Tensor& w, int terms) {
  const at::Tensor x64 = x.reshape({-1, x.size(-1)}).to(at::kDouble), w64 = w.to(at::kDouble);
  const at::Tensor exact = at::matmul(x64, w64.t());
  const double k = static_cast<double>(w.size(1));
  const at::Tensor accumulation =
      at::matmul(x64.abs(), w64.abs().t()) * ((terms * k + 32) * std::ldexp(1.0, -24));
  const double half_ulp =
      y.scalar_type() == at::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
  const at::Tensor allowed = accumulation + (exact.abs() + accumulation) * half_ulp + 1e-30;
  const at::Tensor err = (y.reshape({-1, w.size(0)}).to(at::kDouble) - exact).abs();
  return (err / allowed).max().item<double>();
}

// Values over many binades (a hidden state's outliers beside small entries): every term of the
// split matters.
at::Tensor spread(std::vector<std::int64_t> shape, std::uint64_t seed) {
  at::manual_seed(seed);
  return at::randn(shape) * at::pow(2.0, at::randint(-12, 12, shape).to(at::kFloat));
}

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // rows, K, N

const Shape kShapes[] = {{17, 64, 32},  {24, 96, 64},    {32, 128, 96}, {33, 544, 160},
                         {100, 64, 32}, {130, 1056, 64}, {64, 5120, 32}};

TEST(Float32TimesBf16, DenseIsAFloat32GemmOfTheExactProducts) {
  for (const auto& [rows, k, n] : kShapes) {
    const at::Tensor x = spread({rows, k}, 1 + k), w = spread({n, k}, 2 + n).to(at::kBFloat16);
    const at::Tensor y = dense(x, w);
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    EXPECT_LE(error_ratio(y, x, w, 3), 1.0) << rows << " x " << k << " x " << n;
  }
  // Shapes the tiles do not take (N not a multiple of 32) and a 3-D x.
  const at::Tensor x = spread({2, 20, 64}, 5), w = spread({48, 64}, 6).to(at::kBFloat16);
  EXPECT_LE(error_ratio(dense(x, w), x, w, 3), 1.0);
  EXPECT_EQ(dense(x, w).sizes(), (std::vector<std::int64_t>{2, 20, 48}));
}

class AmxMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!amx_available())
      GTEST_SKIP() << "this CPU (or its kernel) offers no AMX-BF16 tiles; dense() widens instead";
  }
};

TEST_F(AmxMatmul, AFloat32XIsSplitIntoExactTermsAndAccumulatedInFloat32) {
  for (const auto& [rows, k, n] : kShapes) {
    const at::Tensor x = spread({rows, k}, 3 + k), w = spread({n, k}, 4 + n).to(at::kBFloat16);
    ASSERT_TRUE(amx_matmul_applies(x, w));
    const at::Tensor y = amx_matmul(x, w);
    const double ratio = error_ratio(y, x, w, 3);
    EXPECT_LE(ratio, 1.0) << rows << " x " << k << " x " << n;
    // One bf16 term would be off by ~2^-9 of |x|: far outside the float32 bound where K is small
    // (the bound grows with K, a random error with √K).
    if (k <= 128) {
      EXPECT_GT(error_ratio(at::matmul(x.to(at::kBFloat16).to(at::kDouble), w.to(at::kDouble).t()),
                            x, w, 3),
                10.0)
          << "the test cannot tell one term from three";
    }
  }
}

// Beside the worst-case bound, the typical error: within 2x of a float32 GEMM of the widened
// weight (OpenBLAS here), the reference any float32 trainer's numbers are judged against.
TEST_F(AmxMatmul, ItsTypicalErrorIsAFloat32GemmsAtARealShape) {
  const at::Tensor x = spread({128, 5120}, 9), w = (at::randn({256, 5120}) / 70).to(at::kBFloat16);
  const at::Tensor exact = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  const auto rms_error = [&](const at::Tensor& y) {
    return (y.to(at::kDouble) - exact).pow(2).mean().sqrt().item<double>();
  };
  const double amx = rms_error(amx_matmul(x, w));
  const double gemm = rms_error(at::linear(x, w.to(at::kFloat)));
  EXPECT_LE(amx, 2 * gemm) << "AMX " << amx << " vs float32 GEMM " << gemm;
  EXPECT_GT(amx, 0.0);
}

TEST_F(AmxMatmul, ABf16XIsOneTermRoundedOnce) {
  for (const auto& [rows, k, n] : kShapes) {
    const at::Tensor x = spread({rows, k}, 5 + k).to(at::kBFloat16);
    const at::Tensor w = spread({n, k}, 6 + n).to(at::kBFloat16);
    const at::Tensor y = amx_matmul(x, w);
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);
    EXPECT_LE(error_ratio(y, x, w, 1), 1.0) << rows << " x " << k << " x " << n;
  }
}

// The tiles write a bf16 product as c10::BFloat16 rounds the float32 sum (nearest even, NaN as a
// NaN, a sum past bf16's largest value to infinity): a bf16 x is the float32 x it widens to, split
// into one nonzero term, so the float32 product rounded by torch must have the same bits.
TEST_F(AmxMatmul, ABf16ProductIsTheFloat32SumRoundedAsTorchRoundsIt) {
  const std::int64_t rows = 16, k = 64, n = 4096;  // 64 K outputs: a rounding off by 16 ulp shows
  at::Tensor x = spread({rows, k}, 11).to(at::kBFloat16);
  at::Tensor w = spread({n, k}, 12);
  w.narrow(0, 32, 32).mul_(std::ldexp(1.0, 110));  // sums past float32's and bf16's range
  w = w.to(at::kBFloat16);
  x[3][9] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor y = amx_matmul(x, w);
  const at::Tensor reference = amx_matmul(x.to(at::kFloat), w).to(at::kBFloat16);
  ASSERT_EQ(y.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::isnan(y[3]).all().item<bool>());
  EXPECT_GT(at::isinf(y).sum().item<std::int64_t>(), 0) << "no sum overflowed: a weak test";
  const at::Tensor same =
      (y.view(at::kShort) == reference.view(at::kShort)) | (at::isnan(y) & at::isnan(reference));
  EXPECT_TRUE(same.all().item<bool>())
      << (~same).sum().item<std::int64_t>() << " of " << y.numel() << " outputs differ";
}

// Each output is summed in one order whatever the number of rows: a row has the bits of the same
// row multiplied alone (padded to a tile); a NaN stays in its row.
TEST_F(AmxMatmul, ARowHasTheSameBitsInAProductOfAnyNumberOfRowsAndNaNStaysInItsRow) {
  const at::Tensor x = spread({70, 256}, 7), w = spread({64, 256}, 8).to(at::kBFloat16);
  const at::Tensor all = amx_matmul(x, w);
  for (std::int64_t r : {0, 31, 32, 69})
    EXPECT_TRUE(at::equal(amx_matmul(x.narrow(0, r, 1), w), all.narrow(0, r, 1))) << "row " << r;
  at::Tensor bad = x.clone();
  bad[5][17] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor y = amx_matmul(bad, w);
  EXPECT_TRUE(at::isnan(y[5]).all().item<bool>());
  EXPECT_TRUE(at::equal(y.narrow(0, 0, 5), all.narrow(0, 0, 5)));
  EXPECT_TRUE(at::equal(y.narrow(0, 6, 64), all.narrow(0, 6, 64)));
}

// Several weights sharing x (q, k and v; gate and up) in one call: each product has the bits of
// the same product alone, for a verify block's bf16 rows and a float32 forward's many rows, and
// across the weights' boundaries whatever the threads' split.
TEST_F(AmxMatmul, SeveralWeightsSharingXHaveTheBitsOfEachAlone) {
  const std::vector<at::Tensor> ws = {spread({96, 256}, 11).to(at::kBFloat16),
                                      spread({32, 256}, 12).to(at::kBFloat16),
                                      spread({160, 256}, 13).to(at::kBFloat16)};
  for (const at::Tensor& x : {spread({16, 256}, 14).to(at::kBFloat16),
                              spread({1, 256}, 15).to(at::kBFloat16), spread({70, 256}, 16)}) {
    const std::vector<at::Tensor> ys = amx_matmul(x, ws);
    ASSERT_EQ(ys.size(), ws.size());
    for (std::size_t i = 0; i < ws.size(); ++i)
      EXPECT_TRUE(at::equal(ys[i], amx_matmul(x, ws[i])))
          << "weight " << i << ", rows " << x.size(0);
  }
  // 70 float32 rows in three terms over K = 2304: k in two chunks, partial sums between them.
  const at::Tensor x = spread({70, 2304}, 26);
  const std::vector<at::Tensor> long_ws = {spread({64, 2304}, 27).to(at::kBFloat16),
                                           spread({96, 2304}, 28).to(at::kBFloat16)};
  const std::vector<at::Tensor> ys = amx_matmul(x, long_ws);
  for (std::size_t i = 0; i < long_ws.size(); ++i) {
    EXPECT_TRUE(at::equal(ys[i], amx_matmul(x, long_ws[i]))) << "weight " << i << ", K in chunks";
    EXPECT_LE(error_ratio(ys[i], x, long_ws[i], 3), 1.0) << "weight " << i;
  }
  EXPECT_THROW(amx_matmul(spread({4, 256}, 17), {ws[0], spread({32, 128}, 18).to(at::kBFloat16)}),
               std::invalid_argument)
      << "weights of another K";
}

// A widened product is the bf16 product's values as float32, NaN included, in one pass.
TEST_F(AmxMatmul, AWidenedProductIsTheBf16ProductAsFloat32) {
  at::Tensor x = spread({16, 256}, 19).to(at::kBFloat16);
  x[3][7] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor w = spread({224, 256}, 20).to(at::kBFloat16);
  const at::Tensor widened = amx_matmul(x, w, ProductOutput::kWidened);
  ASSERT_EQ(widened.scalar_type(), at::kFloat);
  const at::Tensor want = amx_matmul(x, w).to(at::kFloat);
  const at::Tensor same = (widened == want) | (at::isnan(widened) & at::isnan(want));
  EXPECT_TRUE(same.all().item<bool>()) << (~same).sum().item<std::int64_t>() << " differ";
  EXPECT_THROW(amx_matmul(x.to(at::kFloat), w, ProductOutput::kWidened), std::invalid_argument);
}

class FmaGemm : public ::testing::TestWithParam<FmaGemmIsa> {
 protected:
  void SetUp() override {
    if (!fma_gemm_available(GetParam()))
      GTEST_SKIP() << "this CPU (or build) has no " << fma_gemm_isa_name(GetParam())
                   << " FMA kernel";
  }
  at::Tensor product(const at::Tensor& x, const at::Tensor& w) const {
    return fma_gemm(x, w, GetParam());
  }
};

// Shapes around the kernels' blocking: rows past a panel (32 / 16 rows) and past 8 panels (kept
// sums), K past a 256-column block and not a multiple of 16, N not a multiple of the tile (12 / 6).
const Shape kFmaShapes[] = {{17, 64, 32},    {33, 300, 13},  {100, 257, 25}, {300, 96, 1},
                            {130, 1056, 64}, {64, 5120, 24}, {257, 520, 37}, {20, 15, 12}};

TEST_P(FmaGemm, IsAFloat32GemmOfTheExactProducts) {
  for (const auto& [rows, k, n] : kFmaShapes) {
    const at::Tensor x = spread({rows, k}, 31 + k), w = spread({n, k}, 32 + n).to(at::kBFloat16);
    ASSERT_TRUE(fma_gemm_applies(x, w));
    const at::Tensor y = product(x, w);
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{rows, n}));
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    EXPECT_LE(error_ratio(y, x, w, 1), 1.0) << rows << " x " << k << " x " << n;
    if (k <= 128) {  // x rounded to bf16 is far outside the bound: the test can tell
      EXPECT_GT(error_ratio(at::matmul(x.to(at::kBFloat16).to(at::kDouble), w.to(at::kDouble).t()),
                            x, w, 1),
                10.0);
    }
  }
}

// The typical error at a real shape: within 2x of OpenBLAS's float32 GEMM of the widened weight.
TEST_P(FmaGemm, ItsTypicalErrorIsAFloat32GemmsAtARealShape) {
  const at::Tensor x = spread({128, 5120}, 39), w = (at::randn({96, 5120}) / 70).to(at::kBFloat16);
  const at::Tensor exact = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  const auto rms_error = [&](const at::Tensor& y) {
    return (y.to(at::kDouble) - exact).pow(2).mean().sqrt().item<double>();
  };
  const double fma = rms_error(product(x, w)), gemm = rms_error(at::linear(x, w.to(at::kFloat)));
  EXPECT_LE(fma, 2 * gemm) << "FMA " << fma << " vs float32 GEMM " << gemm;
  EXPECT_GT(fma, 0.0);
}

// Each output is summed in the same order whatever the rows beside it, the tile it falls in, the
// threads or the instruction set: a row has the bits of the same row alone, and of the other
// kernel; a NaN stays in its row, an infinite weight in its column.
TEST_P(FmaGemm, ARowHasItsBitsAloneWhateverTheThreadsAndNonFiniteValuesStayPut) {
  const at::Tensor x = spread({300, 520}, 41), w = spread({37, 520}, 42).to(at::kBFloat16);
  const at::Tensor all = product(x, w);
  for (std::int64_t r : {0, 15, 16, 31, 32, 255, 256, 299})
    EXPECT_TRUE(at::equal(product(x.narrow(0, r, 1), w), all.narrow(0, r, 1))) << "row " << r;
  EXPECT_TRUE(at::equal(product(x.narrow(0, 40, 70), w), all.narrow(0, 40, 70)));
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor one_thread = product(x, w);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one_thread, all));
  for (FmaGemmIsa other : {FmaGemmIsa::kAvx512, FmaGemmIsa::kAvx2}) {
    if (fma_gemm_available(other)) {
      EXPECT_TRUE(at::equal(fma_gemm(x, w, other), all)) << fma_gemm_isa_name(other);
    }
  }

  at::Tensor bad_x = x.clone(), bad_w = w.clone();
  bad_x[5][17] = std::numeric_limits<float>::quiet_NaN();
  bad_w[30][400] = std::numeric_limits<float>::infinity();
  const at::Tensor y = product(bad_x, bad_w);
  EXPECT_TRUE(at::isnan(y[5]).all().item<bool>());
  const at::Tensor column = y.select(1, 30);
  EXPECT_EQ(
      at::isinf(column).sum().item<std::int64_t>() + at::isnan(column).sum().item<std::int64_t>(),
      300);
  at::Tensor rest = y.clone(), want = all.clone();
  for (at::Tensor* t : {&rest, &want}) {
    t->select(0, 5).zero_();
    t->select(1, 30).zero_();
  }
  EXPECT_TRUE(at::equal(rest, want));
}

// A weight whose rows are strided (a slice of a wider tensor) and an x of three dims.
TEST_P(FmaGemm, TakesStridedWeightRowsAndAnyLeadingDims) {
  const at::Tensor wide = spread({40, 700}, 43).to(at::kBFloat16);
  const at::Tensor w = wide.narrow(1, 100, 600);
  ASSERT_FALSE(w.is_contiguous());
  const at::Tensor x = spread({3, 50, 600}, 44);
  ASSERT_TRUE(fma_gemm_applies(x, w));
  const at::Tensor y = product(x, w);
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 50, 40}));
  EXPECT_TRUE(at::equal(y, product(x, w.contiguous())));
  EXPECT_LE(error_ratio(y, x, w, 1), 1.0);
  EXPECT_FALSE(fma_gemm_applies(x.to(at::kBFloat16), w)) << "a bf16 x is the dot kernels'";
  EXPECT_FALSE(fma_gemm_applies(x, w.to(at::kFloat)));
}

std::string isa_name(const ::testing::TestParamInfo<FmaGemmIsa>& param) {
  return fma_gemm_isa_name(param.param);
}
INSTANTIATE_TEST_SUITE_P(EachIsa, FmaGemm,
                         ::testing::Values(FmaGemmIsa::kAvx512, FmaGemmIsa::kAvx2), isa_name);

// dense() takes the widest FMA kernel for a float32 x of many rows where there are no AMX tiles.
TEST(FmaGemmInDense, IsWhatDenseTakesWithoutAmx) {
  if (amx_available()) GTEST_SKIP() << "this CPU has AMX tiles: dense() takes them";
  if (!fma_gemm_available()) GTEST_SKIP() << "no FMA kernel here: dense() widens for OpenBLAS";
  const at::Tensor x = spread({64, 512}, 45), w = spread({1024, 512}, 46).to(at::kBFloat16);
  EXPECT_TRUE(at::equal(dense(x, w), fma_gemm(x, w, best_fma_gemm_isa())));
}

// On whichever path this CPU takes (AMX or not): dense over several weights and dense_to_float give
// what dense gives one weight at a time.
TEST(DenseSharedX, GivesWhatEachWeightGivesAloneOnThisCpusPath) {
  const at::Tensor w1 = spread({1024, 512}, 21).to(at::kBFloat16);
  const at::Tensor w2 = spread({512, 512}, 22).to(at::kBFloat16);
  for (const at::Tensor& x : {spread({1, 512}, 23).to(at::kBFloat16),
                              spread({16, 512}, 24).to(at::kBFloat16), spread({40, 512}, 25)}) {
    const std::vector<at::Tensor> ys = dense(x, {w1, w2});
    EXPECT_TRUE(at::equal(ys[0], dense(x, w1)));
    EXPECT_TRUE(at::equal(ys[1], dense(x, w2)));
    EXPECT_TRUE(at::equal(dense_to_float(x, w1), dense(x, w1).to(at::kFloat)));
  }
}

TEST(AmxMatmulApplies, TakesTileShapedBf16WeightsOnly) {
  const at::Tensor x = at::randn({40, 64});
  EXPECT_TRUE(amx_matmul_applies(x, at::zeros({32, 64}, at::kBFloat16)));
  EXPECT_FALSE(amx_matmul_applies(x, at::zeros({48, 64}, at::kBFloat16))) << "N % 32";
  EXPECT_FALSE(amx_matmul_applies(at::randn({40, 48}), at::zeros({32, 48}, at::kBFloat16)))
      << "K % 32";
  EXPECT_FALSE(amx_matmul_applies(x, at::zeros({32, 64}))) << "a float32 weight";
  EXPECT_FALSE(amx_matmul_applies(x.to(at::kDouble), at::zeros({32, 64}, at::kBFloat16)));
}

}  // namespace
}  // namespace draftgate::model
