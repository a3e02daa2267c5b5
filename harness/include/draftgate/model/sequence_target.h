#pragma once
// One forward over one whole sequence — what the step-record checks, `forward` and
// hidden_state_parity need — from a target held in memory (TargetModel) or streamed through memory
// one decoder layer at a time (StreamedTarget). Both give the same bits at the same dtype;
// open_sequence_target picks by the memory budget.

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/target.h"

namespace draftgate::model {

using LayerCallback = std::function<void(std::int64_t done, std::int64_t total)>;

class SequenceTarget {
 public:
  virtual ~SequenceTarget() = default;
  virtual const TargetConfig& config() const = 0;
  virtual at::ScalarType dtype() const = 0;
  virtual bool streamed() const = 0;
  // TargetModel::forward: logits [T, vocab] float32 (when asked) and taps [T, hidden] float32.
  // `on_layer` (optional, for progress) is called with (layers done, layers).
  virtual ForwardResult forward(const std::vector<std::int64_t>& tokens,
                                const std::vector<std::int64_t>& taps, bool want_logits = true,
                                const LayerCallback& on_layer = {}) const = 0;
  // The final norm of hidden states [T, hidden], in the target's dtype.
  virtual at::Tensor final_norm(const at::Tensor& hidden) const = 0;
  // x · lm_headᵀ in float32 for x [T, hidden] (no final norm).
  virtual at::Tensor lm_head(const at::Tensor& x) const = 0;
  // The embedding rows of `tokens`, [T, hidden] in the target's dtype.
  virtual at::Tensor embed(const std::vector<std::int64_t>& tokens) const = 0;
};

// The whole model in memory.
class InMemoryTarget final : public SequenceTarget {
 public:
  explicit InMemoryTarget(std::unique_ptr<TargetModel> loaded) : model_(std::move(loaded)) {}
  const TargetModel& model() const { return *model_; }
  const TargetConfig& config() const override { return model_->config(); }
  at::ScalarType dtype() const override { return model_->dtype(); }
  bool streamed() const override { return false; }
  ForwardResult forward(const std::vector<std::int64_t>& tokens,
                        const std::vector<std::int64_t>& taps, bool want_logits = true,
                        const LayerCallback& on_layer = {}) const override;
  at::Tensor final_norm(const at::Tensor& hidden) const override;
  at::Tensor lm_head(const at::Tensor& x) const override;
  at::Tensor embed(const std::vector<std::int64_t>& tokens) const override;

 private:
  std::unique_ptr<TargetModel> model_;
};

// How a streamed walk reads its decoder layers; kAuto: staged unless a layer is over an eighth of
// the memory budget.
enum class LayerReads { kAuto, kStaged, kMapped };

// Streams the weights through memory: each decoder layer is read into memory with direct reads
// while the one before computes (staged_tensors.h; a layer over an eighth of the memory budget is
// read through the mapping instead, prefetched with MADV_WILLNEED and released with
// MADV_DONTNEED + POSIX_FADV_DONTNEED), converted to the compute dtype when stored otherwise, and
// run over every position. The embedding is read row by row and lm_head a block of vocabulary rows
// at a time, so resident memory is about two layers plus the activations and taps, whatever the
// depth.
class StreamedTarget final : public SequenceTarget {
 public:
  static constexpr std::int64_t kVocabChunkRows = 16384;
  // `vocab_chunk_rows`: lm_head rows projected (and converted) at once.
  StreamedTarget(const io::Checkpoint& checkpoint, const TargetOptions& options,
                 std::int64_t vocab_chunk_rows = kVocabChunkRows,
                 LayerReads layer_reads = LayerReads::kAuto);
  const TargetConfig& config() const override { return config_; }
  at::ScalarType dtype() const override { return dtype_; }
  bool streamed() const override { return true; }
  ForwardResult forward(const std::vector<std::int64_t>& tokens,
                        const std::vector<std::int64_t>& taps, bool want_logits = true,
                        const LayerCallback& on_layer = {}) const override;
  at::Tensor final_norm(const at::Tensor& hidden) const override;
  at::Tensor lm_head(const at::Tensor& x) const override;
  at::Tensor embed(const std::vector<std::int64_t>& tokens) const override;

  // The forwards of several targets of one checkpoint (e.g. float32 and bf16) over one sequence in
  // one walk over the layers: each layer is read from storage once and run by every target at its
  // own dtype before it is released. Each result has the bits of that target's own forward().
  static std::vector<ForwardResult> forward_together(
      const std::vector<const StreamedTarget*>& targets, const std::vector<std::int64_t>& tokens,
      const std::vector<std::int64_t>& taps, bool want_logits = true,
      const LayerCallback& on_layer = {});

 private:
  // The names of decoder layer `index`'s tensors.
  std::vector<std::string> layer_tensors(std::int64_t index) const;
  // Prefetches (release = false) or releases every tensor of decoder layer `index` in the mapping.
  void advise_layer(std::int64_t index, bool release) const;

  io::Checkpoint checkpoint_;
  layout::DecoderStack stack_;
  TargetConfig config_;
  at::ScalarType dtype_;
  at::Device device_;
  GdnAlgorithm gdn_;
  std::int64_t vocab_chunk_rows_;
  LayerReads layer_reads_;
  at::Tensor final_norm_, inv_freq_;
};

enum class TargetPath { kAuto, kInMemory, kStreamed };

// Whether the whole model fits comfortably: its weights at the compute dtype (mapped or converted,
// all resident once used) take at most half the memory budget (memory_budget.h).
bool fits_in_memory(const io::Checkpoint& checkpoint, const layout::DecoderStack& stack,
                    at::ScalarType dtype);

// The target for single-sequence work; kAuto = in memory when fits_in_memory, streamed otherwise.
std::unique_ptr<SequenceTarget> open_sequence_target(const io::Checkpoint& checkpoint,
                                                     const TargetOptions& options,
                                                     TargetPath path = TargetPath::kAuto);

}  // namespace draftgate::model
