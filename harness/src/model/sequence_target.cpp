#include "draftgate/model/sequence_target.h"

#include <c10/core/InferenceMode.h>

#include "draftgate/model/memory_budget.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {

ForwardResult InMemoryTarget::forward(const std::vector<std::int64_t>& tokens,
                                      const std::vector<std::int64_t>& taps, bool want_logits,
                                      const LayerCallback& on_layer) const {
  ForwardResult r = model_->forward(tokens, taps, want_logits);
  if (on_layer) on_layer(config().num_layers, config().num_layers);
  return r;
}

at::Tensor InMemoryTarget::final_norm(const at::Tensor& hidden) const {
  return model_->final_norm(hidden);
}

at::Tensor InMemoryTarget::lm_head(const at::Tensor& x) const {
  c10::InferenceMode inference;
  return dense_to_float(x.to(model_->dtype()), model_->lm_head_weight());
}

at::Tensor InMemoryTarget::embed(const std::vector<std::int64_t>& tokens) const {
  c10::InferenceMode inference;
  return model_->embed_weight().index_select(0, at::tensor(tokens, at::kLong).to(model_->device()));
}

bool fits_in_memory(const io::Checkpoint& checkpoint, const layout::DecoderStack& stack,
                    at::ScalarType dtype) {
  const std::uint64_t budget = available_memory_bytes();
  return budget == 0 || materialised_weight_bytes(checkpoint, stack, at::elementSize(dtype),
                                                  /*copy_all=*/true) <= budget / 2;
}

std::unique_ptr<SequenceTarget> open_sequence_target(const io::Checkpoint& checkpoint,
                                                     const TargetOptions& options,
                                                     TargetPath path) {
  if (path == TargetPath::kAuto) {
    const layout::DecoderStack stack = layout::resolve_decoder_stack(checkpoint);
    path = fits_in_memory(checkpoint, stack, compute_dtype(checkpoint, stack, options))
               ? TargetPath::kInMemory
               : TargetPath::kStreamed;
  }
  if (path == TargetPath::kStreamed) return std::make_unique<StreamedTarget>(checkpoint, options);
  return std::make_unique<InMemoryTarget>(TargetModel::load(checkpoint, options));
}

}  // namespace draftgate::model
