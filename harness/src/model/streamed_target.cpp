// StreamedTarget (sequence_target.h): a target run one decoder layer at a time from the mapping.

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <future>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/staged_tensors.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

StreamedTarget::StreamedTarget(const io::Checkpoint& checkpoint, const TargetOptions& options,
                               std::int64_t vocab_chunk_rows, LayerReads layer_reads)
    : checkpoint_(checkpoint),
      stack_(layout::resolve_decoder_stack(checkpoint)),
      config_(TargetConfig::from(checkpoint.config(), stack_)),
      dtype_(compute_dtype(checkpoint, stack_, options)),
      device_(options.device),
      gdn_(options.gdn),
      vocab_chunk_rows_(std::max<std::int64_t>(1, vocab_chunk_rows)),
      layer_reads_(layer_reads) {
  if (checkpoint.metadata_only())
    throw Error(checkpoint.dir().string(),
                "metadata-only checkpoint (index without shards) has no weights",
                "download the shards to run the model");
  if (options.autograd) throw std::invalid_argument("a streamed target cannot train");
  c10::InferenceMode inference;
  const WeightLoader w(checkpoint_, dtype_, device_);
  const auto& c = config_;
  w.mapped(stack_.embed_tokens, {c.vocab, c.hidden});  // shapes now, values as they are read
  if (!stack_.tied_embeddings) w.mapped(stack_.lm_head, {c.vocab, c.hidden});
  final_norm_ = w.get(stack_.final_norm, {c.hidden});
  check_tie_flag(checkpoint_, stack_);
  inv_freq_ = rope_inv_freq(c.rotary_dim, c.rope_theta).to(device_);
  // Before any layer is read (the in-memory target checks after its loaders' own refusals).
  require_target_engine_support(checkpoint, stack_);
}

std::vector<std::string> StreamedTarget::layer_tensors(std::int64_t index) const {
  const std::string prefix = stack_.layer_path(index) + ".";
  const auto& names = checkpoint_.names();
  std::vector<std::string> layer;
  for (auto it = std::lower_bound(names.begin(), names.end(), prefix);
       it != names.end() && it->compare(0, prefix.size(), prefix) == 0; ++it)
    layer.push_back(*it);
  return layer;
}

void StreamedTarget::advise_layer(std::int64_t index, bool release) const {
  for (const std::string& name : layer_tensors(index)) {
    const io::TensorInfo* info = checkpoint_.info(name);
    const auto& file = checkpoint_.file_of(name);
    release ? file->release(*info) : file->prefetch(*info);
  }
}

ForwardResult StreamedTarget::forward(const std::vector<std::int64_t>& tokens,
                                      const std::vector<std::int64_t>& taps, bool want_logits,
                                      const LayerCallback& on_layer) const {
  return std::move(forward_together({this}, tokens, taps, want_logits, on_layer).front());
}

namespace {

// One target's part of a walk: its rope tables at its dtype, its stream of hidden states, the
// buffers its layers convert into and what it keeps.
struct Stream {
  RopeTables rope;
  WeightBuffers buffers;
  at::Tensor h;
  ForwardResult result;
};

// Layers up to this share of the memory budget are read into memory ahead of use (two at a time);
// a bigger one (a MoE layer of a few hundred experts on a small machine) is read through the
// mapping, a tensor or an expert at a time as it is used.
constexpr std::uint64_t kStagedShareOfBudget = 8;

}  // namespace

std::vector<ForwardResult> StreamedTarget::forward_together(
    const std::vector<const StreamedTarget*>& targets, const std::vector<std::int64_t>& tokens,
    const std::vector<std::int64_t>& taps, bool want_logits, const LayerCallback& on_layer) {
  c10::InferenceMode inference;
  const StreamedTarget& first = *targets.front();
  for (const StreamedTarget* t : targets)
    if (t->checkpoint_.dir() != first.checkpoint_.dir())
      throw std::invalid_argument("forward_together: targets of different checkpoints");
  check_tokens_and_taps(first.config_, tokens, taps);
  const auto t_len = static_cast<std::int64_t>(tokens.size());
  require_sequence_fits(first.config_, t_len, t_len, "tokens");
  std::vector<std::int64_t> positions(t_len);
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<Stream> streams(targets.size());
  for (std::size_t k = 0; k < targets.size(); ++k) {
    const StreamedTarget& t = *targets[k];
    Stream& s = streams[k];
    s.rope = rope_tables(at::tensor(positions, at::kLong).to(t.device_), t.inv_freq_, t.dtype_);
    s.h = t.embed(tokens);
  }
  const std::int64_t layers = first.config_.num_layers;
  const std::uint64_t budget = available_memory_bytes();
  TensorStager stager(first.checkpoint_);
  // Which layers are staged; the buffers are sized for the largest, so that a walk over layers of
  // different sizes (Gated DeltaNet and attention) reuses two buffers instead of faulting in a
  // fresh one at each change of size.
  std::vector<bool> staged_layer(static_cast<std::size_t>(layers));
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::uint64_t bytes = stager.staged_bytes(first.layer_tensors(i));
    staged_layer[i] = first.layer_reads_ == LayerReads::kAuto
                          ? budget == 0 || bytes <= budget / kStagedShareOfBudget
                          : first.layer_reads_ == LayerReads::kStaged;
    if (staged_layer[i]) stager.reserve(bytes);
  }
  // Layer i's read, started while layer i - 1 computes; invalid when it is read through the
  // mapping.
  const auto read_ahead = [&](std::int64_t i) {
    if (staged_layer[i]) return stager.stage(first.layer_tensors(i));
    first.advise_layer(i, false);
    return std::future<StagedTensors>();
  };
  std::future<StagedTensors> next = read_ahead(0);
  for (std::int64_t i = 0; i < layers; ++i) {
    const bool mapped = !next.valid();
    const StagedTensors staged = mapped ? StagedTensors() : next.get();
    if (i + 1 < layers) next = read_ahead(i + 1);
    // Layer i is read from storage once and run by every target.
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const StreamedTarget& t = *targets[k];
      Stream& s = streams[k];
      {
        // Each layer converts into the buffers the one before let go.
        const WeightLoader w(t.checkpoint_, t.dtype_, t.device_, nullptr, &s.buffers, &staged);
        const TargetLayer layer =
            TargetLayer::load(t.config_, w, t.stack_.layer_path(i) + ".", i, ExpertLoading::kOnUse);
        KVCache kv;  // one pass over the whole sequence: nothing outlives the layer
        LinearState linear;
        if (layer.linear)
          linear = layer.linear->new_state(at::TensorOptions().dtype(t.dtype_).device(t.device_));
        s.h = layer.extend(s.h, t.config_, s.rope, at::Tensor(), {}, t.gdn_, kv, linear);
      }
      if (std::find(taps.begin(), taps.end(), i) != taps.end())
        s.result.taps[i] = s.h.to(at::kFloat);
    }
    if (mapped) first.advise_layer(i, true);
    if (on_layer) on_layer(i + 1, layers);
  }
  std::vector<ForwardResult> results;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    Stream& s = streams[k];
    if (want_logits) s.result.logits = targets[k]->lm_head(targets[k]->final_norm(s.h));
    results.push_back(std::move(s.result));
  }
  return results;
}

at::Tensor StreamedTarget::final_norm(const at::Tensor& hidden) const {
  return rms_norm(hidden.to(dtype_), final_norm_, config_.rms_eps, config_.traits.norm);
}

at::Tensor StreamedTarget::lm_head(const at::Tensor& x) const {
  c10::InferenceMode inference;
  const std::string& name = stack_.tied_embeddings ? stack_.embed_tokens : stack_.lm_head;
  const std::int64_t vocab = config_.vocab, hidden = config_.hidden;
  WeightBuffers buffers;
  const WeightLoader w(checkpoint_, dtype_, device_, nullptr, &buffers);
  const at::Tensor stored = w.mapped(name, {vocab, hidden});
  const io::TensorInfo& info = *checkpoint_.info(name);
  const auto& file = checkpoint_.file_of(name);
  const std::uint64_t row_bytes = info.nbytes() / static_cast<std::uint64_t>(vocab);
  const auto bytes_at = [&](std::int64_t row) {
    return static_cast<std::uint64_t>(row) * row_bytes;
  };
  const at::Tensor in = x.to(dtype_);
  at::Tensor out = at::empty({x.size(0), vocab}, in.options().dtype(at::kFloat));
  const std::int64_t rows = vocab_chunk_rows_;
  for (std::int64_t r = 0; r < vocab; r += rows) {
    const std::int64_t n = std::min(rows, vocab - r);
    file->prefetch(info, bytes_at(r + n), bytes_at(std::min(vocab, r + 2 * rows)));
    out.narrow(1, r, n).copy_(dense(in, w.converted_linear(name, stored.narrow(0, r, n))));
    file->release(info, bytes_at(r), bytes_at(r + n));
  }
  return out;
}

at::Tensor StreamedTarget::embed(const std::vector<std::int64_t>& tokens) const {
  c10::InferenceMode inference;
  const WeightLoader w(checkpoint_, dtype_, device_);
  const at::Tensor rows = w.mapped(stack_.embed_tokens, {config_.vocab, config_.hidden})
                              .index_select(0, at::tensor(tokens, at::kLong));
  w.require_finite(stack_.embed_tokens, rows);
  return rows.to(device_, dtype_);
}

}  // namespace draftgate::model
