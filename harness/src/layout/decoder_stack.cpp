#include "draftgate/layout/decoder_stack.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>

#include "draftgate/error.h"

namespace draftgate::layout {
namespace {

constexpr std::array<const char*, 6> kContainerWords = {"layers", "h",     "blocks",
                                                        "block",  "layer", "decoder_layer"};
// Module-path words that mark a stack as something other than the text decoder.
constexpr std::array<const char*, 10> kForeignWords = {
    "visual",  "vision",    "image",  "audio",     "speech",
    "whisper", "projector", "merger", "resampler", "perceiver"};
// Suffixes a decoder layer owns (at least one of them).
constexpr std::array<const char*, 14> kDecoderSuffixes = {"self_attn.",
                                                          "linear_attn.",
                                                          "attention.",
                                                          "attn.",
                                                          "cross_attn.",
                                                          "mlp.",
                                                          "feed_forward.",
                                                          "block_sparse_moe.",
                                                          "mixer.",
                                                          "input_layernorm",
                                                          "ln_1",
                                                          "attention_norm",
                                                          "post_attention_layernorm",
                                                          "ffn."};
// Tensor suffixes after the module path: plain, quantised (AWQ/GPTQ/compressed-tensors/MLX) and
// MXFP4 forms.
constexpr std::array<const char*, 13> kParamSuffixes = {"weight",
                                                        "bias",
                                                        "weight_packed",
                                                        "weight_scale",
                                                        "weight_zero_point",
                                                        "weight_shape",
                                                        "weight_scale_inv",
                                                        "qweight",
                                                        "qzeros",
                                                        "scales",
                                                        "biases",
                                                        "g_idx",
                                                        "weight_global_scale"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

struct Group {
  std::set<std::int64_t> indices;
  std::map<std::int64_t, std::vector<std::string>> suffixes;  // per layer index
};

// Why a stack is foreign to the text decoder, or "" if it is not.
std::string foreign_reason(const std::string& prefix) {
  const auto parts = split(prefix, '.');
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (starts_with(p, "mtp")) return "MTP (multi-token prediction) head";
    for (const char* word : kForeignWords)
      if (p.find(word) != std::string::npos)
        return std::string("non-text tower (module \"") + p + "\" matches \"" + word + "\")";
    if (p == "vit" || starts_with(p, "vit_") || p == "img" || starts_with(p, "img_"))
      return "non-text tower (module \"" + p + "\")";
    const bool chatglm_decoder = p == "encoder" && i > 0 && parts[i - 1] == "transformer";
    if (p == "encoder" && !chatglm_decoder)
      return "encoder stack (module \"encoder\"), not a decoder";
  }
  return "";
}

bool has_decoder_suffix(const Group& g) {
  for (const auto& [index, suffixes] : g.suffixes)
    for (const auto& s : suffixes)
      for (const char* d : kDecoderSuffixes)
        if (starts_with(s, d)) return true;
  return false;
}

std::string range_text(const StackCandidate& c) {
  return c.prefix + " [" + std::to_string(c.min_index) + ".." + std::to_string(c.max_index) + "] " +
         std::to_string(c.count) + " layers";
}

std::string list_candidates(const std::vector<StackCandidate>& cands) {
  if (cands.empty()) return "no indexed stack (<prefix>.layers.<i>.*) in the tensor names";
  std::string out;
  for (const auto& c : cands) {
    if (!out.empty()) out += "; ";
    out += range_text(c) + (c.reason.empty() ? "" : " - " + c.reason);
  }
  return out;
}

// The stored tensor of module `module` (e.g. "model.norm"): "<module>.weight" first, then quantised
// forms.
std::string find_module_tensor(const std::set<std::string>& names, const std::string& module) {
  for (const char* suffix : kParamSuffixes) {
    const std::string name = module.empty() ? suffix : module + "." + suffix;
    if (names.count(name)) return name;
  }
  return "";
}

std::string parent_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

enum Kind { kLinear = 1, kAttention = 2, kCross = 4 };

int layer_kinds(const std::vector<std::string>& suffixes) {
  int kinds = 0;
  for (const auto& s : suffixes) {
    if (starts_with(s, "linear_attn."))
      kinds |= kLinear;
    else if (starts_with(s, "cross_attn."))
      kinds |= kCross;
    else if (starts_with(s, "self_attn.") || starts_with(s, "attention.") ||
             starts_with(s, "attn."))
      kinds |= kAttention;
  }
  return kinds;
}

const char* kind_tensors(int kinds) {
  if (kinds & kLinear) return "linear_attn.*";
  if (kinds & kCross) return "cross_attn.*";
  return "self_attn.*";
}

// Does a config layer type agree with the tensors a layer owns? Layers owning none of the known
// attention tensors cannot contradict the config.
bool type_agrees(const std::string& type, int kinds) {
  if (kinds == 0) return true;
  if (type == "linear_attention") return kinds == kLinear;
  if (type == "cross_attention") return (kinds & kCross) != 0;
  if (type.size() > 9 && type.compare(type.size() - 9, 9, "attention") == 0)
    return (kinds & kAttention) != 0 && (kinds & kLinear) == 0;
  return true;  // other types (conv, mamba2 hybrids, ...) are not cross-checked
}

std::vector<std::string> decide_layer_types(const Group& g, std::int64_t n,
                                            const std::string& prefix,
                                            const io::ModelConfig& config,
                                            std::vector<std::string>* notes) {
  std::vector<std::string> types;
  std::string origin;
  if (auto lt = config.layer_types()) {
    if (static_cast<std::int64_t>(lt->size()) != n)
      throw Error(config.file(), config.where("layer_types") + " has " +
                                     std::to_string(lt->size()) +
                                     " entries but num_hidden_layers is " + std::to_string(n));
    types = *lt;
    origin = config.where("layer_types");
  } else if (auto interval = config.full_attention_interval()) {
    for (std::int64_t i = 0; i < n; ++i)
      types.push_back((i + 1) % *interval == 0 ? "full_attention" : "linear_attention");
    origin = config.where("full_attention_interval") + " = " + std::to_string(*interval);
  }
  if (!types.empty()) {
    for (std::int64_t i = 0; i < n; ++i) {
      const auto it = g.suffixes.find(i);
      const int kinds = it == g.suffixes.end() ? 0 : layer_kinds(it->second);
      if (!type_agrees(types[i], kinds))
        throw Error(config.file(),
                    origin + " makes layer " + std::to_string(i) + " " + types[i] + " but " +
                        prefix + "." + std::to_string(i) + " owns " + kind_tensors(kinds) +
                        " tensors",
                    "the config and the weights disagree; fix the config or the checkpoint");
    }
    return types;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const auto it = g.suffixes.find(i);
    const int kinds = it == g.suffixes.end() ? 0 : layer_kinds(it->second);
    if (kinds == kLinear)
      types.push_back("linear_attention");
    else if (kinds & kCross)
      types.push_back("cross_attention");
    else if (kinds == kAttention)
      types.push_back("full_attention");
    else
      throw Error(config.file(),
                  "no layer_types or full_attention_interval, and the tensors of " + prefix + "." +
                      std::to_string(i) + " do not tell its type",
                  "add layer_types to the config");
  }
  notes->push_back("layer types inferred from tensor names (config has no layer_types)");
  return types;
}

}  // namespace

std::string DecoderStack::layer_path(std::int64_t index) const {
  return prefix + "." + std::to_string(index);
}

bool split_stack_name(const std::string& name, StackName* out) {
  const auto parts = split(name, '.');
  for (std::size_t i = 1; i + 1 < parts.size(); ++i) {
    if (!all_digits(parts[i])) continue;
    const std::string& before = parts[i - 1];
    if (std::find_if(kContainerWords.begin(), kContainerWords.end(),
                     [&](const char* w) { return before == w; }) == kContainerWords.end())
      continue;
    std::string prefix, suffix;
    for (std::size_t k = 0; k < i; ++k) prefix = join(prefix, parts[k]);
    for (std::size_t k = i + 1; k < parts.size(); ++k) suffix = join(suffix, parts[k]);
    *out = {prefix, std::stoll(parts[i]), suffix};
    return true;
  }
  return false;
}

DecoderStack resolve_decoder_stack(const std::vector<std::string>& names,
                                   const io::ModelConfig& config, const std::string& source) {
  const std::int64_t n = config.num_hidden_layers();
  const std::int64_t nextn = config.num_nextn_layers();
  const std::set<std::string> name_set(names.begin(), names.end());

  std::map<std::string, Group> groups;
  for (const auto& name : names) {
    StackName s;
    if (!split_stack_name(name, &s)) continue;
    if (name != s.prefix + "." + std::to_string(s.index) + (s.suffix.empty() ? "" : "." + s.suffix))
      throw Error(source,
                  "tensor \"" + name + "\" writes layer " + std::to_string(s.index) +
                      " with a non-canonical index (leading zeros)",
                  "transformers cannot load it; rename the tensors");
    Group& g = groups[s.prefix];
    g.indices.insert(s.index);
    g.suffixes[s.index].push_back(s.suffix);
  }

  std::vector<StackCandidate> all, survivors;
  std::vector<const Group*> survivor_groups;
  for (const auto& [prefix, g] : groups) {
    StackCandidate c{prefix, static_cast<std::int64_t>(g.indices.size()), *g.indices.begin(),
                     *g.indices.rbegin(), ""};
    const bool contiguous = c.min_index == 0 && c.max_index + 1 == c.count;
    c.reason = foreign_reason(prefix);
    if (c.reason.empty() &&
        !(contiguous && (c.count == n || (nextn > 0 && c.count == n + nextn)))) {
      c.reason = contiguous ? "count " + std::to_string(c.count) + " != num_hidden_layers " +
                                  std::to_string(n) +
                                  (nextn > 0 ? " (+" + std::to_string(nextn) + " MTP)" : "")
                            : "indices are not contiguous from 0";
    }
    if (c.reason.empty() && !has_decoder_suffix(g))
      c.reason = "no decoder-layer tensors (self_attn/linear_attn/mlp/input_layernorm)";
    all.push_back(c);
    if (c.reason.empty()) {
      survivors.push_back(c);
      survivor_groups.push_back(&g);
    }
  }

  const std::string want = "num_hidden_layers = " + std::to_string(n) +
                           (config.text_path().empty() ? "" : " (" + config.text_path() + ")");
  if (survivors.empty())
    throw Error(source,
                "no decoder stack matches " + want + "; candidates: " + list_candidates(all),
                "check num_hidden_layers in " + config.file() + " against the weights");

  auto root_of = [](const std::string& prefix) { return parent_of(prefix); };
  auto embed_of = [&](const std::string& root) {
    for (const char* e : {"embed_tokens", "wte", "tok_embeddings", "word_embeddings"}) {
      std::string t = find_module_tensor(name_set, join(root, e));
      if (!t.empty()) return t;
    }
    return std::string();
  };

  std::size_t chosen = 0;
  if (survivors.size() > 1) {
    std::vector<std::size_t> with_embed;
    for (std::size_t i = 0; i < survivors.size(); ++i)
      if (!embed_of(root_of(survivors[i].prefix)).empty()) with_embed.push_back(i);
    if (with_embed.size() != 1)
      throw Error(source,
                  "ambiguous decoder stack: " + std::to_string(survivors.size()) +
                      " stacks match " + want + ": " + list_candidates(survivors),
                  "keep one text decoder in the checkpoint");
    chosen = with_embed.front();
  }

  const StackCandidate& pick = survivors[chosen];
  const Group& group = *survivor_groups[chosen];
  DecoderStack stack;
  stack.prefix = pick.prefix;
  stack.num_layers = n;
  for (const auto& c : all) {
    if (c.prefix == pick.prefix) continue;
    StackCandidate r = c;
    if (r.reason.empty()) r.reason = "also matches, but its root owns no embedding";
    stack.rejected.push_back(r);
  }
  for (std::int64_t i = n; i < pick.count; ++i) stack.inline_mtp_layers.push_back(i);
  if (!stack.inline_mtp_layers.empty())
    stack.notes.push_back("layers " + std::to_string(n) + ".." + std::to_string(pick.max_index) +
                          " are inline MTP layers (" + config.where("num_nextn_predict_layers") +
                          "), excluded from the decoder");

  const auto parts = split(pick.prefix, '.');
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (parts[i] == parts[i - 1]) {
      stack.notes.push_back("prefix repeats the wrapper \"" + parts[i] +
                            "\" (a known transformers 5.5.x save bug); tensors are read as stored");
      break;
    }

  const std::string root = root_of(pick.prefix);
  stack.embed_tokens = embed_of(root);
  if (stack.embed_tokens.empty())
    throw Error(source, "decoder stack " + pick.prefix + " has no token embedding at " +
                            join(root, "embed_tokens") +
                            " (or wte/tok_embeddings/word_embeddings)");
  for (const char* norm : {"norm", "ln_f", "final_layernorm", "final_norm"}) {
    stack.final_norm = find_module_tensor(name_set, join(root, norm));
    if (!stack.final_norm.empty()) break;
  }
  if (stack.final_norm.empty())
    throw Error(source, "decoder stack " + pick.prefix + " has no final norm at " +
                            join(root, "norm") + " (or ln_f/final_layernorm)");

  std::vector<std::string> head_modules = {"lm_head", "language_model.lm_head"};
  if (!parent_of(root).empty()) head_modules.push_back(join(parent_of(root), "lm_head"));
  head_modules.push_back("output");
  for (const auto& m : head_modules) {
    stack.lm_head = find_module_tensor(name_set, m);
    if (!stack.lm_head.empty()) break;
  }
  stack.tied_embeddings = stack.lm_head.empty();
  if (stack.tied_embeddings) stack.lm_head = stack.embed_tokens;
  if (auto tie = config.tie_word_embeddings(); tie && *tie != stack.tied_embeddings)
    stack.notes.push_back(
        std::string("config says tie_word_embeddings = ") + (*tie ? "true" : "false") +
        " but the files " + (stack.tied_embeddings ? "have no" : "have an") +
        " lm_head: the files decide (" + (stack.tied_embeddings ? "tied" : "untied") + ")");

  stack.layer_types = decide_layer_types(group, n, pick.prefix, config, &stack.notes);
  return stack;
}

nlohmann::json to_json(const DecoderStack& stack) {
  nlohmann::json rejected = nlohmann::json::array();
  for (const auto& r : stack.rejected)
    rejected.push_back({{"prefix", r.prefix},
                        {"count", r.count},
                        {"min_index", r.min_index},
                        {"max_index", r.max_index},
                        {"reason", r.reason}});
  return {{"decoder_prefix", stack.prefix},
          {"num_layers", stack.num_layers},
          {"layer_types", stack.layer_types},
          {"embed_tokens", stack.embed_tokens},
          {"final_norm", stack.final_norm},
          {"lm_head", stack.lm_head},
          {"tied_embeddings", stack.tied_embeddings},
          {"inline_mtp_layers", stack.inline_mtp_layers},
          {"rejected_stacks", rejected},
          {"notes", stack.notes}};
}

std::optional<std::string> untied_lm_head_missing(const io::ModelConfig& config,
                                                  const DecoderStack& stack) {
  const auto tie = config.tie_word_embeddings();
  if (!tie || *tie || !stack.tied_embeddings) return std::nullopt;
  return "tie_word_embeddings is false but the checkpoint has no lm_head weight";
}

DecoderStack resolve_decoder_stack(const io::Checkpoint& checkpoint) {
  return resolve_decoder_stack(checkpoint.names(), checkpoint.config(), checkpoint.dir().string());
}

}  // namespace draftgate::layout
