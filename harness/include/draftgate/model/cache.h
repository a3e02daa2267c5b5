#pragma once
// Incremental state of a target model: committed tokens plus at most one pending extension (a chain
// or a tree of draft tokens being verified). Committing a root-to-node path of the pending tokens
// keeps exactly those; everything else is dropped, so rejected drafts never pollute the state.
//
// Attention layers keep K/V rows in a growing buffer; pending rows sit after the committed ones and
// commit() compacts the kept path in place. Gated DeltaNet layers keep their committed conv window
// and recurrent state untouched during an extension, and commit() recomputes the state along the
// kept path from the per-token inputs the extension stored (a recurrent replay of at most one
// block) — or takes the extension's final state directly when the whole chain is kept, so a long
// chunked prefill is never replayed.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace draftgate::model {

// K/V of one attention layer, [kv_heads, rows, head_dim] inside a buffer that doubles when full.
class KVCache {
 public:
  std::int64_t rows() const { return rows_; }
  void append(const at::Tensor& k, const at::Tensor& v);  // k, v: [T, kv_heads, head_dim]
  at::Tensor keys() const;                                // [kv_heads, rows, head_dim] views
  at::Tensor values() const;
  // Keeps rows [0, committed) and then rows committed + path[i] (path increasing), dropping the
  // rest.
  void keep(std::int64_t committed, const std::vector<std::int64_t>& path);

 private:
  at::Tensor k_, v_;
  std::int64_t rows_ = 0;
};

// Gated DeltaNet state of one layer.
struct LinearState {
  at::Tensor conv_window;  // [K-1, conv_width]: raw conv inputs of the last K-1 committed tokens
                           // (zeros first)
  at::Tensor recurrent;    // [v_heads, k_dim, v_dim] float32, after the committed tokens
  // The pending extension's per-token inputs, kept for commit().
  at::Tensor pending_raw;  // [T, conv_width] conv inputs
  at::Tensor pending_q, pending_k, pending_v, pending_g,
      pending_beta;          // recurrence inputs, float32
  at::Tensor pending_final;  // state after the whole pending chain (undefined for trees)
};

struct TargetState {
  std::int64_t committed = 0;  // committed tokens = next position
  std::vector<std::int64_t>
      pending;              // parents of the pending tokens (-1: the committed tip); empty if none
  std::vector<KVCache> kv;  // per layer (unused for linear-attention layers)
  std::vector<LinearState> linear;  // per layer (unused for attention layers)

  bool has_pending() const { return !pending.empty(); }
};

}  // namespace draftgate::model
