#include "draftgate/model/fused_delta_chunk.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "f32x8.h"

namespace draftgate::model::fused {
namespace {

// Tokens whose sums over the state stay in registers together; state rows per block of the
// update (dK a multiple of 8 divides into them).
constexpr int kTokenBlock = 4;

struct Chunks {
  const float *q, *k, *v, *g, *beta, *state;  // [T, H, dK] twice, [T, H, dV], [T, H] twice
  float *out, *next;                          // [T, H, dV], [H, dK, dV]
  std::int64_t t_len, heads, dk, dv, chunk;
};

// Sixteen float32 lanes: one AVX-512 register in the x86-64-v4 clone, two or four halves in the
// others. The state's passes take them where dK and dV are multiples of 16.
typedef float F32x16 __attribute__((vector_size(64)));

template <class V>
inline __attribute__((always_inline)) void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

template <class V>
inline __attribute__((always_inline)) void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

template <class V>
constexpr std::int64_t kLanes = static_cast<std::int64_t>(sizeof(V) / sizeof(float));

// q · k_m for rows m in [0, count) of k (row stride `stride`) into out[m], four rows at a time
// (dots' fixed order: a row's bits whatever the rows beside it; one dot at a time was 9 % of a
// 16-token chunk's time on a Zen 5 EPYC).
inline __attribute__((always_inline)) void dots_with_rows(const float* q, const float* k,
                                                          std::int64_t stride, std::int64_t count,
                                                          std::int64_t n, float* out) {
  std::int64_t m = 0;
  for (; m + 4 <= count; m += 4) dots<4>(q, k + m * stride, stride, n, out + m);
  for (; m < count; ++m) dots<1>(q, k + m * stride, stride, n, out + m);
}

// to[i] = Σ_{j ≤ i} lower[i][j] · rows[j] for a c × c lower triangle and c rows of n floats (n a
// multiple of V's lanes). Each sum adds its j in order from zero; kRowVectors of a row's vectors
// are summed side by side, so their chains overlap (one vector's chain at a time was bound by the
// adds' latency: 13 % of a 16-token chunk's time on a Zen 5 EPYC).
constexpr int kRowVectors = 8;

// Count vectors of row i's sums from column e: each adds its j in order from zero.
template <class V, int Count>
inline __attribute__((always_inline)) void lower_row_vectors(const float* lower, const float* rows,
                                                             std::int64_t c, std::int64_t n,
                                                             std::int64_t i, std::int64_t e,
                                                             float* to) {
  V sums[Count] = {}, x;
  for (std::int64_t j = 0; j <= i; ++j)
#pragma GCC unroll 8
    for (int u = 0; u < Count; ++u) {
      load(x, rows + j * n + e + u * kLanes<V>);
      sums[u] += lower[i * c + j] * x;
    }
#pragma GCC unroll 8
  for (int u = 0; u < Count; ++u) store(to + i * n + e + u * kLanes<V>, sums[u]);
}

template <class V>
inline __attribute__((always_inline)) void lower_times(const float* lower, const float* rows,
                                                       std::int64_t c, std::int64_t n, float* to) {
  constexpr std::int64_t block = kRowVectors * kLanes<V>;
  for (std::int64_t i = 0; i < c; ++i) {
    std::int64_t e = 0;
    for (; e + block <= n; e += block)
      lower_row_vectors<V, kRowVectors>(lower, rows, c, n, i, e, to);
    for (; e < n; e += kLanes<V>) lower_row_vectors<V, 1>(lower, rows, c, n, i, e, to);
  }
}

// Heads [begin, end), each through every chunk (the scratch holds one chunk's matrices, `sums`
// its cumulative decays), the state's rows V's lanes at a time.
template <class V, int Cols>
inline __attribute__((always_inline)) void walk_heads(const Chunks& a, std::int64_t begin,
                                                      std::int64_t end, std::vector<float>& scratch,
                                                      std::vector<double>& sums) {
  constexpr std::int64_t lanes = kLanes<V>;
  const std::int64_t dk = a.dk, dv = a.dv, hs = a.heads, most = std::min(a.chunk, a.t_len);
  const std::int64_t padded = (most + kTokenBlock - 1) / kTokenBlock * kTokenBlock;
  scratch.assign(static_cast<std::size_t>(2 * most + padded + 2 * most * most + 4 * padded * dk +
                                          2 * most * dv),
                 0.0f);
  sums.assign(static_cast<std::size_t>(most), 0.0);
  double* const gcum = sums.data();    // cumulative log decay G_i
  float* const tail = scratch.data();  // exp(G_last − G_i)
  float* const beta = tail + most;     // β_i
  float* const arow = beta + most;  // row i of strict_lower(k_β kᵀ ⊙ decay), of q kᵀ ⊙ decay
  float* const decay = arow + padded;        // exp(G_i − G_j), j ≤ i
  float* const solve = decay + most * most;  // (I + strict)⁻¹, lower, unit diagonal
  float* const kb = solve + most * most;     // k_i β_i e^{G_i}
  float* const w = kb + padded * dk;         // solve · kb; rows past the chunk's tokens zero
  float* const qg = w + padded * dk;         // q_i e^{G_i}, the same
  float* const kd = qg + padded * dk;        // k_i e^{G_last − G_i}
  float* const vb = kd + padded * dk;        // v_i β_i
  float* const vnew = vb + most * dv;        // u = solve · vb, then u − Sᵀw
  V x, acc;
  for (std::int64_t h = begin; h < end; ++h) {
    const float* from = a.state + h * dk * dv;
    float* const next = a.next + h * dk * dv;
    for (std::int64_t start = 0; start < a.t_len; start += a.chunk) {
      const std::int64_t c = std::min(a.chunk, a.t_len - start);
      const auto at = [&](auto* base, std::int64_t i, std::int64_t width) {
        return base + ((start + i) * hs + h) * width;
      };
      // The sums and their differences in float64: after one large |g| a float32 G_i − G_j of the
      // later tokens cancels to ~|G| · 2⁻²⁴ (an outside test's g_0 = −100 then −0.05: 1.7e-5 of
      // the scale, 4x the composition's, whose cumsum sums in float64 too).
      double run = 0.0;
      for (std::int64_t i = 0; i < c; ++i) {
        run += *at(a.g, i, 1);
        gcum[i] = run;
        beta[i] = *at(a.beta, i, 1);
      }
      const float last = std::exp(static_cast<float>(gcum[c - 1]));
      for (std::int64_t i = 0; i < c; ++i) {
        tail[i] = std::exp(static_cast<float>(gcum[c - 1] - gcum[i]));
        for (std::int64_t j = 0; j <= i; ++j)
          decay[i * c + j] = std::exp(static_cast<float>(gcum[i] - gcum[j]));
      }
      // The UT transform by forward substitution: row i of (I + A)⁻¹ is e_i − Σ_{m<i} A[i][m] ·
      // row m, A[i][m] = β_i (k_i · k_m) decay[i][m].
      for (std::int64_t i = 0; i < c; ++i) {
        const float* ki = at(a.k, i, dk);
        dots_with_rows(ki, at(a.k, 0, dk), hs * dk, i, dk, arow);
        for (std::int64_t m = 0; m < i; ++m) arow[m] = beta[i] * arow[m] * decay[i * c + m];
        for (std::int64_t j = 0; j < i; ++j) {
          float sum = 0.0f;
          for (std::int64_t m = j; m < i; ++m) sum += arow[m] * solve[m * c + j];
          solve[i * c + j] = -sum;
        }
        solve[i * c + i] = 1.0f;
        const float eg = std::exp(static_cast<float>(gcum[i]));
        const float* qi = at(a.q, i, dk);
        // A vector at a time (the compiler left these loops scalar: 12 % of a chunk).
        for (std::int64_t r = 0; r < dk; r += lanes) {
          load(x, ki + r);
          store(kb + i * dk + r, x * beta[i] * eg);
          store(kd + i * dk + r, x * tail[i]);
          load(x, qi + r);
          store(qg + i * dk + r, x * eg);
        }
        const float* vi = at(a.v, i, dv);
        for (std::int64_t e = 0; e < dv; e += lanes) {
          load(x, vi + e);
          store(vb + i * dv + e, x * beta[i]);
        }
      }
      lower_times<V>(solve, vb, c, dv, vnew);  // u
      lower_times<V>(solve, kb, c, dk, w);
      for (std::int64_t i = c; i < padded; ++i)
        for (std::int64_t r = 0; r < dk; ++r) w[i * dk + r] = qg[i * dk + r] = 0.0f;
      // One pass over the state: Sᵀw (v_new = u − Sᵀw) and Sᵀ(q e^G), into `out`, for a block of
      // tokens at a time with their sums in registers, Cols columns of V's lanes of the state at a
      // time (their dK rows stay in L1 across the blocks): each token's scalar is broadcast once
      // for Cols vectors.
      for (std::int64_t e = 0; e < dv; e += Cols * lanes)
        for (std::int64_t i0 = 0; i0 < c; i0 += kTokenBlock) {
          V sw[kTokenBlock][Cols] = {}, sq[kTokenBlock][Cols] = {}, xs[Cols];
          for (std::int64_t r = 0; r < dk; ++r) {
#pragma GCC unroll 2
            for (int j = 0; j < Cols; ++j) load(xs[j], from + r * dv + e + j * lanes);
#pragma GCC unroll 4
            for (int b = 0; b < kTokenBlock; ++b) {
              const float wb = w[(i0 + b) * dk + r], qb = qg[(i0 + b) * dk + r];
#pragma GCC unroll 2
              for (int j = 0; j < Cols; ++j) {
                sw[b][j] += wb * xs[j];
                sq[b][j] += qb * xs[j];
              }
            }
          }
          for (std::int64_t b = 0; b < kTokenBlock && i0 + b < c; ++b)
#pragma GCC unroll 2
            for (int j = 0; j < Cols; ++j) {
              float* const u = vnew + (i0 + b) * dv + e + j * lanes;
              load(acc, u);
              acc -= sw[b][j];
              std::memcpy(u, &acc, sizeof acc);
              std::memcpy(at(a.out, i0 + b, dv) + e + j * lanes, &sq[b][j], sizeof acc);
            }
        }
      // o_i = Sᵀ(q_i e^{G_i}) + Σ_{j ≤ i} (q_i · k_j) decay[i][j] v_new_j.
      for (std::int64_t i = 0; i < c; ++i) {
        const float* qi = at(a.q, i, dk);
        dots_with_rows(qi, at(a.k, 0, dk), hs * dk, i + 1, dk, arow);
        for (std::int64_t j = 0; j <= i; ++j) arow[j] *= decay[i * c + j];
        float* const oi = at(a.out, i, dv);
        for (std::int64_t e = 0; e < dv; e += lanes) {
          load(acc, oi + e);
          for (std::int64_t j = 0; j <= i; ++j) {
            load(x, vnew + j * dv + e);
            acc += arow[j] * x;
          }
          store(oi + e, acc);
        }
      }
      // S' = S e^{G_last} + Σ_i (k_i e^{G_last − G_i}) ⊗ v_new_i, a block of state rows and Cols
      // columns at a time (each v_new vector loaded once per block); in place after the first
      // chunk. In a head's last chunk the same block of the next head's state is fetched: a verify
      // pass's states come from memory (its weights went through the caches since); with the
      // fetch a 16-token layer of Qwen3.5-0.8B ran 224 -> 189 us (40 of 40 alternated rounds).
      const float* const ahead =
          h + 1 < end && start + a.chunk >= a.t_len ? a.state + (h + 1) * dk * dv : nullptr;
      for (std::int64_t r0 = 0; r0 < dk; r0 += kTokenBlock)
        for (std::int64_t e = 0; e < dv; e += Cols * lanes) {
          if (ahead != nullptr)
#pragma GCC unroll 4
            for (int b = 0; b < kTokenBlock; ++b)
#pragma GCC unroll 2
              for (int j = 0; j < Cols; ++j)
                __builtin_prefetch(ahead + (r0 + b) * dv + e + j * lanes, 0, 3);
          V s[kTokenBlock][Cols], xs[Cols];
#pragma GCC unroll 4
          for (int b = 0; b < kTokenBlock; ++b)
#pragma GCC unroll 2
            for (int j = 0; j < Cols; ++j) {
              load(s[b][j], from + (r0 + b) * dv + e + j * lanes);
              s[b][j] = s[b][j] * last;
            }
          for (std::int64_t i = 0; i < c; ++i) {
#pragma GCC unroll 2
            for (int j = 0; j < Cols; ++j) load(xs[j], vnew + i * dv + e + j * lanes);
#pragma GCC unroll 4
            for (int b = 0; b < kTokenBlock; ++b) {
              const float ki = kd[i * dk + r0 + b];
#pragma GCC unroll 2
              for (int j = 0; j < Cols; ++j) s[b][j] += ki * xs[j];
            }
          }
#pragma GCC unroll 4
          for (int b = 0; b < kTokenBlock; ++b)
#pragma GCC unroll 2
            for (int j = 0; j < Cols; ++j)
              std::memcpy(next + (r0 + b) * dv + e + j * lanes, &s[b][j], sizeof x);
        }
      from = next;
    }
    if (a.t_len == 0) std::copy(from, from + dk * dv, next);
  }
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void chunk_heads(
    const Chunks& a, std::int64_t begin, std::int64_t end, std::vector<float>& scratch,
    std::vector<double>& sums) {
  if (a.dk % 16 == 0 && a.dv % 32 == 0 && __builtin_cpu_supports("avx512f"))
    walk_heads<F32x16, 2>(a, begin, end, scratch, sums);
  else if (a.dk % 16 == 0 && a.dv % 16 == 0)
    walk_heads<F32x16, 1>(a, begin, end, scratch, sums);
  else
    walk_heads<F32x8, 1>(a, begin, end, scratch, sums);
}

}  // namespace

bool takes_delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state, std::int64_t chunk) {
  for (const at::Tensor* t : {&state, &in.q, &in.k, &in.v, &in.g, &in.beta})
    if (!t->defined() || !t->device().is_cpu() || t->scalar_type() != at::kFloat ||
        !t->is_contiguous() || (at::GradMode::is_enabled() && t->requires_grad()))
      return false;
  if (state.dim() != 3 || in.q.dim() != 3) return false;
  const std::int64_t heads = state.size(0), dk = state.size(1), dv = state.size(2);
  const std::int64_t t = in.q.size(0);
  return chunk > 0 && std::min(chunk, t) <= kFusedDeltaChunkMax && dk % 8 == 0 && dv % 8 == 0 &&
         in.q.sizes() == at::IntArrayRef{t, heads, dk} && in.k.sizes() == in.q.sizes() &&
         in.v.sizes() == at::IntArrayRef{t, heads, dv} &&
         in.g.sizes() == at::IntArrayRef{t, heads} && in.beta.sizes() == in.g.sizes();
}

DeltaOutputs delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state,
                                std::int64_t chunk) {
  TORCH_CHECK(chunk > 0, "delta_rule_chunked: chunk must be positive");
  at::Tensor out = at::empty(in.v.sizes(), in.v.options());
  at::Tensor next = at::empty_like(state);
  const Chunks a{in.q.data_ptr<float>(),
                 in.k.data_ptr<float>(),
                 in.v.data_ptr<float>(),
                 in.g.data_ptr<float>(),
                 in.beta.data_ptr<float>(),
                 state.data_ptr<float>(),
                 out.data_ptr<float>(),
                 next.data_ptr<float>(),
                 in.q.size(0),
                 state.size(0),
                 state.size(1),
                 state.size(2),
                 chunk};
  at::parallel_for(0, a.heads, 1, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> scratch;
    thread_local std::vector<double> sums;
    chunk_heads(a, begin, end, scratch, sums);
  });
  return {out, next};
}

}  // namespace draftgate::model::fused
