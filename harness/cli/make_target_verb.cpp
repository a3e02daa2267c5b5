// `draftgate make-target`: writes a small random target checkpoint in a real layout (tests,
// benchmarks, demos).

#include <filesystem>
#include <iostream>

#include "cli_options.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/output_file.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/random_checkpoint.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct MakeTargetOptions {
  model::RandomTargetSpec spec;
  std::string family = model::families().front().name;
  std::string layout;
  std::string dtype = "bf16";
  std::string quantize;
  std::vector<std::int64_t> fp8_block;  // default 128,128 (with --quantize fp8 only)
  std::string out;
};

int run_make_target(MakeTargetOptions opt) {
  io::check_outputs({{opt.out, "--out", true}}, {});
  require_empty_directory(opt.out, "--out");
  auto& s = opt.spec;
  // A family's name or any of its model types; an unknown one is refused as everywhere else.
  const model::FamilyEntry* family = model::find_family(opt.family);
  if (family == nullptr) throw Error("--family", model::unknown_model_type(opt.family));
  s.family = family->family;
  s.layout = family->layouts.front();
  if (!opt.layout.empty()) {
    std::vector<std::string> known;
    for (model::TargetLayout l : family->layouts) {
      known.push_back(model::layout_name(l));
      if (opt.layout == known.back()) s.layout = l;
    }
    if (opt.layout != model::layout_name(s.layout))
      throw Error("--layout", "layout \"" + opt.layout + "\" is not one of " + family->name +
                                  "'s (" + format_list(known) + ")");
  }
  if (opt.dtype == "bf16")
    s.dtype = at::kBFloat16;
  else if (opt.dtype == "f32")
    s.dtype = at::kFloat;
  else
    throw Error("--dtype", "unknown dtype \"" + opt.dtype + "\" (expected bf16 or f32)");
  if (s.experts_per_token > s.num_experts)
    throw Error("--experts-per-token", std::to_string(s.experts_per_token) + " exceeds --experts " +
                                           std::to_string(s.num_experts));
  if (s.fused_experts && family->traits.mlp != model::MlpKind::kMoe)
    throw Error("--fused-experts", family->name + " has no routed experts to fuse");
  if (opt.quantize.empty() && !opt.fp8_block.empty())
    throw Error("--fp8-block", "is given without --quantize fp8, which it is the block size of");
  if (opt.quantize == "fp8") {
    if (opt.fp8_block.empty()) opt.fp8_block = {128, 128};
    if (opt.fp8_block.size() != 2)
      throw Error("--fp8-block", "expected two block sizes ROWS,COLS (e.g. 128,128)");
    s.fp8 = model::random_target_fp8_scheme(s, opt.fp8_block[0], opt.fp8_block[1]);
  }
  const bool existed = std::filesystem::exists(opt.out);
  model::write_random_target(opt.out, s);
  // Shapes forward would refuse (an odd head_dim, heads not a multiple of the KV heads, ...) are
  // refused here, by the same reading, and nothing is left written (--out was new or empty).
  const auto remove_written = [&] {
    if (existed)
      for (const auto& entry : std::filesystem::directory_iterator(opt.out))
        std::filesystem::remove_all(entry.path());
    else
      std::filesystem::remove_all(opt.out);
  };
  try {
    const io::Checkpoint written = io::Checkpoint::open(opt.out);
    model::TargetConfig::from(written.config(), layout::resolve_decoder_stack(written));
  } catch (const Error& e) {
    remove_written();
    throw Error(opt.out, "these shapes make a target the engine refuses: " + e.problem(),
                e.hint().empty() ? "nothing was written; change the flags" : e.hint());
  } catch (...) {
    remove_written();
    throw;
  }
  std::cout << "wrote random " << family->name << " target (" << model::layout_name(s.layout)
            << " layout" << (s.fp8 ? ", " + s.fp8->describe() : std::string()) << ") to " << opt.out
            << "\n";
  return 0;
}

// "qwen3 (Qwen3 dense), qwen3_5 (...)": the table's families.
std::string family_help() {
  std::vector<std::string> items;
  for (const auto& f : model::families()) items.push_back(f.name + " (" + f.display_name + ")");
  return "Target family, or one of its model types: " + format_list(items);
}

// "flat (qwen3), vlm or text (qwen3_5)" as the table says; the first of each family is its default.
std::string layout_help() {
  std::vector<std::string> items;
  for (const auto& f : model::families()) {
    std::vector<std::string> names;
    for (model::TargetLayout l : f.layouts) names.push_back(model::layout_name(l));
    items.push_back(format_list(names) + " (" + f.name + ")");
  }
  return "Layout, default the family's first: " + format_list(items);
}

}  // namespace

// Shape bounds: real models stay far inside them; the total size is then checked against the
// machine's memory before anything is generated (write_random_target).
constexpr std::int64_t kMaxWidth = 1 << 20, kMaxLayers = 1024, kMaxHeads = 1024;

void add_make_target(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<MakeTargetOptions>();
  CLI::App* cmd = app.add_subcommand("make-target", "Write a small random target checkpoint");
  cmd->add_option("--family", opt->family, family_help());
  cmd->add_option("--layout", opt->layout, layout_help());
  cmd->add_option("--dtype", opt->dtype, "bf16 or f32");
  cmd->add_option("--seed", opt->spec.seed, "Generator seed")->check(seed_value());
  cmd->add_option("--hidden", opt->spec.hidden, "Hidden size")->check(integer_range(1, kMaxWidth));
  cmd->add_option("--intermediate", opt->spec.intermediate, "MLP width")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--vocab", opt->spec.vocab, "Vocabulary size")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--layers", opt->spec.layers, "Decoder layers")
      ->check(integer_range(1, kMaxLayers));
  cmd->add_option("--heads", opt->spec.heads, "Attention heads")
      ->check(integer_range(1, kMaxHeads));
  cmd->add_option("--kv-heads", opt->spec.kv_heads, "KV heads")->check(integer_range(1, kMaxHeads));
  cmd->add_option("--head-dim", opt->spec.head_dim, "Attention head dim")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--linear-k-heads", opt->spec.linear_k_heads, "Gated DeltaNet key heads")
      ->check(integer_range(1, kMaxHeads));
  cmd->add_option("--linear-v-heads", opt->spec.linear_v_heads, "Gated DeltaNet value heads")
      ->check(integer_range(1, kMaxHeads));
  cmd->add_option("--linear-head-dim", opt->spec.linear_k_dim, "Gated DeltaNet key head dim")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--linear-value-dim", opt->spec.linear_v_dim, "Gated DeltaNet value head dim")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--experts", opt->spec.num_experts, "Routed experts per sparse layer (MoE)")
      ->check(integer_range(1, kMaxHeads));
  cmd->add_option("--experts-per-token", opt->spec.experts_per_token,
                  "Experts each position routes to (MoE)")
      ->check(integer_range(1, kMaxHeads));
  cmd->add_option("--moe-intermediate", opt->spec.moe_intermediate, "Each expert's MLP width (MoE)")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_option("--shared-expert-intermediate", opt->spec.shared_expert_intermediate,
                  "The shared expert's MLP width (qwen3_5_moe)")
      ->check(integer_range(1, kMaxWidth));
  cmd->add_flag("--fused-experts", opt->spec.fused_experts,
                "Store the routed experts fused (mlp.experts.gate_up_proj / down_proj, as "
                "Qwen3.5 / 3.6 MoE releases do)");
  cmd->add_flag("--tied", opt->spec.tied, "Tie lm_head to the embedding");
  cmd->add_option(
         "--quantize", opt->quantize,
         "fp8: write the decoder layers' linear weights block-FP8 (e4m3 + weight_scale_inv)")
      ->check(CLI::Validator(
          [](std::string& in) -> std::string {
            return in == "fp8" ? "" : "Value \"" + in + "\" is not a quantization (fp8)";
          },
          "fp8"));
  add_integer_list(cmd, "--fp8-block", opt->fp8_block,
                   "FP8 weight_block_size ROWS,COLS (default 128,128)",
                   integer_range(1, kMaxWidth));
  cmd->add_option("--out", opt->out, "Output directory")->required()->check(path_value());
  set_example(cmd, "draftgate make-target --family qwen3_5 --layout vlm --out /tmp/target");
  cmd->callback([opt, runner] { *runner = [opt] { return run_make_target(*opt); }; });
}

}  // namespace draftgate::cli
