#include "draftgate/arch/drafter.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "draftgate/arch/drafter_keys.h"
#include "draftgate/arch/speculators_config.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/rope_config.h"

namespace draftgate::model {

namespace {

const nlohmann::json* dflash_block(const io::ModelConfig& c) {
  auto it = c.root().find("dflash_config");
  if (it == c.root().end() || it->is_null()) return nullptr;
  if (!it->is_object()) throw Error(c.file(), "dflash_config must be an object");
  return &*it;
}

// An integer that may sit at the top level and/or under dflash_config; both must agree.
std::optional<std::int64_t> either_place(const io::ModelConfig& c, const char* key) {
  std::optional<std::int64_t> top, nested;
  auto read = [&](const nlohmann::json& obj,
                  const std::string& where) -> std::optional<std::int64_t> {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer())
      throw Error(c.file(), where + key + " must be an integer, got " + io::json_excerpt(*it));
    return it->get<std::int64_t>();
  };
  top = read(c.root(), "");
  if (const auto* d = dflash_block(c)) nested = read(*d, "dflash_config.");
  if (top && nested && *top != *nested)
    throw Error(c.file(), std::string(key) + " = " + std::to_string(*top) +
                              " at the top level but " + std::to_string(*nested) +
                              " under dflash_config");
  return nested ? nested : top;
}

// A number under dflash_config and/or at the top level (z-lab's `_draft_value` reads
// dflash_config first); both must agree.
std::optional<double> either_place_number(const io::ModelConfig& c, const char* key) {
  std::optional<double> top, nested;
  auto read = [&](const nlohmann::json& obj, const std::string& where) -> std::optional<double> {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number())
      throw Error(c.file(), where + key + " must be a number, got " + io::json_excerpt(*it));
    return it->get<double>();
  };
  top = read(c.root(), "");
  if (const auto* d = dflash_block(c)) nested = read(*d, "dflash_config.");
  if (top && nested && *top != *nested)
    throw Error(c.file(), std::string(key) + " = " + format_number(*top, 6) +
                              " at the top level but " + format_number(*nested, 6) +
                              " under dflash_config");
  return nested ? nested : top;
}

std::optional<bool> optional_bool(const io::ModelConfig& c, const nlohmann::json& obj,
                                  const std::string& where, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    throw Error(c.file(),
                where + key + " must be true, false or null, got " + io::json_excerpt(*it));
  return it->get<bool>();
}

// A scalar the drafter multiplies or divides its float tensors by. It is applied in float32 (bf16
// has the same range), so it must be a normal float32: 1e308 would become inf and 1e-320 zero,
// turning every logit into NaN or 0 without a word.
double tensor_scalar(const io::ModelConfig& c, const char* key, double value) {
  c.positive_finite(key, value);
  if (value < std::numeric_limits<float>::min() || value > std::numeric_limits<float>::max())
    throw Error(c.file(), std::string(key) + " = " + format_number(value, 6) +
                              " is outside float32's normal range [1.2e-38, 3.4e38], in which "
                              "the drafter computes with it");
  return value;
}

bool names_dflash2(const io::ModelConfig& c) {
  auto it = c.root().find("architectures");
  if (it == c.root().end() || !it->is_array()) return false;
  for (const auto& a : *it)
    if (a.is_string() && a.get<std::string>() == "DFlash2DraftModel") return true;
  return false;
}

// The DFlash2 modules: the selector at the top level, the convolutions inside each layer.
bool is_dflash2_weight(const std::string& name) {
  if (name.rfind("candidate_selector.", 0) == 0) return true;
  if (name.rfind("layers.", 0) != 0) return false;
  const auto module = name.find('.', 7);
  if (module == std::string::npos) return false;
  for (const char* conv : {"attention_conv.", "mlp_conv."})
    if (name.compare(module + 1, std::strlen(conv), conv) == 0) return true;
  return false;
}

// The speculators DFlashDraftModel's tensors besides layers.N.* (models/dflash/core.py @c05b95b3
// :78-118 and speculators/model.py :37-80): the drafter body, its own embedding and head, the
// training-time teacher head and norm, and the vocabulary maps.
bool is_speculators_weight(const std::string& name) {
  for (const char* known :
       {"fc.weight", "hidden_norm.weight", "norm.weight", "embed_tokens.weight", "lm_head.weight",
        "verifier_lm_head.weight", "verifier_norm.weight", "d2t", "t2d"})
    if (name == known) return true;
  return false;
}

// The reference layout's tensors besides layers.N.* and DFlash2's (z-lab dflash/model.py
// DFlashDraftModel, SpecForge's export): the body, an embedding and head of its own where it has
// them, and a reduced vocabulary's maps.
bool is_dflash_weight(const std::string& name) {
  for (const char* known : {"fc.weight", "hidden_norm.weight", "norm.weight", "embed_tokens.weight",
                            "lm_head.weight", "d2t", "t2d"})
    if (name == known) return true;
  return false;
}

// A drafter layer's tensors, after "layers.N.": a Qwen3 decoder layer's (the modules the reference
// and vLLM's DFlashQwen3 layers hold), and DFlash2's two convolutions. Anything else there — an
// attention bias, an MTP or EAGLE-3 leftover (eh_proj, enorm, hidden_norm) — is a weight an
// engine would load or refuse unseen.
bool is_layer_weight(const std::string& suffix, bool dflash2) {
  for (const char* known :
       {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
        "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
        "input_layernorm.weight", "post_attention_layernorm.weight"})
    if (suffix == known) return true;
  if (dflash2)
    for (const char* known :
         {"attention_conv.base_kernel", "attention_conv.kernel_projection.weight",
          "mlp_conv.base_kernel", "mlp_conv.kernel_projection.weight"})
      if (suffix == known) return true;
  return false;
}

constexpr const char* kDflash2Keys[] = {"conv_kernel_size", "conv_group_size", "selector_rank",
                                        "selector_top_k"};

std::optional<Dflash2Config> read_dflash2(const io::ModelConfig& c, std::int64_t hidden) {
  const bool declared = names_dflash2(c);
  std::optional<std::int64_t> values[4];
  for (int i = 0; i < 4; ++i) {
    values[i] = either_place(c, kDflash2Keys[i]);
    if (values[i] && !declared)
      throw Error(c.file(),
                  std::string("dflash_config.") + kDflash2Keys[i] +
                      " is a DFlash2 key but architectures does not name DFlash2DraftModel",
                  "add \"DFlash2DraftModel\" to architectures or drop the DFlash2 keys");
    if (!values[i] && declared)
      throw Error(c.file(),
                  std::string("DFlash2DraftModel needs dflash_config.") + kDflash2Keys[i]);
    if (values[i] && *values[i] <= 0)
      throw Error(c.file(), std::string("dflash_config.") + kDflash2Keys[i] +
                                " must be positive, got " + std::to_string(*values[i]));
  }
  if (!declared) return std::nullopt;
  const Dflash2Config d{*values[0], *values[1], *values[2], *values[3]};
  if (hidden % d.conv_group_size != 0)
    throw Error(c.file(), "dflash_config.conv_group_size " + std::to_string(d.conv_group_size) +
                              " does not divide hidden_size " + std::to_string(hidden));
  return d;
}

}  // namespace

const char* causality_reading_name(CausalityReading reading) {
  switch (reading) {
    case CausalityReading::kZLab:
      return "zlab";
    case CausalityReading::kVllm:
      return "vllm";
  }
  return "unknown";
}

CausalityReading parse_causality_reading(const std::string& value, const std::string& source) {
  if (value == "zlab") return CausalityReading::kZLab;
  if (value == "vllm") return CausalityReading::kVllm;
  throw Error(source, "unknown causality reading \"" + value + "\" (expected zlab or vllm)");
}

std::vector<bool> layer_causality(const std::vector<std::string>& layer_types,
                                  std::optional<bool> is_causal, std::optional<bool> dflash_causal,
                                  CausalityReading reading) {
  std::optional<bool> every_layer = is_causal;
  if (!every_layer && reading == CausalityReading::kVllm) every_layer = dflash_causal;
  std::vector<bool> causal;
  for (const auto& type : layer_types)
    causal.push_back(every_layer ? *every_layer : type == "sliding_attention");
  return causal;
}

std::vector<bool> CausalityKeys::layers(CausalityReading reading) const {
  return layer_causality(layer_types, is_causal, dflash_causal, reading);
}

std::vector<std::optional<std::int64_t>> CausalityKeys::windows(CausalityReading reading) const {
  const bool any_sliding =
      std::find(layer_types.begin(), layer_types.end(), "sliding_attention") != layer_types.end();
  const auto window =
      reading == CausalityReading::kVllm && swa_window_size ? swa_window_size : sliding_window;
  std::vector<std::optional<std::int64_t>> out;
  for (const auto& type : layer_types) {
    const bool sliding = reading == CausalityReading::kVllm && !any_sliding
                             ? use_swa.value_or(false)
                             : type == "sliding_attention";
    out.push_back(sliding ? std::optional<std::int64_t>(window.value_or(0)) : std::nullopt);
  }
  return out;
}

bool CausalityKeys::readings_disagree() const {
  return layers(CausalityReading::kZLab) != layers(CausalityReading::kVllm) ||
         windows(CausalityReading::kZLab) != windows(CausalityReading::kVllm);
}

std::string CausalityKeys::describe(CausalityReading reading) const {
  const auto causal = layers(reading);
  const auto window = windows(reading);
  std::string s;
  for (std::size_t i = 0; i < causal.size(); ++i)
    s += (i ? ", " : "") + std::to_string(i) + " " +
         (window[i] ? "sliding(" + std::to_string(*window[i]) + ")" : std::string("full")) +
         (causal[i] ? " causal" : " non-causal");
  return s;
}

nlohmann::json causality_json(const DrafterConfig& d) {
  nlohmann::json causal = nlohmann::json::array();
  for (bool b : d.layer_causal) causal.push_back(b);
  return {{"causality", causality_reading_name(d.causality_reading)}, {"drafter_causal", causal}};
}

std::string describe_causality(const DrafterConfig& d) {
  std::string s = d.causality.describe(d.causality_reading);
  const auto& k = d.causality;
  if (k.is_causal)
    s += std::string(" (is_causal = ") + (*k.is_causal ? "true" : "false") + ")";
  else if (k.dflash_causal && d.causality_reading == CausalityReading::kVllm)
    s += " (dflash_config.causal, vLLM reading)";
  else
    s += " (is_causal absent: sliding layers causal, full layers not)";
  return s;
}

std::optional<std::string> causality_note(const DrafterConfig& d, const std::string& file) {
  if (!d.causality.readings_disagree()) return std::nullopt;
  const bool zlab = d.causality_reading == CausalityReading::kZLab;
  return file + ": z-lab and SGLang run " + d.causality.describe(CausalityReading::kZLab) +
         "; vLLM (dflash_config.causal / use_swa / swa_window_size) runs " +
         d.causality.describe(CausalityReading::kVllm) + "; " +
         (zlab ? "using z-lab's reading (--causality vllm applies vLLM's)"
               : "using vLLM's reading (--causality zlab applies z-lab's)");
}

CausalityKeys read_causality_keys(const io::ModelConfig& c) {
  CausalityKeys k;
  if (auto lt = c.layer_types())
    k.layer_types = *lt;
  else
    k.layer_types.assign(c.num_hidden_layers(), "full_attention");
  k.is_causal = optional_bool(c, c.root(), "", "is_causal");
  k.sliding_window = c.find_int("sliding_window");
  if (const auto* blk = dflash_block(c)) {
    k.dflash_causal = optional_bool(c, *blk, "dflash_config.", "causal");
    k.use_swa = optional_bool(c, *blk, "dflash_config.", "use_swa");
    if (auto it = blk->find("swa_window_size"); it != blk->end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() <= 0)
        throw Error(c.file(), "dflash_config.swa_window_size must be a positive integer, got " +
                                  io::json_excerpt(*it));
      k.swa_window_size = it->get<std::int64_t>();
    }
  }
  return k;
}

namespace {

// A z-lab-layout config (a z-lab config.json, or the one vLLM builds from a speculators config),
// its keys already checked against the key table.
DrafterConfig read_zlab_layout(const io::ModelConfig& c, CausalityReading reading) {
  DrafterConfig d;
  d.hidden = c.require_int("hidden_size");
  d.intermediate = c.require_int("intermediate_size");
  d.num_layers = c.num_hidden_layers();
  d.num_heads = c.require_int("num_attention_heads");
  d.num_kv_heads = c.find_int("num_key_value_heads").value_or(d.num_heads);
  d.head_dim = c.require_int("head_dim");
  d.rms_eps = c.rms_norm_eps();
  const std::optional<double> theta = io::agreed_rope_number(c, "rope_theta");
  if (!theta)
    throw Error(c.file(), "missing rope_theta (top level or rope_parameters.rope_theta)",
                "engines default it differently (vLLM 1e6, transformers' Qwen3Config 1e4)");
  d.rope_theta = c.positive_finite("rope_theta", *theta);
  if (const std::string type = io::rope_type(c); type != "default")
    throw Error(c.file(),
                "drafter rope type \"" + type + "\" is not supported (only default RoPE)");
  for (auto [key, v] : {std::pair{"hidden_size", d.hidden}, {"intermediate_size", d.intermediate}})
    if (v <= 0)
      throw Error(c.file(), std::string(key) + " must be positive, got " + std::to_string(v));
  if (d.num_heads <= 0 || d.num_kv_heads <= 0 || d.num_heads % d.num_kv_heads != 0 ||
      d.head_dim <= 0)
    throw Error(c.file(), "attention shape " + std::to_string(d.num_heads) + " heads / " +
                              std::to_string(d.num_kv_heads) + " kv heads / head_dim " +
                              std::to_string(d.head_dim) + " is not valid");
  const auto block = either_place(c, "block_size");
  if (!block) throw Error(c.file(), "missing block_size (top level or dflash_config)");
  if (*block < 2 || *block > 256)
    throw Error(c.file(), "block_size " + std::to_string(*block) + " is out of range");
  d.block_size = *block;
  const auto mask = either_place(c, "mask_token_id");
  if (!mask) throw Error(c.file(), "missing mask_token_id (dflash_config or top level)");
  d.mask_token_id = *mask;

  // Under dflash_config, else at the top level (z-lab's `_draft_value` order); given in both, the
  // two must agree, since engines read different places. Messages name the key as the
  // drafter_config check does, so a run that meets both says it once.
  const nlohmann::json* taps = nullptr;
  std::string taps_key = "target_layer_ids";
  const nlohmann::json* top =
      c.root().contains(taps_key) && !c.root()[taps_key].is_null() ? &c.root()[taps_key] : nullptr;
  if (const auto* blk = dflash_block(c);
      blk != nullptr && blk->contains(taps_key) && !(*blk)[taps_key].is_null()) {
    taps = &(*blk)[taps_key];
    if (top != nullptr && *top != *taps)
      throw Error(c.file(),
                  "target_layer_ids = " + io::json_excerpt(*top) + " at the top level but " +
                      io::json_excerpt(*taps) + " under dflash_config",
                  "keep one list of taps: engines read different places");
    taps_key = "dflash_config." + taps_key;
  } else {
    taps = top;
  }
  if (taps == nullptr)
    throw Error(c.file(), "missing dflash_config.target_layer_ids",
                "declare the taps the drafter was trained with; the default formula is not used");
  if (!taps->is_array() || taps->empty())
    throw Error(c.file(), taps_key + " must be a non-empty array of layer ids");
  for (const auto& t : *taps) {
    if (!t.is_number_integer())
      throw Error(c.file(), taps_key + " holds " + io::json_excerpt(t) + ", not a layer id");
    d.target_layer_ids.push_back(t.get<std::int64_t>());
  }
  d.num_target_layers = c.find_int("num_target_layers");
  d.vocab_size = c.find_int("vocab_size");
  if (auto lt = c.layer_types()) {
    if (static_cast<std::int64_t>(lt->size()) != d.num_layers)
      throw Error(c.file(), "layer_types has " + std::to_string(lt->size()) + " entries for " +
                                std::to_string(d.num_layers) + " layers");
    for (const auto& t : *lt)
      if (t != "full_attention" && t != "sliding_attention")
        throw Error(c.file(), "drafter layer type \"" + t + "\" is not supported");
    d.layer_types = *lt;
  } else {
    d.layer_types.assign(d.num_layers, "full_attention");
  }
  d.sliding_window = c.find_int("sliding_window");
  for (const auto& t : d.layer_types)
    if (t == "sliding_attention" && (!d.sliding_window || *d.sliding_window <= 0))
      throw Error(c.file(), "sliding_attention layers need a positive sliding_window");
  d.causality = read_causality_keys(c);
  d.causality.layer_types = d.layer_types;
  d.causality_reading = reading;
  d.layer_causal = d.causality.layers(reading);
  d.layer_window = d.causality.windows(reading);
  for (const auto& w : d.layer_window)
    if (w && *w <= 0)
      throw Error(c.file(),
                  "dflash_config.use_swa makes the layers sliding under vLLM's reading, "
                  "but neither dflash_config.swa_window_size nor sliding_window gives a "
                  "window");
  if (const auto scale = either_place_number(c, "input_embedding_scale"))
    d.input_embedding_scale = tensor_scalar(c, "input_embedding_scale", *scale);
  if (const auto m = either_place_number(c, "output_multiplier"))
    d.output_multiplier = tensor_scalar(c, "output_multiplier", *m);
  if (const auto cap = either_place_number(c, "final_logit_softcapping"); cap && *cap != 0) {
    if (*cap < 0)
      throw Error(c.file(), "final_logit_softcapping = " + format_number(*cap, 6) +
                                " is negative (0 or null turns soft-capping off)");
    d.final_logit_softcapping = tensor_scalar(c, "final_logit_softcapping", *cap);
  }
  d.dflash2 = read_dflash2(c, d.hidden);
  d.taps_as_written = d.target_layer_ids;
  return d;
}

}  // namespace

DrafterConfig DrafterConfig::from(const io::ModelConfig& c, CausalityReading reading) {
  refuse_unread(c, nullptr);
  if (detect_drafter_format(c) == DrafterFormat::kZLab) return read_zlab_layout(c, reading);
  const io::ModelConfig z = speculators_as_zlab(c);
  DrafterConfig d = read_zlab_layout(z, reading);
  d.format = DrafterFormat::kSpeculators;
  // As the file lists them (the taps are in layer order, as vLLM gathers them).
  d.taps_as_written.clear();
  for (const auto& id : c.root().at("aux_hidden_state_layer_ids"))
    d.taps_as_written.push_back(id.get<std::int64_t>());
  if (auto v = z.root().find("draft_vocab_size"); v != z.root().end()) {
    if (!v->is_number_integer() || v->get<std::int64_t>() < 1)
      throw Error(c.file(),
                  "draft_vocab_size must be a positive integer, got " + io::json_excerpt(*v));
    d.draft_vocab_size = v->get<std::int64_t>();
  }
  return d;
}

void DrafterConfig::check_tensors(const std::vector<std::string>& names,
                                  const std::string& file) const {
  std::set<std::int64_t> present;
  for (const auto& name : names) {
    if (format == DrafterFormat::kSpeculators && name.rfind("layers.", 0) != 0 &&
        !is_speculators_weight(name))
      throw Error(file, "tensor \"" + name + "\" is not a speculators DFlash weight",
                  "DFlashDraftModel (speculators models/dflash/core.py) holds layers.N.*, fc, "
                  "hidden_norm, norm, embed_tokens, lm_head, verifier_lm_head, verifier_norm, "
                  "d2t and t2d; an engine would load or reject it unseen");
    if (format != DrafterFormat::kSpeculators && name.rfind("layers.", 0) != 0 &&
        !is_dflash_weight(name) && !is_dflash2_weight(name))
      throw Error(file, "tensor \"" + name + "\" is not a DFlash drafter weight",
                  "DFlashDraftModel (z-lab dflash/model.py, SpecForge's export) holds layers.N.*, "
                  "fc, hidden_norm, norm and at most its own embed_tokens and lm_head; a variant "
                  "head's weights (SpecForge's Domino prefix_gru / embed_proj, a Markov or "
                  "confidence head) would be left unused by an engine loading it as DFlash, and "
                  "draftgate does not run such heads");
    if (!dflash2 && is_dflash2_weight(name))
      throw Error(file,
                  "tensor \"" + name +
                      "\" is a DFlash2 weight but config.json does not declare DFlash2DraftModel",
                  "a v1 drafter would ignore it: declare the architecture and its dflash_config "
                  "keys, or drop the DFlash2 weights");
    if (name.rfind("layers.", 0) != 0) continue;
    const std::string index = name.substr(7, name.find('.', 7) - 7);
    const bool digits = !index.empty() && index.size() <= 9 &&
                        index.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || (index.size() > 1 && index[0] == '0'))
      throw Error(file,
                  "tensor \"" + name + "\" has the non-canonical layer index \"" + index + "\"",
                  "layer indices are written without leading zeros");
    const std::size_t dot = 7 + index.size();
    if (dot >= name.size() || !is_layer_weight(name.substr(dot + 1), dflash2.has_value()))
      throw Error(file, "tensor \"" + name + "\" is not a drafter layer's weight",
                  "a DFlash layer holds self_attn.{q,k,v,o}_proj, q_norm, k_norm, "
                  "mlp.{gate,up,down}_proj and its two norms (no biases); an attention bias, an "
                  "MTP or EAGLE-3 head's weights would be loaded or refused by an engine unseen, "
                  "and draftgate does not run them");
    present.insert(std::stoll(index));
  }
  const auto n = static_cast<std::int64_t>(present.size());
  if (n != num_layers || (n > 0 && *present.rbegin() != n - 1))
    throw Error(file,
                "num_hidden_layers is " + std::to_string(num_layers) + " but the tensors hold " +
                    std::to_string(n) + " layers" +
                    (n > 0 ? " (indices " + std::to_string(*present.begin()) + ".." +
                                 std::to_string(*present.rbegin()) + ")"
                           : std::string()),
                "the config must declare every trained layer");
}

namespace {
using Shape = std::vector<std::int64_t>;

// A drafter layer's tensors (after "layers.N.") and their shapes, as loading reads them: Qwen3
// attention with q/k norms and a SwiGLU MLP; DFlash2 adds a dynamic convolution around each.
std::vector<std::pair<std::string, Shape>> layer_tensors(const DrafterConfig& d) {
  const std::int64_t q = d.num_heads * d.head_dim, kv = d.num_kv_heads * d.head_dim, h = d.hidden;
  std::vector<std::pair<std::string, Shape>> out = {
      {"self_attn.q_proj.weight", {q, h}},           {"self_attn.k_proj.weight", {kv, h}},
      {"self_attn.v_proj.weight", {kv, h}},          {"self_attn.o_proj.weight", {h, q}},
      {"self_attn.q_norm.weight", {d.head_dim}},     {"self_attn.k_norm.weight", {d.head_dim}},
      {"mlp.gate_proj.weight", {d.intermediate, h}}, {"mlp.up_proj.weight", {d.intermediate, h}},
      {"mlp.down_proj.weight", {h, d.intermediate}}, {"input_layernorm.weight", {h}},
      {"post_attention_layernorm.weight", {h}}};
  if (!d.dflash2 || d.dflash2->conv_group_size <= 0) return out;
  const std::int64_t k = d.dflash2->conv_kernel_size, groups = h / d.dflash2->conv_group_size;
  for (const char* conv : {"attention_conv.", "mlp_conv."}) {
    out.push_back({std::string(conv) + "base_kernel", {2, k, h}});
    out.push_back({std::string(conv) + "kernel_projection.weight", {2 * k * groups, h}});
  }
  return out;
}

const char* const kCodebooks[] = {"candidate_selector.predecessor_codebook",
                                  "candidate_selector.successor_codebook"};
}  // namespace

std::optional<std::vector<std::int64_t>> DrafterConfig::expected_shape(
    const std::string& name, std::int64_t target_vocab) const {
  const std::int64_t draft_vocab = draft_vocab_size.value_or(target_vocab);
  if (name == "hidden_norm.weight" || name == "norm.weight") return Shape{hidden};
  if (name == "embed_tokens.weight") return Shape{target_vocab, hidden};
  if (name == "lm_head.weight") return Shape{draft_vocab, hidden};
  if (name == "d2t") return Shape{draft_vocab};
  if (name == "t2d") return Shape{target_vocab};
  if (dflash2) {
    for (const char* codebook : kCodebooks)
      if (name == codebook || name == std::string(codebook) + ".weight")
        return Shape{target_vocab, dflash2->selector_rank};
    if (name == "candidate_selector.hidden_projection.weight")
      return Shape{dflash2->selector_rank, hidden};
  }
  if (name.rfind("layers.", 0) != 0) return std::nullopt;
  const std::size_t dot = name.find('.', 7);
  if (dot == std::string::npos) return std::nullopt;
  const std::string suffix = name.substr(dot + 1);
  for (const auto& [known, shape] : layer_tensors(*this))
    if (suffix == known) return shape;
  return std::nullopt;
}

std::vector<std::vector<std::string>> DrafterConfig::required_tensors() const {
  std::vector<std::vector<std::string>> out = {
      {"fc.weight"}, {"hidden_norm.weight"}, {"norm.weight"}};
  for (std::int64_t i = 0; i < num_layers; ++i)
    for (const auto& [suffix, shape] : layer_tensors(*this))
      out.push_back({"layers." + std::to_string(i) + "." + suffix});
  if (!dflash2) return out;
  for (const char* codebook : kCodebooks)
    out.push_back({codebook, std::string(codebook) + ".weight"});
  out.push_back({"candidate_selector.hidden_projection.weight"});
  return out;
}

void require_draft_vocab_tensors(const std::vector<std::string>& tensor_names,
                                 std::int64_t draft_vocab, std::int64_t target_vocab,
                                 const std::string& dir) {
  if (draft_vocab == target_vocab) return;
  auto holds = [&](const char* name) {
    return std::find(tensor_names.begin(), tensor_names.end(), name) != tensor_names.end();
  };
  if (!holds("lm_head.weight"))
    throw Error(dir,
                "draft_vocab_size " + std::to_string(draft_vocab) + " is below the target's " +
                    std::to_string(target_vocab) + " but the checkpoint has no lm_head.weight",
                "a reduced vocabulary is scored by the drafter's own lm_head [draft_vocab_size, "
                "hidden_size]; the target's head has another row count");
  if (!holds("d2t"))
    throw Error(dir,
                "draft_vocab_size " + std::to_string(draft_vocab) + " is below the target's " +
                    std::to_string(target_vocab) + " but the checkpoint has no \"d2t\" tensor",
                "a reduced vocabulary needs its draft-to-target map (speculators saves d2t)");
}

std::string stored_name(const std::vector<std::string>& tensor_names,
                        const std::vector<std::string>& names, const std::string& dir) {
  std::string found;
  for (const auto& n : names) {
    if (std::find(tensor_names.begin(), tensor_names.end(), n) == tensor_names.end()) continue;
    if (!found.empty())
      throw Error(dir, "both \"" + found + "\" and \"" + n + "\" are present",
                  "keep one name for the tensor");
    found = n;
  }
  return found;
}

}  // namespace draftgate::model
