// The few-row bf16 matmul kernels (model/few_row_matmul.h), each against a float64 product of the
// same values on the error bound its header states: float32 accumulation of exact (or once
// rounded) products, then one rounding to x's dtype. Written once, instantiated per kernel and
// dtype of x (llama.cpp's test-backend-ops style); a kernel this CPU lacks is skipped, saying so.

#include "draftgate/model/few_row_matmul.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "draftgate/model/argmax_rows.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {
namespace {

struct KernelCase {
  FewRowKernel kernel;
  at::ScalarType x_dtype;
};

std::string case_name(const testing::TestParamInfo<KernelCase>& info) {
  std::string name = few_row_kernel_name(info.param.kernel) + "_x_" +
                     (info.param.x_dtype == at::kBFloat16 ? "bf16" : "f32");
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

// |y - y64| <= (K + 32) · 2^-24 · Σ|w||x| (float32 summation of K products in lanes, then the
// lanes), plus half an ulp of the output dtype.
at::Tensor allowed_error(const at::Tensor& x, const at::Tensor& w, at::ScalarType out_dtype) {
  const at::Tensor abs_sum = at::matmul(x.to(at::kDouble).abs(), w.to(at::kDouble).abs().t());
  const double k = static_cast<double>(w.size(1));
  const at::Tensor accumulation = abs_sum * ((k + 32) * std::ldexp(1.0, -24));
  const at::Tensor exact = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t()).abs();
  const double half_ulp = out_dtype == at::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
  return accumulation + (exact + accumulation) * half_ulp + 1e-30;
}

class FewRowMatmul : public testing::TestWithParam<KernelCase> {
 protected:
  void SetUp() override {
    if (!few_row_kernel_available(GetParam().kernel))
      GTEST_SKIP() << "this CPU lacks the " << few_row_kernel_name(GetParam().kernel)
                   << " kernel's instructions (AVX-512 BF16)";
  }

  // Max over outputs of |y - y64| / allowed; <= 1 is within the stated precision.
  double error_ratio(const at::Tensor& x, const at::Tensor& w) {
    const at::Tensor y = few_row_matmul(x, w, GetParam().kernel);
    EXPECT_EQ(y.scalar_type(), x.scalar_type());
    const at::Tensor x2 = x.reshape({-1, x.size(-1)});
    const at::Tensor exact = at::matmul(x2.to(at::kDouble), w.to(at::kDouble).t());
    const at::Tensor err = (y.reshape({-1, w.size(0)}).to(at::kDouble) - exact).abs();
    return (err / allowed_error(x2, w, x.scalar_type())).max().item<double>();
  }

  at::Tensor random_x(std::int64_t rows, std::int64_t k) {
    return at::randn({rows, k}, at::kFloat).to(GetParam().x_dtype);
  }
};

at::Tensor random_w(std::int64_t n, std::int64_t k) {
  return (at::randn({n, k}, at::kFloat) / std::sqrt(static_cast<double>(k))).to(at::kBFloat16);
}

TEST_P(FewRowMatmul, EqualsFloat64WithinTheStatedBoundForEveryRowCountAndTail) {
  at::manual_seed(7);
  // Rows of x 1..16 (every tile shape, two groups of 8), K around the 16- and 32-wide steps,
  // N around the 8-, 4- and 3-row tiles and their remainders.
  for (std::int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16})
    for (std::int64_t k : {1, 15, 16, 17, 31, 32, 33, 100, 1024})
      for (std::int64_t n : {1, 3, 8, 13, 130}) {
        const double ratio = error_ratio(random_x(rows, k), random_w(n, k));
        ASSERT_LE(ratio, 1.0) << "rows " << rows << ", K " << k << ", N " << n;
      }
}

TEST_P(FewRowMatmul, LongRowsSplitOverThreadsStayWithinTheBound) {
  at::manual_seed(11);
  // A Qwen3-0.6B MLP down projection's shape and a long K: rows split over ATen's threads.
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{1024, 3072}, {2053, 4096}})
    for (std::int64_t rows : {1, 8, 16}) {
      const double ratio = error_ratio(random_x(rows, k), random_w(n, k));
      ASSERT_LE(ratio, 1.0) << "rows " << rows << ", K " << k << ", N " << n;
    }
}

// Each output is summed in one order whatever the number of rows: a row of a verify pass has the
// bits of the same row decoded alone (K across the steps, the widened chunks and a tail, and
// across the bf16 kernel's blocks of 1024; that kernel runs each tile over all of K where x fits
// 32 KB and L1 beside two tiles, and a block at a time over panels of tiles where it does not — 16
// rows at K = 1040, from 11 at 1500, 8 at 1800 and 2048 with a 48 KB L1 — so rows of the one order
// are compared with rows of the other; at N = 451 into several panels of tiles, a partial one and
// a one-row tail per thread).
TEST_P(FewRowMatmul, ARowHasTheSameBitsInAProductOfAnyNumberOfRows) {
  at::manual_seed(13);
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{37, 15},
                             {37, 100},
                             {37, 1040},
                             {37, 1500},
                             {451, 1024},
                             {451, 1500},
                             {451, 2048},
                             {96, 1800},
                             {451, 2080}}) {
    const at::Tensor w = random_w(n, k), x = random_x(16, k);
    const at::Tensor all = few_row_matmul(x, w, GetParam().kernel);
    for (std::int64_t rows : {1, 2, 3, 5, 8, 9, 16}) {
      const at::Tensor some = few_row_matmul(x.narrow(0, 0, rows), w, GetParam().kernel);
      ASSERT_TRUE(at::equal(some, all.narrow(0, 0, rows)))
          << "N " << n << ", K " << k << ", rows " << rows;
    }
  }
}

// Threads take chunks of rows and a free thread takes the others' (row_chunks.h): which thread
// runs a row does not change its bits (N across many chunks, one not whole; weights sharing x).
TEST_P(FewRowMatmul, AProductHasTheSameBitsOnAnyNumberOfThreads) {
  at::manual_seed(17);
  const int saved = at::get_num_threads();
  const at::Tensor w = random_w(1000, 1500), w2 = random_w(77, 1500);
  for (std::int64_t rows : {1, 8, 16}) {
    const at::Tensor x = random_x(rows, 1500);
    at::set_num_threads(1);
    const std::vector<at::Tensor> alone = few_row_matmul(x, {w, w2}, GetParam().kernel);
    for (int threads : {2, 3, 5}) {
      at::set_num_threads(threads);
      const std::vector<at::Tensor> split = few_row_matmul(x, {w, w2}, GetParam().kernel);
      EXPECT_TRUE(at::equal(split[0], alone[0]) && at::equal(split[1], alone[1]))
          << "rows " << rows << ", threads " << threads;
    }
  }
  at::set_num_threads(saved);
}

TEST_P(FewRowMatmul, ReadsAWeightWhoseRowsAreStridedAndXOfAnyLeadingShape) {
  at::manual_seed(3);
  const at::Tensor wide = random_w(37, 70);
  const at::Tensor w = wide.narrow(1, 3, 64);  // row stride 70, starting 3 elements in
  ASSERT_FALSE(w.is_contiguous());
  const at::Tensor x = random_x(6, 64).view({2, 3, 64});
  const at::Tensor y = few_row_matmul(x, w, GetParam().kernel);
  EXPECT_EQ(y.sizes(), (at::IntArrayRef{2, 3, 37}));
  EXPECT_LE(error_ratio(x, w), 1.0);
  EXPECT_LE(error_ratio(random_x(5, 64).t().contiguous().t(), w), 1.0);  // x transposed back
}

TEST_P(FewRowMatmul, ANonFiniteInputMakesItsOutputsNonFinite) {
  const at::Tensor w = random_w(20, 40);
  at::Tensor x = random_x(3, 40);
  x[1][17] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor y = few_row_matmul(x, w, GetParam().kernel).to(at::kFloat);
  EXPECT_TRUE(at::isnan(y[1]).all().item<bool>());
  EXPECT_TRUE(at::isfinite(y[0]).all().item<bool>());
  at::Tensor w_inf = w.clone();
  w_inf[5][0] = std::numeric_limits<float>::infinity();
  const at::Tensor y_inf = few_row_matmul(random_x(2, 40), w_inf, GetParam().kernel);
  EXPECT_FALSE(at::isfinite(y_inf.select(1, 5)).any().item<bool>());
}

TEST_P(FewRowMatmul, DroppingTheLastProductsWouldBreakTheBound) {
  // The bound is tight enough to see a kernel that skips a K tail: leaving out the last column
  // of w moves some output of this product far beyond it.
  at::manual_seed(5);
  const at::Tensor x = random_x(4, 33), w = random_w(16, 33);
  const at::Tensor truncated =
      at::matmul(x.narrow(1, 0, 32).to(at::kDouble), w.narrow(1, 0, 32).to(at::kDouble).t());
  const at::Tensor exact = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  EXPECT_GT(((truncated - exact).abs() / allowed_error(x, w, x.scalar_type())).max().item<double>(),
            10.0);
}

TEST_P(FewRowMatmul, WeightsSharingXInOneCallHaveTheBitsOfEachAlone) {
  at::manual_seed(17);
  const std::int64_t k = 1040;
  const std::vector<at::Tensor> ws{random_w(451, k), random_w(1, k), random_w(96, k),
                                   random_w(0, k)};
  for (std::int64_t rows : {1, 3, 8, 16}) {
    const at::Tensor x = random_x(rows, k);
    const std::vector<at::Tensor> ys = few_row_matmul(x, ws, GetParam().kernel);
    ASSERT_EQ(ys.size(), ws.size());
    for (std::size_t i = 0; i < ws.size(); ++i)
      ASSERT_TRUE(at::equal(ys[i], few_row_matmul(x, ws[i], GetParam().kernel)))
          << "weight " << i << ", rows " << rows;
  }
  EXPECT_THROW(few_row_matmul(random_x(2, k), {ws[0], random_w(8, k + 1)}, GetParam().kernel),
               std::invalid_argument);
  EXPECT_TRUE(few_row_matmul(random_x(2, k), std::vector<at::Tensor>{}, GetParam().kernel).empty());
}

TEST_P(FewRowMatmul, AWidenedProductIsTheBf16ProductAsFloat32) {
  at::manual_seed(19);
  const at::Tensor w = random_w(300, 200), x = random_x(5, 200);
  if (x.scalar_type() != at::kBFloat16) {
    EXPECT_THROW(few_row_matmul(x, w, GetParam().kernel, ProductOutput::kWidened),
                 std::invalid_argument);
    return;
  }
  const at::Tensor widened = few_row_matmul(x, w, GetParam().kernel, ProductOutput::kWidened);
  EXPECT_EQ(widened.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(widened, few_row_matmul(x, w, GetParam().kernel).to(at::kFloat)));
}

// few_row_argmax picks what argmax_rows picks in the widened product, over pieces of the weight
// that threads take in any order: rows of one to sixteen, weights shorter and longer than a
// chunk (96 rows), one to three threads.
TEST_P(FewRowMatmul, GreedyPicksAreTheArgmaxOfTheWidenedProduct) {
  at::manual_seed(23);
  if (GetParam().x_dtype != at::kBFloat16) {
    EXPECT_THROW(few_row_argmax(random_x(2, 64), random_w(10, 64), GetParam().kernel),
                 std::invalid_argument);
    return;
  }
  const int saved = at::get_num_threads();
  for (std::int64_t n : {1, 95, 96, 97, 1000, 2049})
    for (std::int64_t rows : {1, 5, 16})
      for (int threads : {1, 2, 3}) {
        at::set_num_threads(threads);
        const at::Tensor w = random_w(n, 160), x = random_x(rows, 160);
        EXPECT_EQ(few_row_argmax(x, w, GetParam().kernel),
                  argmax_rows(few_row_matmul(x, w, GetParam().kernel, ProductOutput::kWidened)))
            << n << " weight rows, " << rows << " rows of x, " << threads << " threads";
      }
  at::set_num_threads(saved);
}

// at::argmax's rule across the pieces: equal largest values go to the lowest index, a NaN beats
// every number and the first NaN wins.
TEST_P(FewRowMatmul, GreedyPicksKeepArgmaxsRuleForTiesAndNaNAcrossChunks) {
  if (GetParam().x_dtype != at::kBFloat16) GTEST_SKIP() << "picks are of bf16 products";
  const int saved = at::get_num_threads();
  at::set_num_threads(2);
  const at::Tensor x = at::ones({3, 64}, at::kBFloat16);
  at::Tensor w = at::zeros({1000, 64}, at::kFloat);
  for (std::int64_t tie : {700, 150, 900}) w[tie].fill_(1.0f);  // three equal largest sums
  EXPECT_EQ(few_row_argmax(x, w.to(at::kBFloat16), GetParam().kernel),
            (std::vector<std::int64_t>{150, 150, 150}));
  w[640][3] = std::nanf("");
  w[320][5] = std::nanf("");
  EXPECT_EQ(few_row_argmax(x, w.to(at::kBFloat16), GetParam().kernel),
            (std::vector<std::int64_t>{320, 320, 320}));
  EXPECT_EQ(few_row_argmax(x, at::zeros({500, 64}, at::kBFloat16), GetParam().kernel),
            (std::vector<std::int64_t>{0, 0, 0}));  // every sum zero
  at::set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(Kernels, FewRowMatmul,
                         testing::Values(KernelCase{FewRowKernel::kBf16Dot, at::kBFloat16},
                                         KernelCase{FewRowKernel::kFloat32Fma, at::kBFloat16},
                                         KernelCase{FewRowKernel::kFloat32Fma, at::kFloat}),
                         case_name);

TEST(FewRowMatmulScope, TakesFewRowsOfABf16WeightWithContiguousRowsOnly) {
  const at::Tensor w = at::zeros({8, 32}, at::kBFloat16);
  EXPECT_TRUE(few_row_matmul_applies(at::zeros({16, 32}, at::kBFloat16), w));
  EXPECT_TRUE(few_row_matmul_applies(at::zeros({2, 8, 32}, at::kFloat), w));
  EXPECT_FALSE(few_row_matmul_applies(at::zeros({17, 32}, at::kBFloat16), w));
  EXPECT_FALSE(few_row_matmul_applies(at::zeros({1, 32}, at::kFloat), w.to(at::kFloat)));
  EXPECT_FALSE(few_row_matmul_applies(at::zeros({1, 8}, at::kBFloat16), w.t()));
  EXPECT_FALSE(few_row_matmul_applies(at::zeros({1, 32}, at::kHalf), w));
  EXPECT_THROW(few_row_matmul(at::zeros({1, 32}, at::kFloat), w, FewRowKernel::kBf16Dot),
               std::invalid_argument);
  EXPECT_THROW(few_row_matmul(at::zeros({20, 32}, at::kBFloat16), w), std::invalid_argument);
}

// Sums exactly halfway between two bf16 values round to the even one, as ATen rounds a float32.
TEST(FewRowMatmulScope, AHalfwaySumRoundsToEvenAsATenRounds) {
  const at::Tensor x = at::ones({1, 2}, at::kBFloat16);
  const std::vector<std::pair<float, float>> rows{
      {1.0f, 0x1p-8f},             // 1 + 2^-8: halfway between 1 and 1 + 2^-7, even is 1
      {1.0f + 0x1p-7f, 0x1p-8f},   // halfway between 1 + 2^-7 and 1 + 2^-6, even is the upper
      {-1.0f - 0x1p-7f, -0x1p-8f}  // the same below zero
  };
  at::Tensor w = at::empty({3, 2}, at::kFloat);
  for (std::int64_t r = 0; r < 3; ++r) {
    w[r][0] = rows[r].first;
    w[r][1] = rows[r].second;
  }
  const at::Tensor sums = w.sum(1);  // exact in float32
  for (FewRowKernel kernel : {FewRowKernel::kBf16Dot, FewRowKernel::kFloat32Fma}) {
    if (!few_row_kernel_available(kernel)) continue;
    const at::Tensor y = few_row_matmul(x, w.to(at::kBFloat16), kernel);
    EXPECT_TRUE(at::equal(y.flatten(), sums.to(at::kBFloat16))) << few_row_kernel_name(kernel);
    EXPECT_EQ(y[0][1].item<float>(), 1.0f + 0x1p-6f);
  }
}

// Many bf16 rows: oneDNN's GEMM where the CPU has bf16 dot products; elsewhere (its bf16 path is
// ~100x slower there) the weight widened to float32 a block at a time, the result rounded to bf16.
TEST(FewRowMatmulScope, DenseTakesTheKernelForFewRowsAndAFloat32GemmWhereBf16DotsAreMissing) {
  at::manual_seed(9);
  const at::Tensor w = random_w(48, 96), few = at::randn({4, 96}).to(at::kBFloat16);
  EXPECT_TRUE(at::equal(dense(few, w), few_row_matmul(few, w)));
  const at::Tensor many = at::randn({2, 20, 96}).to(at::kBFloat16);
  const bool bf16_dot = few_row_kernel_available(FewRowKernel::kBf16Dot);
  EXPECT_TRUE(at::equal(dense(many, w),
                        bf16_dot
                            ? at::linear(many, w)
                            : at::linear(many.to(at::kFloat), w.to(at::kFloat)).to(at::kBFloat16)));
  // Rows of K = 2^18: the widened weight goes in blocks of 32 rows, the last one short.
  const at::Tensor long_w = random_w(70, std::int64_t{1} << 18);
  const at::Tensor x = at::randn({20, std::int64_t{1} << 18}).to(at::kBFloat16);
  const at::Tensor y = dense(x, long_w);
  ASSERT_EQ(y.scalar_type(), at::kBFloat16);
  const at::Tensor err =
      (y.to(at::kDouble) - at::matmul(x.to(at::kDouble), long_w.to(at::kDouble).t())).abs();
  EXPECT_LE((err / allowed_error(x, long_w, at::kBFloat16)).max().item<double>(), 1.0);
}

}  // namespace
}  // namespace draftgate::model
