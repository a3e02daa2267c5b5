#include "draftgate/model/few_row_attention.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "attention_pair_products.h"
#include "draftgate/model/amx_matmul.h"
#include "draftgate/model/few_row_matmul.h"
#include "f32x8.h"

namespace draftgate::model {
namespace {

// Which key rows query t sees.
struct Visibility {
  const bool* mask = nullptr;  // [T, columns] or null: a causal chain
  std::int64_t columns = 0;    // every row, or only the queries' own (earlier rows all visible)
  std::int64_t rows = 0;
  std::int64_t committed = 0;  // rows before the queries' own

  bool operator()(std::int64_t t, std::int64_t r) const {
    if (mask == nullptr) return r <= committed + t;
    if (columns == rows) return mask[t * columns + r];
    return r < committed || mask[t * columns + r - committed];
  }
};

struct Problem {
  std::int64_t queries, heads, group, rows, width;
  std::int64_t key_head_stride, key_row_stride, value_head_stride, value_row_stride;
  float scale;
};

// The products of a head in float32, in vectors of 8 lanes (f32x8.h).

// sums[i] += Σ_r p[r] · v[r][i] over R value rows, in the order of the rows.
template <int R>
inline __attribute__((always_inline)) void add_weighted(const float* p, const float* v,
                                                        std::int64_t stride, std::int64_t n,
                                                        float* sums) {
  std::int64_t i = 0;
  F32x8 acc, x;
  for (; i + 8 <= n; i += 8) {
    load8(acc, sums + i);
    for (int r = 0; r < R; ++r) {
      load8(x, v + r * stride + i);
      acc += p[r] * x;
    }
    std::memcpy(sums + i, &acc, sizeof acc);
  }
  for (; i < n; ++i)
    for (int r = 0; r < R; ++r) sums[i] += p[r] * v[r * stride + i];
}

// n values as float32 into out.
template <class T>
inline __attribute__((always_inline)) void widen(const T* in, std::int64_t n, float* out) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out, in, n * sizeof(float));
  } else {
    std::int64_t i = 0;
    F32x8 x;
    for (; i + 8 <= n; i += 8) {
      load8(x, in + i);
      std::memcpy(out + i, &x, sizeof x);
    }
    for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
  }
}

// `count` rows of `width` values (row stride `stride`) as float32 rows: float32 rows read where
// they are, bf16 ones widened into buffer (row stride `width`).
template <class T>
inline __attribute__((always_inline)) const float* as_float(const T* rows, std::int64_t count,
                                                            std::int64_t width, std::int64_t stride,
                                                            float* buffer,
                                                            std::int64_t& float_stride) {
  if constexpr (std::is_same_v<T, float>) {
    float_stride = stride;
    return rows;
  } else {
    float_stride = width;
    for (std::int64_t r = 0; r < count; ++r) widen(rows + r * stride, width, buffer + r * width);
    return buffer;
  }
}

// Per thread, reused across calls: float32 rows (widened keys and values, queries, sums, scores)
// and bf16 ones (the pair products' query pairs, probabilities and value pairs).
struct Scratch {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
};

// The pair products of the kernel named: the tiles' or the dot products' (each file exists only
// where the compiler targets its instructions, and is asked for only where the CPU has them).
struct PairProducts {
  void (*key_scores)(const AttentionScoreOperands&) = nullptr;
  void (*weighted_values)(const AttentionValueOperands&) = nullptr;
};

PairProducts pair_products(FewRowAttentionKernel kernel) {
#if DRAFTGATE_AMX_KERNEL
  if (kernel == FewRowAttentionKernel::kTiles) return {amx::key_scores, amx::weighted_values};
#endif
#if DRAFTGATE_BF16_DOT_KERNEL
  if (kernel == FewRowAttentionKernel::kBf16Dots)
    return {bf16_dots::key_scores, bf16_dots::weighted_values};
#endif
  (void)kernel;
  return {};
}

// The products in float32 vectors: scores[j · padded + r] = q_j · key_r for every item j and key
// row r; sums[j · width + i] = Σ_r p_j[r] · value_r[i] with the probabilities in the scores' place.
// Each block of 8 key or value rows is read from L1 for every item (the group of heads times
// every query) at once; each item's sums still run over the rows in order.
template <class T>
struct VectorProducts {
  const float *k = nullptr, *v = nullptr;
  std::int64_t ks = 0, vs = 0;

  VectorProducts() = default;
  VectorProducts(const Problem& p, const T* keys, const T* values, float* key_buffer,
                 float* value_buffer) {
    k = as_float(keys, p.rows, p.width, p.key_row_stride, key_buffer, ks);
    v = as_float(values, p.rows, p.width, p.value_row_stride, value_buffer, vs);
  }
  inline __attribute__((always_inline)) void scores(const Problem& p, std::int64_t items,
                                                    const float* query, float* scores,
                                                    std::int64_t padded) const {
    constexpr std::int64_t kBlock = 8;
    std::int64_t r = 0;
    for (; r + kBlock <= p.rows; r += kBlock)
      for (std::int64_t j = 0; j < items; ++j)
        dots<kBlock>(query + j * p.width, k + r * ks, ks, p.width, scores + j * padded + r);
    for (; r < p.rows; ++r)
      for (std::int64_t j = 0; j < items; ++j)
        dots<1>(query + j * p.width, k + r * ks, ks, p.width, scores + j * padded + r);
  }
  inline __attribute__((always_inline)) void sums(const Problem& p, std::int64_t items,
                                                  const float* probs, std::int64_t padded,
                                                  float* sums) const {
    constexpr std::int64_t kBlock = 8;
    std::fill(sums, sums + items * p.width, 0.0f);
    std::int64_t r = 0;
    for (; r + kBlock <= p.rows; r += kBlock)
      for (std::int64_t j = 0; j < items; ++j)
        add_weighted<kBlock>(probs + j * padded + r, v + r * vs, vs, p.width, sums + j * p.width);
    for (; r < p.rows; ++r)
      for (std::int64_t j = 0; j < items; ++j)
        add_weighted<1>(probs + j * padded + r, v + r * vs, vs, p.width, sums + j * p.width);
  }
};

// The softmax of item j's scores s[0, padded) in place (padded a multiple of 8): cast to T as the
// batched product's output is, scaled and cast again (ATen casts the scale to the tensor's dtype
// first — measured: bf16 · 1/√128 takes bf16(1/√128)); rows the query does not see, and those past
// the last, -inf; exp(s - max) times the reciprocal of their sum in float32 (ATen's order of
// operations; a query that sees nothing is NaN, as there), cast to T. Terms below float32's
// normal range are flushed to zero, as oneDNN's products flush them: far under an ulp of a sum
// that has a term of 1, and a denormal operand costs a microcode assist.
template <class T>
inline __attribute__((always_inline)) void softmax_row(const Problem& p, const Visibility& visible,
                                                       std::int64_t t, float* s,
                                                       std::int64_t padded) {
  const float scale = static_cast<float>(T(p.scale));
  F32x8 x;
  std::int64_t r;
  for (r = 0; r < padded; r += 8) {
    load8(x, s + r);
    round_to<T>(x);
    x *= scale;
    round_to<T>(x);
    std::memcpy(s + r, &x, sizeof x);
  }
  constexpr float kMinus = -std::numeric_limits<float>::infinity();
  if (visible.mask == nullptr) {  // a causal chain: the rows from committed + t + 1 on are hidden
    std::fill(s + std::min(p.rows, visible.committed + t + 1), s + padded, kMinus);
  } else {
    for (r = 0; r < padded; ++r)
      if (r >= p.rows || !visible(t, r)) s[r] = kMinus;
  }
  // The max as std::max takes it lane by lane (a NaN score never replaces it), then of the lanes.
  F32x8 tops = F32x8{} + kMinus;
  for (r = 0; r < padded; r += 8) {
    load8(x, s + r);
    tops = tops < x ? x : tops;
  }
  float top = kMinus;
  for (int lane = 0; lane < 8; ++lane) top = std::max(top, tops[lane]);
  constexpr float kNormal = std::numeric_limits<float>::min();
  F32x8 lanes = {};
  for (r = 0; r < padded; r += 8) {
    load8(x, s + r);
    x -= top;
    exp8(x);
    x = x < kNormal ? F32x8{} : x;
    lanes += x;
    std::memcpy(s + r, &x, sizeof x);
  }
  const float sum = sum8(lanes);
  const float inverse = 1.0f / sum;
  for (r = 0; r < padded; r += 8) {
    load8(x, s + r);
    x *= inverse;
    round_to<T>(x);
    x = x < kNormal ? F32x8{} : x;
    std::memcpy(s + r, &x, sizeof x);
  }
}

// The query heads of KV heads [begin, end): each item (query t = j / group, head
// kv · group + j % group) alone through its scores, softmax and weighted values, so a query has
// the bits of the same query alone whatever the block beside it.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void attend_kv_heads(
    const Problem& p, const Visibility& visible, const T* q, const T* keys, const T* values, T* out,
    std::int64_t begin, std::int64_t end, FewRowAttentionKernel kernel, Scratch& scratch) {
  // The tiles and the dot products take bf16 values in pairs; the vectors widen them.
  const bool pairs = kernel != FewRowAttentionKernel::kVectors;
  const PairProducts products = pair_products(kernel);
  const std::int64_t items = p.queries * p.group;
  // A row of scores in whole vectors (8 lanes), tiles (16 key rows) and probability tiles (32).
  const std::int64_t padded = (p.rows + 31) / 32 * 32;
  const std::int64_t items_padded = pairs ? (items + 15) / 16 * 16 : items;
  const std::int64_t widened_rows = pairs ? 0 : 2 * p.rows * p.width;
  scratch.f32.resize(
      static_cast<std::size_t>(widened_rows + items_padded * (p.width * 2 + padded)));
  float* const key_buffer = scratch.f32.data();
  float* const value_buffer = key_buffer + widened_rows / 2;
  float* const query = key_buffer + widened_rows;       // [items, width] (vector products)
  float* const sums = query + items * p.width;          // [items_padded, width]
  float* const scores = sums + items_padded * p.width;  // [items_padded, padded]
  std::uint16_t *query_pairs = nullptr, *probs = nullptr, *value_pairs = nullptr;
  if (pairs) {
    scratch.bf16.resize(static_cast<std::size_t>(p.width * items_padded + items_padded * padded +
                                                 padded * p.width));
    query_pairs = scratch.bf16.data();             // [width / 2, items_padded, 2]
    probs = query_pairs + p.width * items_padded;  // [items_padded, padded]
    value_pairs = probs + items_padded * padded;   // [padded / 2, width, 2]
    std::fill(query_pairs, query_pairs + p.width * items_padded, std::uint16_t{0});
    std::fill(probs + items * padded, probs + items_padded * padded, std::uint16_t{0});
  }
  const auto head_row = [&](std::int64_t kv, std::int64_t j) {
    return (j / p.group * p.heads + kv * p.group + j % p.group) * p.width;
  };
  for (std::int64_t kv = begin; kv < end; ++kv) {
    const T* k = keys + kv * p.key_head_stride;
    const T* v = values + kv * p.value_head_stride;
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      if (pairs) {
        // A pair of bf16 values is one 32-bit word (the padding items' pairs are zero from the
        // start).
        for (std::int64_t j = 0; j < items; ++j) {
          const c10::BFloat16* row = q + head_row(kv, j);
          for (std::int64_t c = 0; c < p.width / 2; ++c)
            std::memcpy(query_pairs + (c * items_padded + j) * 2, row + 2 * c,
                        2 * sizeof(std::uint16_t));
        }
        const AttentionScoreOperands operands{reinterpret_cast<const std::uint16_t*>(k),
                                              p.key_row_stride,
                                              p.rows,
                                              query_pairs,
                                              items_padded,
                                              p.width,
                                              scores,
                                              padded};
        products.key_scores(operands);
      }
    }
    const VectorProducts<T> vector =
        pairs ? VectorProducts<T>{} : VectorProducts<T>(p, k, v, key_buffer, value_buffer);
    if (!pairs) {
      for (std::int64_t j = 0; j < items; ++j)
        widen(q + head_row(kv, j), p.width, query + j * p.width);
      vector.scores(p, items, query, scores, padded);
    }
    for (std::int64_t j = 0; j < items; ++j)
      softmax_row<T>(p, visible, j / p.group, scores + j * padded, padded);
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      if (pairs) {
        // The probabilities are bf16 values already: their upper halves.
        for (std::int64_t j = 0; j < items; ++j) {
          const float* s = scores + j * padded;
          std::uint16_t* b = probs + j * padded;
          for (std::int64_t r = 0; r < padded; ++r) {
            std::uint32_t bits;
            std::memcpy(&bits, s + r, sizeof bits);
            b[r] = static_cast<std::uint16_t>(bits >> 16);
          }
        }
        products.weighted_values({probs, padded, reinterpret_cast<const std::uint16_t*>(v),
                                  p.value_row_stride, p.rows, items_padded, p.width, value_pairs,
                                  sums});
      }
    }
    if (!pairs) vector.sums(p, items, scores, padded, sums);
    for (std::int64_t j = 0; j < items; ++j) {
      T* o = out + head_row(kv, j);
      const float* sum = sums + j * p.width;
      std::int64_t i = 0;
      F32x8 x;
      for (; i + 8 <= p.width; i += 8) {
        load8(x, sum + i);
        store8(o + i, x);
      }
      for (; i < p.width; ++i) o[i] = T(sum[i]);
    }
  }
}

template <class T>
void attend(const Problem& p, const Visibility& visible, const T* q, const T* keys, const T* values,
            T* out, FewRowAttentionKernel kernel) {
  const bool pairs = kernel != FewRowAttentionKernel::kVectors;
  const std::int64_t kv_heads = p.heads / p.group;
  const std::int64_t work_per_kv_head = 2 * p.group * p.queries * p.rows * p.width;
  // A KV head in pair products is less work per multiply-add (on the tiles 16 queries over 80
  // rows: 64 us a layer against the vectors' 165), so a thread pays for itself at less of it.
  const std::int64_t serial_work = pairs ? std::int64_t{1} << 13 : std::int64_t{1} << 16;
  const std::int64_t grain = std::max<std::int64_t>(1, serial_work / work_per_kv_head);
  at::parallel_for(0, kv_heads, grain, [&](std::int64_t begin, std::int64_t end) {
    thread_local Scratch scratch;
    attend_kv_heads(p, visible, q, keys, values, out, begin, end, kernel, scratch);
  });
}

}  // namespace

bool few_row_attention_kernel_takes(FewRowAttentionKernel kernel, const at::Tensor& q) {
  if (kernel == FewRowAttentionKernel::kVectors) return true;
  const bool pairs = q.scalar_type() == at::kBFloat16 && q.dim() == 3 && q.size(2) % 32 == 0 &&
                     q.size(2) <= kMaxPairAttentionWidth;
  if (kernel == FewRowAttentionKernel::kTiles) return pairs && amx_available();
  return pairs && few_row_kernel_available(FewRowKernel::kBf16Dot);
}

namespace {
bool shapes_taken(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                  const at::Tensor& visible) {
  const at::ScalarType dtype = q.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kFloat) return false;
  for (const at::Tensor* t : {&q, &keys, &values})
    if (!t->device().is_cpu() || t->scalar_type() != dtype || t->dim() != 3 || t->stride(2) != 1 ||
        (at::GradMode::is_enabled() && t->requires_grad()))
      return false;
  const std::int64_t queries = q.size(0), heads = q.size(1), rows = keys.size(1), width = q.size(2);
  if (queries == 0 || heads == 0 || width == 0 || rows < queries || keys.size(0) == 0 ||
      heads % keys.size(0) != 0 || keys.size(2) != width || values.sizes() != keys.sizes())
    return false;
  // A mask of another shape is the batched form's to refuse.
  return !visible.defined() || (visible.dim() == 2 && visible.size(0) == queries &&
                                (visible.size(1) == rows || visible.size(1) == queries));
}
}  // namespace

FewRowAttentionKernel best_few_row_attention_kernel(const at::Tensor& q) {
  if (few_row_attention_kernel_takes(FewRowAttentionKernel::kTiles, q))
    return FewRowAttentionKernel::kTiles;
  // For every block size, one query too: a verify row then has the bits of the row decoded alone
  // (the vectors round otherwise), which is what lets a speculative loop reproduce greedy decoding.
  if (few_row_attention_kernel_takes(FewRowAttentionKernel::kBf16Dots, q))
    return FewRowAttentionKernel::kBf16Dots;
  return FewRowAttentionKernel::kVectors;
}

bool few_row_attention_applies(const at::Tensor& q, const at::Tensor& keys,
                               const at::Tensor& values, const at::Tensor& visible) {
  if (!shapes_taken(q, keys, values, visible)) return false;
  const std::int64_t queries = q.size(0), heads = q.size(1), rows = keys.size(1), width = q.size(2);
  if (best_few_row_attention_kernel(q) == FewRowAttentionKernel::kVectors)
    return queries * heads * rows * width <= kFewRowAttentionWork;
  const std::int64_t items = queries * (heads / keys.size(0));
  return queries <= kTileAttentionQueries && (items + 15) / 16 * 16 * rows <= kTileAttentionScores;
}

at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale) {
  return few_row_attention(q, keys, values, visible, scale, best_few_row_attention_kernel(q));
}

at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale,
                             FewRowAttentionKernel kernel) {
  if (!shapes_taken(q, keys, values, visible) || !few_row_attention_kernel_takes(kernel, q))
    throw std::invalid_argument("few_row_attention: not shapes or a kernel it takes");
  const at::Tensor qc = q.contiguous();
  const std::int64_t queries = q.size(0), heads = q.size(1), width = q.size(2);
  Problem p{queries,
            heads,
            heads / keys.size(0),
            keys.size(1),
            width,
            keys.stride(0),
            keys.stride(1),
            values.stride(0),
            values.stride(1),
            static_cast<float>(scale)};
  Visibility v;
  v.rows = p.rows;
  v.committed = p.rows - queries;
  at::Tensor mask;
  if (visible.defined()) {
    mask = visible.to(at::kBool).contiguous();
    v.mask = mask.data_ptr<bool>();
    v.columns = mask.size(1);
  }
  at::Tensor out = at::empty({queries, heads * width}, q.options());
  if (q.scalar_type() == at::kBFloat16)
    attend(p, v, qc.data_ptr<c10::BFloat16>(), keys.data_ptr<c10::BFloat16>(),
           values.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), kernel);
  else
    attend(p, v, qc.data_ptr<float>(), keys.data_ptr<float>(), values.data_ptr<float>(),
           out.data_ptr<float>(), kernel);
  return out;
}

}  // namespace draftgate::model
