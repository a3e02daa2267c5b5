#pragma once
// Softmax attention of a few query rows (a decode step, a verify block, the drafter's block) over
// a K/V cache in one pass per KV head, where the batched-matmul form is a dozen ATen operations and
// two oneDNN bf16 products per layer. The eager reference's roundings are kept where it makes them
// (scores cast to q's dtype, scaled and cast again, softmax in float32, probabilities cast to q's
// dtype, the weighted values summed in float32 and cast once); only the order of the float32 sums
// and the exponential's polynomial differ, and terms below float32's normal range are flushed.
// Each query row is computed alone: a row of a block has the bits of the same row alone with the
// same kernel — with the tiles, a verify row's attention is that of the same row decoded alone.

#include <ATen/ATen.h>

#include <cstdint>

namespace draftgate::model {

// The kernel that forms a head's products: float32 vectors of 8 lanes (every CPU; bf16 values
// widened), AMX tiles, or AVX-512 BF16 dot products (the two for a bf16 q whose head width is a
// multiple of 32 up to 512, where the CPU has them: a float32 sum of exact bf16 products per score
// and per output, formed in one order whatever the block — the softmax between is the same code
// for all three). The best for q: the tiles where amx_available(), else the dot products, else the
// vectors — one kernel whatever the number of queries, so a verify row has the bits of the same
// row decoded alone (with the vectors for one query and the dot products for a block, an 8B
// loop's output left greedy decoding's at a near-tie; a decode step pays ~5 us a layer for it).
enum class FewRowAttentionKernel { kVectors, kTiles, kBf16Dots };
bool few_row_attention_kernel_takes(FewRowAttentionKernel kernel, const at::Tensor& q);
FewRowAttentionKernel best_few_row_attention_kernel(const at::Tensor& q);

// Whether few_row_attention takes these (visible as few_row_attention takes it): CPU, bf16 or
// float32, no autograd, shapes it reads within; with the vector kernel at most
// kFewRowAttentionWork multiply-adds (queries · heads · rows · D), with the tiles at most
// kTileAttentionQueries queries and kTileAttentionScores scores per KV head (items — the group of
// heads times the queries — padded to 16, times rows). Measured on the 2-core AMX machine at
// Qwen3-0.6B's 16 heads of 128 (docs/performance.md), per layer: vectors: one query over 80 rows
// 21-36 us against 75-126 for the batched form, over 1024 rows 263 against 221, 16 queries over 80
// rows 165 against 132; tiles: 16 / 64 / 228 us for 1 / 16 / 64 queries over 80 rows, 154 / 527 /
// 1858 over 1024 (batched 221 / 575 / 4734), one query over 8192 rows 1.92 ms against 1.88 (the
// limit: a decode step up to 8192 rows, a 16-row verify at those heads, 32 items, up to 4096).
// The dot products take the tiles' limits; on the 2-core AVX-512 BF16 EPYC (FewRowAttention in
// tests/bench/attention_bench.cpp) 1 / 4 / 16 / 64 queries over 80 rows took 23 / 30 / 84 / 298 us
// against the vectors' 18 / 49 / 192 / 695 and the batched form's 107 / 150 / 246 / 451; 16 and
// 64 over 1024 rows 650 / 2904 against 2110 / 7372 and 1170 / 6241.
constexpr std::int64_t kFewRowAttentionWork = std::int64_t{1} << 20;
constexpr std::int64_t kTileAttentionQueries = 64;
constexpr std::int64_t kTileAttentionScores = std::int64_t{1} << 17;
bool few_row_attention_applies(const at::Tensor& q, const at::Tensor& keys,
                               const at::Tensor& values, const at::Tensor& visible = {});

// q [T, heads, D]; keys and values [kv_heads, rows, D], the T queries' own rows last; query head h
// reads KV head h / (heads / kv_heads). visible: undefined for a causal chain (query t sees rows
// up to rows - T + t), else bool [T, rows], or [T, T] over the appended rows with every earlier row
// visible. Returns [T, heads · D] in q's dtype. With the best kernel for q, or the one named
// (std::invalid_argument where it or the shapes are not taken).
at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale);
at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale, FewRowAttentionKernel kernel);

}  // namespace draftgate::model
