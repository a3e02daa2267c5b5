// fc_excludes_target_layer. Static: the drafter's taps are declared, unique, in range, exclude the
// target's final layer (unless explicitly allowed), equal the golden's, and fc is [H_draft, n_taps
// × H_target] with hidden_norm. Dynamic (with a step record and target weights): each slice of the
// fc input the trainer fed is matched against every target layer's output (and the embeddings) for
// the recorded ids, naming the layer it really came from — an off-by-one tap index or the final
// layer fed under a good-looking config shows up here. That half runs the target, so it is the
// engine's (Artifacts::engine, model_engine.cpp); without one the check asks for the engine.

#include <algorithm>
#include <set>

#include "checks/check.h"
#include "checks/record_scope.h"
#include "draftgate/arch/drafter.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"

namespace draftgate::checks {
namespace {

// The tensors, shapes and dtypes loading the drafter requires, from its headers (a reduced
// vocabulary's d2t / lm_head one row short, a missing norm, a DFlash2 convolution of another
// kernel size passed here and failed `eval`); of a metadata-only copy, its tensor names alone.
// `vocab`: the full vocabulary.
void require_loadable_shapes(const io::Checkpoint& drafter, const model::DrafterConfig& d,
                             std::int64_t vocab) {
  const std::string dir = drafter.dir().string();
  for (const auto& names : d.required_tensors())
    if (model::stored_name(drafter.names(), names, dir).empty())
      throw Error(dir, "missing tensor \"" + names.front() + "\"",
                  "the drafter's config declares it (its layers and kind); was the checkpoint "
                  "saved whole?");
  model::require_draft_vocab_tensors(drafter.names(), d.draft_vocab_size.value_or(vocab), vocab,
                                     dir);
  if (d.dflash2 && d.dflash2->selector_top_k > vocab)
    throw Error(drafter.config().file(),
                "dflash_config.selector_top_k " + std::to_string(d.dflash2->selector_top_k) +
                    " exceeds the target's vocabulary (" + std::to_string(vocab) + ")");
  if (drafter.metadata_only()) return;  // names only: no shapes or dtypes to hold to the config
  for (const std::string& name : drafter.names()) {
    const io::TensorInfo* t = drafter.info(name);
    const std::string file = drafter.file_of(name)->path().string();
    if (const auto want = d.expected_shape(name, vocab); want && t->shape != *want)
      throw Error(file, "tensor \"" + name + "\" has shape " + format_shape(t->shape) +
                            ", config implies " + format_shape(*want));
    const bool integer_map = name == "d2t", mask_map = name == "t2d";
    if (integer_map && t->dtype != io::DType::I64 && t->dtype != io::DType::I32)
      throw Error(file, "tensor \"d2t\" has dtype " + std::string(io::dtype_name(t->dtype)) +
                            "; the draft-to-target offsets are integers (I64)");
    if (mask_map && t->dtype != io::DType::BOOL)
      throw Error(file, "tensor \"t2d\" has dtype " + std::string(io::dtype_name(t->dtype)) +
                            "; the target-to-draft mask is BOOL");
    if (!integer_map && !mask_map && !io::is_floating_point(t->dtype))
      throw Error(file, "tensor \"" + name + "\" has non-float dtype " +
                            std::string(io::dtype_name(t->dtype)));
  }
}

class FcExcludesTargetLayer : public Check {
 public:
  std::string name() const override { return "fc_excludes_target_layer"; }
  bool judges_record_against_target() const override { return true; }
  std::string summary() const override {
    return "the fc projection never reads the target's final layer";
  }
  std::string needs() const override {
    return "target and drafter; a step record and target weights for the fed-feature comparison; "
           "golden optional";
  }
  std::vector<Param> params() const override {
    return {bool_param("allow_final_layer", false, "accept a tap on the target's final layer"),
            // Room for the recipe's uniform noise on fc inputs (std 0.05) and bf16 storage.
            number_param("max_nmse", 0.05, 0, 1e3,
                         "how close a fed fc-input slice must be to its declared layer (NMSE)"),
            max_positions_param()};
  }

  // The fed-feature comparison runs target forwards: only where the engine installed it.
  bool runs_here(const Artifacts& a) const override {
    return !a.step_record || a.engine != nullptr;
  }

  // fc.weight's shape and hidden_norm.weight are the drafter's tensors.
  bool reads_drafter_weights(const Artifacts& /*a*/) const override { return true; }
  // Headers only, unless a step record's fed features are matched against the target's layers.
  bool reads_weight_values(const Artifacts& a) const override { return a.step_record.has_value(); }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.target || !a.drafter)
      return skip(name(), "needs a target and a drafter (--target, --drafter)");
    const io::Checkpoint target = io::Checkpoint::open(*a.target);
    const io::Checkpoint drafter = io::Checkpoint::open(*a.drafter);
    const auto stack = layout::resolve_decoder_stack(target);
    const auto d = model::DrafterConfig::from(drafter.config());
    // What loading the drafter refuses, from its headers: a gate that passes a drafter `eval`
    // cannot load is not one (a layer count its tensors do not hold, an integer fc).
    d.check_tensors(drafter.names(), drafter.dir().string());
    // Against the drafter's own vocabulary where it declares one: another target's is
    // drafter_config's finding, not bad input.
    require_loadable_shapes(drafter, d,
                            d.vocab_size.value_or(target.config().require_int("vocab_size")));
    const std::int64_t l = stack.num_layers;
    const std::int64_t target_hidden = target.config().require_int("hidden_size");
    CheckResult r;
    r.measured["target_layer_ids"] = d.target_layer_ids;
    r.measured["target_layers"] = l;
    r.evidence["drafter_config"] = drafter.config().file();
    std::vector<std::string> problems;
    std::vector<std::int64_t> sorted = d.target_layer_ids;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      problems.push_back("target_layer_ids [" + format_ids(d.target_layer_ids) +
                         "] repeat a layer");
    for (auto tap : d.target_layer_ids) {
      if (tap < 0 || tap >= l)
        problems.push_back("tap " + std::to_string(tap) + " is not a target layer (0.." +
                           std::to_string(l - 1) + ")");
      else if (tap == l - 1 && !p["allow_final_layer"].get<bool>())
        problems.push_back(
            "tap " + std::to_string(tap) +
            " is the target's final layer: its output already encodes "
            "the next token, a shortcut during training that inference does not reproduce; tap an "
            "earlier layer, or set allow_final_layer if this drafter is meant to read it");
    }
    const auto n = static_cast<std::int64_t>(d.target_layer_ids.size());
    if (const io::TensorInfo* fc = drafter.info("fc.weight")) {
      r.measured["fc_shape"] = fc->shape;
      if (fc->shape != std::vector<std::int64_t>{d.hidden, n * target_hidden})
        problems.push_back("fc.weight is [" + std::to_string(fc->shape.at(0)) + ", " +
                           std::to_string(fc->shape.size() > 1 ? fc->shape[1] : 0) +
                           "], expected [" + std::to_string(d.hidden) + ", " +
                           std::to_string(n * target_hidden) + "] for " + std::to_string(n) +
                           " taps of width " + std::to_string(target_hidden));
    } else if (!drafter.contains("fc.weight")) {
      problems.push_back("the drafter has no fc.weight");
    }
    if (!drafter.contains("hidden_norm.weight"))
      problems.push_back(
          "the drafter has no hidden_norm.weight (fc output must be normalised before injection)");
    if (a.golden && !a.golden->measured && a.golden->taps != d.target_layer_ids)
      problems.push_back("taps [" + format_ids(d.target_layer_ids) +
                         "] differ from the golden's [" + format_ids(a.golden->taps) + "] (" +
                         a.golden->path + ")");
    std::string scope;  // of the fed-feature comparison, when it runs
    if (a.step_record && !target.metadata_only()) {
      if (a.engine == nullptr)
        throw Error(a.step_record->string(),
                    "comparing the fed fc input with the target's layers needs the model engine");
      r.thresholds["max_nmse"] = p["max_nmse"];  // of each fed slice to its declared layer
      scope = a.engine->match_fed_features(target, *a.step_record, d, p, r, problems);
    } else
      r.evidence["fed_features"] = a.step_record
                                       ? "not checked: the target is metadata-only (no weights)"
                                       : "not checked: no step record";
    // Slices that the declared fc_input_noise leaves as close to another layer as to their own
    // (once each, over a batch's sequences).
    std::set<std::int64_t> untold;
    if (r.measured.contains("fed_slices")) {
      for (const auto& slice : r.measured["fed_slices"])
        if (!slice.value("told_apart", true)) untold.insert(slice["slice"].get<std::int64_t>());
    }
    const std::string pass =
        "taps [" + format_ids(d.target_layer_ids) + "] of " + std::to_string(l) +
        " target layers, final layer excluded, fc and hidden_norm as expected" +
        (r.measured.contains("fed_slices") ? ", fed features match their taps" : "") +
        (untold.empty() ? ""
                        : " (slices [" + format_ids({untold.begin(), untold.end()}) +
                              "] as closely as another layer: the record's fc_input_noise hides "
                              "which)");
    return scope.empty() ? conclude(std::move(r), problems, pass)
                         : conclude_judged(std::move(r), problems, pass, scope);
  }
};

const bool registered = register_as<FcExcludesTargetLayer>();

}  // namespace

}  // namespace draftgate::checks
