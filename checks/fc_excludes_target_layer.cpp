// fc_excludes_target_layer. Static: the drafter's taps are declared, unique, in range, exclude the
// target's final layer (unless explicitly allowed), equal the golden's, and fc is [H_draft, n_taps
// × H_target] with hidden_norm. Dynamic (with a step record and target weights): each slice of the
// fc input the trainer fed is matched against every target layer's output (and the embeddings) for
// the recorded ids, naming the layer it really came from — an off-by-one tap index or the final
// layer fed under a good-looking config shows up here.

#include "check.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {
namespace {

class FcExcludesTargetLayer : public Check {
 public:
  std::string name() const override { return "fc_excludes_target_layer"; }
  std::string summary() const override {
    return "the fc projection never reads the target's final layer";
  }
  nlohmann::json default_params() const override {
    // max_nmse: how close a fed slice must be to its declared layer (room for the recipe's
    // uniform noise on fc inputs, std 0.05, and bf16 storage).
    return {{"allow_final_layer", false}, {"max_nmse", 0.05}};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.target || !a.drafter)
      return skip(name(), "needs a target and a drafter (--target, --drafter)");
    const io::Checkpoint target = io::Checkpoint::open(*a.target);
    const io::Checkpoint drafter = io::Checkpoint::open(*a.drafter);
    const auto stack = layout::resolve_decoder_stack(target);
    const auto d = model::DrafterConfig::from(drafter.config());
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
    if (a.golden && a.golden->taps != d.target_layer_ids)
      problems.push_back("taps [" + format_ids(d.target_layer_ids) +
                         "] differ from the golden's [" + format_ids(a.golden->taps) + "] (" +
                         a.golden->path + ")");
    if (a.step_record && !target.metadata_only())
      check_fed_features(target, *a.step_record, d, p, r, problems);
    else
      r.evidence["fed_features"] = a.step_record
                                       ? "not checked: the target is metadata-only (no weights)"
                                       : "not checked: no step record";
    const std::string pass =
        "taps [" + format_ids(d.target_layer_ids) + "] of " + std::to_string(l) +
        " target layers, final layer excluded, fc and hidden_norm as expected" +
        (r.measured.contains("fed_slices") ? ", fed features match their taps" : "");
    return conclude(std::move(r), problems, pass);
  }

 private:
  void check_fed_features(const io::Checkpoint& ckpt, const std::filesystem::path& record,
                          const model::DrafterConfig& d, const nlohmann::json& p, CheckResult& r,
                          std::vector<std::string>& problems) const;
};

// Names the layer each fc_input slice came from and reports slices that are not their declared
// tap.
void FcExcludesTargetLayer::check_fed_features(const io::Checkpoint& ckpt,
                                               const std::filesystem::path& record,
                                               const model::DrafterConfig& d,
                                               const nlohmann::json& p, CheckResult& r,
                                               std::vector<std::string>& problems) const {
  const train::StepRecord rec = train::read_step_record(record);
  if (rec.target_layer_ids != d.target_layer_ids)
    problems.push_back("the step record declares taps [" + format_ids(rec.target_layer_ids) +
                       "] but the drafter config [" + format_ids(d.target_layer_ids) + "]");
  model::TargetOptions options;
  options.dtype = at::kFloat;
  const auto target = model::TargetModel::load(ckpt, options);
  const std::int64_t h = target->config().hidden, layers = target->config().num_layers;
  const auto n = static_cast<std::int64_t>(d.target_layer_ids.size());
  if (rec.fc_input.size(1) != n * h)
    throw Error(rec.path, "fc_input is " + std::to_string(rec.fc_input.size(1)) + " wide, not " +
                              std::to_string(n) + " taps x " + std::to_string(h));
  std::vector<std::int64_t> all(layers);
  for (std::int64_t l = 0; l < layers; ++l) all[l] = l;
  const auto fwd = target->forward(rec.input_ids, all, /*want_logits=*/false);
  // Candidates: -1 = the embeddings (HF hidden_states[0]), then every layer's output.
  std::vector<at::Tensor> candidates = {
      target->embed_weight().index_select(0, at::tensor(rec.input_ids)).to(at::kFloat)};
  for (auto l : all) candidates.push_back(fwd.taps.at(l));
  const double max_nmse = p["max_nmse"].get<double>();
  r.measured["fed_slices"] = nlohmann::json::array();
  for (std::int64_t i = 0; i < n; ++i) {
    const at::Tensor slice = rec.fc_input.narrow(1, i * h, h);
    std::int64_t best = -2;
    double best_nmse = 0, declared_nmse = 0;
    for (std::int64_t c = 0; c <= layers; ++c) {
      const at::Tensor ref = candidates[c];
      const double nmse = (slice - ref).pow(2).sum().item<double>() /
                          std::max(ref.pow(2).sum().item<double>(), 1e-30);
      if (best == -2 || nmse < best_nmse) best = c - 1, best_nmse = nmse;
      if (c - 1 == d.target_layer_ids[i]) declared_nmse = nmse;
    }
    const auto name = [](std::int64_t l) {
      return l < 0 ? std::string("the embeddings") : "layer " + std::to_string(l);
    };
    r.measured["fed_slices"].push_back({{"slice", i},
                                        {"declared_layer", d.target_layer_ids[i]},
                                        {"came_from", best},
                                        {"nmse_to_declared", declared_nmse},
                                        {"nmse_to_source", best_nmse}});
    if (best != d.target_layer_ids[i] || declared_nmse > max_nmse)
      problems.push_back(
          "fc input slice " + std::to_string(i) + " is declared as " + name(d.target_layer_ids[i]) +
          " but matches " + name(best) + " (NMSE " + std::to_string(best_nmse) + " vs " +
          std::to_string(declared_nmse) + " to the declared)" +
          (best == layers - 1 ? ", the target's FINAL layer" : "") +
          "; fix the trainer's tap indexing (tap l = output of layer l = HF hidden_states[l + 1])");
  }
}

const bool registered = register_as<FcExcludesTargetLayer>();

}  // namespace
}  // namespace draftgate::checks
