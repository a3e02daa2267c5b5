// `draftgate probe DRAFTER`: a drafter directory's facts from its config.json alone (never its
// weights): format, kind, taps in the z-lab convention and as written, vocabulary, each layer's
// attention under each engine's reading, block size, and every key the evaluators refuse.

#include "probe_drafter.h"

#include <iostream>
#include <optional>

#include "draftgate/arch/drafter.h"
#include "draftgate/arch/drafter_keys.h"
#include "draftgate/arch/speculators_config.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/json_util.h"

namespace draftgate::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// `key` under `block` first, then at the top level of `root` (z-lab's `_draft_value` order).
json draft_value(const json& root, const json* block, const char* key) {
  if (block != nullptr && block->contains(key) && !(*block)[key].is_null()) return (*block)[key];
  return root.contains(key) ? root[key] : json(nullptr);
}

std::string kind_of(const json& root, model::DrafterFormat format) {
  if (format == model::DrafterFormat::kSpeculators) return "DFlash (speculators)";
  auto arch = root.find("architectures");
  if (arch != root.end() && arch->is_array())
    for (const auto& a : *arch)
      if (a == "DFlash2DraftModel") return "DFlash2";
  return "DFlash";
}

json layers_json(const model::CausalityKeys& k, model::CausalityReading reading) {
  json out = json::array();
  const auto causal = k.layers(reading);
  const auto windows = k.windows(reading);
  for (std::size_t i = 0; i < causal.size(); ++i)
    out.push_back({{"type", k.layer_types[i]},
                   {"window", windows[i] ? json(*windows[i]) : json(nullptr)},
                   {"causal", static_cast<bool>(causal[i])}});
  return out;
}

void print_row(const std::string& key, const std::string& value) {
  std::cout << key << std::string(key.size() < 17 ? 17 - key.size() : 1, ' ') << value << "\n";
}

std::string ids_text(const json& ids) {
  if (!ids.is_array()) return io::json_excerpt(ids);
  std::vector<std::int64_t> v;
  for (const auto& x : ids)
    if (!x.is_number_integer())
      return io::json_excerpt(ids);
    else
      v.push_back(x.get<std::int64_t>());
  return "[" + format_ids(v) + "]";
}

}  // namespace

bool is_drafter_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) return false;
  // Refuses what is no config file by name (a link into /proc, which a sniff would block on).
  io::read_json_file(dir / "config.json");
  return io::recognize_runnable(dir).kind == io::ArtifactKind::kDrafter;
}

int run_probe_drafter(const fs::path& dir, bool as_json) {
  const io::ModelConfig c = io::ModelConfig::load(dir / "config.json");
  const json& root = c.root();
  const auto format = model::detect_drafter_format(c);
  const bool speculators = format == model::DrafterFormat::kSpeculators;
  json out;
  out["drafter"] = dir.string();
  out["format"] = model::drafter_format_name(format);
  out["kind"] = kind_of(root, format);

  // The layer config and the taps: speculators nests the one and shifts the other by one.
  const json* block = root.contains("dflash_config") && root["dflash_config"].is_object()
                          ? &root["dflash_config"]
                          : nullptr;
  json written, zlab_taps = json::array();
  std::string written_key;
  if (speculators) {
    written_key = "aux_hidden_state_layer_ids";
    written = root.value("aux_hidden_state_layer_ids", json(nullptr));
    // speculators convert/dflash/converter.py @c05b95b3 :117-126: aux id = z-lab id + 1.
    if (written.is_array())
      for (const auto& id : written)
        zlab_taps.push_back(id.is_number_integer() ? json(id.get<std::int64_t>() - 1) : id);
  } else {
    written_key = block != nullptr && block->contains("target_layer_ids")
                      ? "dflash_config.target_layer_ids"
                      : "target_layer_ids";
    written = draft_value(root, block, "target_layer_ids");
    zlab_taps = written;
  }
  out["block_size"] = draft_value(root, block, "block_size");
  out["mask_token_id"] = draft_value(root, block, "mask_token_id");
  out["taps_zlab"] = zlab_taps;
  out["taps_as_written"] = {{"key", written_key}, {"ids", written}};

  const json layer_cfg =
      !speculators ? root
      : root.contains("transformer_layer_config") && root["transformer_layer_config"].is_object()
          ? root["transformer_layer_config"]
          : json::object();
  const auto target_vocab = layer_cfg.value("vocab_size", json(nullptr));
  const auto draft_vocab = root.value("draft_vocab_size", target_vocab);
  out["vocabulary"] = {
      {"vocab_size", target_vocab},
      {"draft_vocab_size", draft_vocab},
      {"reduced", draft_vocab != target_vocab},
      {"embedding_and_head",
       speculators ? "its own embed_tokens / lm_head where the checkpoint has them, else the "
                     "target's (as vLLM loads them)"
                   : "the target's"}};
  // The layers as the engines read them: a speculators config through the z-lab config vLLM
  // builds from it (none when that config is malformed; the evaluators say why).
  std::optional<io::ModelConfig> layout;
  if (!speculators) {
    layout = c;
  } else {
    try {
      layout = model::speculators_as_zlab(c);
    } catch (const Error&) {
    }
  }
  if (layout) {
    const model::CausalityKeys keys = model::read_causality_keys(*layout);
    out["layers"] = {{"zlab", layers_json(keys, model::CausalityReading::kZLab)},
                     {"vllm", layers_json(keys, model::CausalityReading::kVllm)}};
    out["engines_disagree"] = keys.readings_disagree();
    out["layers_text"] = {{"zlab", keys.describe(model::CausalityReading::kZLab)},
                          {"vllm", keys.describe(model::CausalityReading::kVllm)}};
  }
  json refused = json::array();
  auto unread = model::refused_keys(c);
  for (auto& f : model::refused_files(dir)) unread.push_back(std::move(f));
  // A config the evaluators cannot read (taps as strings, block_size 0, keys disagreeing): named as
  // they name it, and the drafter is not read.
  if (unread.empty()) try {
      model::DrafterConfig::from(c);
    } catch (const Error& e) {
      unread.push_back({"config.json", "", e.problem()});
    }
  for (const auto& k : unread)
    refused.push_back({{"key", k.key}, {"value", k.value}, {"effect", k.effect}});
  out["refused"] = refused;
  // Whether the evaluators read this drafter (its keys and files), or refuse it.
  out["read"] = unread.empty();
  json keys = json::array();
  for (const auto& f : model::key_facts(c))
    keys.push_back(
        {{"key", f.key}, {"status", model::key_status_name(f.status)}, {"note", f.note}});
  out["keys"] = keys;

  if (as_json) {
    std::cout << io::dump_json(out) << "\n";
    return 0;
  }
  print_row("drafter", dir.string() + "  (config only: no weights read)");
  print_row("format", out["format"].get<std::string>());
  print_row("kind", out["kind"].get<std::string>());
  print_row("block size", io::json_excerpt(out["block_size"]));
  print_row("mask token", io::json_excerpt(out["mask_token_id"]));
  print_row("taps (z-lab)", ids_text(zlab_taps) + "  (outputs of these target layers)");
  print_row("taps as written",
            written_key + " " + ids_text(written) + (speculators ? "  (z-lab id + 1)" : ""));
  print_row("vocabulary", "vocab_size " + io::json_excerpt(target_vocab) +
                              (out["vocabulary"]["reduced"].get<bool>()
                                   ? ", draft_vocab_size " + io::json_excerpt(draft_vocab) +
                                         " (reduced: d2t maps draft ids to target ids)"
                                   : std::string(", the full vocabulary")) +
                              "; embedding and head: " +
                              out["vocabulary"]["embedding_and_head"].get<std::string>());
  if (layout) {
    print_row("layers (z-lab)", out["layers_text"]["zlab"].get<std::string>());
    print_row("layers (vLLM)",
              out["layers_text"]["vllm"].get<std::string>() +
                  (out["engines_disagree"].get<bool>() ? "  (engines DISAGREE)" : "  (same)"));
  }
  if (unread.empty())
    print_row("refused", std::string("none: every key is implemented or known inert") +
                             (speculators ? " (read natively as vLLM reads it)" : ""));
  for (std::size_t i = 0; i < unread.size(); ++i)
    print_row(i == 0 ? "refused" : "", unread[i].line());
  return 0;
}

}  // namespace draftgate::cli
