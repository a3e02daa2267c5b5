// `draftgate make-target`: writes a small random target checkpoint in a real layout (tests,
// benchmarks, demos).

#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/io/output_file.h"
#include "draftgate/model/random_checkpoint.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct MakeTargetOptions {
  model::RandomTargetSpec spec;
  std::string family = "qwen3";
  std::string layout;
  std::string dtype = "bf16";
  std::string out;
};

int run_make_target(MakeTargetOptions opt) {
  io::check_outputs({{opt.out, "--out", true}}, {});
  auto& s = opt.spec;
  if (opt.family == "qwen3")
    s.family = model::Family::kQwen3;
  else if (opt.family == "qwen3_5")
    s.family = model::Family::kQwen3_5;
  else
    throw Error("--family", "unknown family \"" + opt.family + "\" (expected qwen3 or qwen3_5)");
  const std::string layout =
      opt.layout.empty() ? (opt.family == "qwen3" ? "flat" : "vlm") : opt.layout;
  if (layout == "flat")
    s.layout = model::TargetLayout::kFlat;
  else if (layout == "vlm")
    s.layout = model::TargetLayout::kVlm;
  else if (layout == "text")
    s.layout = model::TargetLayout::kTextResave;
  else
    throw Error("--layout", "unknown layout \"" + layout + "\" (expected flat, vlm or text)");
  if (opt.dtype == "bf16")
    s.dtype = at::kBFloat16;
  else if (opt.dtype == "f32")
    s.dtype = at::kFloat;
  else
    throw Error("--dtype", "unknown dtype \"" + opt.dtype + "\" (expected bf16 or f32)");
  model::write_random_target(opt.out, s);
  std::cout << "wrote random " << opt.family << " target (" << layout << " layout) to " << opt.out
            << "\n";
  return 0;
}

}  // namespace

// Shape bounds: real models stay far inside them; the total size is then checked against the
// machine's memory before anything is generated (write_random_target).
constexpr std::int64_t kMaxWidth = 1 << 20, kMaxLayers = 1024, kMaxHeads = 1024;

void add_make_target(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<MakeTargetOptions>();
  CLI::App* cmd = app.add_subcommand("make-target", "Write a small random target checkpoint");
  cmd->add_option("--family", opt->family, "qwen3 or qwen3_5");
  cmd->add_option("--layout", opt->layout, "flat (qwen3), vlm or text (qwen3_5)");
  cmd->add_option("--dtype", opt->dtype, "bf16 or f32");
  cmd->add_option("--seed", opt->spec.seed, "Generator seed");
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
  cmd->add_flag("--tied", opt->spec.tied, "Tie lm_head to the embedding");
  cmd->add_option("--out", opt->out, "Output directory")->required();
  set_example(cmd, "draftgate make-target --family qwen3_5 --layout vlm --out /tmp/target");
  cmd->callback([opt, runner] { *runner = [opt] { return run_make_target(*opt); }; });
}

}  // namespace draftgate::cli
