#pragma once
// DDTree (Ringel & Romano): a best-first draft tree over the drafter's per-position top-k
// log-probs.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace draftgate::decode {

struct DraftTree {
  std::vector<std::int64_t> tokens;  // non-root nodes in insertion order
  std::vector<std::int64_t>
      parents;  // index into tokens, or −1 for the root (the committed bonus token)
  std::vector<double> scores;  // cumulative log-probability of each node's prefix
};

// logits [B−1, vocab]: row d scores depth d+1. Scores factorise, Q(y1..yD) = Πd qd(yd); a max-heap
// over prefixes pops the best, adds it, and pushes its next sibling and its first child, until
// `budget` non-root nodes. `top_k` candidates per depth (0 = min(budget, vocab)). Ties break toward
// lower rank, then earlier push.
DraftTree build_draft_tree(const at::Tensor& logits, std::int64_t budget, std::int64_t top_k = 0);

// From the root (index 0 of `tokens`, parents[0] = −1), follows the child whose token equals the
// target's greedy token at the current node, while one exists. Returns the path of indices, root
// first.
std::vector<std::int64_t> follow_verified_path(const std::vector<std::int64_t>& tokens,
                                               const std::vector<std::int64_t>& parents,
                                               const std::vector<std::int64_t>& posterior);

}  // namespace draftgate::decode
