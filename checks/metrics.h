#pragma once
// The numbers every check compares with, written once so that a budget means the same thing in
// every check and test (llama.cpp's single nmse()). Everything is computed in float64 on the CPU.

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftgate::checks::metrics {

// The checks' tensors are as large as [positions, vocabulary] (0.5 GB of float32 at 512 positions
// of a 248k vocabulary), and a float64 copy of a whole one costs twice that again: reductions over
// them convert about this many elements at a time.
inline constexpr std::int64_t kSliceElements = std::int64_t{1} << 21;  // 16 MB of float64

// f(float64 copy of t's rows [first, first + n) along dim 0, first, n) for slices of about
// kSliceElements, the results concatenated along dim 0 (one call on zero rows when t has none).
template <class F>
at::Tensor per_row_slice(const at::Tensor& t, F&& f) {
  const std::int64_t rows = t.size(0);
  const std::int64_t per_row = rows == 0 ? 1 : std::max<std::int64_t>(1, t.numel() / rows);
  const std::int64_t step = std::max<std::int64_t>(1, kSliceElements / per_row);
  std::vector<at::Tensor> parts;
  std::int64_t first = 0;
  do {
    const std::int64_t n = std::min(step, rows - first);
    parts.push_back(f(t.narrow(0, first, n).to(at::kCPU).to(at::kDouble), first, n));
    first += n;
  } while (first < rows);
  return at::cat(parts);
}

double rms(const at::Tensor& x);
// Σ(got − ref)² / Σ ref² (0 when both are zero).
double nmse(const at::Tensor& got, const at::Tensor& ref);
double cosine(const at::Tensor& a, const at::Tensor& b);
// Whether `got` holds `ref` at all: their cosine is above 4 standard deviations of an independent
// one's (1/√n over n elements). `ref` plus any independent noise does (so do its neighbours in a
// residual stream); features unrelated to it (random, another model's) do not.
bool holds(const at::Tensor& got, const at::Tensor& ref);
// max |got − ref|.
double max_abs_diff(const at::Tensor& got, const at::Tensor& ref);
// max |got − ref| / max |ref|: the worst element against the reference's activation scale
// (infinite when the reference is all zero and got is not).
double max_rel_diff(const at::Tensor& got, const at::Tensor& ref);
// std(got − ref) / RMS(ref): the size of a residual relative to the reference.
double noise_ratio(const at::Tensor& got, const at::Tensor& ref);
// Mean over rows of KL(softmax(ref) ‖ softmax(got)); logits [rows, vocab].
double mean_kl(const at::Tensor& ref_logits, const at::Tensor& got_logits);
// Per row: the gap between the largest and the second-largest logit.
at::Tensor top2_margin(const at::Tensor& logits);

struct Top1 {
  double agreement = 1;        // over judged rows (1 when none is judged)
  std::int64_t judged = 0;     // rows whose reference margin exceeds min_margin
  std::int64_t near_ties = 0;  // rows left out: a flip there is within the precision's noise
  std::optional<std::int64_t> first_disagreement;  // a judged row
};
// Top-1 agreement of `got` with `ref` (both [..., vocab]), counting only rows whose reference
// top-2 margin exceeds `min_margin` (per row, same leading shape; undefined = every row).
Top1 top1_agreement(const at::Tensor& got, const at::Tensor& ref,
                    const at::Tensor& min_margin = {});

// Index of the first NaN or ±Inf element, if any.
std::optional<std::vector<std::int64_t>> first_non_finite(const at::Tensor& t);
// "NAME holds NaN at [i, j] (k of N elements are not finite)" — or nothing when all are finite.
std::optional<std::string> non_finite_problem(const std::string& name, const at::Tensor& t);

}  // namespace draftgate::checks::metrics
