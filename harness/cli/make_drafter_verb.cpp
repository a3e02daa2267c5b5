// `draftgate make-drafter`: writes a random DFlash drafter shaped for a given target (tests,
// demos).

#include <algorithm>
#include <iostream>
#include <numeric>

#include "cli_options.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/output_file.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/random_checkpoint.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct MakeDrafterOptions {
  std::string target;
  model::RandomDrafterSpec spec;
  std::int64_t mask_token_id = -1;
  std::int64_t version = 1;
  std::string out;
};

int run_make_drafter(MakeDrafterOptions opt) {
  io::check_outputs({{opt.out, "--out", true}}, {{opt.target, "--target", true}});
  require_empty_directory(opt.out, "--out");
  require_slots({{opt.target, io::ArtifactKind::kTarget, "--target"}});
  const io::Checkpoint ckpt = io::Checkpoint::open(opt.target);
  const auto stack = layout::resolve_decoder_stack(ckpt);
  const auto t = model::TargetConfig::from(ckpt.config(), stack);
  opt.spec.target_hidden = t.hidden;
  opt.spec.target_layers = t.num_layers;
  opt.spec.vocab = t.vocab;
  // The taps and the mask id must name the target's layers and tokens (a final-layer tap stays
  // possible: fixtures carry that bug for the gate to find).
  for (const std::int64_t tap : opt.spec.target_layer_ids)
    if (tap >= t.num_layers)
      throw Error("--taps",
                  "tap " + std::to_string(tap) + " is not a layer of the target (0.." +
                      std::to_string(t.num_layers - 1) + ")",
                  "the default taps are 0,2; pass --taps for a target of fewer layers");
  require_distinct(opt.spec.target_layer_ids, "--taps", "tap");
  if (opt.mask_token_id >= t.vocab)
    throw Error("--mask-token-id", std::to_string(opt.mask_token_id) +
                                       " is outside the target's vocabulary (0.." +
                                       std::to_string(t.vocab - 1) + ")");
  opt.spec.mask_token_id = opt.mask_token_id >= 0 ? opt.mask_token_id : t.vocab - 1;
  // DFlash2: the z-lab fixture's kernel and group, rank and top-k scaled to the target.
  if (opt.version == 2)
    opt.spec.dflash2 = model::Dflash2Config{2, std::gcd(t.hidden, std::int64_t{16}),
                                            std::max<std::int64_t>(1, t.hidden / 8),
                                            std::min<std::int64_t>(16, t.vocab)};
  model::write_random_drafter(opt.out, opt.spec);
  std::cout << "wrote random " << (opt.version == 2 ? "DFlash2" : "DFlash") << " drafter for "
            << opt.target << " to " << opt.out << "\n";
  return 0;
}

}  // namespace

void add_make_drafter(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<MakeDrafterOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-drafter", "Write a random DFlash (or DFlash2) drafter for a target checkpoint");
  cmd->add_option("--target", opt->target, "Target checkpoint directory")
      ->required()
      ->check(path_value());
  cmd->add_option("--version", opt->version,
                  "1: DFlash; 2: DFlash2 (z-lab DFlash2DraftModel: convolutions and selector)")
      ->check(integer_range(1, 2));
  cmd->add_option("--layers", opt->spec.layers, "Drafter layers")->check(integer_range(1, 64));
  cmd->add_option("--block-size", opt->spec.block_size, "Block size B")
      ->check(integer_range(2, 256));
  add_integer_list(cmd, "--taps", opt->spec.target_layer_ids, "target_layer_ids, comma-separated",
                   non_negative_integer());
  cmd->add_option("--mask-token-id", opt->mask_token_id,
                  "Mask token id (default: the last vocabulary row)")
      ->check(non_negative_integer());
  cmd->add_option("--seed", opt->spec.seed, "Generator seed")->check(seed_value());
  cmd->add_option("--out", opt->out, "Output directory")->required()->check(path_value());
  set_example(cmd, "draftgate make-drafter --target /tmp/target --taps 0,2 --out /tmp/drafter");
  cmd->callback([opt, runner] { *runner = [opt] { return run_make_drafter(*opt); }; });
}

}  // namespace draftgate::cli
