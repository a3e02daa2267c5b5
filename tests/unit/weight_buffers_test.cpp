// Reused conversion buffers and the allocation-free finiteness checks of the streamed forward
// (model/weight_buffers.h), against at::isfinite and copy_.

#include "draftgate/model/weight_buffers.h"

#include <gtest/gtest.h>

#include <limits>

namespace draftgate::model {
namespace {

TEST(WeightBuffers, ALayerReusesTheBufferThePreviousLayerLetGo) {
  WeightBuffers buffers;
  const at::Device cpu(at::kCPU);
  void* first = nullptr;
  {
    const at::Tensor w = buffers.take({64, 32}, at::kFloat, cpu);
    first = w.data_ptr();
  }
  EXPECT_EQ(buffers.take({64, 32}, at::kFloat, cpu).data_ptr(), first);
  EXPECT_EQ(buffers.size(), 1u);
  // Held, or held through a view: never handed out twice.
  const at::Tensor held = buffers.take({64, 32}, at::kFloat, cpu);
  const at::Tensor view = buffers.take({8, 8}, at::kFloat, cpu).narrow(0, 0, 2);
  EXPECT_NE(buffers.take({64, 32}, at::kFloat, cpu).data_ptr(), held.data_ptr());
  EXPECT_NE(buffers.take({8, 8}, at::kFloat, cpu).data_ptr(), view.data_ptr());
  // Another shape or dtype is another buffer.
  EXPECT_NE(buffers.take({32, 64}, at::kFloat, cpu).data_ptr(), held.data_ptr());
  EXPECT_EQ(buffers.take({32, 64}, at::kBFloat16, cpu).scalar_type(), at::kBFloat16);
}

TEST(WeightBuffers, FiniteChecksAgreeWithIsfiniteForEveryDtypeAndPosition) {
  const std::int64_t n = (1 << 17) + 3;  // several threads' ranges and a ragged end
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble}) {
    const at::Tensor clean = at::randn({n}).to(dtype);
    EXPECT_TRUE(all_finite(clean)) << dtype;
    for (std::int64_t at_index : {std::int64_t{0}, n / 2, n - 1})
      for (float bad :
           {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
            -std::numeric_limits<float>::infinity()}) {
        at::Tensor t = clean.clone();
        t[at_index] = bad;
        EXPECT_FALSE(all_finite(t)) << dtype << " at " << at_index;
        EXPECT_FALSE(all_finite(t.view({-1, 1}).t())) << "strided";
        if (dtype != at::kDouble) {
          EXPECT_FALSE(values_finite(t.data_ptr(), n, dtype)) << dtype << " at " << at_index;
          EXPECT_TRUE(values_finite(t.data_ptr(), at_index, dtype)) << "the values before it";
        }
      }
    EXPECT_EQ(values_finite(clean.data_ptr(), n, dtype), dtype != at::kDouble)
        << "no other dtype is claimed finite";
  }
  // The largest finite values are finite.
  EXPECT_TRUE(all_finite(at::full({4}, 3.38e38, at::kBFloat16)));
  EXPECT_TRUE(all_finite(at::full({4}, 65504.0, at::kHalf)));
}

TEST(WeightBuffers, ConvertingCopyEqualsCopyAndReportsNonFiniteSources) {
  const at::Tensor src = at::randn({300, 517}).to(at::kBFloat16);
  at::Tensor dst = at::empty({300, 517}, at::kFloat);
  EXPECT_TRUE(copy_checking_finite(dst, src));
  EXPECT_TRUE(at::equal(dst, src.to(at::kFloat)));
  at::Tensor bad = src.clone();
  bad[299][516] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(copy_checking_finite(dst, bad));
  // Other dtypes take copy_ and check the source.
  at::Tensor to_bf16 = at::empty({300, 517}, at::kBFloat16);
  EXPECT_TRUE(copy_checking_finite(to_bf16, src.to(at::kFloat)));
  EXPECT_TRUE(at::equal(to_bf16, src));
  at::Tensor nan_f32 = src.to(at::kFloat);
  nan_f32[0][0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(copy_checking_finite(to_bf16, nan_f32));
}

}  // namespace
}  // namespace draftgate::model
