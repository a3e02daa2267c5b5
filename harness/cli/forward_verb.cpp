// `draftgate forward`: one target forward over given token ids; writes logits and tapped hidden
// states in the format the hidden_state_parity check reads as a reference dump.

#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/output_file.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/progress.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct ForwardOptions {
  std::string model;
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> taps;
  std::string dtype;
  std::string device = "cpu";
  std::string gdn = "chunked";
  std::string out;
};

int run_forward(const ForwardOptions& opt) {
  io::check_outputs({{opt.out, "--out"}}, {{opt.model, "--model", true}});
  require_slots({{opt.model, io::ArtifactKind::kTarget, "--model"}});
  require_distinct(opt.taps, "--taps", "tap");
  const io::Checkpoint ckpt = io::Checkpoint::open(opt.model);
  model::TargetOptions options;
  if (!opt.dtype.empty()) options.dtype = model::parse_dtype_flag(opt.dtype);
  options.device = model::parse_device(opt.device);
  options.gdn = model::parse_gdn_flag(opt.gdn);
  // One sequence: streamed a layer at a time when the model does not fit the memory budget.
  const auto target = model::open_sequence_target(ckpt, options);
  if (opt.tokens.empty()) throw Error("--tokens", "no token ids given");
  const auto n = static_cast<std::int64_t>(opt.tokens.size());
  model::require_sequence_fits(target->config(), n, n, "--tokens");
  model::ForwardResult r;
  {
    Progress progress("forward", "layer", target->config().num_layers);
    r = target->forward(opt.tokens, opt.taps, true,
                        [&](auto done, auto) { progress.update(done); });
  }

  io::NamedTensors tensors = {{"logits", r.logits}};
  for (const auto& [tap, hidden] : r.taps)
    tensors.emplace_back("hidden." + std::to_string(tap), hidden);
  const std::map<std::string, std::string> metadata = {
      {"producer", std::string("draftgate ") + DRAFTGATE_VERSION},
      {"model", opt.model},
      {"family", model::family_name(target->config().family)},
      {"dtype", target->dtype() == at::kBFloat16 ? "bf16" : "f32"},
      {"device", opt.device},
      {"gdn", opt.gdn},
      {"weights", target->streamed() ? "streamed" : "in memory"},
      {"tokens", format_ids(opt.tokens)},
      {"taps", format_ids(opt.taps)},
      {"tap_convention",
       "hidden.<l> = output of decoder layer l (HF hidden_states[l+1]), before the final norm"}};
  io::write_tensors(opt.out, tensors, metadata);
  std::cout << "wrote " << opt.out << ": logits [" << r.logits.size(0) << ", " << r.logits.size(1)
            << "]";
  if (!opt.taps.empty())
    std::cout << ", hidden." << format_ids(opt.taps) << " [" << r.logits.size(0) << ", "
              << target->config().hidden << "]";
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_forward(CLI::App& app, VerbRunner* runner) {
  auto opt = std::make_shared<ForwardOptions>();
  CLI::App* cmd =
      app.add_subcommand("forward", "Run the target over token ids; dump logits and hidden states");
  cmd->add_option("--model", opt->model, "Target checkpoint directory")
      ->required()
      ->check(path_value());
  add_integer_list(cmd, "--tokens", opt->tokens, "Token ids, comma-separated",
                   non_negative_integer())
      ->required();
  add_integer_list(cmd, "--taps", opt->taps,
                   "Decoder layers whose outputs to dump (HF hidden_states[l+1])",
                   non_negative_integer());
  cmd->add_option("--dtype", opt->dtype, "bf16 or f32 (default: as stored)");
  add_device_option(cmd, opt->device);
  cmd->add_option("--gdn", opt->gdn, "Gated DeltaNet algorithm: chunked or recurrent");
  cmd->add_option("--out", opt->out, "Output .safetensors file")->required()->check(path_value());
  set_example(cmd,
              "draftgate forward --model fixtures/trained/qwen3-target --tokens 1,5,9 --taps 0,2 "
              "--out hidden.safetensors");
  cmd->callback([opt, runner] { *runner = [opt] { return run_forward(*opt); }; });
}

}  // namespace draftgate::cli
