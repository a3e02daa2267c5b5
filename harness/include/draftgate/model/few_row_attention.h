#pragma once
// Softmax attention of a few query rows (a decode step; a verify block or the drafter's block of a
// small model) over a K/V cache in one pass per KV head, where the batched-matmul form is a dozen
// ATen operations and two oneDNN bf16 products of ~100 us each per layer, whatever their size. The
// eager reference's roundings are kept where it makes them (scores cast to q's dtype, scaled and
// cast again, softmax in float32, probabilities cast to q's dtype, the weighted values summed in
// float32 and cast once); only the order of the float32 sums and the exponential's polynomial
// differ, and terms below float32's normal range are flushed. Each query row is computed alone: a
// row of a block this kernel takes has the bits of the same row alone (a block above the
// threshold below goes to the batched form, whose sums oneDNN orders by the block's size).

#include <ATen/ATen.h>

#include <cstdint>

namespace draftgate::model {

// Whether few_row_attention takes these (visible as few_row_attention takes it): CPU, bf16 or
// float32, no autograd, shapes it reads within, at most
// kFewRowAttentionWork multiply-adds (queries · heads · rows · D). Measured on the 2-core AMX
// machine at Qwen3-0.6B's 16 heads of 128: one query over 80 rows 36 us a layer against 98-126 for
// the batched form (two oneDNN products of ~100 us whatever their size), over 512 rows 237 against
// 247; 16 queries over 80 rows 262-287 against 162-176, so a verify block of that model stays
// batched; tiny models take it everywhere.
constexpr std::int64_t kFewRowAttentionWork = std::int64_t{1} << 20;
bool few_row_attention_applies(const at::Tensor& q, const at::Tensor& keys,
                               const at::Tensor& values, const at::Tensor& visible = {});

// q [T, heads, D]; keys and values [kv_heads, rows, D], the T queries' own rows last; query head h
// reads KV head h / (heads / kv_heads). visible: undefined for a causal chain (query t sees rows
// up to rows - T + t), else bool [T, rows], or [T, T] over the appended rows with every earlier row
// visible. Returns [T, heads · D] in q's dtype.
at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale);

}  // namespace draftgate::model
