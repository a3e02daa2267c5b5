// `draftgate probe DIR`: where the decoder layers live, why every other stack is not it, and
// whether the engine can run the target.

#include <iostream>
#include <map>

#include "cli_options.h"
#include "draftgate/arch/family_table.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/json_util.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/layout/engine_support.h"
#include "draftgate/layout/module_tree.h"
#include "probe_drafter.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct ProbeOptions {
  std::string dir;
  bool json = false;
  bool tree = false;
};

void print_row(const std::string& key, const std::string& value) {
  std::cout << key << std::string(key.size() < 13 ? 13 - key.size() : 1, ' ') << value << "\n";
}

std::string layer_type_summary(const std::vector<std::string>& types) {
  std::map<std::string, std::vector<std::int64_t>> by_type;
  for (std::size_t i = 0; i < types.size(); ++i)
    by_type[types[i]].push_back(static_cast<std::int64_t>(i));
  std::string s;
  for (const auto& [type, indices] : by_type) {
    if (!s.empty()) s += "; ";
    s += type + " ×" + std::to_string(indices.size()) + " " + layout::format_index_set(indices);
  }
  return s;
}

int run_probe(const ProbeOptions& opt) {
  if (is_drafter_dir(opt.dir)) {
    if (opt.tree)
      throw Error(opt.dir, "--tree is for targets; a drafter probe reads config.json only");
    return run_probe_drafter(opt.dir, opt.json);
  }
  const io::Checkpoint ckpt = io::Checkpoint::open(opt.dir);
  const layout::DecoderStack stack = layout::resolve_decoder_stack(ckpt);
  const layout::EngineSupport engine = model::target_engine_support(ckpt, stack);

  if (opt.json) {
    nlohmann::json out = layout::to_json(stack);
    out["checkpoint"] = ckpt.dir().string();
    out["metadata_only"] = ckpt.metadata_only();
    out["num_tensors"] = ckpt.names().size();
    out["text_config"] = ckpt.config().text_path();
    out["model_type"] = ckpt.config().model_type();
    const model::FamilyEntry* family = model::find_family(ckpt.config().model_type());
    out["family"] = family ? nlohmann::json(family->name) : nlohmann::json(nullptr);
    out["engine_supported"] = engine.supported;
    out["engine_notes"] = engine.reasons;
    out["quantization"] =
        engine.quantization.empty() ? nlohmann::json(nullptr) : nlohmann::json(engine.quantization);
    if (opt.tree) out["module_tree"] = layout::render_module_tree(ckpt);
    std::cout << io::dump_json(out) << "\n";
    return 0;
  }
  print_row("checkpoint",
            ckpt.dir().string() +
                (ckpt.metadata_only() ? "  (metadata-only: index without shards)" : ""));
  const auto& cfg = ckpt.config();
  print_row("config", cfg.file() + "  (text config: " +
                          (cfg.text_path().empty() ? std::string("root") : cfg.text_path()) +
                          ", model_type " + cfg.model_type() + ")");
  print_row("tensors", std::to_string(ckpt.names().size()));
  print_row("decoder", stack.prefix + "  ×" + std::to_string(stack.num_layers));
  print_row("layer types", layer_type_summary(stack.layer_types));
  print_row("embed", stack.embed_tokens);
  print_row("final norm", stack.final_norm);
  print_row("lm_head", stack.lm_head + (stack.tied_embeddings ? "  (tied to the embedding)" : ""));
  if (!stack.inline_mtp_layers.empty())
    print_row("inline MTP", layout::format_index_set(stack.inline_mtp_layers));
  for (std::size_t i = 0; i < stack.rejected.size(); ++i) {
    const auto& r = stack.rejected[i];
    print_row(i == 0 ? "rejected" : "", r.prefix + " [" + std::to_string(r.min_index) + ".." +
                                            std::to_string(r.max_index) + "] ×" +
                                            std::to_string(r.count) + ": " + r.reason);
  }
  for (std::size_t i = 0; i < stack.notes.size(); ++i)
    print_row(i == 0 ? "notes" : "", stack.notes[i]);
  if (engine.supported)
    print_row("engine", "supported: the model checks and forward/eval can run this target");
  if (!engine.quantization.empty())
    print_row("quantization", engine.quantization + ", dequantized one layer at a time");
  for (std::size_t i = 0; i < engine.reasons.size(); ++i)
    print_row(i == 0 ? "engine" : "", (i == 0 ? "NOT supported: " : "") + engine.reasons[i]);
  if (opt.tree) std::cout << "\n" << layout::render_module_tree(ckpt);
  return 0;
}

}  // namespace

void add_probe(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<ProbeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "Resolve a target's decoder stack, or a drafter's facts (headers only)");
  cmd->add_option("checkpoint", opt->dir,
                  "Checkpoint directory (config.json + safetensors or index), target or drafter")
      ->required()
      ->check(path_value());
  cmd->add_flag("--json", opt->json, "Print one JSON object");
  cmd->add_flag("--tree", opt->tree, "Also print the module tree with repeated layers collapsed");
  set_example(cmd, "draftgate probe /models/Qwen3.6-27B --tree");
  cmd->callback([opt, runner] { *runner = [opt] { return run_probe(*opt); }; });
}

}  // namespace draftgate::cli
