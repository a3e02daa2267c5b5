// drafter_config: the drafter's config.json read key by key against the target's — the mistakes
// the engines' issue trackers report that load cleanly and then collapse τ or run the wrong math:
// a mask id that is missing, special or outside the embedding; taps omitted, repeated or reaching
// the final layer; a layer count, width or vocabulary of another target; a RoPE θ from the wrong
// place; an ambiguous causality; fp16. Torch-free (config files only, also of metadata-only
// checkpoints). Each problem is one line naming the key and what to do; each rule has a parameter
// that relaxes it, except a tap that names no target layer, which no engine can feed.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "checks/check.h"
#include "checks/drafter_provenance.h"
#include "draftgate/arch/drafter.h"
#include "draftgate/arch/drafter_keys.h"
#include "draftgate/arch/speculators_config.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/config.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/rope_config.h"

namespace draftgate::checks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// `key` under dflash_config, else at the top level (z-lab's `_draft_value` order), with where it
// was found; null when absent in both.
std::pair<json, std::string> draft_value(const io::ModelConfig& c, const char* key) {
  auto block = c.root().find("dflash_config");
  if (block != c.root().end() && block->is_object() && block->contains(key) &&
      !(*block)[key].is_null())
    return {(*block)[key], std::string("dflash_config.") + key};
  if (c.root().contains(key) && !c.root()[key].is_null()) return {c.root()[key], key};
  return {nullptr, key};
}

// The special token ids (pad, EOS, BOS) a config declares, by where they were read.
void collect_special_ids(const json& obj, const std::string& where,
                         std::map<std::int64_t, std::string>& ids) {
  if (!obj.is_object()) return;
  for (const char* key : {"pad_token_id", "eos_token_id", "bos_token_id"}) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    const json values = it->is_array() ? *it : json::array({*it});
    for (const json& v : values)
      if (v.is_number_integer()) ids.emplace(v.get<std::int64_t>(), where + key);
  }
}

std::map<std::int64_t, std::string> special_ids(const io::ModelConfig& drafter,
                                                const std::optional<io::ModelConfig>& target,
                                                const std::optional<fs::path>& target_dir) {
  std::map<std::int64_t, std::string> ids;
  if (target) {
    const std::string file = fs::path(target->file()).filename().string();
    collect_special_ids(
        target->text(),
        "target " + file + ": " + target->text_path() + (target->text_path().empty() ? "" : "."),
        ids);
    collect_special_ids(target->root(), "target " + file + ": ", ids);
    const fs::path generation = *target_dir / "generation_config.json";
    std::error_code ec;
    if (fs::is_regular_file(generation, ec))
      collect_special_ids(io::read_json_file(generation), "target generation_config.json: ", ids);
  }
  collect_special_ids(drafter.root(), "drafter config.json: ", ids);
  return ids;
}

// torch_dtype / dtype of the config (root or text config) as `key = "value"`, the first given.
std::optional<std::string> declared_dtype(const io::ModelConfig& c, bool float16_only) {
  for (const json* scope : {&c.root(), &c.text()})
    for (const char* key : {"torch_dtype", "dtype"}) {
      auto it = scope->find(key);
      if (it == scope->end() || !it->is_string()) continue;
      if (float16_only && *it != "float16" && *it != "fp16" && *it != "half") continue;
      return std::string(key) + " = \"" + it->get<std::string>() + "\"";
    }
  return std::nullopt;
}

class DrafterConfigCheck : public Check {
 public:
  std::string name() const override { return "drafter_config"; }
  // Configs only.
  bool reads_weight_values(const Artifacts& /*a*/) const override { return false; }
  std::string summary() const override {
    return "the drafter's config.json keys are explicit and agree with the target's";
  }
  std::string needs() const override {
    return "drafter (config.json is enough); target for the rules that compare with it";
  }
  std::vector<Param> params() const override {
    return {
        bool_param("allow_missing_mask_token_id", false,
                   "accept a config without mask_token_id (engines fall back to pad)"),
        bool_param("allow_special_mask_token_id", false,
                   "accept a mask_token_id equal to a pad / EOS / BOS id"),
        bool_param("allow_mask_outside_embedding", false,
                   "accept a mask_token_id outside the target's embedding rows"),
        bool_param("allow_missing_target_layer_ids", false,
                   "accept a config without target_layer_ids (engines guess them)"),
        bool_param("allow_repeated_taps", false, "accept a layer listed twice in target_layer_ids"),
        bool_param("require_sorted_taps", true,
                   "require ascending target_layer_ids (z-lab concatenates in list order, vLLM in "
                   "layer order: false for a drafter only z-lab's code runs)"),
        bool_param("allow_final_layer", false, "accept a tap on the target's final layer"),
        bool_param("allow_missing_num_target_layers", false,
                   "accept a config without num_target_layers"),
        bool_param("allow_layer_count_mismatch", false,
                   "accept num_target_layers different from the target's layer count"),
        bool_param("allow_shape_mismatch", false,
                   "accept hidden_size / vocab_size different from the target's"),
        bool_param("allow_missing_rope_theta", false,
                   "accept a config without rope_theta (engines default it differently)"),
        bool_param("allow_ambiguous_rope_theta", false,
                   "accept a flat rope_theta that differs from rope_parameters.rope_theta"),
        number_param("rope_theta_max_ratio", 10.0, 1.0, 1e12,
                     "largest accepted ratio between the drafter's and the target's RoPE theta"),
        bool_param("allow_rope_type_mismatch", false,
                   "accept a RoPE type different from the target's"),
        bool_param("allow_ambiguous_causality", false,
                   "accept a config z-lab and vLLM run differently (dflash_config.causal, use_swa, "
                   "swa_window_size)"),
        bool_param("allow_float16", false, "accept torch_dtype / dtype float16")};
  }

  CheckResult run(const Artifacts& a, const json& p) const override {
    if (!a.drafter) return skip(name(), "needs a drafter (--drafter)");
    const io::ModelConfig file_config = io::ModelConfig::load(*a.drafter / "config.json");
    const bool speculators =
        model::detect_drafter_format(file_config) == model::DrafterFormat::kSpeculators;
    std::optional<io::ModelConfig> t;
    if (a.target) t = io::ModelConfig::load(*a.target / "config.json");
    auto allowed = [&](const char* param) { return p[param].get<bool>(); };
    CheckResult r;
    r.evidence["drafter_config"] = file_config.file();
    if (t) r.evidence["target_config"] = t->file();
    std::vector<std::string> problems, not_checked;
    if (!t) not_checked.emplace_back("every comparison with the target (no --target)");

    // Keys and files draftgate would not read: the evaluators refuse the drafter for them.
    json refused = json::array();
    auto unread = model::refused_keys(file_config);
    for (auto& f : model::refused_files(*a.drafter)) unread.push_back(std::move(f));
    for (const auto& k : unread) {
      refused.push_back(k.key);
      problems.push_back("refused " + k.line());
    }
    r.measured["refused_keys"] = refused;
    r.evidence["format"] = model::drafter_format_name(model::detect_drafter_format(file_config));
    if (speculators && !unread.empty()) {
      r.evidence["not_checked"] =
          json::array({"the rules below, on a speculators config with refused keys"});
      return conclude(std::move(r), problems, "");
    }
    // A speculators config is checked as vLLM reads it: its transformer_layer_config with the
    // DFlash fields (mask_token_id, taps = aux ids − 1) under dflash_config.
    const io::ModelConfig d = speculators ? model::speculators_as_zlab(file_config) : file_config;

    // The target's text decoder: its layer count and embedding rows.
    std::optional<std::int64_t> target_layers, target_vocab;
    if (t) {
      target_layers = t->num_hidden_layers();
      target_vocab = t->find_int("vocab_size");
      r.measured["target_layers"] = *target_layers;
    }

    // mask_token_id.
    const auto [mask, mask_key] = draft_value(d, "mask_token_id");
    if (mask.is_null()) {
      if (!allowed("allow_missing_mask_token_id"))
        problems.push_back(
            "dflash_config.mask_token_id is missing: engines then fall back to "
            "pad_token_id, which is often EOS; set it to the id the drafter was "
            "trained with (allow_missing_mask_token_id relaxes this)");
    } else if (!mask.is_number_integer()) {
      throw Error(d.file(), mask_key + " must be an integer, got " + io::json_excerpt(mask));
    } else {
      const auto id = mask.get<std::int64_t>();
      r.measured["mask_token_id"] = id;
      const auto specials = special_ids(d, t, a.target);
      if (auto hit = specials.find(id);
          hit != specials.end() && !allowed("allow_special_mask_token_id"))
        problems.push_back(mask_key + " " + std::to_string(id) + " equals " + hit->second +
                           ": the drafter's MASK slots would read as that token; use an id of its "
                           "own (allow_special_mask_token_id relaxes this)");
      if (target_vocab && (id < 0 || id >= *target_vocab) &&
          !allowed("allow_mask_outside_embedding"))
        problems.push_back(mask_key + " " + std::to_string(id) +
                           " is outside the target's embedding rows 0.." +
                           std::to_string(*target_vocab - 1) +
                           ": the MASK embedding is the target's row; use an id inside it "
                           "(allow_mask_outside_embedding relaxes this)");
    }

    // target_layer_ids.
    const auto [taps_json, taps_key] = draft_value(d, "target_layer_ids");
    std::vector<std::int64_t> taps;
    if (taps_json.is_null()) {
      if (!allowed("allow_missing_target_layer_ids"))
        problems.push_back(
            "dflash_config.target_layer_ids is missing: engines then guess the taps "
            "from a formula that is wrong for most drafters; declare the layers it "
            "was trained on (allow_missing_target_layer_ids relaxes this)");
    } else {
      if (!taps_json.is_array() || taps_json.empty())
        throw Error(d.file(), taps_key + " must be a non-empty array of layer ids");
      for (const json& v : taps_json) {
        if (!v.is_number_integer())
          throw Error(d.file(), taps_key + " holds " + io::json_excerpt(v) + ", not a layer id");
        taps.push_back(v.get<std::int64_t>());
      }
      r.measured["target_layer_ids"] = taps;
      std::vector<std::int64_t> sorted = taps;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() &&
          !allowed("allow_repeated_taps"))
        problems.push_back(taps_key + " [" + format_ids(taps) +
                           "] lists a layer twice; list each tap once "
                           "(allow_repeated_taps relaxes this)");
      if (p["require_sorted_taps"].get<bool>() && sorted != taps)
        problems.push_back(taps_key + " [" + format_ids(taps) +
                           "] is not ascending: the z-lab reference concatenates the taps' states "
                           "for fc in list order, vLLM in layer order, so the two engines feed fc "
                           "differently; list them ascending, fc's input columns in the same order "
                           "(require_sorted_taps=false for a drafter only z-lab's code runs)");
      // A tap as the user's file writes it: a speculators config's aux_hidden_state_layer_ids
      // holds the z-lab id + 1 (its transformer_layer_config is read as z-lab's).
      auto as_written = [&, &taps_key = taps_key](std::int64_t tap) {
        return speculators ? "aux_hidden_state_layer_ids: " + std::to_string(tap + 1) +
                                 " (target layer " + std::to_string(tap) + ")"
                           : taps_key + ": " + std::to_string(tap);
      };
      if (target_layers)
        for (auto tap : taps) {
          if (tap < 0 || tap >= *target_layers)
            problems.push_back(as_written(tap) + " names no target layer (0.." +
                               std::to_string(*target_layers - 1) +
                               "); tap the layers the drafter was trained on");
          else if (tap == *target_layers - 1 && !allowed("allow_final_layer"))
            problems.push_back(as_written(tap) +
                               " is the target's final layer, whose output already encodes the "
                               "next token (the fc-fed-the-final-layer shortcut); tap an earlier "
                               "layer (allow_final_layer relaxes this)");
        }
    }

    // num_target_layers, hidden size, vocabulary.
    const auto declared_layers = d.root().find("num_target_layers");
    if (declared_layers == d.root().end() || declared_layers->is_null()) {
      if (speculators)
        not_checked.emplace_back("num_target_layers (the speculators format has none)");
      else if (!allowed("allow_missing_num_target_layers"))
        problems.push_back(
            "num_target_layers is missing; set it to the layer count of the target the drafter "
            "was trained on (allow_missing_num_target_layers relaxes this)");
    } else if (!declared_layers->is_number_integer()) {
      throw Error(d.file(), "num_target_layers must be an integer, got " +
                                io::json_excerpt(*declared_layers));
    } else if (target_layers && *declared_layers != *target_layers &&
               !allowed("allow_layer_count_mismatch")) {
      problems.push_back("num_target_layers " +
                         std::to_string(declared_layers->get<std::int64_t>()) +
                         " but the target's " + t->where("num_hidden_layers") + " is " +
                         std::to_string(*target_layers) +
                         ": the drafter was trained for another target; pair it with its own "
                         "(allow_layer_count_mismatch relaxes this)");
    }
    if (t && !allowed("allow_shape_mismatch")) {
      for (const char* key : {"hidden_size", "vocab_size"}) {
        const auto mine = d.find_int(key);
        const auto theirs = t->find_int(key);
        if (mine && theirs && *mine != *theirs)
          problems.push_back(std::string(key) + " " + std::to_string(*mine) + " but the target's " +
                             t->where(key) + " is " + std::to_string(*theirs) +
                             ": the drafter reads the target's embeddings and lm_head; pair it "
                             "with its own target (allow_shape_mismatch relaxes this)");
      }
    }

    check_rope(d, t, p, r, problems);
    state_causality(d, p, r, problems);

    if (const auto fp16 = declared_dtype(d, true); fp16 && !allowed("allow_float16"))
      problems.push_back(*fp16 +
                         ": fp16 overflows in DFlash drafters (NaN, zero acceptance); store and "
                         "run the drafter in bfloat16 (allow_float16 relaxes this)");

    // The rest of what the evaluators read of the config (block_size; a key given at the top level
    // and under dflash_config agreeing; DFlash2's keys): a config they refuse is bad input here too
    // (block_size 0 passed here). After this check's own findings, which say more, and not where
    // the run relaxed one of its rules (a relaxed rope rule is still one the evaluators enforce).
    const bool relaxed = std::any_of(p.items().begin(), p.items().end(), [](const auto& kv) {
      return kv.key().rfind("allow_", 0) == 0 && kv.value() == true;
    });
    if (problems.empty() && !relaxed && !mask.is_null() && !taps_json.is_null())
      model::DrafterConfig::from(file_config);

    if (!not_checked.empty()) r.evidence["not_checked"] = not_checked;
    std::string pass = "mask_token_id, taps, layer count and RoPE are explicit";
    pass += t ? " and agree with the target" : " (no target to compare with)";
    // The dtype engines compute in: the config's, else the target's (stored dtypes aside).
    const auto dtype = declared_dtype(d, false);
    pass += dtype ? "; " + *dtype : "; no torch_dtype / dtype: engines run it in the target's";
    pass += "; " + r.evidence["causality"].get<std::string>();
    if (const auto note = recorded_target_note(a)) {
      r.evidence["note"] = *note;
      pass += "; note: " + *note;
    }
    return conclude(std::move(r), problems, pass);
  }

 private:
  // RoPE θ from either layout (flat rope_theta / nested rope_parameters.rope_theta, also under
  // text_config), compared with the target's; the RoPE types must match.
  static void check_rope(const io::ModelConfig& d, const std::optional<io::ModelConfig>& t,
                         const json& p, CheckResult& r, std::vector<std::string>& problems) {
    auto theta_of = [&](const io::ModelConfig& c, const std::string& who) -> std::optional<double> {
      const auto sources = io::rope_number_sources(c, "rope_theta");
      if (sources.empty()) return std::nullopt;
      for (const auto& [where, v] : sources)
        if (v != sources.front().second && !p["allow_ambiguous_rope_theta"].get<bool>())
          problems.push_back(who + " " + sources.front().first + " = " +
                             format_number(sources.front().second, 6) + " but " + where + " = " +
                             format_number(v, 6) +
                             ": engines read different ones; keep one "
                             "(allow_ambiguous_rope_theta relaxes this)");
      return sources.back().second;  // the nested value: what transformers v5 reads
    };
    const auto drafter_theta = theta_of(d, "drafter");
    if (!drafter_theta && !p["allow_missing_rope_theta"].get<bool>())
      problems.push_back(
          "rope_theta is missing (neither top level nor rope_parameters.rope_theta): engines "
          "default it differently (vLLM 1e6, transformers 1e4); declare the θ the drafter was "
          "trained with (allow_missing_rope_theta relaxes this)");
    const std::string drafter_type = io::rope_type(d);
    r.measured["rope_theta"] = drafter_theta ? json(*drafter_theta) : json(nullptr);
    r.measured["rope_type"] = drafter_type;
    if (!t) return;
    const auto target_theta = theta_of(*t, "target");
    const std::string target_type = io::rope_type(*t);
    r.measured["target_rope_theta"] = target_theta ? json(*target_theta) : json(nullptr);
    r.measured["target_rope_type"] = target_type;
    if (drafter_type != target_type && !p["allow_rope_type_mismatch"].get<bool>())
      problems.push_back("RoPE type \"" + drafter_type + "\" but the target's is \"" + target_type +
                         "\"; use the target's RoPE (allow_rope_type_mismatch relaxes this)");
    if (drafter_theta && target_theta) {
      const double ratio = std::max(*drafter_theta / *target_theta, *target_theta / *drafter_theta);
      r.measured["rope_theta_ratio"] = ratio;
      r.thresholds["rope_theta_max_ratio"] = p["rope_theta_max_ratio"];
      if (!(ratio <= p["rope_theta_max_ratio"].get<double>()))
        problems.push_back("rope_theta " + format_number(*drafter_theta, 6) + " is " +
                           format_number(ratio, 3) + "× off the target's " +
                           format_number(*target_theta, 6) +
                           " (a θ read from the wrong place: flat vs rope_parameters); use the θ "
                           "the drafter was trained with (rope_theta_max_ratio relaxes this)");
    }
  }

  // Each layer's causality inside the block as the z-lab reference decides it, and how it was
  // decided; where dflash_config.causal without is_causal makes vLLM decide otherwise, both.
  static void state_causality(const io::ModelConfig& c, const json& p, CheckResult& r,
                              std::vector<std::string>& problems) {
    const model::CausalityKeys keys = model::read_causality_keys(c);
    const std::vector<bool> zlab = keys.layers(model::CausalityReading::kZLab);
    json layers = json::array();
    std::int64_t causal = 0;
    for (std::size_t i = 0; i < zlab.size(); ++i) {
      layers.push_back({{"type", keys.layer_types[i]}, {"causal", static_cast<bool>(zlab[i])}});
      causal += zlab[i] ? 1 : 0;
    }
    r.measured["layer_causality"] = layers;
    std::string how =
        keys.is_causal
            ? std::string("is_causal = ") + (*keys.is_causal ? "true" : "false") +
                  " for every layer"
            : "is_causal absent: derived per layer (sliding_attention causal, full_attention not)";
    r.evidence["causality"] = how + ": " + std::to_string(causal) + " of " +
                              std::to_string(zlab.size()) + " layers causal inside the block";
    if (!keys.readings_disagree()) return;
    json vllm = json::array(), vllm_windows = json::array();
    for (bool b : keys.layers(model::CausalityReading::kVllm)) vllm.push_back(b);
    for (const auto& w : keys.windows(model::CausalityReading::kVllm))
      vllm_windows.push_back(w ? json(*w) : json(nullptr));
    r.measured["layer_causality_vllm"] = vllm;
    r.measured["layer_windows_vllm"] = vllm_windows;
    if (!p["allow_ambiguous_causality"].get<bool>())
      problems.push_back(
          "the engines run different attention: z-lab and SGLang run " +
          keys.describe(model::CausalityReading::kZLab) + ", vLLM runs " +
          keys.describe(model::CausalityReading::kVllm) +
          " (it reads dflash_config.causal / use_swa / swa_window_size, z-lab does not); set "
          "is_causal, layer_types and sliding_window to what the drafter was trained with and "
          "drop the vLLM-only keys (allow_ambiguous_causality relaxes this)");
  }
};

const bool registered = register_as<DrafterConfigCheck>();

}  // namespace
}  // namespace draftgate::checks
