#include "draftgate/model/dflash2_parts.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {

at::Tensor grouped_dynamic_causal_conv(const at::Tensor& x, const at::Tensor& dynamic,
                                       const at::Tensor& base, std::int64_t group) {
  const std::int64_t n = x.size(0), t = x.size(1), h = x.size(2), groups = h / group,
                     k = base.size(0);
  const at::Tensor blocks = x.reshape({n, t, groups, group});
  at::Tensor out = at::zeros_like(blocks);
  for (std::int64_t o = 0; o < k && o < t; ++o) {
    // Shifted by o rows inside each block: zeros before its row 0, nothing from the block before.
    const at::Tensor shifted = o == 0 ? blocks
                                      : at::cat({at::zeros({n, o, groups, group}, blocks.options()),
                                                 blocks.narrow(1, 0, t - o)},
                                                1);
    out = out + base[o].view({1, 1, groups, group}).to(x.scalar_type()) * shifted;
    out = at::addcmul(out, dynamic.select(2, o).unsqueeze(-1), shifted);
  }
  return out.view({n, t, h});
}

DynamicConv::DynamicConv(const WeightLoader& w, const std::string& p, std::int64_t hidden,
                         const Dflash2Config& c)
    : kernel_(c.conv_kernel_size),
      group_(c.conv_group_size),
      groups_(hidden / c.conv_group_size),
      base_(w.get(p + "base_kernel", {2, c.conv_kernel_size, hidden})),
      projection_(
          w.get(p + "kernel_projection.weight", {2 * c.conv_kernel_size * groups_, hidden})) {}

DynamicConv::Prepared DynamicConv::prepare(const at::Tensor& x) const {
  const at::Tensor dynamic =
      dense(x, projection_).view({x.size(0), x.size(1), 2, kernel_, groups_});
  return {grouped_dynamic_causal_conv(x, dynamic.select(2, 0), base_[0], group_),
          dynamic.select(2, 1)};
}

at::Tensor DynamicConv::finish(const at::Tensor& y, const at::Tensor& finish_kernel) const {
  return grouped_dynamic_causal_conv(y, finish_kernel, base_[1], group_);
}

namespace {
// The codebook under its stored name (bare, as the reference checkpoints hold it) or with
// `.weight`; both present is ambiguous.
std::string codebook_name(const io::Checkpoint& ckpt, const std::string& bare) {
  const std::string stored =
      stored_name(ckpt.names(), {bare, bare + ".weight"}, ckpt.dir().string());
  return stored.empty() ? bare : stored;
}
}  // namespace

CandidateSelector::CandidateSelector(const io::Checkpoint& ckpt, const WeightLoader& w,
                                     std::int64_t hidden, std::int64_t vocab,
                                     const Dflash2Config& c)
    : top_k_(c.selector_top_k),
      predecessor_(w.get(codebook_name(ckpt, "candidate_selector.predecessor_codebook"),
                         {vocab, c.selector_rank})),
      successor_(w.get(codebook_name(ckpt, "candidate_selector.successor_codebook"),
                       {vocab, c.selector_rank})),
      projection_(w.get("candidate_selector.hidden_projection.weight", {c.selector_rank, hidden})) {
}

std::vector<std::int64_t> CandidateSelector::walk(const at::Tensor& y, const at::Tensor& logits,
                                                  std::int64_t anchor) const {
  // Candidates in descending order (the reference leaves topk unsorted; the walk's argmax only
  // differs on exactly tied scores).
  const auto [unary, candidates] = at::topk(logits, top_k_, -1, true, true);
  const at::Tensor projected = dense(y, projection_);
  std::vector<std::int64_t> path;
  std::int64_t previous = anchor;
  for (std::int64_t p = 0; p < y.size(0); ++p) {
    const at::Tensor query = predecessor_[previous] * projected[p];                        // [R]
    const at::Tensor pairwise = at::mv(successor_.index_select(0, candidates[p]), query);  // [k]
    const std::int64_t best = (unary[p] + pairwise).argmax().item<std::int64_t>();
    previous = candidates[p][best].item<std::int64_t>();
    path.push_back(previous);
  }
  return path;
}

}  // namespace draftgate::model
