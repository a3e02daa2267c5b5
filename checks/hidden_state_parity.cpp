// hidden_state_parity: the target's hidden states at every layer and its logits agree between two
// backends (device:dtype[:gdn], e.g. cpu:f32 vs cpu:bf16, or gdn chunked vs recurrent) or against a
// reference dump in the `draftgate forward` format (e.g. written on the GPU training server). Per
// layer: max abs, NMSE, cosine; logits: top-1 agreement and mean KL. Budgets depend on the coarser
// dtype of the pair; reports the first diverging layer.

#include <sstream>

#include "checks/check.h"
#include "checks/metrics.h"
#include "checks/target_cache.h"
#include "draftgate/arch/family_table.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::checks {
namespace {

struct Side {
  std::string label;
  bool bf16 = false;
  std::vector<at::Tensor> layers;  // [T, H] float32 per layer
  at::Tensor logits;               // [T, V] float32
};

Side run_backend(const io::Checkpoint& ckpt, const std::string& spec,
                 const std::vector<std::int64_t>& tokens) {
  std::istringstream in(spec);
  std::string device, dtype, gdn = "chunked";
  std::getline(in, device, ':');
  std::getline(in, dtype, ':');
  if (in) std::getline(in, gdn, ':');
  if (gdn != "chunked" && gdn != "recurrent")
    throw Error("hidden_state_parity",
                "backend \"" + spec + "\": GDN algorithm must be chunked or recurrent");
  // One sequence: streamed a layer at a time when the model does not fit the memory budget, so
  // the float32 default runs on a target of any size; shared with the other checks of the run.
  const model::SequenceTarget& target = sequence_target(
      ckpt, model::parse_dtype_flag(dtype),
      gdn == "chunked" ? model::GdnAlgorithm::kChunked : model::GdnAlgorithm::kRecurrent,
      model::parse_device(device, "hidden_state_parity backend \"" + spec + "\""));
  std::vector<std::int64_t> taps(target.config().num_layers);
  for (std::size_t i = 0; i < taps.size(); ++i) taps[i] = static_cast<std::int64_t>(i);
  const auto r = forward_with_progress("hidden_state_parity " + spec, target, tokens, taps);
  Side s{spec, dtype == "bf16", {}, r.logits.to(at::kCPU)};
  for (auto t : taps) s.layers.push_back(r.taps.at(t).to(at::kCPU));
  return s;
}

// A dump `draftgate forward` wrote names the family and the model it ran: a dump of another family
// is another model (it diverged "from layer 0" and blamed the kernels).
Side read_dump(const std::string& path, const io::Checkpoint& ckpt,
               const layout::DecoderStack& stack, std::vector<std::int64_t>* tokens) {
  const auto file = io::SafetensorsFile::open(path);
  const auto& meta = file->header().metadata;
  const std::string family =
      model::family_name(model::TargetConfig::from(ckpt.config(), stack).family);
  const std::int64_t layers = stack.num_layers;
  // An empty family is a writer that does not know it (python/draftgate_records.py).
  if (const auto f = meta.find("family");
      f != meta.end() && !f->second.empty() && f->second != family)
    throw Error(
        path,
        "reference dump was made with a " + f->second + " target" +
            (meta.count("model") && !meta.at("model").empty() ? " (" + meta.at("model") + ")"
                                                              : std::string()) +
            " but --target " + ckpt.dir().string() + " is " + family,
        "dump this target: draftgate forward --model TARGET --taps 0,1,…,L-1 on the other "
        "backend");
  auto it = meta.find("tokens");
  if (it == meta.end())
    throw Error(path,
                "reference dump has no \"tokens\" metadata (write it with draftgate forward)");
  tokens->clear();
  std::istringstream in(it->second);
  for (std::string t; std::getline(in, t, ',');) {
    const bool digits =
        !t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      throw Error(path, "reference dump's \"tokens\" metadata holds \"" + t.substr(0, 20) +
                            "\", not a token id (expected comma-separated ids)");
    tokens->push_back(std::stoll(t));
  }
  if (tokens->empty()) throw Error(path, "reference dump's \"tokens\" metadata is empty");
  Side s;
  s.label = "dump " + path;
  // A half-precision dump (bf16 or f16) is judged with the coarse budget.
  s.bf16 = meta.count("dtype") && (meta.at("dtype") == "bf16" || meta.at("dtype") == "f16");
  const io::TensorInfo* logits = file->header().find("logits");
  if (logits == nullptr) throw Error(path, "reference dump has no \"logits\" tensor");
  s.logits = io::tensor_view(file, *logits).to(at::kFloat).clone();
  for (std::int64_t l = 0; l < layers; ++l) {
    const io::TensorInfo* h = file->header().find("hidden." + std::to_string(l));
    if (h == nullptr)
      throw Error(path, "reference dump has no \"hidden." + std::to_string(l) + "\"",
                  "dump every layer: draftgate forward --taps 0,1,…,L-1");
    s.layers.push_back(io::tensor_view(file, *h).to(at::kFloat).clone());
  }
  return s;
}

// Every backend spec run_backend understands: device:dtype[:gdn].
std::vector<std::string> backend_specs() {
  std::vector<std::string> specs;
  for (const char* device : {"cpu", "cuda"})
    for (const char* dtype : {"f32", "bf16"})
      for (const char* gdn : {"", ":chunked", ":recurrent"})
        specs.push_back(std::string(device) + ":" + dtype + gdn);
  return specs;
}

class HiddenStateParity : public Check {
 public:
  std::string name() const override { return "hidden_state_parity"; }
  std::string summary() const override {
    return "target hidden states agree across backends, layer by layer";
  }
  std::string needs() const override {
    return "the target with weights; a reference dump optional";
  }
  std::vector<Param> params() const override {
    const std::vector<std::string> backends = backend_specs();
    const nlohmann::json tokens = {1, 5, 9, 2, 7, 3, 8, 4, 6, 10, 11, 12, 13, 14, 15, 16};
    // Budgets by the coarser dtype of the pair.
    return {string_param("a", "cpu:f32:chunked", backends, "backend a (device:dtype[:gdn])"),
            string_param("b", "cpu:f32:recurrent", backends, "backend b (device:dtype[:gdn])"),
            integer_list_param("tokens", tokens, 0, 1e9, "token ids run on both sides"),
            number_param("f32.max_nmse", 1e-8, 0, 1e3, "f32 pair: per-layer NMSE budget"),
            number_param("f32.min_cosine", 0.99999, -1, 1, "f32 pair: per-layer cosine budget"),
            number_param("f32.min_top1", 0.99, 0, 1, "f32 pair: logits top-1 agreement budget"),
            number_param("bf16.max_nmse", 1e-3, 0, 1e3, "bf16 pair: per-layer NMSE budget"),
            number_param("bf16.min_cosine", 0.999, -1, 1, "bf16 pair: per-layer cosine budget"),
            number_param("bf16.min_top1", 0.9, 0, 1, "bf16 pair: logits top-1 agreement budget")};
  }

  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.target) return skip(name(), "needs a target checkpoint with weights (--target)");
    const io::Checkpoint ckpt = io::Checkpoint::open(*a.target);
    if (ckpt.metadata_only())
      return skip(name(), a.target->string() +
                              " is metadata-only (index without shards): no weights to run");
    std::vector<std::int64_t> tokens = p["tokens"].get<std::vector<std::int64_t>>();
    Side side_b;
    if (a.reference_dump) {
      side_b =
          read_dump(a.reference_dump->string(), ckpt, layout::resolve_decoder_stack(ckpt), &tokens);
    }
    const Side side_a = run_backend(ckpt, p["a"].get<std::string>(), tokens);
    if (!a.reference_dump) side_b = run_backend(ckpt, p["b"].get<std::string>(), tokens);
    if (side_b.logits.sizes() != side_a.logits.sizes())
      throw Error(side_b.label, "logits shape differs from the target's on the same tokens");

    const nlohmann::json budget = (side_a.bf16 || side_b.bf16) ? p["bf16"] : p["f32"];
    CheckResult r;
    r.evidence["a"] = side_a.label;
    r.evidence["b"] = side_b.label;
    // A non-finite value makes every budget comparison false: it fails before any is made.
    std::vector<std::string> non_finite;
    for (const Side* side : std::initializer_list<const Side*>{&side_a, &side_b}) {
      std::optional<std::string> bad;
      for (std::size_t l = 0; l < side->layers.size() && !bad; ++l)
        bad = metrics::non_finite_problem(side->label + " hidden." + std::to_string(l),
                                          side->layers[l]);
      if (!bad) bad = metrics::non_finite_problem(side->label + " logits", side->logits);
      if (bad) non_finite.push_back(*bad);
    }
    if (!non_finite.empty()) {
      non_finite.back() +=
          "; find where the backend first produces it (overflow, uninitialised "
          "memory, a bad kernel)";
      return conclude(std::move(r), non_finite, "");
    }
    r.evidence["budget"] = (side_a.bf16 || side_b.bf16) ? "bf16" : "f32";
    for (const char* key : {"max_nmse", "min_cosine", "min_top1"}) r.thresholds[key] = budget[key];
    r.measured["layers"] = nlohmann::json::array();
    std::optional<std::size_t> first_bad;
    for (std::size_t l = 0; l < side_a.layers.size(); ++l) {
      const at::Tensor& x = side_a.layers[l];
      const at::Tensor& y = side_b.layers[l];
      if (x.sizes() != y.sizes())
        throw Error(side_b.label, "hidden." + std::to_string(l) + " shape differs");
      const double nmse = metrics::nmse(x, y), cosine = metrics::cosine(x, y);
      const double max_abs = metrics::max_abs_diff(x, y);
      r.measured["layers"].push_back(
          {{"layer", l}, {"max_abs", max_abs}, {"nmse", nmse}, {"cosine", cosine}});
      if (!first_bad &&
          (nmse > budget["max_nmse"].get<double>() || cosine < budget["min_cosine"].get<double>()))
        first_bad = l;
    }
    const double top1 = metrics::top1_agreement(side_a.logits, side_b.logits).agreement;
    const double kl = metrics::mean_kl(side_b.logits, side_a.logits);
    r.measured["logits_top1_agreement"] = top1;
    r.measured["logits_mean_kl"] = kl;

    std::ostringstream msg;
    if (first_bad) {
      const auto& m = r.measured["layers"][*first_bad];
      msg << "hidden states diverge from layer " << *first_bad << " on (" << side_a.label << " vs "
          << side_b.label << "): NMSE " << m["nmse"].get<double>() << " (budget "
          << budget["max_nmse"].get<double>() << "), cosine " << m["cosine"].get<double>()
          << " (budget " << budget["min_cosine"].get<double>()
          << "); compare that layer's inputs and kernels between the two backends"
          << (a.reference_dump && *first_bad == 0
                  ? " (or: is the dump of this checkpoint? another one's diverges from layer 0 too)"
                  : "");
      r.evidence["first_diverging_layer"] = *first_bad;
    }
    if (top1 < budget["min_top1"].get<double>())
      msg << (first_bad ? "; " : "") << "logits top-1 agreement " << top1 << " < "
          << budget["min_top1"].get<double>();
    r.status = msg.str().empty() ? Status::kPass : Status::kFail;
    if (r.status == Status::kPass) {
      std::ostringstream ok;
      ok << side_a.layers.size() << " layers within the " << r.evidence["budget"].get<std::string>()
         << " budget (" << side_a.label << " vs " << side_b.label << "), logits top-1 agreement "
         << top1;
      r.message = ok.str();
    } else {
      r.message = msg.str();
    }
    return r;
  }
};

const bool registered = register_as<HiddenStateParity>();

}  // namespace
}  // namespace draftgate::checks
