#include "draftgate/model/cache.h"

namespace draftgate::model {

void KVCache::append(const at::Tensor& k, const at::Tensor& v) {
  const std::int64_t t = k.size(0);
  const at::Tensor kt = k.permute({1, 0, 2});
  const at::Tensor vt = v.permute({1, 0, 2});
  if (!k_.defined() || rows_ + t > k_.size(1)) {
    const std::int64_t capacity = std::max<std::int64_t>(2 * (rows_ + t), 64);
    at::Tensor nk = at::empty({kt.size(0), capacity, kt.size(2)}, kt.options());
    at::Tensor nv = at::empty({vt.size(0), capacity, vt.size(2)}, vt.options());
    if (rows_ > 0) {
      nk.narrow(1, 0, rows_).copy_(keys());
      nv.narrow(1, 0, rows_).copy_(values());
    }
    k_ = nk;
    v_ = nv;
  }
  k_.narrow(1, rows_, t).copy_(kt);
  v_.narrow(1, rows_, t).copy_(vt);
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
