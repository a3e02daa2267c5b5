// argmax_rows (model/argmax_rows.h) against at::argmax(-1) and against the rule written out as a
// plain loop: the first NaN, else the first index of the largest value, -0 equal to +0.

#include "draftgate/model/argmax_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace draftgate::model {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::nanf("");

std::vector<std::int64_t> aten_argmax(const at::Tensor& logits) {
  const at::Tensor a = logits.argmax(-1).contiguous();
  return std::vector<std::int64_t>(a.data_ptr<std::int64_t>(),
                                   a.data_ptr<std::int64_t>() + a.numel());
}

std::vector<std::int64_t> plain_argmax(const at::Tensor& logits) {
  const at::Tensor x = logits.to(at::kFloat).contiguous();
  const std::int64_t width = x.size(-1), rows = x.numel() / width;
  const float* p = x.data_ptr<float>();
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = p + r * width;
    std::int64_t best = 0;
    for (std::int64_t i = 0; i < width; ++i) {
      if (std::isnan(row[best])) break;
      if (std::isnan(row[i]) || row[i] > row[best]) best = i;
    }
    out.push_back(best);
  }
  return out;
}

void expect_both(const at::Tensor& logits, const std::string& what) {
  const std::vector<std::int64_t> got = argmax_rows(logits);
  EXPECT_EQ(got, aten_argmax(logits)) << what << ": not at::argmax's indices";
  EXPECT_EQ(got, plain_argmax(logits)) << what << ": not the first NaN or first largest value";
}

at::Tensor row_of(const std::vector<float>& values) {
  return at::tensor(values, at::kFloat).unsqueeze(0);
}

TEST(ArgmaxRows, IsAtenArgmaxOnRandomRows) {
  at::manual_seed(7);
  for (std::int64_t width : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 151936})
    for (std::int64_t rows : {1, 3, 16}) {
      const at::Tensor logits = at::randn({rows, width}, at::kFloat) * 4;
      expect_both(logits, "rows " + std::to_string(rows) + " x width " + std::to_string(width));
    }
}

// Values drawn from a few levels, so the largest repeats across lanes and in the tail.
TEST(ArgmaxRows, ATieGoesToTheFirstIndex) {
  at::manual_seed(11);
  for (std::int64_t width : {5, 8, 23, 64, 1001}) {
    const at::Tensor logits = at::randint(0, 3, {32, width}, at::kFloat);
    expect_both(logits, "three levels, width " + std::to_string(width));
  }
  std::vector<float> row(37, -1.0f);
  row[13] = row[5] = row[36] = 2.0f;  // lanes 5 and 5 of two blocks, and the tail
  EXPECT_EQ(argmax_rows(row_of(row)), std::vector<std::int64_t>{5});
  row[2] = 2.0f;
  EXPECT_EQ(argmax_rows(row_of(row)), std::vector<std::int64_t>{2});
  std::vector<float> zeros(20, -0.0f);
  zeros[9] = 0.0f;
  zeros[0] = -1.0f;
  expect_both(row_of(zeros), "-0 and +0 equal");
  EXPECT_EQ(argmax_rows(row_of(zeros)), std::vector<std::int64_t>{1});
}

TEST(ArgmaxRows, TheFirstNaNWins) {
  std::vector<float> row(40, 0.5f);
  row[30] = kInf;
  row[20] = kNaN;
  row[7] = kNaN;
  expect_both(row_of(row), "NaN at 7 and 20 beside +inf");
  EXPECT_EQ(argmax_rows(row_of(row)), std::vector<std::int64_t>{7});
  std::vector<float> tail(19, 1.0f);
  tail[18] = kNaN;  // past the last whole block of eight
  expect_both(row_of(tail), "NaN in the tail");
  std::vector<float> first(9, 3.0f);
  first[0] = kNaN;
  expect_both(row_of(first), "NaN first");
}

TEST(ArgmaxRows, Infinities) {
  expect_both(row_of(std::vector<float>(21, -kInf)), "every value -inf");
  std::vector<float> one(21, -kInf);
  one[17] = -1e30f;
  expect_both(row_of(one), "one finite value among -inf");
  std::vector<float> two(21, 1.0f);
  two[19] = two[11] = kInf;
  expect_both(row_of(two), "+inf twice");
  EXPECT_EQ(argmax_rows(row_of(two)), std::vector<std::int64_t>{11});
}

// bf16, strided rows, one row without a batch dimension and three dimensions: at::argmax's own
// answer either way.
TEST(ArgmaxRows, OtherTensorsAsAten) {
  at::manual_seed(3);
  const at::Tensor x = at::randn({6, 50}, at::kFloat);
  expect_both(x.to(at::kBFloat16), "bf16");
  expect_both(x.t(), "transposed");
  expect_both(x.narrow(1, 3, 40), "rows with a stride");
  expect_both(x[2], "one row, one dimension");
  expect_both(x.view({2, 3, 50}), "three dimensions");
}

}  // namespace
}  // namespace draftgate::model
