#pragma once
// The numbers every check compares with, written once so that a budget means the same thing in
// every check and test (llama.cpp's single nmse()). Everything is computed in float64 on the CPU.

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftgate::checks::metrics {

double rms(const at::Tensor& x);
// Σ(got − ref)² / Σ ref² (0 when both are zero).
double nmse(const at::Tensor& got, const at::Tensor& ref);
double cosine(const at::Tensor& a, const at::Tensor& b);
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
