// The routed-expert MLP (model/moe.h) of the qwen3_moe and qwen3_5_moe families, beyond what every
// family's suites check (target_numerics_test: the naive float64 reference layer by layer,
// incremental, trees, bf16; streamed_target_test: the streamed forward bit for bit): the routing's
// softmax, top-k and renormalisation on known values, ties in torch.topk's order, experts that all
// agree equal to the dense MLP, and the config's choice of sparse layers (mlp_only_layers,
// decoder_sparse_step); qwen3_5_moe's gated shared expert and the config fields its config class
// does not have.

#include "draftgate/model/moe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "checkpoint_edit.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/layout/engine_support.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/target.h"
#include "draftgate/model/tensor_view.h"
#include "naive_target.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

namespace fs = std::filesystem;

// max |got - ref| / max |ref|, in float64.
double rel_diff(const at::Tensor& got, const at::Tensor& ref) {
  const at::Tensor g = got.to(at::kDouble), r = ref.to(at::kDouble);
  return ((g - r).abs().max() / r.abs().max()).item<double>();
}

// Float32 engine against the float64 reference over 4 small layers: summation order only, as for
// the dense families (target_numerics_test's kF32Budget).
constexpr double kF32Budget = 1e-5;

RandomTargetSpec moe_spec() {
  RandomTargetSpec s;
  s.family = Family::kQwen3Moe;
  s.dtype = at::kFloat;
  s.seed = 11;
  return s;
}

fs::path write_target(const std::string& name, const RandomTargetSpec& spec) {
  const fs::path dir = testing::fresh_dir("moe_" + name);
  write_random_target(dir, spec);
  return dir;
}

TargetConfig config_of(const io::Checkpoint& ckpt) {
  return TargetConfig::from(ckpt.config(), layout::resolve_decoder_stack(ckpt));
}

std::vector<std::int64_t> tokens() {
  std::vector<std::int64_t> t;
  for (std::int64_t i = 0; i < 16; ++i) t.push_back((i * 53 + 7) % 256);
  return t;
}

// The engine's forward against the naive reference, every layer and the logits.
void expect_matches_naive(const fs::path& dir) {
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  TargetOptions o;
  o.dtype = at::kFloat;
  const auto model = TargetModel::load(ckpt, o);
  const auto naive = testing::naive_forward(ckpt, tokens());
  std::vector<std::int64_t> taps(model->config().num_layers);
  for (std::size_t l = 0; l < taps.size(); ++l) taps[l] = static_cast<std::int64_t>(l);
  const ForwardResult r = model->forward(tokens(), taps);
  for (std::int64_t l : taps)
    EXPECT_LT(rel_diff(r.taps.at(l), naive.layer_outputs[l]), kF32Budget) << "layer " << l;
  EXPECT_LT(rel_diff(r.logits, naive.logits), kF32Budget);
}

TEST(MoeRouting, SoftmaxTopKAndRenormalisationOnKnownValues) {
  // Probabilities 1/8, 2/8, 4/8, 1/8: the top two are experts 2 then 1.
  const at::Tensor logits = at::log(at::tensor({1.0, 2.0, 4.0, 1.0}, at::kFloat)).unsqueeze(0);
  const Routing plain = route(logits, 2, false, at::kFloat);
  EXPECT_EQ(plain.experts[0][0].item<std::int64_t>(), 2);
  EXPECT_EQ(plain.experts[0][1].item<std::int64_t>(), 1);
  EXPECT_NEAR(plain.weights[0][0].item<double>(), 0.5, 1e-7);
  EXPECT_NEAR(plain.weights[0][1].item<double>(), 0.25, 1e-7);
  const Routing renormalised = route(logits, 2, true, at::kBFloat16);
  EXPECT_EQ(renormalised.weights.scalar_type(), at::kBFloat16);
  EXPECT_NEAR(renormalised.weights[0][0].item<double>(), 2.0 / 3, 4e-3);  // bf16: 8 bits
  EXPECT_NEAR(renormalised.weights[0][1].item<double>(), 1.0 / 3, 2e-3);
}

TEST(MoeRouting, TiesTakeTorchTopkOrder) {
  // A tie inside the top k: both experts, with equal weights.
  const Routing inside =
      route(at::tensor({0.0, 3.0, 3.0, 1.0}, at::kFloat).unsqueeze(0), 2, true, at::kFloat);
  const auto chosen = inside.experts[0];
  EXPECT_EQ(std::min(chosen[0].item<std::int64_t>(), chosen[1].item<std::int64_t>()), 1);
  EXPECT_EQ(std::max(chosen[0].item<std::int64_t>(), chosen[1].item<std::int64_t>()), 2);
  EXPECT_EQ(inside.weights[0][0].item<float>(), inside.weights[0][1].item<float>());
  // A tie across the k-th place: the expert torch.topk keeps, as the naive reference (and
  // transformers) call it on these probabilities in float64. Experts 2 and 5 tie for second here,
  // and torch.topk keeps 5 (this libtorch and Python's torch 1.13 alike), not the lower index.
  const at::Tensor straddling =
      at::tensor({3.0, -2.0, 2.0, -2.0, -3.0, 2.0, 0.5, -0.5}, at::kDouble);
  const at::Tensor expected = std::get<1>(at::topk(at::softmax(straddling, -1), 2));
  const Routing r = route(straddling.to(at::kFloat).unsqueeze(0), 2, false, at::kFloat);
  EXPECT_TRUE(at::equal(r.experts[0], expected)) << r.experts << " vs " << expected;
}

// Router rows that are multiples of one direction u: position x's logits are c_e (u·x), so with
// u·x > 0 expert 0 leads and experts 2 and 5 tie for second, and with u·x < 0 expert 4 leads and
// experts 1 and 3 tie: at k = 2 every position's second expert is a tie across the k-th place,
// and the tied experts' weights differ, so the wrong one changes the layer's output.
at::Tensor tied_router(const at::Tensor& router) {
  const at::Tensor u = router[0].clone();
  const at::Tensor c = at::tensor({3.0, -2.0, 2.0, -2.0, -3.0, 2.0, 0.5, -0.5}, at::kFloat);
  return c.unsqueeze(1) * u.unsqueeze(0);
}

TEST(MoeLayer, TiedRoutersMatchTheNaiveReference) {
  const fs::path dir = write_target("tied", moe_spec());
  testing::edit_tensors(dir, [](const std::string& name, at::Tensor t) {
    return name.find(".mlp.gate.weight") != std::string::npos ? tied_router(t) : t;
  });
  {  // The construction ties: equal logits in float32, and each position keeps one of a pair.
    const io::Checkpoint ckpt = io::Checkpoint::open(dir);
    const WeightLoader w(ckpt, at::kFloat, at::kCPU);
    const at::Tensor router = w.get("model.layers.0.mlp.gate.weight", {8, 64});
    const at::Tensor logits = dense(at::randn({32, 64}), router);
    ASSERT_TRUE(at::equal(logits.select(1, 2), logits.select(1, 5)));
    ASSERT_TRUE(at::equal(logits.select(1, 1), logits.select(1, 3)));
    const at::Tensor second = route(logits, 2, true, at::kFloat).experts.select(1, 1);
    for (std::int64_t t = 0; t < second.size(0); ++t)
      EXPECT_THAT(second[t].item<std::int64_t>(), ::testing::AnyOf(1, 2, 3, 5));
  }
  expect_matches_naive(dir);
}

TEST(MoeLayer, IdenticalExpertsEqualTheDenseMlp) {
  const fs::path dir = write_target("identical", moe_spec());
  const std::string expert0 = "model.layers.0.mlp.experts.0.";
  std::map<std::string, at::Tensor> first;
  testing::edit_tensors(dir, [&](const std::string& name, at::Tensor t) {
    if (name.rfind(expert0, 0) == 0) first[name.substr(expert0.size())] = t;
    return t;
  });
  testing::edit_tensors(dir, [&](const std::string& name, at::Tensor t) {
    const std::string experts = "model.layers.0.mlp.experts.";
    if (name.rfind(experts, 0) != 0) return t;
    return first.at(name.substr(name.find('.', experts.size()) + 1));
  });
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  TargetConfig c = config_of(ckpt);
  ASSERT_TRUE(c.norm_topk_prob);
  const WeightLoader w(ckpt, at::kFloat, at::kCPU);
  const SwiGluMlp dense_mlp(w, expert0, c.hidden, c.moe_intermediate);
  const at::Tensor x = at::randn({24, c.hidden});
  const at::Tensor expected = dense_mlp(x);
  // Renormalised weights sum to 1 up to float32 rounding, and an expert multiplies fewer rows at
  // once (OpenBLAS may round those differently): the engine's float32 budget.
  EXPECT_LT(rel_diff(SparseMoe(c, w, "model.layers.0.mlp.")(x), expected), kF32Budget);
  // Without the renormalisation the top-2 of 8 probabilities sum to less than 1: a difference.
  c.norm_topk_prob = false;
  EXPECT_GT(rel_diff(SparseMoe(c, w, "model.layers.0.mlp.")(x), expected), 1e-2);
}

// A bf16 checkpoint's fused experts stay bf16 as stored in a float32 load, as every linear weight
// does (WeightLoader::get_linear, get_linear_slice): the memory budget does not count them as
// converted, the forward is still the naive reference's, and the streamed forward (each expert
// read on use) gives the in-memory one's bits at either dtype.
TEST(MoeConfig, Bf16FusedExpertsAreMultipliedAsStoredInAFloat32Forward) {
  RandomTargetSpec spec = moe_spec();
  spec.dtype = at::kBFloat16;
  spec.fused_experts = true;
  spec.num_experts = 16;
  spec.moe_intermediate = 64;
  const fs::path dir = write_target("bf16_fused", spec);
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.contains("model.layers.0.mlp.experts.gate_up_proj"));
  std::uint64_t experts_as_f32 = 0, everything_as_f32 = 0;
  for (const std::string& name : ckpt.names()) {
    const std::uint64_t bytes = ckpt.info(name)->numel() * 4;
    everything_as_f32 += bytes;
    if (name.find(".mlp.experts.") != std::string::npos) experts_as_f32 += bytes;
  }
  ASSERT_GT(experts_as_f32, everything_as_f32 / 2);  // converting them would show
  const layout::DecoderStack stack = layout::resolve_decoder_stack(ckpt);
  EXPECT_LT(materialised_weight_bytes(ckpt, stack, 4, false), everything_as_f32 - experts_as_f32);
  EXPECT_EQ(materialised_weight_bytes(ckpt, stack, 4, true), everything_as_f32);  // training
  expect_matches_naive(dir);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    TargetOptions o;
    o.dtype = dtype;
    const auto in_memory = open_sequence_target(ckpt, o, TargetPath::kInMemory);
    const auto streamed = open_sequence_target(ckpt, o, TargetPath::kStreamed);
    ASSERT_TRUE(streamed->streamed());
    const ForwardResult want = in_memory->forward(tokens(), {0, 3});
    const ForwardResult got = streamed->forward(tokens(), {0, 3});
    EXPECT_TRUE(at::equal(got.logits, want.logits)) << at::toString(dtype);
    EXPECT_TRUE(at::equal(got.taps.at(3), want.taps.at(3))) << at::toString(dtype);
  }
}

TEST(MoeConfig, SparseLayersFollowMlpOnlyLayersAndDecoderSparseStep) {
  RandomTargetSpec spec = moe_spec();
  spec.decoder_sparse_step = 2;
  spec.mlp_only_layers = {3};
  const fs::path dir = write_target("step", spec);
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  EXPECT_EQ(config_of(ckpt).sparse, (std::vector<bool>{false, true, false, false}));
  EXPECT_TRUE(ckpt.contains("model.layers.1.mlp.experts.7.down_proj.weight"));
  EXPECT_TRUE(ckpt.contains("model.layers.3.mlp.gate_proj.weight"));
  EXPECT_FALSE(ckpt.contains("model.layers.3.mlp.gate.weight"));
  expect_matches_naive(dir);

  spec.decoder_sparse_step = 1;
  spec.mlp_only_layers = {};
  spec.experts_per_token = 3;
  spec.norm_topk_prob = false;
  const fs::path all = write_target("all_sparse", spec);
  EXPECT_EQ(config_of(io::Checkpoint::open(all)).sparse, std::vector<bool>(4, true));
  expect_matches_naive(all);
}

// probe's engine verdict on an MoE target written with one tensor more.
layout::EngineSupport verdict_with(const std::string& name, const std::string& extra,
                                   const at::Tensor& value,
                                   const RandomTargetSpec& spec = moe_spec()) {
  const fs::path dir = write_target(name, spec);
  io::NamedTensors tensors;
  {
    const io::Checkpoint ckpt = io::Checkpoint::open(dir);
    EXPECT_TRUE(model::target_engine_support(ckpt, layout::resolve_decoder_stack(ckpt)).supported);
    for (const auto& n : ckpt.names()) tensors.emplace_back(n, io::load_tensor(ckpt, n).clone());
  }
  tensors.emplace_back(extra, value);
  io::write_tensors(dir / "model.safetensors", tensors);
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  return model::target_engine_support(ckpt, layout::resolve_decoder_stack(ckpt));
}

// The engine runs routed experts only: a shared expert (Qwen2-MoE, Qwen3.5-MoE) beside them is
// refused by probe's engine verdict, never ignored.
TEST(MoeSupport, RoutedExpertsRunASharedExpertIsRefused) {
  const auto refused = verdict_with("shared", "model.layers.0.mlp.shared_expert.gate_proj.weight",
                                    at::zeros({32, 64}));
  EXPECT_FALSE(refused.supported);
  EXPECT_THAT(refused.reasons, ::testing::Contains(::testing::HasSubstr(
                                   "a shared expert (tensors such as "
                                   "model.layers.0.mlp.shared_expert.gate_proj.weight)")));
}

// Tensors the engine would leave unread are refused, not ignored: an expert the router never picks
// (past num_experts), an FP8 block scale beside a weight that is not float8 or beside none.
TEST(MoeSupport, AnExpertPastNumExpertsAndAStrayFp8ScaleAreRefused) {
  const std::int64_t experts = moe_spec().num_experts;
  const std::string past =
      "model.layers.1.mlp.experts." + std::to_string(experts) + ".up_proj.weight";
  EXPECT_THAT(
      verdict_with("past_experts", past, at::zeros({32, 64})).reasons,
      ::testing::Contains(::testing::HasSubstr("expert " + std::to_string(experts) + " (" + past +
                                               ") beyond num_experts " + std::to_string(experts))));
  EXPECT_THAT(verdict_with("stray_scale", "model.layers.0.self_attn.q_proj.weight_scale_inv",
                           at::ones({1, 1}))
                  .reasons,
              ::testing::Contains(
                  ::testing::HasSubstr("an FP8 scale beside a weight stored F32 "
                                       "(model.layers.0.self_attn.q_proj.weight_scale_inv)")));
  EXPECT_THAT(verdict_with("orphan_scale", "model.layers.0.self_attn.x_proj.weight_scale_inv",
                           at::ones({1, 1}))
                  .reasons,
              ::testing::Contains(::testing::HasSubstr("an FP8 scale without its weight")));
}

// A bias the engine's modules lack — a projection's, the router's (DeepSeek-style
// e_score_correction_bias: another routing rule), lm_head's — is refused, not dropped (an outside
// tester's cases: each probed "supported" and ran as the model without it).
TEST(MoeSupport, ABiasTheEngineNeverReadsIsRefused) {
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
           {"model.layers.0.self_attn.q_proj.bias", {64}},
           {"model.layers.1.mlp.experts.0.down_proj.bias", {64}},
           {"model.layers.0.mlp.gate.e_score_correction_bias", {moe_spec().num_experts}},
           {"lm_head.bias", {moe_spec().vocab}}}) {
    const auto verdict = verdict_with("bias", name, at::zeros(shape));
    EXPECT_FALSE(verdict.supported) << name;
    EXPECT_THAT(
        verdict.reasons,
        ::testing::Contains(::testing::HasSubstr("a bias the engine never reads (" + name + ")")));
  }
}

// Expert tensors the loader never asks for: an index written otherwise ("07" beside "7"), and a
// router with experts in a layer decoder_sparse_step makes dense (an outside tester's cases).
TEST(MoeSupport, ExpertTensorsTheLoaderNeverAsksForAreRefused) {
  EXPECT_THAT(
      verdict_with("expert_07", "model.layers.1.mlp.experts.07.up_proj.weight", at::zeros({32, 64}))
          .reasons,
      ::testing::Contains(::testing::HasSubstr("an expert tensor the engine never reads "
                                               "(model.layers.1.mlp.experts.07.up_proj.weight)")));
  RandomTargetSpec stepped = moe_spec();
  stepped.decoder_sparse_step = 2;  // with mlp_only_layers [1]: layer 3 sparse, the rest dense
  EXPECT_THAT(verdict_with("experts_in_dense", "model.layers.0.mlp.experts.0.up_proj.weight",
                           at::zeros({32, 64}), stepped)
                  .reasons,
              ::testing::Contains(::testing::HasSubstr(
                  "layer 0's MLP is dense by decoder_sparse_step / mlp_only_layers, but the "
                  "checkpoint holds model.layers.0.mlp.experts.0.up_proj.weight")));
  EXPECT_THAT(verdict_with("dense_in_sparse", "model.layers.3.mlp.gate_proj.weight",
                           at::zeros({32, 64}), stepped)
                  .reasons,
              ::testing::Contains(::testing::HasSubstr("layer 3's MLP is sparse")));
  // Beside fine-grained FP8 weights, a static activation scale (another scheme's tensor) is unread.
  RandomTargetSpec fp8 = moe_spec();
  fp8.fp8 = model::random_target_fp8_scheme(fp8, 16, 16);
  EXPECT_THAT(
      verdict_with("input_scale", "model.layers.0.self_attn.q_proj.input_scale", at::ones({1}), fp8)
          .reasons,
      ::testing::Contains(::testing::HasSubstr(
          "a tensor of another quantisation (FP8 with static activation scales: "
          "model.layers.0.self_attn.q_proj.input_scale)")));
}

RandomTargetSpec shared_expert_spec(TargetLayout layout) {
  RandomTargetSpec s = moe_spec();
  s.family = Family::kQwen3_5Moe;
  s.layout = layout;
  s.shared_expert_intermediate = 48;  // another width than the routed experts'
  return s;
}

// Qwen3_5MoeSparseMoeBlock with every routed expert equal: the routed sum is that expert's MLP
// (the router always renormalises), and the shared expert adds sigmoid(gate · x) times its own MLP
// — computed here in float64 from the tensors, independently of SparseMoe.
TEST(SharedExpertMoe, IdenticalExpertsEqualTheDenseMlpPlusTheGatedSharedExpert) {
  const fs::path dir =
      write_target("shared_identical", shared_expert_spec(TargetLayout::kTextResave));
  const std::string layer = "model.language_model.layers.0.mlp.";
  const std::string expert0 = layer + "experts.0.";
  std::map<std::string, at::Tensor> first;
  testing::edit_tensors(dir, [&](const std::string& name, at::Tensor t) {
    if (name.rfind(expert0, 0) == 0) first[name.substr(expert0.size())] = t;
    return t;
  });
  testing::edit_tensors(dir, [&](const std::string& name, at::Tensor t) {
    const std::string experts = layer + "experts.";
    if (name.rfind(experts, 0) != 0) return t;
    return first.at(name.substr(name.find('.', experts.size()) + 1));
  });
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  const TargetConfig c = config_of(ckpt);
  ASSERT_TRUE(c.norm_topk_prob);
  ASSERT_EQ(c.shared_expert_intermediate, 48);
  const auto weight = [&](const std::string& name) {
    return io::load_tensor(ckpt, layer + name).to(at::kDouble);
  };
  const auto swiglu64 = [&](const std::string& p, const at::Tensor& x) {
    const at::Tensor gate = x.matmul(weight(p + "gate_proj.weight").t());
    const at::Tensor up = x.matmul(weight(p + "up_proj.weight").t());
    return (gate * at::sigmoid(gate) * up).matmul(weight(p + "down_proj.weight").t());
  };
  const at::Tensor x = at::randn({24, c.hidden});
  const at::Tensor x64 = x.to(at::kDouble);
  const at::Tensor routed = swiglu64("experts.0.", x64);
  const at::Tensor shared = at::sigmoid(x64.matmul(weight("shared_expert_gate.weight").t())) *
                            swiglu64("shared_expert.", x64);
  const WeightLoader w(ckpt, at::kFloat, at::kCPU);
  const at::Tensor got = SparseMoe(c, w, layer)(x);
  EXPECT_LT(rel_diff(got, routed + shared), kF32Budget);
  // The shared expert is in the output: the routed experts alone differ.
  EXPECT_GT(rel_diff(got, routed), 1e-2);
}

// Every layer routes (Qwen3_5MoeTextConfig has no decoder_sparse_step / mlp_only_layers, and no
// intermediate_size), in both released layouts, layer by layer equal to the naive reference.
TEST(SharedExpertMoe, EveryLayerRoutesInBothLayoutsAndMatchesTheNaiveReference) {
  for (const TargetLayout layout : {TargetLayout::kVlm, TargetLayout::kTextResave}) {
    SCOPED_TRACE(layout_name(layout));
    const fs::path dir =
        write_target(std::string("shared_") + layout_name(layout), shared_expert_spec(layout));
    const io::Checkpoint ckpt = io::Checkpoint::open(dir);
    const nlohmann::json& text = ckpt.config().text();
    EXPECT_FALSE(text.contains("intermediate_size"));
    EXPECT_FALSE(text.contains("mlp_only_layers"));
    EXPECT_FALSE(text.contains("norm_topk_prob"));
    EXPECT_EQ(config_of(ckpt).sparse, std::vector<bool>(4, true));
    EXPECT_TRUE(ckpt.contains("model.language_model.layers.3.mlp.shared_expert_gate.weight"));
    const auto verdict = layout::engine_support(ckpt, layout::resolve_decoder_stack(ckpt));
    EXPECT_TRUE(verdict.supported) << ::testing::PrintToString(verdict.reasons);
    expect_matches_naive(dir);
  }
}

// Fields the family's config class does not have, set so that transformers would compute something
// else than the config says (or missing where it is required): refused by name, never followed.
TEST(SharedExpertMoe, FieldsTheConfigClassHasNotAreRefusedByName) {
  const fs::path dir = write_target("shared_fields", shared_expert_spec(TargetLayout::kTextResave));
  const std::string original = testing::read_file(dir / "config.json");
  const auto refusal = [&](const std::function<void(nlohmann::json&)>& edit) -> std::string {
    nlohmann::json config = nlohmann::json::parse(original);
    edit(config);
    testing::write_file(dir / "config.json", config.dump());
    try {
      config_of(io::Checkpoint::open(dir));
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_THAT(
      refusal([](nlohmann::json& c) { c["norm_topk_prob"] = false; }),
      ::testing::HasSubstr("norm_topk_prob = false, but qwen3_5_moe's router renormalises"));
  EXPECT_EQ(refusal([](nlohmann::json& c) { c["norm_topk_prob"] = true; }), "accepted");
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["decoder_sparse_step"] = 2; }),
              ::testing::HasSubstr("decoder_sparse_step makes some layers dense"));
  EXPECT_THAT(refusal([](nlohmann::json& c) { c["mlp_only_layers"] = {1}; }),
              ::testing::HasSubstr("mlp_only_layers makes some layers dense"));
  EXPECT_EQ(refusal([](nlohmann::json& c) { c["mlp_only_layers"] = nlohmann::json::array(); }),
            "accepted");
  EXPECT_THAT(refusal([](nlohmann::json& c) { c.erase("shared_expert_intermediate_size"); }),
              ::testing::HasSubstr("shared_expert_intermediate_size"));
}

// A shared expert is run where the family says so, refused beside another family's experts.
TEST(MoeSupport, ASharedExpertRunsForQwen3_5Moe) {
  const fs::path dir = write_target("shared_runs", shared_expert_spec(TargetLayout::kVlm));
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  const auto verdict = layout::engine_support(ckpt, layout::resolve_decoder_stack(ckpt));
  EXPECT_TRUE(verdict.supported) << ::testing::PrintToString(verdict.reasons);
  EXPECT_EQ(ckpt.config().root().at("model_type"), "qwen3_5_moe");
}

// Experts stored fused (Qwen3.5 / 3.6 MoE releases; transformers' Qwen3_5MoeExperts): gate_up_proj
// [E, 2I, H], down_proj [E, H, I]. make-target draws them in the per-expert order, so the two
// layouts of one seed hold the same values, and the engine runs the same bits on both, in memory
// and streamed, at f32 and bf16; the naive reference reads the fused tensors its own way (chunk of
// one product, as the modeling file) and agrees within the float32 budget.
RandomTargetSpec fused_spec(Family family, TargetLayout layout, bool fused) {
  RandomTargetSpec s = moe_spec();
  s.family = family;
  s.layout = layout;
  s.fused_experts = fused;
  s.moe_intermediate = 48;  // gate and up of unequal width to the hidden size
  return s;
}

ForwardResult run(const fs::path& dir, at::ScalarType dtype, bool streamed) {
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  TargetOptions o;
  o.dtype = dtype;
  std::vector<std::int64_t> taps = {0, 3};
  if (streamed) return StreamedTarget(ckpt, o).forward(tokens(), taps);
  return TargetModel::load(ckpt, o)->forward(tokens(), taps);
}

TEST(FusedExperts, HoldThePerExpertValuesAndComputeTheSameBits) {
  for (const auto& [family, layout] : {std::pair{Family::kQwen3Moe, TargetLayout::kFlat},
                                       std::pair{Family::kQwen3_5Moe, TargetLayout::kVlm}}) {
    const std::string name =
        std::string(layout_name(layout)) + (family == Family::kQwen3Moe ? "3" : "35");
    SCOPED_TRACE(name);
    const fs::path split = write_target("split_" + name, fused_spec(family, layout, false));
    const fs::path fused = write_target("fused_" + name, fused_spec(family, layout, true));
    const io::Checkpoint a = io::Checkpoint::open(split), b = io::Checkpoint::open(fused);
    const std::string p = layout == TargetLayout::kFlat
                              ? "model.layers.0.mlp.experts."
                              : "model.language_model.layers.0.mlp.experts.";
    ASSERT_FALSE(b.contains(p + "0.gate_proj.weight"));
    const at::Tensor gate_up = io::load_tensor(b, p + "gate_up_proj");
    const at::Tensor down = io::load_tensor(b, p + "down_proj");
    ASSERT_EQ(gate_up.sizes(), (std::vector<std::int64_t>{8, 96, 64}));
    ASSERT_EQ(down.sizes(), (std::vector<std::int64_t>{8, 64, 48}));
    for (std::int64_t e = 0; e < 8; ++e) {
      const std::string q = p + std::to_string(e) + ".";
      EXPECT_TRUE(
          at::equal(gate_up[e].narrow(0, 0, 48), io::load_tensor(a, q + "gate_proj.weight")));
      EXPECT_TRUE(
          at::equal(gate_up[e].narrow(0, 48, 48), io::load_tensor(a, q + "up_proj.weight")));
      EXPECT_TRUE(at::equal(down[e], io::load_tensor(a, q + "down_proj.weight")));
    }
    for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16})
      for (const bool streamed : {false, true}) {
        SCOPED_TRACE(std::string(dtype == at::kFloat ? "f32" : "bf16") +
                     (streamed ? " streamed" : " in memory"));
        const ForwardResult x = run(split, dtype, streamed), y = run(fused, dtype, streamed);
        EXPECT_TRUE(at::equal(x.logits, y.logits));
        EXPECT_TRUE(at::equal(x.taps.at(3), y.taps.at(3)));
      }
    const auto verdict = layout::engine_support(b, layout::resolve_decoder_stack(b));
    EXPECT_TRUE(verdict.supported) << ::testing::PrintToString(verdict.reasons);
    expect_matches_naive(fused);
  }
}

// FP8 fused experts (transformers' FP8Experts): F8_E4M3 [E, 2I, H] beside gate_up_proj_scale_inv
// [E, ceil(2I / rows), ceil(H / cols)], blocks per expert. With I a multiple of the block rows the
// blocks are the per-expert layout's, so both dequantize to the same weights and the same bits.
TEST(FusedExperts, Fp8BlocksPerExpertDequantizeAsThePerExpertLayout) {
  std::vector<ForwardResult> results;
  for (const bool fused : {false, true}) {
    RandomTargetSpec s = fused_spec(Family::kQwen3_5Moe, TargetLayout::kTextResave, fused);
    s.fp8 = random_target_fp8_scheme(s, 16, 32);
    const fs::path dir = write_target(std::string("fp8_") + (fused ? "fused" : "split"), s);
    const io::Checkpoint ckpt = io::Checkpoint::open(dir);
    if (fused) {
      const std::string p = "model.language_model.layers.1.mlp.experts.";
      EXPECT_EQ(ckpt.info(p + "gate_up_proj")->dtype, io::DType::F8_E4M3);
      EXPECT_EQ(ckpt.info(p + "gate_up_proj_scale_inv")->shape,
                (std::vector<std::int64_t>{8, 6, 2}));
      EXPECT_EQ(ckpt.info(p + "down_proj_scale_inv")->shape, (std::vector<std::int64_t>{8, 4, 2}));
      const auto verdict = layout::engine_support(ckpt, layout::resolve_decoder_stack(ckpt));
      EXPECT_TRUE(verdict.supported) << ::testing::PrintToString(verdict.reasons);
    }
    results.push_back(run(dir, at::kFloat, false));
    results.push_back(run(dir, at::kFloat, true));  // streamed: each expert's slice dequantized
  }
  for (std::size_t k = 1; k < results.size(); ++k)
    EXPECT_TRUE(at::equal(results[0].logits, results[k].logits)) << k;
}

// A streamed layer reads its experts when it runs, one at a time, but reads and checks every one
// of them: a NaN in an expert is refused as the in-memory load refuses it, in either layout, and
// in a bf16 checkpoint, whose experts a float32 forward multiplies as stored.
TEST(FusedExperts, AStreamedLayerChecksEveryExpertAsTheInMemoryLoad) {
  for (const bool fused : {false, true})
    for (const at::ScalarType stored : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(std::string(fused ? "fused " : "per expert ") + at::toString(stored));
      RandomTargetSpec spec = fused_spec(Family::kQwen3Moe, TargetLayout::kFlat, fused);
      spec.dtype = stored;
      const fs::path dir = write_target(
          std::string("nan_") + (fused ? "fused_" : "split_") + at::toString(stored), spec);
      const std::string name = fused ? "model.layers.2.mlp.experts.down_proj"
                                     : "model.layers.2.mlp.experts.7.down_proj.weight";
      testing::edit_tensor(dir, name, [&](at::Tensor w) {
        (fused ? w[7] : w)[3][5] = std::nan("");
        return w;
      });
      for (const bool streamed : {false, true}) {
        try {
          run(dir, at::kFloat, streamed);
          ADD_FAILURE() << (streamed ? "streamed" : "in memory") << " accepted the NaN";
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), ::testing::HasSubstr("tensor \"" + name + "\" holds NaN or Inf"));
        }
      }
    }
}

// A checkpoint holding one layer's experts both ways is ambiguous: refused, naming both tensors.
TEST(FusedExperts, BothLayoutsInOneCheckpointAreRefused) {
  const fs::path dir =
      write_target("both", fused_spec(Family::kQwen3Moe, TargetLayout::kFlat, false));
  const std::string p = "model.layers.0.mlp.experts.";
  testing::edit_tensors(dir, [&](io::NamedTensors& tensors) {
    tensors.emplace_back(p + "gate_up_proj", at::zeros({8, 96, 64}));
    tensors.emplace_back(p + "down_proj", at::zeros({8, 64, 48}));
  });
  try {
    run(dir, at::kFloat, false);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("twice: fused (\"" + p + "gate_up_proj\")"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(p + "0.gate_proj.weight"));
  }
}

}  // namespace
}  // namespace draftgate::model
