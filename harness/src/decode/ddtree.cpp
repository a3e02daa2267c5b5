#include "draftgate/decode/ddtree.h"

#include <queue>
#include <tuple>

namespace draftgate::decode {

DraftTree build_draft_tree(const at::Tensor& logits, std::int64_t budget, std::int64_t top_k) {
  const std::int64_t depths = logits.size(0), vocab = logits.size(1);
  const std::int64_t k = std::min(top_k > 0 ? top_k : budget, vocab);
  // Ranked where the logits are; only the k best per depth travel to the host.
  const at::Tensor logp = at::log_softmax(logits.to(at::kFloat), -1);
  const auto top = at::topk(logp, k, -1, /*largest=*/true, /*sorted=*/true);
  const at::Tensor values = std::get<0>(top).to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor ids = std::get<1>(top).to(at::kCPU).contiguous();
  const auto val = values.accessor<double, 2>();
  const auto tok = ids.accessor<std::int64_t, 2>();

  // Candidate: (score, −sequence, parent node, depth index, rank). Higher score first, then earlier
  // push.
  using Candidate = std::tuple<double, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::priority_queue<Candidate> heap;
  std::int64_t pushed = 0;
  auto push = [&](double parent_score, std::int64_t parent, std::int64_t depth, std::int64_t rank) {
    if (depth < depths && rank < k)
      heap.emplace(parent_score + val[depth][rank], -pushed++, parent, depth, rank);
  };
  DraftTree tree;
  push(0.0, -1, 0, 0);
  while (static_cast<std::int64_t>(tree.tokens.size()) < budget && !heap.empty()) {
    const auto [score, order, parent, depth, rank] = heap.top();
    (void)order;
    heap.pop();
    const auto node = static_cast<std::int64_t>(tree.tokens.size());
    tree.tokens.push_back(tok[depth][rank]);
    tree.parents.push_back(parent);
    tree.scores.push_back(score);
    const double parent_score = parent < 0 ? 0.0 : tree.scores[parent];
    push(parent_score, parent, depth, rank + 1);  // next sibling
    push(score, node, depth + 1, 0);              // first child
  }
  return tree;
}

std::vector<std::int64_t> follow_verified_path(const std::vector<std::int64_t>& tokens,
                                               const std::vector<std::int64_t>& parents,
                                               const std::vector<std::int64_t>& posterior) {
  std::vector<std::int64_t> path = {0};
  for (bool moved = true; moved;) {
    moved = false;
    const std::int64_t cur = path.back();
    for (std::size_t c = static_cast<std::size_t>(cur) + 1; c < tokens.size(); ++c) {
      if (parents[c] == cur && tokens[c] == posterior[cur]) {
        path.push_back(static_cast<std::int64_t>(c));
        moved = true;
        break;
      }
    }
  }
  return path;
}

}  // namespace draftgate::decode
