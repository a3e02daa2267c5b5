#include "draftgate/model/fused_rows.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <vector>

#include "f32x8.h"

namespace draftgate::model::fused {
namespace {

// Rows per thread: a parallel region costs more than a few rows of a few thousand values.
constexpr std::int64_t kSerialValues = std::int64_t{1} << 16;

// Rows [begin, end) of the norm. T is c10::BFloat16 (whose float constructor rounds to nearest
// even, as every ATen cast) or float; eight lanes at a time (f32x8.h), the tail one by one with the
// same operations.
template <class T>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void norm_row_range(
    const T* x, const T* w, T* out, std::int64_t begin, std::int64_t end, std::int64_t width,
    float eps, NormStyle style) {
  const std::int64_t whole = width / 8 * 8;
  for (std::int64_t r = begin; r < end; ++r) {
    const T* xr = x + r * width;
    T* o = out + r * width;
    // The mean of the float32 squares in eight chains (lane j takes i = j mod 8) and a fixed
    // tree: one order for a row whatever the rows beside it.
    F32x8 lanes = {}, v, wv;
    for (std::int64_t i = 0; i < whole; i += 8) {
      load8(v, xr + i);
      lanes += v * v;
    }
    float sum = sum8(lanes);
    for (std::int64_t i = whole; i < width; ++i)
      sum += static_cast<float>(xr[i]) * static_cast<float>(xr[i]);
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
    // kPlain: w · n cast to x's dtype first (transformers' Qwen3RMSNorm); kOnePlusW: n · (1 + w)
    // in float32, cast once (Qwen3_5RMSNorm).
    for (std::int64_t i = 0; i < whole; i += 8) {
      load8(v, xr + i);
      load8(wv, w + i);
      v *= scale;
      if (style == NormStyle::kPlain) {
        round_to<T>(v);
        store8(o + i, wv * v);
      } else {
        store8(o + i, v * (wv + 1.0f));
      }
    }
    for (std::int64_t i = whole; i < width; ++i) {
      const float n = static_cast<float>(xr[i]) * scale;
      o[i] = style == NormStyle::kPlain ? T(static_cast<float>(w[i]) * static_cast<float>(T(n)))
                                        : T(n * (static_cast<float>(w[i]) + 1.0f));
    }
  }
}

template <class T>
void norm_rows(const T* x, const T* w, T* out, std::int64_t rows, std::int64_t width, float eps,
               NormStyle style) {
  const std::int64_t grain = std::max<std::int64_t>(1, kSerialValues / width);
  at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    norm_row_range(x, w, out, begin, end, width, eps, style);
  });
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

// silu of every bf16 value, from the linked ATen's own at::silu: its bits whatever its version
// computes (Debian's 1.13 rounds the exponential and the denominator to bf16 too — a float32
// formula differs on 30 % of values). A table, because a bf16 input has 65536 values and an exp
// per value was 10 ns.
const std::uint16_t* bf16_silu_table() {
  static const std::vector<std::uint16_t> table = [] {
    c10::InferenceMode inference;
    const at::Tensor every = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kBFloat16);
    const at::Tensor silu = at::silu(every).contiguous();
    const auto* bits = static_cast<const std::uint16_t*>(silu.data_ptr());
    return std::vector<std::uint16_t>(bits, bits + silu.numel());
  }();
  return table.data();
}

// silu(gate) · up over [begin, end): the table read a value at a time, the product eight.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void silu_mul_range(
    const std::uint16_t* silu, const c10::BFloat16* gate, const c10::BFloat16* up,
    c10::BFloat16* out, std::int64_t begin, std::int64_t end) {
  std::int64_t i = begin;
  F32x8 s, u;
  for (; i + 8 <= end; i += 8) {
    U16x8 bits;
    for (int j = 0; j < 8; ++j) bits[j] = silu[gate[i + j].x];
    widen8(s, bits);
    load8(u, up + i);
    store8(out + i, s * u);
  }
  for (; i < end; ++i) {
    const c10::BFloat16 value(silu[gate[i].x], c10::BFloat16::from_bits());
    out[i] = c10::BFloat16(static_cast<float>(value) * static_cast<float>(up[i]));
  }
}

void bf16_silu_mul(const c10::BFloat16* gate, const c10::BFloat16* up, c10::BFloat16* out,
                   std::int64_t n) {
  const std::uint16_t* silu = bf16_silu_table();
  at::parallel_for(0, n, 4 * kSerialValues, [&](std::int64_t begin, std::int64_t end) {
    silu_mul_range(silu, gate, up, out, begin, end);
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

bool takes_silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  return applies({&gate, &up}) && gate.scalar_type() == at::kBFloat16 && gate.sizes() == up.sizes();
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
  at::Tensor out = at::empty_like(xc);
  const std::int64_t width = x.size(-1);
  by_dtype(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    norm_rows(xc.data_ptr<T>(), wc.data_ptr<T>(), out.data_ptr<T>(), xc.numel() / width, width,
              static_cast<float>(eps), style);
  });
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

at::Tensor bf16_silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  const at::Tensor gc = gate.contiguous(), uc = up.contiguous();
  at::Tensor out = at::empty_like(gc);
  bf16_silu_mul(gc.data_ptr<c10::BFloat16>(), uc.data_ptr<c10::BFloat16>(),
                out.data_ptr<c10::BFloat16>(), gc.numel());
  return out;
}

}  // namespace draftgate::model::fused
