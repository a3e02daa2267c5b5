#include "draftgate/model/target.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <stdexcept>

#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/model/attention.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

namespace {

// Validates parent links: each parent precedes its child, -1 is the committed tip.
void check_parents(const std::vector<std::int64_t>& parents, std::size_t n) {
  if (parents.empty()) return;
  if (parents.size() != n) throw std::invalid_argument("parents must have one entry per token");
  for (std::size_t i = 0; i < n; ++i)
    if (parents[i] < -1 || parents[i] >= static_cast<std::int64_t>(i))
      throw std::invalid_argument("parents[i] must be -1 or an earlier token");
}

}  // namespace

at::Device parse_device(const std::string& name, const std::string& source) {
  if (name == "cpu") return at::kCPU;
  const std::string index = name.rfind("cuda:", 0) == 0 ? name.substr(5) : "";
  const bool digits = !index.empty() && index.size() <= 3 &&
                      index.find_first_not_of("0123456789") == std::string::npos;
  if (name == "cuda" || digits) {
    if (!at::hasCUDA())
      throw Error(source,
                  "\"" + name + "\" requested but this libtorch was built without CUDA (or no GPU)",
                  "build against a CUDA libtorch (docs/gpu.md) or use cpu");
    const int gpus = at::detail::getCUDAHooks().getNumGPUs();
    if (digits && std::stoi(index) >= gpus)
      throw Error(source, "\"" + name + "\": this machine has " + std::to_string(gpus) + " GPU(s)");
    return at::Device(name);
  }
  throw Error(source, "unknown device \"" + name + "\" (expected cpu or cuda[:N])");
}

at::ScalarType parse_dtype_flag(const std::string& name) {
  if (name == "bf16") return at::kBFloat16;
  if (name == "f32") return at::kFloat;
  throw Error("--dtype", "unknown dtype \"" + name + "\" (expected bf16 or f32)");
}

GdnAlgorithm parse_gdn_flag(const std::string& name) {
  if (name == "chunked") return GdnAlgorithm::kChunked;
  if (name == "recurrent") return GdnAlgorithm::kRecurrent;
  throw Error("--gdn", "unknown algorithm \"" + name + "\" (expected chunked or recurrent)");
}

std::unique_ptr<TargetModel> TargetModel::load(const io::Checkpoint& checkpoint,
                                               const TargetOptions& options) {
  if (checkpoint.metadata_only())
    throw Error(checkpoint.dir().string(),
                "metadata-only checkpoint (index without shards) has no weights",
                "download the shards to run the model");
  return std::unique_ptr<TargetModel>(new TargetModel(checkpoint, options));
}

TargetModel::TargetModel(const io::Checkpoint& ckpt, const TargetOptions& options)
    : stack_(layout::resolve_decoder_stack(ckpt)),
      config_(TargetConfig::from(ckpt.config(), stack_)),
      dtype_(compute_dtype(ckpt, stack_, options)),
      device_(options.device),
      gdn_(options.gdn),
      autograd_(options.autograd),
      head_only_(options.head_only) {
  const bool f32 = dtype_ == at::kFloat;
  require_memory(
      ckpt,
      materialised_weight_bytes(ckpt, stack_, at::elementSize(dtype_), autograd_, !head_only_),
      std::string("loading the weights as ") + (f32 ? "f32" : "bf16"),
      f32 && !options.dtype_flag.empty()
          ? "choose the stored dtype with " + options.dtype_flag +
                " (weights are then mapped, not copied) or run on a larger machine"
          : "run on a larger machine");
  const WeightLoader w(ckpt, dtype_, device_, autograd_ ? &parameters_ : nullptr);
  const auto& c = config_;
  // Read as stored, never FP8 (mapped() refuses an F8 embedding or head), as the streamed path.
  w.mapped(stack_.embed_tokens, {c.vocab, c.hidden});
  if (!stack_.tied_embeddings) w.mapped(stack_.lm_head, {c.vocab, c.hidden});
  embed_ = w.get(stack_.embed_tokens, {c.vocab, c.hidden});
  final_norm_ = w.get(stack_.final_norm, {c.hidden});
  // lm_head as the streamed forward multiplies it: a float32 CPU forward over a bf16 checkpoint
  // keeps it bf16 as stored (get_linear: a view, no copy), as it does every linear weight; a tied
  // head is otherwise the embedding itself.
  const std::string& head = stack_.tied_embeddings ? stack_.embed_tokens : stack_.lm_head;
  const bool head_as_stored = w.keeps_linear_bf16() && ckpt.info(head) != nullptr &&
                              ckpt.info(head)->dtype == io::DType::BF16;
  lm_head_ =
      stack_.tied_embeddings && !head_as_stored ? embed_ : w.get_linear(head, {c.vocab, c.hidden});
  check_tie_flag(ckpt, stack_);
  inv_freq_ = rope_inv_freq(c.rotary_dim, c.rope_theta).to(device_);
  for (std::int64_t i = 0; i < (head_only_ ? 0 : c.num_layers); ++i)
    layers_.push_back(TargetLayer::load(c, w, stack_.layer_path(i) + ".", i));
  // After the loaders' own refusals, which name the tensor: what they let pass but probe reports
  // unsupported (tensors the engine would leave out) is refused too.
  require_target_engine_support(ckpt, stack_);
  // Every step reads the mapped weights again: mapped 2 MB at a time, not 4 KB (safetensors.h).
  if (device_.is_cpu() && !autograd_) ckpt.settle_in_huge_pages();
}

at::ScalarType compute_dtype(const io::Checkpoint& ckpt, const layout::DecoderStack& stack,
                             const TargetOptions& options) {
  if (options.dtype) return *options.dtype;
  const io::TensorInfo* info = ckpt.info(stack.embed_tokens);
  return info != nullptr && info->dtype == io::DType::BF16 ? at::kBFloat16 : at::kFloat;
}

// An untied config without an lm_head makes loaders initialise one randomly (transformers warns
// and trains on noise), and a tied config beside a different lm_head is two answers to one
// question.
void check_tie_flag(const io::Checkpoint& ckpt, const layout::DecoderStack& stack) {
  if (const auto problem = layout::untied_lm_head_missing(ckpt.config(), stack))
    throw Error(ckpt.config().file(), *problem,
                "loaders would initialise lm_head randomly; add it or set tie_word_embeddings");
  const auto tie = ckpt.config().tie_word_embeddings();
  if (!tie || *tie == stack.tied_embeddings) return;
  const at::Tensor lm_head = io::load_tensor(ckpt, stack.lm_head);
  const at::Tensor embed = io::load_tensor(ckpt, stack.embed_tokens);
  bool same = lm_head.sizes() == embed.sizes();
  constexpr std::int64_t kRows = 4096;  // a bounded slice at a time: these can be gigabytes
  for (std::int64_t r = 0; same && r < embed.size(0); r += kRows) {
    const std::int64_t n = std::min(kRows, embed.size(0) - r);
    same = at::equal(lm_head.narrow(0, r, n).to(at::kFloat), embed.narrow(0, r, n).to(at::kFloat));
  }
  if (!same)
    throw Error(ckpt.config().file(),
                "tie_word_embeddings is true but " + stack.lm_head +
                    " differs from the embeddings " + stack.embed_tokens,
                "say which one the model uses: set tie_word_embeddings false or drop lm_head");
}

void check_tokens_and_taps(const TargetConfig& config, const std::vector<std::int64_t>& tokens,
                           const std::vector<std::int64_t>& taps) {
  if (tokens.empty()) throw Error("tokens", "an empty token sequence: nothing to run");
  for (auto t : tokens)
    if (t < 0 || t >= config.vocab)
      throw Error("tokens", "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                                std::to_string(config.vocab) + ")");
  for (auto t : taps)
    if (t < 0 || t >= config.num_layers)
      throw Error("taps", "tap " + std::to_string(t) + " is not a decoder layer (0.." +
                              std::to_string(config.num_layers - 1) + ")");
}

TargetState TargetModel::new_state() const {
  TargetState s;
  s.kv.resize(layers_.size());
  s.linear.resize(layers_.size());
  const auto options = at::TensorOptions().dtype(dtype_).device(device_);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].linear) s.linear[i] = layers_[i].linear->new_state(options);
  return s;
}

ForwardResult TargetModel::extend(TargetState& state, const std::vector<std::int64_t>& tokens,
                                  const std::vector<std::int64_t>& parents,
                                  const std::vector<std::int64_t>& taps, bool want_logits) const {
  if (state.has_pending()) throw std::logic_error("extend() with pending tokens: commit() first");
  if (head_only_) throw std::logic_error("extend() on a head-only target");
  c10::InferenceMode inference(!autograd_);
  check_tokens_and_taps(config_, tokens, taps);
  check_parents(parents, tokens.size());

  const auto t_len = static_cast<std::int64_t>(tokens.size());
  require_fits(state.committed + t_len, t_len, "tokens");  // a tree's positions are fewer
  std::vector<std::int64_t> depth(t_len);
  at::Tensor visible;  // ancestor-or-self mask of a tree
  if (parents.empty()) {
    for (std::int64_t i = 0; i < t_len; ++i) depth[i] = i;
  } else {
    visible = at::zeros({t_len, t_len}, at::kBool);
    auto vis = visible.accessor<bool, 2>();
    for (std::int64_t i = 0; i < t_len; ++i) {
      depth[i] = parents[i] < 0 ? 0 : depth[parents[i]] + 1;
      for (std::int64_t a = i; a >= 0; a = parents[a]) vis[i][a] = true;
    }
    visible = visible.to(device_);
  }
  std::vector<std::int64_t> pos(t_len);
  for (std::int64_t i = 0; i < t_len; ++i) pos[i] = state.committed + depth[i];
  const RopeTables rope = rope_tables(at::tensor(pos, at::kLong).to(device_), inv_freq_, dtype_);

  ForwardResult result;
  HiddenStream h{embed_.index_select(0, at::tensor(tokens, at::kLong).to(device_)), {}};
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i].extend(h, config_, rope, visible, parents, gdn_, state.kv[i], state.linear[i]);
    if (std::find(taps.begin(), taps.end(), static_cast<std::int64_t>(i)) != taps.end()) {
      h = {h.summed(), {}};
      result.taps[static_cast<std::int64_t>(i)] = h.h.to(at::kFloat);
    }
  }
  if (want_logits) {
    // The last layer's add in one pass with the final norm (the hidden states are in dtype_).
    const at::Tensor normed =
        h.pending.defined()
            ? add_rms_norm(h.h, h.pending, final_norm_, config_.rms_eps, config_.traits.norm).second
            : final_norm(h.h);
    result.logits = dense_to_float(normed, lm_head_);
  }
  state.pending = parents.empty() ? std::vector<std::int64_t>(t_len) : parents;
  if (parents.empty())
    for (std::int64_t i = 0; i < t_len; ++i) state.pending[i] = i - 1;
  return result;
}

at::Tensor TargetModel::final_norm(const at::Tensor& hidden) const {
  return rms_norm(hidden.to(dtype_), final_norm_, config_.rms_eps, config_.traits.norm);
}

at::Tensor TargetModel::logits_from_hidden(const at::Tensor& hidden) const {
  return dense_to_float(final_norm(hidden), lm_head_);
}

void TargetModel::commit(TargetState& state, const std::vector<std::int64_t>& path) const {
  c10::InferenceMode inference(!autograd_);
  const auto n = static_cast<std::int64_t>(state.pending.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::int64_t expected_parent = i == 0 ? -1 : path[i - 1];
    if (path[i] < 0 || path[i] >= n || state.pending[path[i]] != expected_parent)
      throw std::invalid_argument("commit() path must be a root-to-node chain of pending tokens");
  }
  const bool whole_chain = static_cast<std::int64_t>(path.size()) == n &&
                           std::all_of(state.pending.begin(), state.pending.end(),
                                       [&, i = -1](auto p) mutable { return p == i++; });
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i].linear)
      layers_[i].linear->commit(state.linear[i], path, whole_chain);
    else
      state.kv[i].keep(state.committed, path);
  }
  state.committed += static_cast<std::int64_t>(path.size());
  state.pending.clear();
}

void TargetModel::commit_all(TargetState& state) const {
  std::vector<std::int64_t> path(state.pending.size());
  for (std::size_t i = 0; i < path.size(); ++i) path[i] = static_cast<std::int64_t>(i);
  commit(state, path);
}

void TargetModel::require_fits(std::int64_t positions, std::int64_t new_positions,
                               const std::string& source) const {
  require_sequence_fits(config_, positions, new_positions, source);
}

void require_sequence_fits(const TargetConfig& c, std::int64_t positions,
                           std::int64_t new_positions, const std::string& source) {
  if (c.max_positions > 0 && positions > c.max_positions)
    throw Error(source,
                "a sequence of " + std::to_string(positions) +
                    " positions exceeds the target's max_position_embeddings " +
                    std::to_string(c.max_positions),
                "shorten the prompt or max_new_tokens");
  // Attention scores in float32 (scores, mask fill, softmax, a copy) per query head for one chunk
  // of queries (attention.h), and the logits: what one extension allocates beyond the weights.
  const std::int64_t queries = std::min(
      new_positions, attention_query_chunk(c.num_heads, positions, attention_score_elements()));
  const double bytes = 16.0 * static_cast<double>(c.num_heads) * static_cast<double>(queries) *
                           static_cast<double>(positions) +
                       8.0 * static_cast<double>(new_positions) * static_cast<double>(c.vocab);
  // /proc/meminfo is read only for an extension big enough to matter (not once per decode step).
  if (bytes < 256.0 * (1 << 20)) return;
  const double available = static_cast<double>(available_memory_bytes());
  if (available > 0 && bytes > available)
    throw Error(source,
                "running " + std::to_string(new_positions) + " tokens over " +
                    std::to_string(positions) + " positions needs about " +
                    std::to_string(static_cast<std::int64_t>(bytes / (1 << 20))) +
                    " MiB of attention and logits memory, more than the " +
                    std::to_string(static_cast<std::int64_t>(available / (1 << 20))) +
                    " MiB available",
                "shorten the sequence");
}

ForwardResult TargetModel::forward(const std::vector<std::int64_t>& tokens,
                                   const std::vector<std::int64_t>& taps, bool want_logits) const {
  TargetState state = new_state();
  return extend(state, tokens, {}, taps, want_logits);
}

}  // namespace draftgate::model
