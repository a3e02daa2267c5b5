#pragma once
// Eight float32 lanes as GCC vectors (a register of each target clone: AVX2's on x86-64-v3 and
// v4, two SSE halves on the baseline), and sixteen where a loop gains from AVX-512's full
// registers (F32x16, load_lanes, round_to): the loads, stores, roundings and dot products the
// one-pass kernels of few_row_attention.cpp, fused_rows.cpp, fused_delta_rule.cpp and
// fused_delta_chunk.cpp share. Vectors go by reference: one passed or returned by value has another
// ABI in each clone. A multiply-add may be contracted into one rounding (FMA) in the clones that
// have it, unless the file is compiled with -ffp-contract=off (fused_rows.cpp and
// fused_delta_rule.cpp are).

#include <c10/util/BFloat16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace draftgate::model {

typedef float F32x8 __attribute__((vector_size(32)));
typedef std::int32_t I32x8 __attribute__((vector_size(32)));
typedef std::uint16_t U16x8 __attribute__((vector_size(16)));
typedef std::uint16_t U16x16 __attribute__((vector_size(32)));

// bf16 bits interleaved with zeros are the float32 values (little-endian): one unpack, where a
// widening conversion and a shift compiled to four instructions on half-registers.
inline __attribute__((always_inline)) void widen8(F32x8& out, const U16x8& bits) {
  const U16x8 zero = {};
  const U16x16 wide =
      __builtin_shufflevector(zero, bits, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  std::memcpy(&out, &wide, sizeof out);
}
inline __attribute__((always_inline)) void load8(F32x8& out, const c10::BFloat16* p) {
  U16x8 bits;
  std::memcpy(&bits, p, sizeof bits);
  widen8(out, bits);
}
inline __attribute__((always_inline)) void load8(F32x8& out, const float* p) {
  std::memcpy(&out, p, sizeof out);
}

// Sixteen lanes, where a loop gains from AVX-512's full registers (one in the x86-64-v4 clone,
// two or four halves in the others).
typedef float F32x16 __attribute__((vector_size(64)));
typedef std::uint16_t U16x32 __attribute__((vector_size(64)));
inline __attribute__((always_inline)) void load16(F32x16& out, const c10::BFloat16* p) {
  U16x16 bits;
  std::memcpy(&bits, p, sizeof bits);
  const U16x16 zero = {};
  const U16x32 wide =
      __builtin_shufflevector(zero, bits, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8,
                              24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  std::memcpy(&out, &wide, sizeof out);
}
// The widened bf16 loads by lane count, for code written once for both.
inline __attribute__((always_inline)) void load_lanes(F32x8& out, const c10::BFloat16* p) {
  load8(out, p);
}
inline __attribute__((always_inline)) void load_lanes(F32x16& out, const c10::BFloat16* p) {
  load16(out, p);
}

// The int32 vector of V's lane count.
template <class V>
struct IntLanes {
  typedef std::int32_t type __attribute__((vector_size(sizeof(V))));
};

// v rounded to T as T(float) rounds each lane (bf16: nearest even, NaN as 0x7FC0; float: as is).
template <class T, class V>
inline __attribute__((always_inline)) void round_to(V& v) {
  if constexpr (!std::is_same_v<T, float>) {
    typedef typename IntLanes<V>::type I;
    I bits;
    std::memcpy(&bits, &v, sizeof v);
    const I lsb = (bits >> 16) & 1;
    I rounded = (bits + 0x7FFF + lsb) & static_cast<std::int32_t>(0xFFFF0000u);
    rounded = v != v ? I{} + 0x7FC00000 : rounded;
    std::memcpy(&v, &rounded, sizeof v);
  }
}

// v rounded to T and stored as 8 values of T.
template <class T>
inline __attribute__((always_inline)) void store8(T* p, const F32x8& value) {
  F32x8 v = value;
  round_to<T>(v);
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(p, &v, sizeof v);
  } else {
    I32x8 bits;
    std::memcpy(&bits, &v, sizeof v);
    const U16x8 halves = __builtin_convertvector(bits >> 16, U16x8);
    std::memcpy(p, &halves, sizeof halves);
  }
}

// The lanes' sum as a fixed tree: one order whatever the lanes hold.
inline __attribute__((always_inline)) float sum8(const F32x8& v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

// Dot products of q with R rows of k (row stride `stride`; attention's key rows, the delta
// rule's keys): each row's sum formed in one order whatever R (lane j takes the i = j mod 8
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
    float sum = sum8(acc[j]);
    for (std::int64_t i = whole; i < n; ++i) sum += q[i] * k[j * stride + i];
    out[j] = sum;
  }
}

// exp per lane (Cephes' expf: x = n ln2 + r, a degree-5 polynomial in r, times 2^n): within ~1 ulp
// of glibc's and Sleef's (which ATen's softmax and silu take) up to float32's largest; NaN stays
// NaN, what would be denormal (x < -87.3) is zero (the callers flush those anyway), beyond the
// largest +inf.
inline __attribute__((always_inline)) void exp8(F32x8& v) {
  const F32x8 x0 = v;
  F32x8 x = x0 < -88.0f ? F32x8{} - 88.0f : x0;
  x = x > 88.7228394f ? F32x8{} + 88.7228394f : x;
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
  // 2^n in two factors (n reaches 128 at the top of the range: one factor's exponent would not
  // fit); each product by a power of two is exact in float32's normal range.
  const I32x8 whole = __builtin_convertvector(n, I32x8), half = whole >> 1;
  const I32x8 first = (half + 127) << 23, second = (whole - half + 127) << 23;
  F32x8 scale;
  std::memcpy(&scale, &first, sizeof scale);
  y = y * scale;
  std::memcpy(&scale, &second, sizeof scale);
  y = y * scale;
  y = x0 < -87.3365448f ? F32x8{} : y;                    // ln of float32's smallest normal
  y = x0 > 88.7228394f ? F32x8{} + __builtin_inff() : y;  // ln of its largest
  v = x0 != x0 ? x0 : y;
}

// silu per lane in float32 as ATen's vectorised kernel writes it, x / (1 + exp(-x)), with exp8.
inline __attribute__((always_inline)) void silu8(F32x8& v) {
  F32x8 e = -v;
  exp8(e);
  v = v / (e + 1.0f);
}

}  // namespace draftgate::model
