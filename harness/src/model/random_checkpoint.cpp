#include "draftgate/model/random_checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/float8.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/fp8_weights.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::model {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void create_output_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string(), "cannot create the output directory: " + ec.message());
}

// Generates the named tensors of a random checkpoint — or, when sizing, only counts their elements,
// so a spec too large for this machine is refused before anything is allocated; or, with a
// repeated block, describes each tensor as a window of its distribution's block for writing.
class Maker {
 public:
  enum class Mode { kGenerate, kSize, kRepeat };
  Maker(at::ScalarType dtype, std::uint64_t seed, Mode mode = Mode::kGenerate,
        std::int64_t block = 0)
      : dtype_(dtype),
        gen_(at::make_generator<at::CPUGeneratorImpl>(seed)),
        mode_(mode),
        block_(block) {}

  // Linear weights for which `quantize` is true are written block-FP8 by `scheme`: the weight at
  // the stored dtype (the "original"), quantized, beside its weight_scale_inv.
  void quantize_fp8(io::Fp8Scheme scheme, std::function<bool(const std::string&)> quantize) {
    fp8_ = std::move(scheme);
    quantize_ = std::move(quantize);
  }

  // A linear weight [out, in] with std 1/sqrt(in) so activations stay O(1) at any width.
  void linear(const std::string& name, std::int64_t out, std::int64_t in) {
    const double sd = 1.0 / std::sqrt(static_cast<double>(in));
    if (fp8_ && mode_ == Mode::kRepeat && quantize_(name)) return repeated_fp8(name, {out, in}, sd);
    if (!fp8_ || mode_ != Mode::kGenerate || !quantize_(name))
      return normal(name, {out, in}, 0.0, sd);
    const Fp8Blocks q = quantize_fp8_blocks(at::normal(0.0, sd, {out, in}, gen_).to(dtype_), *fp8_);
    elements_ += static_cast<double>(q.codes.numel());
    raw(name, io::DType::F8_E4M3, q.codes);
    raw(name + "_scale_inv", io::DType::F32, q.scale_inv);
  }
  // A family's routed experts stored fused, as Qwen3.5 / 3.6 MoE releases hold them:
  // `<p>gate_up_proj` [E, 2I, H] (each expert's gate rows, then its up rows) and `<p>down_proj`
  // [E, H, I]. Drawn in the per-expert order of linear(), so a fused checkpoint holds the values of
  // the per-expert one of the same seed; FP8 blocks are per expert.
  void fused_experts(const std::string& p, std::int64_t experts, std::int64_t hidden,
                     std::int64_t inter) {
    if (mode_ != Mode::kGenerate) {
      for (const auto& [name, shape, sd] :
           {std::tuple{p + "gate_up_proj", std::vector<std::int64_t>{experts, 2 * inter, hidden},
                       1.0 / std::sqrt(static_cast<double>(hidden))},
            std::tuple{p + "down_proj", std::vector<std::int64_t>{experts, hidden, inter},
                       1.0 / std::sqrt(static_cast<double>(inter))}}) {
        if (fp8_ && mode_ == Mode::kRepeat && quantize_(name))
          repeated_fp8(name, shape, sd);
        else
          normal(name, shape, 0.0, sd);
      }
      return;
    }
    std::vector<at::Tensor> gate_up, down;
    for (std::int64_t e = 0; e < experts; ++e) {
      const double in_sd = 1.0 / std::sqrt(static_cast<double>(hidden));
      const at::Tensor gate = at::normal(0.0, in_sd, {inter, hidden}, gen_);
      const at::Tensor up = at::normal(0.0, in_sd, {inter, hidden}, gen_);
      gate_up.push_back(at::cat({gate, up}).to(dtype_));
      down.push_back(
          at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(inter)), {hidden, inter}, gen_)
              .to(dtype_));
    }
    stacked(p + "gate_up_proj", gate_up);
    stacked(p + "down_proj", down);
  }
  void normal(const std::string& name, std::vector<std::int64_t> shape, double mean, double std) {
    double n = 1;
    for (std::int64_t d : shape) n *= static_cast<double>(d);
    switch (mode_) {
      case Mode::kSize:
        elements_ += n;
        return;
      case Mode::kGenerate:
        add(name, at::normal(mean, std, shape, gen_));
        return;
      case Mode::kRepeat:
        elements_ += n;
        repeated(name, io::safetensors_dtype(dtype_), c10::elementSize(dtype_), shape,
                 static_cast<std::uint64_t>(n), block_for(mean, std));
        return;
    }
  }
  void add(const std::string& name, const at::Tensor& t) {
    elements_ += static_cast<double>(t.numel());
    if (mode_ == Mode::kSize) return;
    raw(name, io::safetensors_dtype(dtype_), t.to(dtype_));
  }
  const std::vector<io::TensorWriter>& writers() const { return writers_; }
  double elements() const { return elements_; }

  // RMSNorm weight: plain w near 1 (Qwen3) or (1+w) with w near 0 (Qwen3.5).
  void norm(const std::string& name, std::int64_t dim, bool one_plus_w) {
    normal(name, {dim}, one_plus_w ? 0.0 : 1.0, 0.1);
  }

 private:
  // `t`'s bytes, stored as `dtype`.
  void raw(const std::string& name, io::DType dtype, const at::Tensor& t) {
    const at::Tensor kept = t.contiguous();
    writers_.push_back({name, dtype, kept.sizes().vec(), kept.nbytes(), [kept](std::ostream& out) {
                          out.write(static_cast<const char*>(kept.data_ptr()),
                                    static_cast<std::streamsize>(kept.nbytes()));
                        }});
  }

  // Matrices at the stored dtype as one [count, out, in] tensor: FP8 blocks per matrix when the
  // tensor is quantized.
  void stacked(const std::string& name, const std::vector<at::Tensor>& matrices) {
    if (!fp8_ || !quantize_(name)) return add(name, at::stack(matrices));
    std::vector<at::Tensor> codes, scales;
    for (const at::Tensor& w : matrices) {
      Fp8Blocks q = quantize_fp8_blocks(w, *fp8_);
      codes.push_back(q.codes);
      scales.push_back(q.scale_inv);
    }
    const at::Tensor all = at::stack(codes);
    elements_ += static_cast<double>(all.numel());
    raw(name, io::DType::F8_E4M3, all);
    raw(name + "_scale_inv", io::DType::F32, at::stack(scales));
  }

  // A block-FP8 weight [..., out, in] for checkpoints larger than memory: its codes the cyclic
  // sequence of one block of N(0, sd) values at the stored dtype, quantized with the one scale
  // 448 / max|block| (what transformers' recipe gives every block of that sequence up to the
  // blocks' own maxima), and every block's scale_inv its inverse.
  void repeated_fp8(const std::string& name, const std::vector<std::int64_t>& shape, double sd) {
    auto& codes = fp8_blocks_[sd];
    if (!codes.first) {
      const at::Tensor b = block_for(0.0, sd)->narrow(0, 0, block_).to(at::kFloat);
      const float max_abs = b.abs().max().item<float>();
      const float scale = max_abs > 0 ? io::kE4m3Max / max_abs : 1.0f;
      at::Tensor c = at::empty({block_}, at::kByte);
      const float* x = b.data_ptr<float>();
      auto* out = c.data_ptr<std::uint8_t>();
      for (std::int64_t i = 0; i < block_; ++i) out[i] = io::float_to_e4m3fn(x[i] * scale);
      codes = {std::make_shared<const at::Tensor>(at::cat({c, c})), 1.0f / scale};
    }
    double n = 1;
    for (std::int64_t d : shape) n *= static_cast<double>(d);
    elements_ += n;
    repeated(name, io::DType::F8_E4M3, 1, shape, static_cast<std::uint64_t>(n), codes.first);
    std::vector<std::int64_t> grid(shape.begin(), shape.end() - 2);
    grid.push_back((shape[shape.size() - 2] + fp8_->block_out - 1) / fp8_->block_out);
    grid.push_back((shape.back() + fp8_->block_in - 1) / fp8_->block_in);
    raw(name + "_scale_inv", io::DType::F32, at::full(grid, codes.second, at::kFloat));
  }

  // The block of one distribution at the stored dtype, twice over so that any window of up to one
  // block is contiguous.
  std::shared_ptr<const at::Tensor> block_for(double mean, double std) {
    auto& slot = blocks_[{mean, std}];
    if (!slot) {
      const at::Tensor b = at::normal(mean, std, {block_}, gen_).to(dtype_);
      slot = std::make_shared<const at::Tensor>(at::cat({b, b}));
    }
    return slot;
  }
  void repeated(const std::string& name, io::DType dtype, std::size_t item,
                const std::vector<std::int64_t>& shape, std::uint64_t n,
                std::shared_ptr<const at::Tensor> block) {
    const auto period = static_cast<std::uint64_t>(block_);
    const std::uint64_t start = std::hash<std::string>{}(name) % period;
    writers_.push_back(
        {name, dtype, shape, n * item, [block, start, n, period, item](std::ostream& out) {
           const char* base = static_cast<const char*>(block->data_ptr());
           for (std::uint64_t done = 0; done < n;) {
             const std::uint64_t count = std::min(n - done, period);
             out.write(base + ((start + done) % period) * item,
                       static_cast<std::streamsize>(count * item));
             done += count;
           }
         }});
  }

  at::ScalarType dtype_;
  at::Generator gen_;
  Mode mode_;
  std::int64_t block_;
  double elements_ = 0;
  std::vector<io::TensorWriter> writers_;
  std::map<std::pair<double, double>, std::shared_ptr<const at::Tensor>> blocks_;
  // By standard deviation: the FP8 codes of that distribution's block (twice over) and its
  // scale_inv.
  std::map<double, std::pair<std::shared_ptr<const at::Tensor>, float>> fp8_blocks_;
  std::optional<io::Fp8Scheme> fp8_;
  std::function<bool(const std::string&)> quantize_;
};

// Generation holds every tensor in memory once at float32 and once at the stored dtype.
void require_generation_fits(const fs::path& dir, const Maker& sizer, at::ScalarType dtype) {
  const double bytes = sizer.elements() * (4.0 + static_cast<double>(c10::elementSize(dtype)));
  const double available = static_cast<double>(available_memory_bytes());
  if (available > 0 && bytes > available)
    throw Error(dir.string(),
                "a random checkpoint of " + format_number(sizer.elements(), 4) +
                    " parameters needs " + format_number(bytes / (1ull << 30), 3) +
                    " GiB of memory to generate; " + format_number(available / (1ull << 30), 3) +
                    " GiB are available",
                "choose smaller shapes");
}

std::vector<std::string> layer_types(const RandomTargetSpec& s) {
  std::vector<std::string> t;
  for (std::int64_t i = 0; i < s.layers; ++i)
    t.push_back(!traits_of(s.family).linear_attention || (i + 1) % s.full_attention_interval == 0
                    ? "full_attention"
                    : "linear_attention");
  return t;
}

// rope_parameters as the Qwen3.5 / 3.6 releases (dense and MoE) write them: text positions make the
// interleaved MRoPE 1-D.
json qwen3_5_rope(const RandomTargetSpec& s) {
  return {{"rope_type", "default"},
          {"rope_theta", 10000000.0},
          {"partial_rotary_factor", s.partial_rotary_factor},
          {"mrope_section", {11, 11, 10}},
          {"mrope_interleaved", true}};
}

// Each family's own config keys, as its released configs write them: its model_type, its causal-LM
// class and where it keeps RoPE. Every case returns its whole set, so a family never inherits
// another's keys.
json family_keys(const RandomTargetSpec& s) {
  switch (s.family) {
    case Family::kQwen3:
      return {{"model_type", "qwen3"},
              {"architectures", {"Qwen3ForCausalLM"}},
              {"rope_theta", 1000000.0},
              {"rope_scaling", nullptr},
              {"attention_bias", false}};
    case Family::kLlama:  // as Llama 2 / TinyLlama / SmolLM configs write them
      return {{"model_type", "llama"},   {"architectures", {"LlamaForCausalLM"}},
              {"rope_theta", 10000.0},   {"rope_scaling", nullptr},
              {"attention_bias", false}, {"mlp_bias", false}};
    case Family::kQwen3_5:
      return {{"model_type", "qwen3_5_text"},
              {"architectures", {"Qwen3_5ForCausalLM"}},
              {"mtp_num_hidden_layers", s.layout == TargetLayout::kVlm ? 1 : 0},
              {"rope_parameters", qwen3_5_rope(s)}};
    case Family::kQwen3_5Moe:  // as Qwen3.5-35B-A3B's text_config writes them
      return {{"model_type", "qwen3_5_moe_text"},
              {"architectures", {"Qwen3_5MoeForCausalLM"}},
              {"mtp_num_hidden_layers", s.layout == TargetLayout::kVlm ? 1 : 0},
              {"output_router_logits", false},
              {"router_aux_loss_coef", 0.001},
              {"rope_parameters", qwen3_5_rope(s)}};
    case Family::kQwen3Moe:  // as Qwen3-30B-A3B's config writes them
      return {{"model_type", "qwen3_moe"},     {"architectures", {"Qwen3MoeForCausalLM"}},
              {"rope_theta", 1000000.0},       {"rope_scaling", nullptr},
              {"attention_bias", false},       {"use_sliding_window", false},
              {"output_router_logits", false}, {"router_aux_loss_coef", 0.001}};
  }
  throw std::logic_error("family without config keys");
}

// The keys the traits imply, whatever the family.
json trait_keys(const RandomTargetSpec& s) {
  const FamilyTraits traits = traits_of(s.family);
  json c = json::object();
  if (traits.attn_output_gate) c["attn_output_gate"] = true;
  if (traits.partial_rope) c["partial_rotary_factor"] = s.partial_rotary_factor;
  if (traits.linear_attention)
    c.update({{"full_attention_interval", s.full_attention_interval},
              {"linear_conv_kernel_dim", 4},
              {"linear_num_key_heads", s.linear_k_heads},
              {"linear_num_value_heads", s.linear_v_heads},
              {"linear_key_head_dim", s.linear_k_dim},
              {"linear_value_head_dim", s.linear_v_dim}});
  if (traits.mlp != MlpKind::kMoe) return c;
  c.update({{"num_experts", s.num_experts},
            {"num_experts_per_tok", s.experts_per_token},
            {"moe_intermediate_size", s.moe_intermediate}});
  if (traits.shared_expert) c["shared_expert_intermediate_size"] = s.shared_expert_intermediate;
  const ConfigDefaults& defaults = entry_of(s.family).defaults;
  if (!defaults.moe_always_renormalises) c["norm_topk_prob"] = s.norm_topk_prob;
  if (defaults.moe_every_layer) return c;
  std::vector<std::int64_t> mlp_only;  // the spec's dense layers that the model has
  for (std::int64_t l : s.mlp_only_layers)
    if (l < s.layers) mlp_only.push_back(l);
  c.update({{"decoder_sparse_step", s.decoder_sparse_step}, {"mlp_only_layers", mlp_only}});
  return c;
}

// Layer `layer` of the spec's target routes to experts.
bool sparse_layer(const RandomTargetSpec& s, std::int64_t layer) {
  if (traits_of(s.family).mlp != MlpKind::kMoe) return false;
  return entry_of(s.family).defaults.moe_every_layer ||
         moe_layer_is_sparse(layer, s.decoder_sparse_step, s.mlp_only_layers);
}

json text_config(const RandomTargetSpec& s) {
  json c = {{"hidden_size", s.hidden},        {"intermediate_size", s.intermediate},
            {"vocab_size", s.vocab},          {"num_hidden_layers", s.layers},
            {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads},
            {"head_dim", s.head_dim},         {"rms_norm_eps", 1e-6},
            {"tie_word_embeddings", s.tied},  {"layer_types", layer_types(s)},
            {"hidden_act", "silu"},           {"max_position_embeddings", 4096}};
  c.update(trait_keys(s));
  c.update(family_keys(s));
  // The config classes without a dense MLP width (every layer routes) write none.
  if (entry_of(s.family).defaults.moe_every_layer) c.erase("intermediate_size");
  return c;
}

// The VLM wrapper's model type and class, as the family's releases write them.
std::pair<const char*, const char*> vlm_wrapper(Family family) {
  switch (family) {
    case Family::kQwen3_5:
      return {"qwen3_5", "Qwen3_5ForConditionalGeneration"};
    case Family::kQwen3_5Moe:
      return {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration"};
    case Family::kQwen3:
    case Family::kLlama:
    case Family::kQwen3Moe:
      break;
  }
  throw std::logic_error("family without a VLM layout");
}

// The quantization_config of a random FP8 target, as fine-grained FP8 releases write it.
json fp8_config(const io::Fp8Scheme& scheme) {
  return {{"quant_method", "fp8"},
          {"fmt", "e4m3"},
          {"activation_scheme", "dynamic"},
          {"weight_block_size", {scheme.block_out, scheme.block_in}},
          {"modules_to_not_convert", scheme.not_converted}};
}

// The VLM wrapper (TargetLayout::kVlm) around the text config, as Qwen3.5/3.6's releases write it.
json full_config(const RandomTargetSpec& s) {
  json text = text_config(s);
  if (s.fp8 && s.layout != TargetLayout::kVlm) text["quantization_config"] = fp8_config(*s.fp8);
  if (s.layout != TargetLayout::kVlm) return text;
  text.erase("architectures");
  const auto [wrapper_type, wrapper_class] = vlm_wrapper(s.family);
  json wrapper = {{"architectures", {wrapper_class}},
                  {"model_type", wrapper_type},
                  {"tie_word_embeddings", s.tied},
                  {"text_config", text},
                  {"vision_config",
                   {{"model_type", "qwen3_5_vision"},
                    {"depth", 2},
                    {"hidden_size", 32},
                    {"out_hidden_size", s.hidden}}}};
  if (s.fp8) wrapper["quantization_config"] = fp8_config(*s.fp8);
  return wrapper;
}

// Shapes of one attention + MLP decoder layer, shared by targets and drafters.
struct LayerShape {
  std::int64_t hidden, intermediate, heads, kv_heads, head_dim;
};

// The attention tensors of a layer computing as `traits` say (doubled q_proj, q/k norms).
void attention_weights(Maker& m, const LayerShape& s, const std::string& p,
                       const FamilyTraits& traits) {
  const bool one_plus_w = traits.norm == NormStyle::kOnePlusW;
  m.linear(p + "q_proj.weight", s.heads * s.head_dim * (traits.attn_output_gate ? 2 : 1), s.hidden);
  m.linear(p + "k_proj.weight", s.kv_heads * s.head_dim, s.hidden);
  m.linear(p + "v_proj.weight", s.kv_heads * s.head_dim, s.hidden);
  m.linear(p + "o_proj.weight", s.hidden, s.heads * s.head_dim);
  if (!traits.qk_norm) return;
  m.norm(p + "q_norm.weight", s.head_dim, one_plus_w);
  m.norm(p + "k_norm.weight", s.head_dim, one_plus_w);
}

void norms(Maker& m, const LayerShape& s, const std::string& p, bool one_plus_w) {
  m.norm(p + "input_layernorm.weight", s.hidden, one_plus_w);
  m.norm(p + "post_attention_layernorm.weight", s.hidden, one_plus_w);
}

// `<p>{gate,up,down}_proj.weight` of one SwiGLU MLP.
void swiglu_weights(Maker& m, const std::string& p, std::int64_t hidden,
                    std::int64_t intermediate) {
  m.linear(p + "gate_proj.weight", intermediate, hidden);
  m.linear(p + "up_proj.weight", intermediate, hidden);
  m.linear(p + "down_proj.weight", hidden, intermediate);
}

void mlp_and_norms(Maker& m, const LayerShape& s, const std::string& p, bool one_plus_w) {
  norms(m, s, p, one_plus_w);
  swiglu_weights(m, p + "mlp.", s.hidden, s.intermediate);
}

// A sparse layer's MLP as Qwen3-MoE and Qwen3.5-MoE checkpoints name it: the router
// mlp.gate.weight, each expert's mlp.experts.{e}.{gate,up,down}_proj.weight (or the experts fused,
// mlp.experts.{gate_up,down}_proj) and, with a shared
// expert, mlp.shared_expert.{gate,up,down}_proj.weight and mlp.shared_expert_gate.weight.
void moe_weights(Maker& m, const RandomTargetSpec& s, const std::string& p) {
  m.linear(p + "gate.weight", s.num_experts, s.hidden);
  if (s.fused_experts)
    m.fused_experts(p + "experts.", s.num_experts, s.hidden, s.moe_intermediate);
  else
    for (std::int64_t e = 0; e < s.num_experts; ++e)
      swiglu_weights(m, p + "experts." + std::to_string(e) + ".", s.hidden, s.moe_intermediate);
  if (!traits_of(s.family).shared_expert) return;
  swiglu_weights(m, p + "shared_expert.", s.hidden, s.shared_expert_intermediate);
  m.linear(p + "shared_expert_gate.weight", 1, s.hidden);
}

void gdn_weights(Maker& m, const RandomTargetSpec& s, const std::string& p) {
  const std::int64_t key = s.linear_k_heads * s.linear_k_dim,
                     value = s.linear_v_heads * s.linear_v_dim;
  const std::int64_t conv = 2 * key + value;
  m.linear(p + "in_proj_qkv.weight", conv, s.hidden);
  m.linear(p + "in_proj_z.weight", value, s.hidden);
  m.linear(p + "in_proj_a.weight", s.linear_v_heads, s.hidden);
  m.linear(p + "in_proj_b.weight", s.linear_v_heads, s.hidden);
  m.normal(p + "conv1d.weight", {conv, 1, 4}, 0.0, 0.5);
  // A = exp(A_log) in [1, 16] as the reference initialises it; dt_bias near softplus⁻¹ of small
  // steps.
  m.add(p + "A_log", at::log(at::linspace(1.0, 16.0, s.linear_v_heads, at::kFloat)));
  m.normal(p + "dt_bias", {s.linear_v_heads}, -2.0, 0.5);
  m.normal(p + "norm.weight", {s.linear_v_dim}, 1.0, 0.1);
  m.linear(p + "out_proj.weight", s.hidden, value);
}

void target_weights(Maker& m, const RandomTargetSpec& s) {
  const FamilyTraits traits = traits_of(s.family);
  const bool one_plus_w = traits.norm == NormStyle::kOnePlusW;
  const LayerShape shape{s.hidden, s.intermediate, s.heads, s.kv_heads, s.head_dim};
  const std::string root = s.layout == TargetLayout::kFlat ? "model." : "model.language_model.";
  m.normal(root + "embed_tokens.weight", {s.vocab, s.hidden}, 0.0, 1.0);
  m.norm(root + "norm.weight", s.hidden, one_plus_w);
  if (!s.tied) m.linear("lm_head.weight", s.vocab, s.hidden);
  const auto types = layer_types(s);
  for (std::int64_t i = 0; i < s.layers; ++i) {
    const std::string p = root + "layers." + std::to_string(i) + ".";
    if (sparse_layer(s, i)) {
      norms(m, shape, p, one_plus_w);
      moe_weights(m, s, p + "mlp.");
    } else {
      mlp_and_norms(m, shape, p, one_plus_w);
    }
    if (types[i] == "linear_attention")
      gdn_weights(m, s, p + "linear_attn.");
    else
      attention_weights(m, shape, p + "self_attn.", traits);
  }
  if (s.layout == TargetLayout::kVlm) {
    for (int b = 0; b < 2; ++b) {
      const std::string p = "model.visual.blocks." + std::to_string(b) + ".";
      m.linear(p + "attn.qkv.weight", 96, 32);
      m.linear(p + "attn.proj.weight", 32, 32);
      m.norm(p + "norm1.weight", 32, false);
      m.norm(p + "norm2.weight", 32, false);
    }
    m.linear("model.visual.merger.linear_fc1.weight", s.hidden, 32);
    attention_weights(m, shape, "mtp.layers.0.self_attn.", traits);
    mlp_and_norms(m, shape, "mtp.layers.0.", true);
    m.linear("mtp.fc.weight", s.hidden, 2 * s.hidden);
    m.norm("mtp.norm.weight", s.hidden, true);
  }
}

void drafter_weights(Maker& m, const RandomDrafterSpec& s) {
  const LayerShape shape{s.target_hidden, s.intermediate, s.heads, s.kv_heads, s.head_dim};
  const auto taps = static_cast<std::int64_t>(s.target_layer_ids.size());
  m.linear("fc.weight", s.target_hidden, taps * s.target_hidden);
  m.norm("hidden_norm.weight", s.target_hidden, false);
  m.norm("norm.weight", s.target_hidden, false);
  for (std::int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    mlp_and_norms(m, shape, p, false);
    attention_weights(m, shape, p + "self_attn.", traits_of(Family::kQwen3));  // Qwen3 layers
    if (!s.dflash2) continue;
    const auto& c = *s.dflash2;
    for (const char* conv : {"attention_conv.", "mlp_conv."}) {
      m.normal(p + conv + "base_kernel", {2, c.conv_kernel_size, s.target_hidden}, 0.0, 0.5);
      m.linear(p + conv + "kernel_projection.weight",
               2 * c.conv_kernel_size * (s.target_hidden / c.conv_group_size), s.target_hidden);
    }
  }
  if (s.dflash2) {  // the codebooks under the reference's stored names (no `.weight`)
    m.normal("candidate_selector.predecessor_codebook", {s.vocab, s.dflash2->selector_rank}, 0.0,
             s.selector_codebook_std);
    m.normal("candidate_selector.successor_codebook", {s.vocab, s.dflash2->selector_rank}, 0.0,
             s.selector_codebook_std);
    m.linear("candidate_selector.hidden_projection.weight", s.dflash2->selector_rank,
             s.target_hidden);
  }
}

}  // namespace

void write_random_target(const fs::path& dir, const RandomTargetSpec& s) {
  // The layouts the family's released checkpoints use (the table's).
  const FamilyEntry& family = entry_of(s.family);
  if (std::find(family.layouts.begin(), family.layouts.end(), s.layout) == family.layouts.end()) {
    std::vector<std::string> names;
    for (TargetLayout l : family.layouts) names.push_back(layout_name(l));
    throw Error(dir.string(), std::string("random ") + family.name + " targets use the " +
                                  format_list(names) + " layout, not " + layout_name(s.layout));
  }
  const bool repeat = s.repeat_block > 0;  // written as generated: nothing held but the blocks
  if (!repeat) {
    Maker sizer(s.dtype, s.seed, Maker::Mode::kSize);
    target_weights(sizer, s);
    require_generation_fits(dir, sizer, s.dtype);
  }
  Maker m(s.dtype, s.seed, repeat ? Maker::Mode::kRepeat : Maker::Mode::kGenerate, s.repeat_block);
  if (s.fp8) {
    // The decoder layers' linear weights, less the modules the scheme keeps (lm_head, and the
    // embeddings, norms, convolutions and visual/MTP weights, which are not decoder linears).
    const std::string layers =
        s.layout == TargetLayout::kFlat ? "model.layers." : "model.language_model.layers.";
    m.quantize_fp8(*s.fp8, [scheme = *s.fp8, layers](const std::string& name) {
      // The module: `x` of `x.weight`, `...experts` of a fused `...experts.gate_up_proj`.
      return name.rfind(layers, 0) == 0 &&
             scheme.excluding(name.substr(0, name.rfind('.'))) == nullptr;
    });
  }
  target_weights(m, s);
  create_output_directory(dir);
  io::write_text_atomically(dir / "config.json", full_config(s).dump(2) + "\n");
  io::write_safetensors(dir / "model.safetensors", m.writers(), {{"format", "pt"}});
}

io::Fp8Scheme random_target_fp8_scheme(const RandomTargetSpec& s, std::int64_t block_out,
                                       std::int64_t block_in) {
  io::Fp8Scheme scheme;
  scheme.block_out = block_out;
  scheme.block_in = block_in;
  scheme.not_converted = {"lm_head", s.layout == TargetLayout::kFlat
                                         ? "model.embed_tokens"
                                         : "model.language_model.embed_tokens"};
  if (traits_of(s.family).mlp == MlpKind::kMoe) scheme.not_converted.push_back("mlp.gate");
  if (traits_of(s.family).shared_expert) scheme.not_converted.push_back("mlp.shared_expert_gate");
  return scheme;
}

void write_random_drafter(const fs::path& dir, const RandomDrafterSpec& s) {
  Maker sizer(s.dtype, s.seed, Maker::Mode::kSize);
  drafter_weights(sizer, s);
  require_generation_fits(dir, sizer, s.dtype);
  Maker m(s.dtype, s.seed);
  drafter_weights(m, s);
  json config = {{"architectures", {"DFlashDraftModel"}},
                 {"model_type", "qwen3"},
                 {"hidden_size", s.target_hidden},
                 {"intermediate_size", s.intermediate},
                 {"num_hidden_layers", s.layers},
                 {"num_attention_heads", s.heads},
                 {"num_key_value_heads", s.kv_heads},
                 {"head_dim", s.head_dim},
                 {"rms_norm_eps", 1e-6},
                 {"rope_theta", 1000000.0},
                 {"vocab_size", s.vocab},
                 {"block_size", s.block_size},
                 {"num_target_layers", s.target_layers},
                 {"tie_word_embeddings", false},
                 {"dflash_config",
                  {{"mask_token_id", s.mask_token_id}, {"target_layer_ids", s.target_layer_ids}}}};
  if (const auto& c = s.dflash2) {
    config["architectures"] = {"DFlash2DraftModel"};
    config["is_causal"] = false;
    config["layer_types"] = std::vector<std::string>(
        s.layers, s.dflash2_sliding_layers ? "sliding_attention" : "full_attention");
    if (s.dflash2_sliding_layers) {
      config["sliding_window"] = 2048;
      config["use_sliding_window"] = true;  // as z-lab's DFlash2 config has it
    }
    config["rope_parameters"] = {{"rope_theta", config["rope_theta"]}, {"rope_type", "default"}};
    config.erase("rope_theta");
    config["dflash_config"]["block_size"] = config["block_size"];
    config.erase("block_size");
    config["dflash_config"].update({{"conv_kernel_size", c->conv_kernel_size},
                                    {"conv_group_size", c->conv_group_size},
                                    {"selector_rank", c->selector_rank},
                                    {"selector_top_k", c->selector_top_k},
                                    {"output_multiplier", s.output_multiplier},
                                    {"final_logit_softcapping", s.final_logit_softcapping}});
  }
  create_output_directory(dir);
  io::write_text_atomically(dir / "config.json", config.dump(2) + "\n");
  io::write_safetensors(dir / "model.safetensors", m.writers(), {{"format", "pt"}});
}

}  // namespace draftgate::model
