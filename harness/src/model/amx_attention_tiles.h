#pragma once
// The AMX tile products of few-row attention (amx_attention_tiles.cpp, compiled for AMX, AVX-512F
// and AVX-512BW alone and run only where amx_available() holds; few_row_attention.cpp asks): the
// scores of every query item of a KV head against its key rows, and the probabilities' weighted
// sum of its value rows. Each is a float32 sum of exact bf16 products formed per output in one
// order whatever the number of items or rows beside it. Plain types only.

#include <cstdint>

namespace draftgate::model::amx {

// Head widths the tile products take: a multiple of 32 up to this.
constexpr std::int64_t kMaxAttentionWidth = 512;

// scores[i · score_stride + r] = Σ_d q_i[d] · key_r[d] for items i < items (a multiple of 16) and
// key rows r < rows rounded up to 16 (those past `rows` are 0).
struct ScoreOperands {
  const std::uint16_t* keys;  // bf16 bits [rows, width], row stride key_stride elements
  std::int64_t key_stride;
  std::int64_t rows;
  // The items' queries in pairs of d (a tile multiply's second operand): q_i[d] at
  // query_pairs[(d / 2 · items + i) · 2 + d % 2].
  const std::uint16_t* query_pairs;
  std::int64_t items;
  std::int64_t width;  // a multiple of 32, at most kMaxAttentionWidth
  float* scores;
  std::int64_t score_stride;  // at least rows rounded up to 16
};
void key_scores(const ScoreOperands& a);

// out[i · width + n] = Σ_r p_i[r] · value_r[n] for items i < items (a multiple of 16).
struct ValueOperands {
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
void weighted_values(const ValueOperands& a);

}  // namespace draftgate::model::amx
