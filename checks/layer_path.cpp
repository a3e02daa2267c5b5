// layer_path: exactly one decoder stack resolves in the target (count = config, layer types agree
// with the tensors), and every drafter tap names an existing target layer. Runs on metadata-only
// checkpoints. Also reports whether the engine can run the target (quantised, other families,
// MoE, sliding windows, RoPE scaling: layout/engine_support.h) without failing on it.

#include "checks/check.h"
#include "draftgate/arch/drafter.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/config.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/layout/engine_support.h"

namespace draftgate::checks {
namespace {

class LayerPath : public Check {
 public:
  std::string name() const override { return "layer_path"; }
  // Configs and headers only.
  bool reads_weight_values(const Artifacts& /*a*/) const override { return false; }
  std::string summary() const override {
    return "the target's decoder stack resolves and the taps exist";
  }
  std::string needs() const override {
    return "target (metadata-only is enough); drafter and golden optional";
  }
  std::vector<Param> params() const override {
    return {string_param("expected_prefix", nullptr, {}, "the decoder prefix the target must have"),
            integer_param("expected_num_layers", nullptr, 1, 100000,
                          "the decoder layer count the target must have")};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.target) return skip(name(), "needs a target checkpoint (--target)");
    const io::Checkpoint ckpt = io::Checkpoint::open(*a.target);
    CheckResult r;
    r.evidence["target"] = a.target->string();
    layout::DecoderStack stack;
    try {
      stack = layout::resolve_decoder_stack(ckpt);
    } catch (const Error& e) {
      r.status = Status::kFail;
      r.message = "the decoder stack does not resolve: " + e.one_line() +
                  "; fix the checkpoint or its config before evaluating anything on it";
      return r;
    }
    r.measured = layout::to_json(stack);
    // The layout is this check's verdict; whether the engine can compute with the target is
    // evidence for the model checks that will need it (they refuse such a target when loading).
    const layout::EngineSupport engine = model::target_engine_support(ckpt, stack);
    r.measured["engine_supported"] = engine.supported;
    r.measured["engine_notes"] = engine.reasons;
    std::vector<std::string> problems;
    if (!p["expected_prefix"].is_null() && p["expected_prefix"] != stack.prefix)
      problems.push_back("expected decoder prefix \"" + p["expected_prefix"].get<std::string>() +
                         "\", found \"" + stack.prefix + "\"");
    if (!p["expected_num_layers"].is_null() && p["expected_num_layers"] != stack.num_layers)
      problems.push_back("expected " +
                         std::to_string(p["expected_num_layers"].get<std::int64_t>()) +
                         " layers, found " + std::to_string(stack.num_layers));
    if (a.golden && !a.golden->measured) {  // a measured golden records no target layout
      const golden::Golden& g = *a.golden;
      if (g.layout_prefix != stack.prefix || g.num_layers != stack.num_layers)
        problems.push_back("the golden's reference target is " + g.layout_prefix + " with " +
                           std::to_string(g.num_layers) + " layers, this one " + stack.prefix +
                           " with " + std::to_string(stack.num_layers) + " (" + g.path + ")");
      else if (!stack.layer_types.empty() && g.layer_types != stack.layer_types)
        problems.push_back("layer types differ from the golden's reference target (" + g.path +
                           ")");
    }
    if (a.drafter) {
      const auto d = model::DrafterConfig::from(io::ModelConfig::load(*a.drafter / "config.json"));
      r.measured["target_layer_ids"] = d.target_layer_ids;
      for (auto tap : d.target_layer_ids)
        if (tap < 0 || tap >= stack.num_layers)
          problems.push_back("drafter tap " + std::to_string(tap) + " names no target layer (" +
                             stack.prefix + " has 0.." + std::to_string(stack.num_layers - 1) +
                             ")");
      if (d.num_target_layers && *d.num_target_layers != stack.num_layers)
        problems.push_back("drafter num_target_layers " + std::to_string(*d.num_target_layers) +
                           " but the target has " + std::to_string(stack.num_layers));
    }
    std::string engine_note;
    for (const auto& reason : engine.reasons)
      engine_note +=
          (engine_note.empty() ? "; the engine cannot run this target: " : "; ") + reason;
    return conclude(std::move(r), problems,
                    stack.prefix + ", " + std::to_string(stack.num_layers) + " layers" +
                        (a.drafter ? ", every tap is a target layer" : "") + engine_note);
  }
};

const bool registered = register_as<LayerPath>();

}  // namespace
}  // namespace draftgate::checks
