#include "draftgate/model/dflash.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "draftgate/arch/drafter_keys.h"
#include "draftgate/arch/family_table.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/argmax_rows.h"
#include "draftgate/model/draft_vocab.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

namespace {
// DFlash drafter layers are Qwen3 layers whatever the target: the family table's Qwen3 traits
// (plain-w norms, q/k norm, full RoPE, no gate), not a second copy of them.
const FamilyTraits kDrafterLayerTraits = traits_of(Family::kQwen3);

// sublayer(x), between the halves of DFlash2's convolution where the layer has one. x holds whole
// blocks of `block` rows each ([N·block, H]); the convolution runs inside each block.
template <class Sublayer>
at::Tensor around(const std::optional<DynamicConv>& conv, const at::Tensor& x, std::int64_t block,
                  Sublayer&& sublayer) {
  if (!conv) return sublayer(x);
  const auto prepared = conv->prepare(x.view({-1, block, x.size(-1)}));
  const at::Tensor y = sublayer(prepared.input.view_as(x));
  return conv->finish(y.reshape(prepared.input.sizes()), prepared.finish_kernel).view_as(x);
}
}  // namespace

std::unique_ptr<DFlashDrafter> DFlashDrafter::load(const io::Checkpoint& checkpoint,
                                                   const TargetModel& target, bool autograd,
                                                   CausalityReading reading) {
  if (checkpoint.metadata_only())
    throw Error(checkpoint.dir().string(), "metadata-only drafter checkpoint has no weights");
  const auto files = refused_files(checkpoint.dir());
  if (!files.empty()) throw Error(checkpoint.dir().string(), "refused " + files.front().line());
  return std::unique_ptr<DFlashDrafter>(new DFlashDrafter(checkpoint, target, autograd, reading));
}

DFlashDrafter::DFlashDrafter(const io::Checkpoint& ckpt, const TargetModel& target, bool autograd,
                             CausalityReading reading)
    : target_(target), autograd_(autograd), config_(DrafterConfig::from(ckpt.config(), reading)) {
  const auto& d = config_;
  const auto& t = target.config();
  const std::string file = ckpt.config().file();
  d.check_tensors(ckpt.names(), ckpt.dir().string());
  if (d.hidden != t.hidden)
    throw Error(file,
                "drafter hidden_size " + std::to_string(d.hidden) + " != target hidden_size " +
                    std::to_string(t.hidden),
                "the drafter reads the target's embeddings and lm_head, so the widths must match");
  for (auto tap : d.target_layer_ids)
    if (tap < 0 || tap >= t.num_layers)
      throw Error(file, "target_layer_ids [" + format_ids(d.target_layer_ids) + "]: tap " +
                            std::to_string(tap) + " is not a target layer (0.." +
                            std::to_string(t.num_layers - 1) + ")");
  if (d.num_target_layers && *d.num_target_layers != t.num_layers)
    throw Error(file, "num_target_layers " + std::to_string(*d.num_target_layers) +
                          " but the target has " + std::to_string(t.num_layers) + " layers");
  if (d.mask_token_id < 0 || d.mask_token_id >= t.vocab)
    throw Error(file, "mask_token_id " + std::to_string(d.mask_token_id) +
                          " is outside the target's embedding (vocab " + std::to_string(t.vocab) +
                          ")");
  if (d.vocab_size && *d.vocab_size != t.vocab)
    throw Error(file, "drafter vocab_size " + std::to_string(*d.vocab_size) +
                          " != target vocab_size " + std::to_string(t.vocab));
  if (d.dflash2 && d.dflash2->selector_top_k > t.vocab)
    throw Error(file, "dflash_config.selector_top_k " + std::to_string(d.dflash2->selector_top_k) +
                          " exceeds the target's vocabulary (" + std::to_string(t.vocab) + ")");

  attention_config_.traits = kDrafterLayerTraits;
  attention_config_.hidden = d.hidden;
  attention_config_.num_heads = d.num_heads;
  attention_config_.num_kv_heads = d.num_kv_heads;
  attention_config_.head_dim = d.head_dim;
  attention_config_.rotary_dim = d.head_dim;
  attention_config_.rope_theta = d.rope_theta;
  attention_config_.rms_eps = d.rms_eps;

  const WeightLoader w(ckpt, target.dtype(), target.device(), autograd_ ? &parameters_ : nullptr);
  load_embedding_and_head(ckpt, target);
  const auto n_taps = static_cast<std::int64_t>(d.target_layer_ids.size());
  fc_ = w.get("fc.weight", {d.hidden, n_taps * t.hidden});
  hidden_norm_ = w.get("hidden_norm.weight", {d.hidden});
  norm_ = w.get("norm.weight", {d.hidden});
  inv_freq_ = rope_inv_freq(d.head_dim, d.rope_theta).to(target.device());
  for (std::int64_t i = 0; i < d.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    Layer l{NormsAndMlp(w, p, d.hidden, d.intermediate),
            std::make_unique<Attention>(attention_config_, w, p + "self_attn."),
            d.layer_causal[i],
            std::nullopt,
            std::nullopt,
            std::nullopt};
    l.window = d.layer_window[i];
    if (d.dflash2) {
      l.attention_conv.emplace(w, p + "attention_conv.", d.hidden, *d.dflash2);
      l.mlp_conv.emplace(w, p + "mlp_conv.", d.hidden, *d.dflash2);
    }
    layers_.push_back(std::move(l));
  }
  if (d.dflash2) selector_.emplace(ckpt, w, d.hidden, t.vocab, *d.dflash2);
  // Every block pass reads the mapped weights again, as the target's steps do (target.cpp).
  if (target.device().is_cpu() && !autograd_) ckpt.settle_in_huge_pages();
}

namespace {

// Whether a stored tensor (any float dtype, mapped) holds the values of `used` (the target's, in
// its dtype and device), compared as float32 a block of rows at a time: no whole float32 copy of
// a vocabulary-sized matrix.
bool same_values(const at::Tensor& stored, const at::Tensor& used) {
  if (stored.sizes() != used.sizes()) return false;
  constexpr std::int64_t kRows = 4096;
  for (std::int64_t r = 0; r < stored.size(0); r += kRows) {
    const std::int64_t n = std::min(kRows, stored.size(0) - r);
    if (!at::equal(stored.narrow(0, r, n).to(at::kFloat),
                   used.narrow(0, r, n).to(at::kCPU).to(at::kFloat)))
      return false;
  }
  return true;
}

}  // namespace

void DFlashDrafter::load_embedding_and_head(const io::Checkpoint& ckpt, const TargetModel& target) {
  const auto& d = config_;
  const std::int64_t vocab = target.config().vocab;
  embed_ = target.embed_weight();
  lm_head_ = target.lm_head_weight();
  const auto& names = ckpt.names();
  auto holds = [&](const char* n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (d.format != DrafterFormat::kSpeculators) {
    // z-lab's reference embeds and scores with the target's tensors whatever the checkpoint
    // holds, while vLLM serving the same checkpoint uses the drafter's own (has_own_embed_tokens /
    // has_own_lm_head, below): a copy that differs from the target's drafts differently there.
    for (const auto& [name, shared] :
         {std::pair<const char*, const at::Tensor&>{"embed_tokens.weight", embed_},
          std::pair<const char*, const at::Tensor&>{"lm_head.weight", lm_head_}})
      if (const at::Tensor stored = holds(name) ? io::load_tensor(ckpt, name) : at::Tensor();
          stored.defined() && !same_values(stored, shared))
        throw Error(ckpt.dir().string(),
                    std::string("the drafter's own ") + name +
                        (stored.sizes() == shared.sizes()
                             ? " differs from the target's"
                             : " has shape " + format_shape(stored.sizes().vec()) +
                                   ", the target's " + format_shape(shared.sizes().vec())),
                    "z-lab's reference uses the target's and vLLM the drafter's, so the two "
                    "draft differently: drop the tensor (a z-lab drafter shares the target's), "
                    "or save the drafter in the speculators format, which reads it as vLLM does");
    // The maps of a reduced vocabulary: z-lab's reference drafts the full vocabulary and never
    // reads them, vLLM maps its drafts through them; only the identity means the same to both.
    try {
      draft_to_target_ids(ckpt, vocab, vocab);
    } catch (const Error& e) {
      throw Error(e.file(), e.problem(),
                  "z-lab's reference ignores d2t / t2d and vLLM maps drafts through them: drop "
                  "them, or save a reduced-vocabulary drafter in the speculators format");
    }
    return;
  }
  // vLLM uses the drafter's own embed_tokens / lm_head when the checkpoint has them and shares
  // the target's otherwise (qwen3_dflash.py @036a00d1 DFlashQwen3ForCausalLM.load_weights sets
  // has_own_embed_tokens / has_own_lm_head from the tensor names; v1/spec_decode/
  // llm_base_proposer.py @00c4f22d _maybe_share_embeddings / _maybe_share_lm_head). They are
  // frozen in speculators (speculators/model.py @c05b95b3 :57-71): never trainable parameters here.
  const WeightLoader frozen(ckpt, target.dtype(), target.device());
  if (holds("embed_tokens.weight")) embed_ = frozen.get("embed_tokens.weight", {vocab, d.hidden});
  const std::int64_t draft_vocab = d.draft_vocab_size.value_or(vocab);
  // Without its own lm_head a reduced vocabulary is refused by draft_to_target_ids below.
  if (holds("lm_head.weight")) lm_head_ = frozen.get("lm_head.weight", {draft_vocab, d.hidden});
  draft_targets_ = draft_to_target_ids(ckpt, draft_vocab, vocab);
  if (draft_targets_.defined()) draft_targets_ = draft_targets_.to(target.device());
}

at::Tensor DFlashDrafter::logits(const at::Tensor& y) const {
  at::Tensor l = dense(y, lm_head_);
  if (config_.output_multiplier != 1.0) l = l * config_.output_multiplier;
  if (const auto cap = config_.final_logit_softcapping) l = at::tanh(l / *cap) * *cap;
  // A reduced vocabulary: the draft logits land on their target ids, -inf elsewhere, before any
  // argmax (vLLM DFlashQwen3ForCausalLM.compute_logits: logits_new[:, arange + d2t] = logits).
  if (draft_targets_.defined())
    l = scatter_to_target_vocab(l, draft_targets_, target_.config().vocab);
  return l;
}

bool DFlashDrafter::plain_logits() const {
  return config_.output_multiplier == 1.0 && !config_.final_logit_softcapping &&
         !draft_targets_.defined();
}

at::Tensor DFlashDrafter::float_logits(const at::Tensor& y) const {
  // Nothing after the product: rounded to the model's dtype and widened in one pass.
  if (plain_logits()) return dense_to_float(y, lm_head_);
  return logits(y).to(at::kFloat);
}

at::Tensor DFlashDrafter::add_mlp(const Layer& l, const at::Tensor& h, std::int64_t block) const {
  return h + around(l.mlp_conv, l.parts.mlp_input(h, config_.rms_eps, kDrafterLayerTraits.norm),
                    block, [&](const at::Tensor& x) { return l.parts.mlp(x); });
}

at::Tensor block_visibility(std::int64_t s, std::int64_t b, bool causal,
                            std::optional<std::int64_t> window, const at::Device& device) {
  const auto bool_opts = at::TensorOptions(at::kBool).device(device);
  if (!window) {
    const at::Tensor all = at::ones({b, b}, bool_opts);
    return causal ? all.tril() : all;
  }
  const auto long_opts = at::TensorOptions(at::kLong).device(device);
  const at::Tensor q = at::arange(s, s + b, long_opts).unsqueeze(1);
  const at::Tensor k = at::arange(0, s + b, long_opts).unsqueeze(0);
  at::Tensor visible = (q - k) < *window;
  visible = causal ? visible.logical_and(k <= q) : visible.logical_and((k - q) < *window);
  return visible;
}

DrafterState DFlashDrafter::new_state() const {
  DrafterState s;
  s.kv.resize(layers_.size());
  return s;
}

at::Tensor DFlashDrafter::features(const ForwardResult& r,
                                   const std::vector<std::int64_t>& rows) const {
  const at::Tensor index = at::tensor(rows, at::kLong).to(target_.device());
  std::vector<at::Tensor> parts;
  for (auto tap : config_.target_layer_ids) parts.push_back(r.taps.at(tap).index_select(0, index));
  return at::cat(parts, -1);
}

void DFlashDrafter::add_context(DrafterState& state, const at::Tensor& features) const {
  c10::InferenceMode inference(!autograd_);
  const std::int64_t n = features.size(0);
  const at::Tensor x = rms_norm(dense(features.to(target_.dtype()), fc_), hidden_norm_,
                                config_.rms_eps, kDrafterLayerTraits.norm);
  const RopeTables rope =
      rope_tables(at::arange(state.context, state.context + n, at::kLong).to(target_.device()),
                  inv_freq_, target_.dtype());
  for (std::size_t i = 0; i < layers_.size(); ++i)
    layers_[i].attention->append_kv(x, rope, state.kv[i]);
  state.context += n;
}

at::Tensor DFlashDrafter::draft(DrafterState& state, std::int64_t anchor) const {
  return propose(state, anchor).logits;
}

at::Tensor DFlashDrafter::block_output(DrafterState& state, std::int64_t anchor,
                                       std::int64_t rows) const {
  if (rows < 0 || rows == 1 || rows > config_.block_size)
    throw std::invalid_argument("a draft block has 2..block_size rows");
  const std::int64_t b = rows == 0 ? config_.block_size : rows, s = state.context;
  std::vector<std::int64_t> ids(b, config_.mask_token_id);
  ids[0] = anchor;
  at::Tensor h = embed_.index_select(0, at::tensor(ids, at::kLong).to(target_.device()));
  if (config_.input_embedding_scale != 1.0) h = h * config_.input_embedding_scale;
  const RopeTables rope =
      rope_tables(at::arange(s, s + b, at::kLong).to(target_.device()), inv_freq_, target_.dtype());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const at::Tensor visible = block_visibility(s, b, l.causal, l.window, target_.device());
    h = h + around(l.attention_conv,
                   l.parts.mixer_input(h, config_.rms_eps, kDrafterLayerTraits.norm), b,
                   [&](const at::Tensor& u) {
                     return l.attention->extend(u, rope, visible, state.kv[i]);
                   });
    state.kv[i].keep(s, {});  // drop the block's K/V: only context persists
    h = add_mlp(l, h, b);
  }
  return rms_norm(h.narrow(0, 1, b - 1), norm_, config_.rms_eps, kDrafterLayerTraits.norm);
}

BlockDraft DFlashDrafter::propose(DrafterState& state, std::int64_t anchor,
                                  std::int64_t rows) const {
  c10::InferenceMode inference(!autograd_);
  const at::Tensor y = block_output(state, anchor, rows);
  // The selector's walk adds its scores to the logits in the model's dtype; argmax alone sees the
  // same values in float32.
  const at::Tensor l = selector_ ? logits(y) : float_logits(y);
  BlockDraft out{l.to(at::kFloat), {}};
  if (selector_) {
    out.tokens = selector_->walk(y, l, anchor);
  } else {
    out.tokens = argmax_rows(l);
  }
  return out;
}

std::vector<std::int64_t> DFlashDrafter::propose_tokens(DrafterState& state, std::int64_t anchor,
                                                        std::int64_t rows) const {
  c10::InferenceMode inference(!autograd_);
  if (selector_ || !plain_logits()) return propose(state, anchor, rows).tokens;
  return dense_argmax(block_output(state, anchor, rows), lm_head_);
}

namespace {

// Training-mode visibility [N·B, S + N·B] of one layer: query row (j, q) is block j's position
// a_j + q; it sees context keys c < a_j (+1 under kThroughAnchor) and its own block's keys, causal
// inside the block in a causal layer; a window w keeps context keys fewer than w positions behind
// the query, and `block_window` the block's (and, not causal, fewer than it ahead): with both the
// layer's window, block_visibility per anchor.
at::Tensor training_visibility(const std::vector<std::int64_t>& anchors, std::int64_t s,
                               std::int64_t b, std::int64_t extra_context, bool causal,
                               std::optional<std::int64_t> window,
                               std::optional<std::int64_t> block_window) {
  const auto n = static_cast<std::int64_t>(anchors.size());
  const at::Tensor row = at::arange(n * b, at::kLong);
  const at::Tensor row_block = at::floor_divide(row, b);
  const at::Tensor block = row_block.unsqueeze(1), q = (row % b).unsqueeze(1);
  const at::Tensor anchor = at::tensor(anchors, at::kLong).index_select(0, row_block).unsqueeze(1);
  const at::Tensor c = at::arange(s, at::kLong).unsqueeze(0);
  at::Tensor context = c < anchor + extra_context;
  const at::Tensor key = at::arange(n * b, at::kLong).unsqueeze(0);
  const at::Tensor k = key % b;
  at::Tensor own = at::floor_divide(key, b) == block;
  if (causal) own = own.logical_and(k <= q);
  if (window) context = context.logical_and((anchor + q - c) < *window);
  if (block_window) {
    own = own.logical_and((q - k) < *block_window);
    if (!causal) own = own.logical_and((k - q) < *block_window);
  }
  return at::cat({context, own}, 1);
}

}  // namespace

at::Tensor DFlashDrafter::training_logits(const at::Tensor& features,
                                          const std::vector<std::int64_t>& input_ids,
                                          const std::vector<std::int64_t>& anchors,
                                          ContextVisibility context,
                                          const SlidingLayersMask& hypothesis) const {
  c10::InferenceMode inference(!autograd_);
  const auto s = static_cast<std::int64_t>(input_ids.size());
  const auto n = static_cast<std::int64_t>(anchors.size());
  const std::int64_t b = config_.block_size;
  if (features.size(0) != s) throw std::invalid_argument("features must have one row per input id");
  std::vector<std::int64_t> ids, positions;
  for (auto a : anchors) {
    if (a < 0 || a >= s) throw std::invalid_argument("anchor outside the sequence");
    for (std::int64_t k = 0; k < b; ++k) {
      ids.push_back(k == 0 ? input_ids[a] : config_.mask_token_id);
      positions.push_back(a + k);
    }
  }
  const auto device = target_.device();
  const std::int64_t extra_context = context == ContextVisibility::kThroughAnchor ? 1 : 0;
  // One visibility per (causal, context window, block window) the layers use.
  std::map<std::tuple<bool, std::int64_t, std::int64_t>, at::Tensor> visibility;
  auto visible_in = [&](std::size_t i) -> const at::Tensor& {
    const Layer& l = layers_[i];
    std::optional<std::int64_t> window = l.window, block_window = l.window;
    bool causal = l.causal;
    if (std::find(hypothesis.layers.begin(), hypothesis.layers.end(),
                  static_cast<std::int64_t>(i)) != hypothesis.layers.end()) {
      block_window = std::nullopt;
      if (hypothesis.mask != SlidingMask::kContextWindowOnly) window = std::nullopt;
      if (hypothesis.mask == SlidingMask::kFullLayer) causal = false;
    }
    at::Tensor& v = visibility[{causal, window.value_or(0), block_window.value_or(0)}];
    if (!v.defined())
      v = training_visibility(anchors, s, b, extra_context, causal, window, block_window)
              .to(device);
    return v;
  };
  const at::Tensor ctx = rms_norm(dense(features.to(target_.dtype()), fc_), hidden_norm_,
                                  config_.rms_eps, kDrafterLayerTraits.norm);
  const RopeTables ctx_rope =
      rope_tables(at::arange(0, s, at::kLong).to(device), inv_freq_, target_.dtype());
  const RopeTables block_rope =
      rope_tables(at::tensor(positions, at::kLong).to(device), inv_freq_, target_.dtype());
  at::Tensor h = embed_.index_select(0, at::tensor(ids, at::kLong).to(device));
  if (config_.input_embedding_scale != 1.0) h = h * config_.input_embedding_scale;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    KVCache cache;
    l.attention->append_kv(ctx, ctx_rope, cache);
    const at::Tensor& visible = visible_in(i);
    h = h + around(l.attention_conv,
                   l.parts.mixer_input(h, config_.rms_eps, kDrafterLayerTraits.norm), b,
                   [&](const at::Tensor& u) {
                     return l.attention->extend(u, block_rope, visible, cache);
                   });
    h = add_mlp(l, h, b);
  }
  const at::Tensor y = rms_norm(h, norm_, config_.rms_eps, kDrafterLayerTraits.norm);
  return float_logits(y).view({n, b, -1});
}

}  // namespace draftgate::model
