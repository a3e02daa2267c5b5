#include "draftgate/model/fused_rows.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "f32x8.h"

namespace draftgate::model::fused {
namespace {

// Values per thread: a parallel region costs more than a few rows of a thousand values. At 2^16
// a verify block's norms and RoPE (16 rows of 1024, 256 head rows of 128) ran on one thread while
// the other waited; at 2^12 8- and 16-row verify passes of Qwen3-0.6B were 1-3 % faster (23 of 30
// interleaved pairs each), a decode step the same.
constexpr std::int64_t kSerialValues = std::int64_t{1} << 12;

// Where row r of a [T, heads, d] view with d contiguous starts, in elements: (r / heads) ·
// outer + (r % heads / repeat) · inner (a view split from a wider row is read where it lies; each
// of `repeat` consecutive heads reads the same row, as an expanded view's); any other tensor as its
// contiguous rows.
struct RowLayout {
  std::int64_t heads, outer, inner, repeat = 1;
  std::int64_t at(std::int64_t r) const { return r / heads * outer + r % heads / repeat * inner; }
};

bool lies_in_rows(const at::Tensor& x) { return x.dim() == 3 && x.stride(2) == 1; }

RowLayout row_layout(const at::Tensor& x) {
  if (lies_in_rows(x)) return {std::max<std::int64_t>(1, x.size(1)), x.stride(0), x.stride(1)};
  return {std::max<std::int64_t>(1, x.numel() / std::max<std::int64_t>(1, x.size(-1))), 0,
          x.size(-1)};
}

// The sum of a row's float32 squares in eight chains (lane j takes i = j mod 8), a fixed tree, then
// the tail: one order for a row whatever the rows beside it.
template <class T>
inline __attribute__((always_inline)) float sum_of_squares(const T* x, std::int64_t width) {
  const std::int64_t whole = width / 8 * 8;
  F32x8 lanes = {}, v;
  for (std::int64_t i = 0; i < whole; i += 8) {
    load8(v, x + i);
    lanes += v * v;
  }
  float sum = sum8(lanes);
  for (std::int64_t i = whole; i < width; ++i)
    sum += static_cast<float>(x[i]) * static_cast<float>(x[i]);
  return sum;
}

// silu in float32 of the first `count` (1 or 8) gate values into v's lanes: from silu_of where
// given (a table for bf16 gates), else by f32x8.h's silu8.
template <class T>
inline __attribute__((always_inline)) void gate_silu(F32x8& v, const T* g, int count,
                                                     const float* silu_of) {
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    if (silu_of != nullptr) {
      for (int lane = 0; lane < count; ++lane) v[lane] = silu_of[g[lane].x];
      return;
    }
  }
  if (count == 8) {
    load8(v, g);
  } else {
    v = F32x8{};
    v[0] = static_cast<float>(g[0]);
  }
  silu8(v);
}

// Rows [begin, end) of the norm. T is c10::BFloat16 (whose float constructor rounds to nearest
// even, as every ATen cast) or float; eight lanes at a time (f32x8.h), the tail one by one with the
// same operations.
// gate (null but for rms_norm_gated, kPlain): the kPlain row times silu(gate) in float32, cast;
// silu_of, where given, the float32 silu of every bf16 gate value (else f32x8.h's silu8).
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void norm_row_range(
    const T* x, const RowLayout& rows, const T* w, const T* gate, const float* silu_of, T* out,
    std::int64_t begin, std::int64_t end, std::int64_t width, float eps, NormStyle style) {
  const std::int64_t whole = width / 8 * 8;
  for (std::int64_t r = begin; r < end; ++r) {
    const T* xr = x + rows.at(r);
    T* o = out + r * width;
    F32x8 v, wv;
    const float scale =
        1.0f / std::sqrt(sum_of_squares(xr, width) / static_cast<float>(width) + eps);
    // kPlain: w · n cast to x's dtype first (transformers' Qwen3RMSNorm); kOnePlusW: n · (1 + w)
    // in float32, cast once (Qwen3_5RMSNorm).
    const T* g = gate == nullptr ? nullptr : gate + r * width;
    for (std::int64_t i = 0; i < whole; i += 8) {
      load8(v, xr + i);
      load8(wv, w + i);
      v *= scale;
      if (style == NormStyle::kPlain) {
        round_to<T>(v);
        v = wv * v;
        if (g != nullptr) {
          round_to<T>(v);
          gate_silu(wv, g + i, 8, silu_of);
          v *= wv;
        }
        store8(o + i, v);
      } else {
        store8(o + i, v * (wv + 1.0f));
      }
    }
    for (std::int64_t i = whole; i < width; ++i) {
      const float n = static_cast<float>(xr[i]) * scale;
      if (style != NormStyle::kPlain) {
        o[i] = T(n * (static_cast<float>(w[i]) + 1.0f));
        continue;
      }
      const T plain = T(static_cast<float>(w[i]) * static_cast<float>(T(n)));
      if (g == nullptr) {
        o[i] = plain;
        continue;
      }
      F32x8 one;  // the tail's silu by the same lanes' code
      gate_silu(one, g + i, 1, silu_of);
      o[i] = T(static_cast<float>(plain) * one[0]);
    }
  }
}

// Rows [begin, end) of sum = a + b (float32, cast once: ATen's add) and then of the norm of sum.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void add_row_range(
    const T* a, const T* b, T* sum, std::int64_t begin, std::int64_t end, std::int64_t width) {
  const std::int64_t whole = width / 8 * 8;
  F32x8 x, y;
  for (std::int64_t r = begin; r < end; ++r) {
    const std::int64_t row = r * width;
    for (std::int64_t i = 0; i < whole; i += 8) {
      load8(x, a + row + i);
      load8(y, b + row + i);
      store8(sum + row + i, x + y);
    }
    for (std::int64_t i = whole; i < width; ++i)
      sum[row + i] = T(static_cast<float>(a[row + i]) + static_cast<float>(b[row + i]));
  }
}

// x[begin, end) cast to T (bf16: nearest even, as every ATen cast; float: as is).
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void round_range(
    const float* x, T* out, std::int64_t begin, std::int64_t end) {
  F32x8 v;
  std::int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    load8(v, x + i);
    store8(out + i, v);
  }
  for (; i < end; ++i) out[i] = T(x[i]);
}

template <class T>
void norm_rows(const T* x, const RowLayout& layout, const T* w, const T* gate, const float* silu_of,
               T* out, std::int64_t rows, std::int64_t width, float eps, NormStyle style) {
  const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
  at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    norm_row_range(x, layout, w, gate, silu_of, out, begin, end, width, eps, style);
  });
}

// Rows [begin, end) of x / sqrt(Σx² + 1e-6) in float32, then times `scale` (a second rounding, as
// the composition's second product); the sum as the norm's, in eight chains and a tree.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void l2_row_range(
    const T* x, const RowLayout& rows, float* out, std::int64_t begin, std::int64_t end,
    std::int64_t width, float scale) {
  const std::int64_t whole = width / 8 * 8;
  for (std::int64_t r = begin; r < end; ++r) {
    const T* xr = x + rows.at(r);
    float* o = out + r * width;
    F32x8 v;
    const float inverse = 1.0f / std::sqrt(sum_of_squares(xr, width) + 1e-6f);
    for (std::int64_t i = 0; i < whole; i += 8) {
      load8(v, xr + i);
      v *= inverse;
      if (scale != 1.0f) v *= scale;
      std::memcpy(o + i, &v, sizeof v);
    }
    for (std::int64_t i = whole; i < width; ++i) {
      const float n = static_cast<float>(xr[i]) * inverse;
      o[i] = scale != 1.0f ? n * scale : n;
    }
  }
}

// Rows [begin, end) of bf16 values widened to float32, each through `table` first where given.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void widen_row_range(
    const c10::BFloat16* x, const RowLayout& rows, const std::uint16_t* table, float* out,
    std::int64_t begin, std::int64_t end, std::int64_t width) {
  for (std::int64_t r = begin; r < end; ++r) {
    const c10::BFloat16* xr = x + rows.at(r);
    float* o = out + r * width;
    for (std::int64_t i = 0; i < width; ++i) {
      const std::uint32_t bits = table == nullptr ? xr[i].x : table[xr[i].x];
      const std::uint32_t wide = bits << 16;
      std::memcpy(o + i, &wide, sizeof wide);
    }
  }
}

// Rows [begin, end) of RoPE: x · cos rounded, then + swap_halves(x) · [-sin | sin] in float32,
// rounded — the roundings of `rot * cos` and `addcmul`.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void rope_row_range(
    const T* x, const T* cos, const T* sin, T* out, std::int64_t begin, std::int64_t end,
    std::int64_t heads, std::int64_t width, std::int64_t rotary) {
  const std::int64_t half = rotary / 2, whole = half / 8 * 8;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* xr = x + row * width;
    const T* c = cos + row / heads * rotary;
    const T* s = sin + row / heads * rotary;
    T* o = out + row * width;
    F32x8 v, swapped, cv, sv;
    for (std::int64_t at = 0; at < rotary; at += half) {  // the first half, then the second
      const std::int64_t other = at == 0 ? half : 0;
      for (std::int64_t i = at; i < at + whole; i += 8) {
        load8(v, xr + i);
        load8(swapped, xr + other + i - at);
        load8(cv, c + i);
        load8(sv, s + i);
        F32x8 rotated = v * cv;
        round_to<T>(rotated);
        store8(o + i, rotated + swapped * sv);
      }
      for (std::int64_t i = at + whole; i < at + half; ++i) {
        const T rotated = T(static_cast<float>(xr[i]) * static_cast<float>(c[i]));
        o[i] = T(static_cast<float>(rotated) +
                 static_cast<float>(xr[other + i - at]) * static_cast<float>(s[i]));
      }
    }
    for (std::int64_t i = rotary; i < width; ++i) o[i] = xr[i];
  }
}

template <class T>
void rope_rows(const T* x, const T* cos, const T* sin, T* out, std::int64_t positions,
               std::int64_t heads, std::int64_t width, std::int64_t rotary) {
  const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
  at::parallel_for(0, positions * heads, grain, [&](std::int64_t begin, std::int64_t end) {
    rope_row_range(x, cos, sin, out, begin, end, heads, width, rotary);
  });
}

// op of every bf16 value, from the linked ATen's own operator: its bits whatever its version
// computes (Debian's 1.13 rounds silu's exponential and denominator to bf16 too — a float32 formula
// differs on 30 % of values). A table, because a bf16 input has 65536 values and an exp per value
// was 10 ns.
template <class Out, class F>
std::vector<Out> of_every_bf16(F&& op) {
  c10::InferenceMode inference;
  const at::Tensor every = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kBFloat16);
  const at::Tensor values = op(every).contiguous();
  const auto* first = static_cast<const Out*>(values.data_ptr());
  return std::vector<Out>(first, first + values.numel());
}

// The float32 silu of every bf16 value widened (the vectorised kernel's bits; f32x8.h's silu8 is
// within an ulp of them): the gated norm's gates are bf16.
const float* bf16_float_silu_table() {
  static const std::vector<float> table =
      of_every_bf16<float>([](const at::Tensor& x) { return at::silu(x.to(at::kFloat)); });
  return table.data();
}

const std::uint16_t* bf16_silu_table() {
  static const std::vector<std::uint16_t> table =
      of_every_bf16<std::uint16_t>([](const at::Tensor& x) { return at::silu(x); });
  return table.data();
}

const std::uint16_t* bf16_sigmoid_table() {
  static const std::vector<std::uint16_t> table =
      of_every_bf16<std::uint16_t>([](const at::Tensor& x) { return at::sigmoid(x); });
  return table.data();
}

// f(gate) · up over [begin, end), f a table of bf16 values (silu's, sigmoid's): the table read a
// value at a time, the product eight.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void table_mul_range(
    const std::uint16_t* table, const c10::BFloat16* gate, const c10::BFloat16* up,
    c10::BFloat16* out, std::int64_t begin, std::int64_t end) {
  std::int64_t i = begin;
  F32x8 s, u;
  for (; i + 8 <= end; i += 8) {
    U16x8 bits;
    for (int j = 0; j < 8; ++j) bits[j] = table[gate[i + j].x];
    widen8(s, bits);
    load8(u, up + i);
    store8(out + i, s * u);
  }
  for (; i < end; ++i) {
    const c10::BFloat16 value(table[gate[i].x], c10::BFloat16::from_bits());
    out[i] = c10::BFloat16(static_cast<float>(value) * static_cast<float>(up[i]));
  }
}

void bf16_silu(const c10::BFloat16* x, c10::BFloat16* out, std::int64_t n) {
  const std::uint16_t* silu = bf16_silu_table();
  at::parallel_for(0, n, 4 * kSerialValues, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      out[i] = c10::BFloat16(silu[x[i].x], c10::BFloat16::from_bits());
  });
}

// Window t's channels [i, i + V's lanes): the products rounded to bf16 (each tap's product is a
// bf16 tensor in the composition), summed in float32 in tap order and rounded, silu from the table.
template <class V>
inline __attribute__((always_inline)) void window_lanes(const std::uint16_t* silu,
                                                        const c10::BFloat16* const* window,
                                                        const c10::BFloat16* taps, std::int64_t i,
                                                        std::int64_t k, std::int64_t width,
                                                        c10::BFloat16* o) {
  V acc{}, x, w;
  for (std::int64_t j = 0; j < k; ++j) {
    load_lanes(x, window[j] + i);
    load_lanes(w, taps + j * width);
    x *= w;
    round_to<c10::BFloat16>(x);  // the product's bf16 tensor
    acc += x;
  }
  round_to<c10::BFloat16>(acc);  // the sum's, accumulated in float32
  typename IntLanes<V>::type bits;
  std::memcpy(&bits, &acc, sizeof bits);
  for (int lane = 0; lane < static_cast<int>(sizeof(V) / sizeof(float)); ++lane)
    o[i + lane] = c10::BFloat16(silu[static_cast<std::uint32_t>(bits[lane]) >> 16],
                                c10::BFloat16::from_bits());
}

// Channels [begin, end) of every window of silu_window_sums (begin a multiple of 8): rows[j] the
// window's K rows, taps [K, end − begin] for these channels. Sixteen channels at a time (the
// x86-64-v4 clone's full registers: 16 windows of Qwen3.5-0.8B's 6144 channels in 58 us against
// eight at a time's 72, 190 of 200 alternated rounds), then eight, then one.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void window_range(
    const std::uint16_t* silu, const c10::BFloat16* const* rows, const c10::BFloat16* taps,
    c10::BFloat16* out, std::int64_t windows, std::int64_t begin, std::int64_t end, std::int64_t k,
    std::int64_t c) {
  const std::int64_t width = end - begin;
  for (std::int64_t t = 0; t < windows; ++t) {
    const c10::BFloat16* const* window = rows + t * k;
    c10::BFloat16* o = out + t * c;
    std::int64_t i = begin;
    for (; i + 16 <= end; i += 16)
      window_lanes<F32x16>(silu, window, taps + (i - begin), i, k, width, o);
    for (; i + 8 <= end; i += 8)
      window_lanes<F32x8>(silu, window, taps + (i - begin), i, k, width, o);
    for (; i < end; ++i) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < k; ++j)
        sum += static_cast<float>(c10::BFloat16(static_cast<float>(window[j][i]) *
                                                static_cast<float>(taps[j * width + i - begin])));
      o[i] = c10::BFloat16(silu[c10::BFloat16(sum).x], c10::BFloat16::from_bits());
    }
  }
}

void bf16_silu_mul(const c10::BFloat16* gate, const c10::BFloat16* up, c10::BFloat16* out,
                   std::int64_t n) {
  const std::uint16_t* silu = bf16_silu_table();
  at::parallel_for(0, n, 4 * kSerialValues, [&](std::int64_t begin, std::int64_t end) {
    table_mul_range(silu, gate, up, out, begin, end);
  });
}

template <class F>
void by_dtype(at::ScalarType dtype, F&& f) {
  if (dtype == at::kBFloat16)
    f(c10::BFloat16{});
  else
    f(float{});
}

bool applies(std::initializer_list<const at::Tensor*> tensors) {
  const at::ScalarType dtype = (*tensors.begin())->scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kFloat) return false;
  for (const at::Tensor* t : tensors) {
    if (!t->defined() || !t->device().is_cpu() || t->scalar_type() != dtype) return false;
    if (at::GradMode::is_enabled() && t->requires_grad()) return false;
  }
  return true;
}

}  // namespace

bool takes_rms_norm(const at::Tensor& x, const at::Tensor& weight) {
  return applies({&x, &weight}) && x.dim() >= 1 && x.size(-1) > 0 && weight.dim() == 1 &&
         weight.size(0) == x.size(-1);
}

bool takes_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const std::int64_t rotary = cos.size(-1);
  return applies({&x, &cos, &sin}) && x.dim() == 3 && cos.dim() == 3 &&
         cos.sizes() == sin.sizes() && cos.size(0) == x.size(0) && cos.size(1) == 1 && rotary > 0 &&
         rotary % 2 == 0 && rotary <= x.size(2);
}

bool takes_rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate) {
  return takes_rms_norm(gate, weight) && applies({&x}) && gate.sizes() == x.sizes() &&
         (x.scalar_type() == gate.scalar_type() || x.scalar_type() == at::kFloat);
}

bool takes_l2_normalise(const at::Tensor& x) {
  return applies({&x}) && x.dim() >= 1 && x.size(-1) > 0;
}

bool takes_silu(const at::Tensor& x) { return applies({&x}) && x.scalar_type() == at::kBFloat16; }

bool takes_silu_window_sums(const at::Tensor& head, const at::Tensor& tail,
                            const at::Tensor& weight) {
  return applies({&head, &tail, &weight}) && head.scalar_type() == at::kBFloat16 &&
         head.dim() == 2 && tail.dim() == 2 && weight.dim() == 3 && head.size(1) == tail.size(1) &&
         weight.size(0) == head.size(1) && weight.size(1) == 1 && weight.size(2) > 0;
}

bool takes_sigmoid_mul(const at::Tensor& x, const at::Tensor& gate) {
  return applies({&x, &gate}) && x.scalar_type() == at::kBFloat16 && gate.dim() == 3 &&
         gate.stride(2) == 1 && x.is_contiguous() && x.dim() == 2 && x.size(0) == gate.size(0) &&
         x.size(1) == gate.size(1) * gate.size(2);
}

bool takes_silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  return applies({&gate, &up}) && gate.scalar_type() == at::kBFloat16 && gate.sizes() == up.sizes();
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
  // A [T, heads, d] view (the query heads split from Qwen3.5's gated projection) where it lies.
  const at::Tensor xc = lies_in_rows(x) ? x : x.contiguous(), wc = weight.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options());
  const std::int64_t width = x.size(-1);
  by_dtype(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    norm_rows(xc.data_ptr<T>(), row_layout(xc), wc.data_ptr<T>(), static_cast<const T*>(nullptr),
              nullptr, out.data_ptr<T>(), xc.numel() / width, width, static_cast<float>(eps),
              style);
  });
  return out;
}

bool takes_add_rms_norm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& weight) {
  return takes_rms_norm(a, weight) && applies({&a, &b}) && a.sizes() == b.sizes();
}

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& a, const at::Tensor& b,
                                               const at::Tensor& weight, double eps,
                                               NormStyle style) {
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), wc = weight.contiguous();
  at::Tensor sum = at::empty_like(ac), out = at::empty_like(ac);
  const std::int64_t width = a.size(-1), rows = ac.numel() / width;
  const RowLayout layout = row_layout(sum);
  by_dtype(a.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const T *x = ac.data_ptr<T>(), *y = bc.data_ptr<T>(), *w = wc.data_ptr<T>();
    T *s = sum.data_ptr<T>(), *o = out.data_ptr<T>();
    const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
    at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
      add_row_range(x, y, s, begin, end, width);
      norm_row_range(s, layout, w, static_cast<const T*>(nullptr), nullptr, o, begin, end, width,
                     static_cast<float>(eps), style);
    });
  });
  return {sum, out};
}

at::Tensor rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate,
                          double eps) {
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous(), gc = gate.contiguous();
  at::Tensor out = at::empty_like(gc);
  const std::int64_t width = x.size(-1), rows = xc.numel() / width;
  by_dtype(gate.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const float* silu_of = std::is_same_v<T, c10::BFloat16> ? bf16_float_silu_table() : nullptr;
    if (x.scalar_type() == gate.scalar_type()) {
      norm_rows(xc.data_ptr<T>(), row_layout(xc), wc.data_ptr<T>(), gc.data_ptr<T>(), silu_of,
                out.data_ptr<T>(), rows, width, static_cast<float>(eps), NormStyle::kPlain);
      return;
    }
    // float32 x cast to the gate's dtype by the threads, each its rows before their norm (an
    // ATen cast on the calling thread first was ~10 us a 16-row Gated DeltaNet layer).
    at::Tensor cast = at::empty_like(gc);
    const float* from = xc.data_ptr<float>();
    T* to = cast.data_ptr<T>();
    const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
    at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
      round_range(from, to, begin * width, end * width);
      norm_row_range(static_cast<const T*>(to), row_layout(cast), wc.data_ptr<T>(),
                     gc.data_ptr<T>(), silu_of, out.data_ptr<T>(), begin, end, width,
                     static_cast<float>(eps), NormStyle::kPlain);
    });
  });
  return out;
}

at::Tensor l2_normalise(const at::Tensor& x, double scale) {
  const at::Tensor xc = lies_in_rows(x) ? x : x.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const std::int64_t width = x.size(-1), rows = xc.numel() / width;
  const RowLayout layout = row_layout(xc);
  by_dtype(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = xc.data_ptr<T>();
    float* o = out.data_ptr<float>();
    const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
    at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
      l2_row_range(in, layout, o, begin, end, width, static_cast<float>(scale));
    });
  });
  return out;
}

namespace {
at::Tensor widened(const at::Tensor& x, const std::uint16_t* table) {
  const at::Tensor xc = lies_in_rows(x) ? x : x.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const std::int64_t width = x.size(-1), rows = width == 0 ? 0 : xc.numel() / width;
  const RowLayout layout = row_layout(xc);
  const c10::BFloat16* in = xc.data_ptr<c10::BFloat16>();
  float* o = out.data_ptr<float>();
  const std::int64_t grain =
      std::max<std::int64_t>(1, 4 * kSerialValues / std::max<std::int64_t>(1, width));
  at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    widen_row_range(in, layout, table, o, begin, end, width);
  });
  return out;
}
}  // namespace

bool takes_widen(const at::Tensor& x) {
  return applies({&x}) && x.scalar_type() == at::kBFloat16 && x.dim() >= 1;
}

at::Tensor widen(const at::Tensor& x) { return widened(x, nullptr); }

at::Tensor sigmoid_widened(const at::Tensor& x) { return widened(x, bf16_sigmoid_table()); }

bool takes_delta_rule_rows(const at::Tensor& mixed, const at::Tensor& b, const at::Tensor& a,
                           const at::Tensor& dt_bias, std::int64_t nk, std::int64_t dk,
                           std::int64_t nv, std::int64_t dv) {
  const auto heads_of_t = [&](const at::Tensor& x) {
    return x.dim() == 2 && x.size(0) == mixed.size(0) && x.size(1) == nv;
  };
  return applies({&mixed, &b, &a}) && mixed.scalar_type() == at::kBFloat16 && mixed.dim() == 2 &&
         nk > 0 && dk > 0 && nv > 0 && dv > 0 && nv % nk == 0 &&
         mixed.size(1) == 2 * nk * dk + nv * dv && heads_of_t(b) && heads_of_t(a) &&
         applies({&dt_bias}) && dt_bias.scalar_type() == at::kFloat && dt_bias.dim() == 1 &&
         dt_bias.size(0) == nv;
}

DeltaRuleRows delta_rule_rows(const at::Tensor& mixed, const at::Tensor& b, const at::Tensor& a,
                              const at::Tensor& dt_bias, std::int64_t nk, std::int64_t dk,
                              std::int64_t nv, std::int64_t dv, double q_scale) {
  const at::Tensor mc = mixed.contiguous(), bc = b.contiguous(), ac = a.contiguous(),
                   biases = dt_bias.contiguous();
  const std::int64_t t = mc.size(0), row = mc.size(1);
  const at::TensorOptions f32 = mc.options().dtype(at::kFloat);
  DeltaRuleRows out{at::empty({t, nv, dk}, f32), at::empty({t, nv, dk}, f32),
                    at::empty({t, nv, dv}, f32), at::empty({t, nv}, f32), at::empty({t, nv}, f32)};
  const c10::BFloat16* m = mc.data_ptr<c10::BFloat16>();
  const RowLayout keys{nv, row, dk, nv / nk}, values{nv, row, dv}, gates = row_layout(bc);
  const std::uint16_t* sigmoid = bf16_sigmoid_table();
  const float scale = static_cast<float>(q_scale);
  // One index space for the five: q's rows, v's, beta's and a + dt_bias's (one a token), then
  // k's — the normalised rows at both ends, so that the threads' halves take as many.
  const std::int64_t heads = t * nv, total = 3 * heads + 2 * t;
  const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / std::max(dk, dv));
  at::parallel_for(0, total, grain, [&](std::int64_t begin, std::int64_t end) {
    const auto part = [&](std::int64_t first, std::int64_t count, auto&& run) {
      const std::int64_t lo = std::max(begin, first) - first;
      const std::int64_t hi = std::min(end, first + count) - first;
      if (lo < hi) run(lo, hi);
    };
    part(0, heads, [&](std::int64_t lo, std::int64_t hi) {
      l2_row_range(m, keys, out.q.data_ptr<float>(), lo, hi, dk, scale);
    });
    part(heads, heads, [&](std::int64_t lo, std::int64_t hi) {
      widen_row_range(m + 2 * nk * dk, values, nullptr, out.v.data_ptr<float>(), lo, hi, dv);
    });
    part(2 * heads, t, [&](std::int64_t lo, std::int64_t hi) {
      widen_row_range(bc.data_ptr<c10::BFloat16>(), gates, sigmoid, out.beta.data_ptr<float>(), lo,
                      hi, nv);
    });
    part(2 * heads + t, t, [&](std::int64_t lo, std::int64_t hi) {
      // ATen's add of float32 tensors, a + 1 · bias: the one rounding of a + bias.
      const c10::BFloat16* x = ac.data_ptr<c10::BFloat16>();
      const float* bias = biases.data_ptr<float>();
      float* o = out.gate_input.data_ptr<float>();
      for (std::int64_t i = lo * nv; i < hi * nv; ++i)
        o[i] = static_cast<float>(x[i]) + bias[i % nv];
    });
    part(2 * heads + 2 * t, heads, [&](std::int64_t lo, std::int64_t hi) {
      l2_row_range(m + nk * dk, keys, out.k.data_ptr<float>(), lo, hi, dk, 1.0f);
    });
  });
  return out;
}

at::Tensor silu_window_sums(const at::Tensor& head, const at::Tensor& tail,
                            const std::vector<std::int64_t>& index, const at::Tensor& weight) {
  const at::Tensor hc = head.contiguous(), tc = tail.contiguous();
  const std::int64_t k = weight.size(2), c = weight.size(0),
                     windows = static_cast<std::int64_t>(index.size()) / k;
  const std::int64_t head_rows = head.size(0), rows = head_rows + tail.size(0);
  std::vector<const c10::BFloat16*> row(index.size());
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::int64_t r = index[i];
    if (r < 0 || r >= rows) throw std::out_of_range("silu_window_sums: a row past [head; tail]");
    row[i] = r < head_rows ? hc.data_ptr<c10::BFloat16>() + r * c
                           : tc.data_ptr<c10::BFloat16>() + (r - head_rows) * c;
  }
  at::Tensor out = at::empty({windows, c}, head.options());
  const std::uint16_t* silu = bf16_silu_table();
  // The threads split the channels; each lays out its channels' taps as [K, its channels] (a
  // contiguous copy of the whole weight transposed, made by ATen on the calling thread, was
  // 40 us a verify layer).
  const c10::BFloat16* tp = weight.data_ptr<c10::BFloat16>();
  const std::int64_t s0 = weight.stride(2), s1 = weight.stride(0);
  const std::int64_t blocks = (c + 7) / 8;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kSerialValues / std::max<std::int64_t>(1, 8 * k * windows));
  at::parallel_for(0, blocks, grain, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t begin = first * 8, end = std::min(c, last * 8), width = end - begin;
    thread_local std::vector<c10::BFloat16> mine;
    mine.resize(static_cast<std::size_t>(k * width));
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < width; ++i) mine[j * width + i] = tp[j * s0 + (begin + i) * s1];
    window_range(silu, row.data(), mine.data(), out.data_ptr<c10::BFloat16>(), windows, begin, end,
                 k, c);
  });
  return out;
}

at::Tensor bf16_silu(const at::Tensor& x) {
  const at::Tensor xc = x.contiguous();
  at::Tensor out = at::empty_like(xc);
  bf16_silu(xc.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), xc.numel());
  return out;
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const at::Tensor xc = x.contiguous(), cc = cos.contiguous(), sc = sin.contiguous();
  at::Tensor out = at::empty_like(xc);
  by_dtype(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    rope_rows(xc.data_ptr<T>(), cc.data_ptr<T>(), sc.data_ptr<T>(), out.data_ptr<T>(), x.size(0),
              x.size(1), x.size(2), cos.size(-1));
  });
  return out;
}

at::Tensor bf16_sigmoid_mul(const at::Tensor& x, const at::Tensor& gate) {
  at::Tensor out = at::empty_like(x);
  const std::int64_t heads = gate.size(1), width = gate.size(2), rows = gate.size(0) * heads;
  const std::int64_t s0 = gate.stride(0), s1 = gate.stride(1);
  const std::uint16_t* sigmoid = bf16_sigmoid_table();
  const c10::BFloat16* g = gate.data_ptr<c10::BFloat16>();
  const c10::BFloat16* in = x.data_ptr<c10::BFloat16>();
  c10::BFloat16* o = out.data_ptr<c10::BFloat16>();
  const std::int64_t grain =
      std::max<std::int64_t>(1, 4 * kSerialValues / std::max<std::int64_t>(1, width));
  at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r)
      table_mul_range(sigmoid, g + r / heads * s0 + r % heads * s1, in + r * width, o + r * width,
                      0, width);
  });
  return out;
}

at::Tensor bf16_silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  const at::Tensor gc = gate.contiguous(), uc = up.contiguous();
  at::Tensor out = at::empty_like(gc);
  bf16_silu_mul(gc.data_ptr<c10::BFloat16>(), uc.data_ptr<c10::BFloat16>(),
                out.data_ptr<c10::BFloat16>(), gc.numel());
  return out;
}

}  // namespace draftgate::model::fused
