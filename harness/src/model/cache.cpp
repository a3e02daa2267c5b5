#include "draftgate/model/cache.h"

#include <cstring>

namespace draftgate::model {

namespace {

// Rows [T, heads, d] of `from` into rows [at, at + T) of each head of `to` [heads, capacity, d]
// with plain copies of d values: where both lie in CPU memory with their d contiguous and no
// gradient is recorded. ATen's two permuted copies were ~10 us a verify layer on the calling
// thread.
bool copy_rows(const at::Tensor& from, at::Tensor& to, std::int64_t at) {
  if (!from.device().is_cpu() || !to.device().is_cpu() || from.scalar_type() != to.scalar_type() ||
      from.stride(2) != 1 || to.stride(2) != 1 ||
      (at::GradMode::is_enabled() && (from.requires_grad() || to.requires_grad())))
    return false;
  const std::int64_t t = from.size(0), heads = from.size(1), d = from.size(2);
  const std::int64_t size = static_cast<std::int64_t>(from.element_size());
  const auto* src = static_cast<const char*>(from.data_ptr());
  auto* dst = static_cast<char*>(to.data_ptr());
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < t; ++i)
      std::memcpy(dst + (h * to.stride(0) + (at + i) * to.stride(1)) * size,
                  src + (i * from.stride(0) + h * from.stride(1)) * size,
                  static_cast<std::size_t>(d * size));
  return true;
}

}  // namespace

void KVCache::append(const at::Tensor& k, const at::Tensor& v) {
  const std::int64_t t = k.size(0);
  if (!k_.defined() || rows_ + t > k_.size(1)) {
    const std::int64_t capacity = std::max<std::int64_t>(2 * (rows_ + t), 64);
    at::Tensor nk = at::empty({k.size(1), capacity, k.size(2)}, k.options());
    at::Tensor nv = at::empty({v.size(1), capacity, v.size(2)}, v.options());
    if (rows_ > 0) {
      nk.narrow(1, 0, rows_).copy_(keys());
      nv.narrow(1, 0, rows_).copy_(values());
    }
    k_ = nk;
    v_ = nv;
  }
  if (!copy_rows(k, k_, rows_)) k_.narrow(1, rows_, t).copy_(k.permute({1, 0, 2}));
  if (!copy_rows(v, v_, rows_)) v_.narrow(1, rows_, t).copy_(v.permute({1, 0, 2}));
  rows_ += t;
}

at::Tensor KVCache::keys() const { return k_.narrow(1, 0, rows_); }
at::Tensor KVCache::values() const { return v_.narrow(1, 0, rows_); }

void KVCache::keep(std::int64_t committed, const std::vector<std::int64_t>& path) {
  if (!path.empty()) {
    std::vector<std::int64_t> src(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) src[i] = committed + path[i];
    const at::Tensor index = at::tensor(src, at::TensorOptions(at::kLong).device(k_.device()));
    const at::Tensor kept_k =
        k_.index_select(1, index);  // copy first: source and target rows overlap
    const at::Tensor kept_v = v_.index_select(1, index);
    k_.narrow(1, committed, path.size()).copy_(kept_k);
    v_.narrow(1, committed, path.size()).copy_(kept_v);
  }
  rows_ = committed + static_cast<std::int64_t>(path.size());
}

}  // namespace draftgate::model
