#include "draftgate/model/few_row_attention.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

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

// The products of a head in float32, in vectors of 8 lanes (a register of each clone of
// attend_kv_heads, two on the baseline): q with each key row, the weighted sum of the value rows.
typedef float F32x8 __attribute__((vector_size(32)));
typedef std::int32_t I32x8 __attribute__((vector_size(32)));
typedef std::uint16_t U16x8 __attribute__((vector_size(16)));
typedef std::uint16_t U16x16 __attribute__((vector_size(32)));

// By reference: a vector passed or returned by value has another ABI in each clone. bf16 bits
// interleaved with zeros are the float32 values (little-endian): one unpack, where a widening
// conversion and a shift compiled to four instructions on half-registers.
inline __attribute__((always_inline)) void load8(F32x8& out, const c10::BFloat16* p) {
  U16x8 bits;
  std::memcpy(&bits, p, sizeof bits);
  const U16x8 zero = {};
  const U16x16 wide =
      __builtin_shufflevector(zero, bits, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  std::memcpy(&out, &wide, sizeof out);
}
inline __attribute__((always_inline)) void load8(F32x8& out, const float* p) {
  std::memcpy(&out, p, sizeof out);
}

// v rounded to T as T(float) rounds each lane (bf16: nearest even, NaN as 0x7FC0; float: as is).
template <class T>
inline __attribute__((always_inline)) void round_to(F32x8& v) {
  if constexpr (!std::is_same_v<T, float>) {
    I32x8 bits;
    std::memcpy(&bits, &v, sizeof v);
    const I32x8 lsb = (bits >> 16) & 1;
    I32x8 rounded = (bits + 0x7FFF + lsb) & static_cast<std::int32_t>(0xFFFF0000u);
    rounded = v != v ? I32x8{} + 0x7FC00000 : rounded;
    std::memcpy(&v, &rounded, sizeof v);
  }
}

// exp per lane (Cephes' expf: x = n ln2 + r, a degree-5 polynomial in r, times 2^n): within ~1 ulp
// of glibc's and Sleef's, which the batched form's softmax takes; NaN stays NaN, and what would be
// denormal (x < -87.3) is zero — the caller flushes those anyway.
inline __attribute__((always_inline)) void exp8(F32x8& v) {
  const F32x8 x0 = v;
  F32x8 x = x0 < -88.0f ? F32x8{} - 88.0f : x0;
  x = x > 88.0f ? F32x8{} + 88.0f : x;
  const F32x8 fx = x * 1.44269504088896341f + 0.5f;
  F32x8 n = __builtin_convertvector(__builtin_convertvector(fx, I32x8), F32x8);
  n = n > fx ? n - 1.0f : n;  // floor: the conversion truncates toward zero
  x = x - n * 0.693359375f - n * -2.12194440e-4f;
  const F32x8 z = x * x;
  F32x8 y = 1.9875691500e-4f * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  const I32x8 exponent = (__builtin_convertvector(n, I32x8) + 127) << 23;
  F32x8 scale;
  std::memcpy(&scale, &exponent, sizeof scale);
  y = y * scale;
  y = x0 < -87.3365448f ? F32x8{} : y;  // ln of float32's smallest normal
  v = x0 != x0 ? x0 : y;
}

// Scores of R key rows: each row's sum formed in one order whatever R (lane j takes the i = j mod 8
// in order, the lanes summed as a tree, then the tail), so a score has the same bits in a block of
// rows as alone; R independent chains keep the vector units busy.
template <int R>
inline __attribute__((always_inline)) void dots(const float* q, const float* k, std::int64_t stride,
                                                std::int64_t n, float* out) {
  F32x8 acc[R] = {}, x, y;
  const std::int64_t whole = n / 8 * 8;
  for (std::int64_t i = 0; i < whole; i += 8) {
    load8(x, q + i);
    for (int j = 0; j < R; ++j) {
      load8(y, k + j * stride + i);
      acc[j] += x * y;
    }
  }
  for (int j = 0; j < R; ++j) {
    const F32x8& v = acc[j];
    float sum = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    for (std::int64_t i = whole; i < n; ++i) sum += q[i] * k[j * stride + i];
    out[j] = sum;
  }
}

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

// The query heads of KV heads [begin, end): the group of heads times every query at once, so
// each block of 8 key or value rows is read from L1 for all of them (one head at a time streamed
// every row through L2 for each). Each query's sums still run over the rows in order, its bits
// those of the same query alone.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void attend_kv_heads(
    const Problem& p, const Visibility& visible, const T* q, const T* keys, const T* values, T* out,
    std::int64_t begin, std::int64_t end, std::vector<float>& scratch) {
  const std::int64_t items = p.queries * p.group;
  const std::int64_t padded = (p.rows + 7) / 8 * 8;  // a row of scores, in whole vectors
  scratch.resize(static_cast<std::size_t>(2 * p.rows * p.width + items * (p.width * 2 + padded)));
  float* const key_buffer = scratch.data();
  float* const value_buffer = key_buffer + p.rows * p.width;
  float* const query = value_buffer + p.rows * p.width;  // [items, width]
  float* const sums = query + items * p.width;           // [items, width]
  float* const scores = sums + items * p.width;          // [items, padded]
  constexpr std::int64_t kBlock = 8;
  for (std::int64_t kv = begin; kv < end; ++kv) {
    std::int64_t ks = 0, vs = 0;
    const float* k =
        as_float(keys + kv * p.key_head_stride, p.rows, p.width, p.key_row_stride, key_buffer, ks);
    const float* v = as_float(values + kv * p.value_head_stride, p.rows, p.width,
                              p.value_row_stride, value_buffer, vs);
    // Item j: query j / group, head kv · group + j % group.
    const auto head_row = [&](std::int64_t j) {
      return (j / p.group * p.heads + kv * p.group + j % p.group) * p.width;
    };
    for (std::int64_t j = 0; j < items; ++j) widen(q + head_row(j), p.width, query + j * p.width);
    std::int64_t r = 0;
    for (; r + kBlock <= p.rows; r += kBlock)
      for (std::int64_t j = 0; j < items; ++j)
        dots<kBlock>(query + j * p.width, k + r * ks, ks, p.width, scores + j * padded + r);
    for (; r < p.rows; ++r)
      for (std::int64_t j = 0; j < items; ++j)
        dots<1>(query + j * p.width, k + r * ks, ks, p.width, scores + j * padded + r);
    for (std::int64_t j = 0; j < items; ++j) {
      float* s = scores + j * padded;
      const std::int64_t t = j / p.group;
      // Cast to T as the batched product's output is, scaled and cast again; ATen casts the
      // scale to the tensor's dtype first (measured: bf16 · 1/√128 takes bf16(1/√128)).
      const float scale = static_cast<float>(T(p.scale));
      F32x8 x;
      for (r = 0; r < padded; r += 8) {
        load8(x, s + r);
        round_to<T>(x);
        x *= scale;
        round_to<T>(x);
        std::memcpy(s + r, &x, sizeof x);
      }
      float top = -std::numeric_limits<float>::infinity();
      for (r = 0; r < padded; ++r) {
        if (r >= p.rows || !visible(t, r)) s[r] = -std::numeric_limits<float>::infinity();
        top = std::max(top, s[r]);
      }
      // softmax in float32: exp(s - max) times the reciprocal of their sum (ATen's order of
      // operations; a query that sees nothing is NaN, as there), cast to T. Terms below
      // float32's normal range are flushed to zero, as oneDNN's products flush them: far under an
      // ulp of a sum that has a term of 1, and a denormal operand costs a microcode assist.
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
      const float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                        ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
      const float inverse = 1.0f / sum;
      for (r = 0; r < padded; r += 8) {
        load8(x, s + r);
        x *= inverse;
        round_to<T>(x);
        x = x < kNormal ? F32x8{} : x;
        std::memcpy(s + r, &x, sizeof x);
      }
    }
    // Every row's value weighted by its probability (zero where masked), as the batched product
    // sums them.
    std::fill(sums, sums + items * p.width, 0.0f);
    for (r = 0; r + kBlock <= p.rows; r += kBlock)
      for (std::int64_t j = 0; j < items; ++j)
        add_weighted<kBlock>(scores + j * padded + r, v + r * vs, vs, p.width, sums + j * p.width);
    for (; r < p.rows; ++r)
      for (std::int64_t j = 0; j < items; ++j)
        add_weighted<1>(scores + j * padded + r, v + r * vs, vs, p.width, sums + j * p.width);
    for (std::int64_t j = 0; j < items; ++j) {
      T* o = out + head_row(j);
      for (std::int64_t i = 0; i < p.width; ++i) o[i] = T(sums[j * p.width + i]);
    }
  }
}

template <class T>
void attend(const Problem& p, const Visibility& visible, const T* q, const T* keys, const T* values,
            T* out) {
  const std::int64_t kv_heads = p.heads / p.group;
  const std::int64_t work_per_kv_head = 2 * p.group * p.queries * p.rows * p.width;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / work_per_kv_head);
  at::parallel_for(0, kv_heads, grain, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> scratch;
    attend_kv_heads(p, visible, q, keys, values, out, begin, end, scratch);
  });
}

}  // namespace

bool few_row_attention_applies(const at::Tensor& q, const at::Tensor& keys,
                               const at::Tensor& values, const at::Tensor& visible) {
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
  if (visible.defined() && (visible.dim() != 2 || visible.size(0) != queries ||
                            (visible.size(1) != rows && visible.size(1) != queries)))
    return false;
  return queries * heads * rows * width <= kFewRowAttentionWork;
}

at::Tensor few_row_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale) {
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
           values.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>());
  else
    attend(p, v, qc.data_ptr<float>(), keys.data_ptr<float>(), values.data_ptr<float>(),
           out.data_ptr<float>());
  return out;
}

}  // namespace draftgate::model
