#include "checks/metrics.h"

#include <algorithm>
#include <cmath>

#include "draftgate/format.h"

namespace draftgate::checks::metrics {
namespace {
at::Tensor f64(const at::Tensor& t) { return t.to(at::kCPU).to(at::kDouble); }

// f(slice of a, slice of b) over aligned float64 slices of the two tensors broadcast together and
// flattened.
template <class F>
void for_slices(const at::Tensor& a, const at::Tensor& b, F&& f) {
  const std::vector<at::Tensor> both = at::broadcast_tensors({a.to(at::kCPU), b.to(at::kCPU)});
  const at::Tensor fa = both[0].reshape({-1}), fb = both[1].reshape({-1});
  for (std::int64_t begin = 0; begin < fa.numel(); begin += kSliceElements) {
    const std::int64_t n = std::min(kSliceElements, fa.numel() - begin);
    f(fa.narrow(0, begin, n).to(at::kDouble), fb.narrow(0, begin, n).to(at::kDouble));
  }
}

// The largest of per-slice maxima, NaN when any is (as Tensor::max() gives).
struct RunningMax {
  double value = -INFINITY;
  void add(double v) { value = std::isnan(v) || std::isnan(value) ? NAN : std::max(value, v); }
};
}  // namespace

double rms(const at::Tensor& x) {
  const at::Tensor squares = per_row_slice(
      x.reshape({-1}), [](const at::Tensor& s, auto, auto) { return s.pow(2).sum().unsqueeze(0); });
  return std::sqrt(squares.sum().item<double>() /
                   static_cast<double>(x.numel()));  // NaN when empty, as mean() is
}

double nmse(const at::Tensor& got, const at::Tensor& ref) {
  double err = 0, norm = 0;
  for_slices(got, ref, [&](const at::Tensor& g, const at::Tensor& r) {
    err += (g - r).pow(2).sum().item<double>();
    norm += r.pow(2).sum().item<double>();
  });
  if (norm == 0) return err == 0 ? 0 : INFINITY;
  return err / norm;
}

double cosine(const at::Tensor& a, const at::Tensor& b) {
  return at::cosine_similarity(f64(a).flatten(), f64(b).flatten(), 0).item<double>();
}

bool holds(const at::Tensor& got, const at::Tensor& ref) {
  return cosine(got, ref) >
         4 / std::sqrt(static_cast<double>(std::max<std::int64_t>(got.numel(), 1)));
}

double max_abs_diff(const at::Tensor& got, const at::Tensor& ref) {
  RunningMax worst;
  for_slices(got, ref, [&](const at::Tensor& g, const at::Tensor& r) {
    worst.add((g - r).abs().max().item<double>());
  });
  return worst.value;
}

double max_rel_diff(const at::Tensor& got, const at::Tensor& ref) {
  RunningMax scale;
  const double err = max_abs_diff(got, ref);
  for_slices(ref, ref, [&](const at::Tensor& r, const at::Tensor&) {
    scale.add(r.abs().max().item<double>());
  });
  if (scale.value == 0) return err == 0 ? 0 : INFINITY;
  return err / scale.value;
}

double noise_ratio(const at::Tensor& got, const at::Tensor& ref) {
  // std(got − ref) with the slices' means and squared deviations merged (Chan et al.), as stable
  // as the two-pass std over the whole.
  double count = 0, mean = 0, m2 = 0, squares = 0;
  for_slices(got, ref, [&](const at::Tensor& g, const at::Tensor& r) {
    const at::Tensor d = g - r;
    const auto n = static_cast<double>(d.numel());
    const double m = d.mean().item<double>(), dm = m - mean;
    m2 += (d - m).pow(2).sum().item<double>() + dm * dm * count * n / (count + n);
    mean += dm * n / (count + n);
    count += n;
    squares += r.pow(2).sum().item<double>();
  });
  const double scale = std::sqrt(squares / count);
  const double noise = std::sqrt(m2 / (count - 1));  // unbiased, as Tensor::std(); NaN for one
  if (scale == 0) return noise == 0 ? 0 : INFINITY;
  return noise / scale;
}

double mean_kl(const at::Tensor& ref_logits, const at::Tensor& got_logits) {
  const std::int64_t vocab = ref_logits.size(-1);
  const at::Tensor got = got_logits.reshape({-1, vocab});
  return per_row_slice(ref_logits.reshape({-1, vocab}),
                       [&](const at::Tensor& ref, std::int64_t first, std::int64_t n) {
                         const at::Tensor p = at::log_softmax(ref, -1);
                         const at::Tensor q = at::log_softmax(f64(got.narrow(0, first, n)), -1);
                         return (p.exp() * (p - q)).sum(-1);
                       })
      .mean()
      .item<double>();
}

at::Tensor top2_margin(const at::Tensor& logits) {
  // topk in the logits' own dtype: widening is exact and monotone, so the two largest are the
  // same elements, and only they are widened.
  const at::Tensor top = std::get<0>(logits.to(at::kCPU).topk(2, -1)).to(at::kDouble);
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
