#pragma once
// The pair products of few-row attention: the scores of every query item of a KV head against its
// key rows, and the probabilities' weighted sum of its value rows, with bf16 values taken in pairs
// (the layout of a bf16 dot product's operands). Two backends, each compiled for its instructions
// alone and run only where the CPU has them (few_row_attention.cpp asks): AMX tiles
// (amx_attention_tiles.cpp) and AVX-512 BF16 dot products (bf16_attention_dots.cpp). Each forms a
// float32 sum of exact bf16 products per output in one order whatever the number of items or rows
// beside it. Plain types only.

#include <cstdint>

namespace draftgate::model {

// Head widths the pair products take: a multiple of 32 up to this.
constexpr std::int64_t kMaxPairAttentionWidth = 512;

// scores[i · score_stride + r] = Σ_d q_i[d] · key_r[d] for items i < items (a multiple of 16) and
// key rows r < rows (the tiles also write 0 for the rows up to a multiple of 16).
struct AttentionScoreOperands {
  const std::uint16_t* keys;  // bf16 bits [rows, width], row stride key_stride elements
  std::int64_t key_stride;
  std::int64_t rows;
  // The items' queries in pairs of d: q_i[d] at query_pairs[(d / 2 · items + i) · 2 + d % 2].
  const std::uint16_t* query_pairs;
  std::int64_t items;
  std::int64_t width;  // a multiple of 32, at most kMaxPairAttentionWidth
  float* scores;
  std::int64_t score_stride;  // at least rows rounded up to 16
};

// out[i · width + n] = Σ_r p_i[r] · value_r[n] for items i < items (a multiple of 16).
struct AttentionValueOperands {
  // bf16 bits [items, prob_stride]: p_i[r] at probs[i · prob_stride + r], zero for r >= rows up to
  // rows rounded up to 32.
  const std::uint16_t* probs;
  std::int64_t prob_stride;
  const std::uint16_t* values;  // bf16 bits [rows, width], row stride value_stride elements
  std::int64_t value_stride;
  std::int64_t rows;
  std::int64_t items;
  std::int64_t width;          // a multiple of 32
  std::uint16_t* value_pairs;  // room for (rows rounded up to 32) · width values
  float* out;
};

namespace amx {
void key_scores(const AttentionScoreOperands& a);
void weighted_values(const AttentionValueOperands& a);
}  // namespace amx

namespace bf16_dots {
void key_scores(const AttentionScoreOperands& a);
void weighted_values(const AttentionValueOperands& a);
}  // namespace bf16_dots

}  // namespace draftgate::model
