#include "checks/metrics.h"

#include <algorithm>
#include <cmath>

#include "draftgate/format.h"

namespace draftgate::checks::metrics {
namespace {
at::Tensor f64(const at::Tensor& t) { return t.to(at::kCPU).to(at::kDouble); }
}  // namespace

double rms(const at::Tensor& x) { return f64(x).pow(2).mean().sqrt().item<double>(); }

double nmse(const at::Tensor& got, const at::Tensor& ref) {
  const at::Tensor g = f64(got), r = f64(ref);
  const double err = (g - r).pow(2).sum().item<double>(), norm = r.pow(2).sum().item<double>();
  if (norm == 0) return err == 0 ? 0 : INFINITY;
  return err / norm;
}

double cosine(const at::Tensor& a, const at::Tensor& b) {
  return at::cosine_similarity(f64(a).flatten(), f64(b).flatten(), 0).item<double>();
}

double max_abs_diff(const at::Tensor& got, const at::Tensor& ref) {
  return (f64(got) - f64(ref)).abs().max().item<double>();
}

double max_rel_diff(const at::Tensor& got, const at::Tensor& ref) {
  const double err = max_abs_diff(got, ref), scale = f64(ref).abs().max().item<double>();
  if (scale == 0) return err == 0 ? 0 : INFINITY;
  return err / scale;
}

double noise_ratio(const at::Tensor& got, const at::Tensor& ref) {
  const at::Tensor r = f64(ref);
  const double scale = r.pow(2).mean().sqrt().item<double>();
  const double noise = (f64(got) - r).std().item<double>();
  if (scale == 0) return noise == 0 ? 0 : INFINITY;
  return noise / scale;
}

double mean_kl(const at::Tensor& ref_logits, const at::Tensor& got_logits) {
  const at::Tensor p = at::log_softmax(f64(ref_logits), -1);
  const at::Tensor q = at::log_softmax(f64(got_logits), -1);
  return (p.exp() * (p - q)).sum(-1).mean().item<double>();
}

at::Tensor top2_margin(const at::Tensor& logits) {
  const at::Tensor top = std::get<0>(f64(logits).topk(2, -1));
  return top.select(-1, 0) - top.select(-1, 1);
}

Top1 top1_agreement(const at::Tensor& got, const at::Tensor& ref, const at::Tensor& min_margin) {
  const at::Tensor same = (got.argmax(-1) == ref.argmax(-1)).flatten().to(at::kCPU);
  at::Tensor judged = at::ones_like(same);
  if (min_margin.defined()) judged = (top2_margin(ref) > f64(min_margin)).flatten();
  Top1 out;
  out.judged = judged.sum().item<std::int64_t>();
  out.near_ties = same.numel() - out.judged;
  const at::Tensor wrong = judged & same.logical_not();
  if (out.judged > 0)
    out.agreement = 1.0 - wrong.sum().item<double>() / static_cast<double>(out.judged);
  if (wrong.any().item<bool>()) out.first_disagreement = wrong.nonzero()[0][0].item<std::int64_t>();
  return out;
}

std::optional<std::vector<std::int64_t>> first_non_finite(const at::Tensor& t) {
  if (!t.is_floating_point()) return std::nullopt;
  const at::Tensor bad = at::isfinite(t.to(at::kCPU)).logical_not();
  if (!bad.any().item<bool>()) return std::nullopt;
  const at::Tensor at = bad.nonzero()[0];
  return std::vector<std::int64_t>(at.data_ptr<std::int64_t>(),
                                   at.data_ptr<std::int64_t>() + at.numel());
}

std::optional<std::string> non_finite_problem(const std::string& name, const at::Tensor& t) {
  const auto where = first_non_finite(t);
  if (!where) return std::nullopt;
  const at::Tensor c = t.to(at::kCPU);
  at::Tensor value = c;
  for (auto i : *where) value = value[i];
  const double v = value.item<double>();
  const std::int64_t count = at::isfinite(c).logical_not().sum().item<std::int64_t>();
  return name + " holds " +
         (std::isnan(v) ? "NaN"
          : v > 0       ? "+Inf"
                        : "-Inf") +
         " at " + format_shape(*where) + " (" + std::to_string(count) + " of " +
         std::to_string(c.numel()) + " elements are not finite)";
}

}  // namespace draftgate::checks::metrics
