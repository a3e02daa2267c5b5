// Fine-grained FP8 (io/float8.h, io/fp8_scheme.h, model/fp8_weights.h): the e4m3fn codec against
// the format's formula code by code, block dequantization against an element-by-element
// computation (partial edge blocks included), transformers' quantization recipe, and the
// quantization_config reader both ways.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "draftgate/error.h"
#include "draftgate/io/float8.h"
#include "draftgate/io/fp8_scheme.h"
#include "draftgate/model/fp8_weights.h"
#include "error_text.h"
#include "fp8_reference.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;

TEST(Float8, EveryCodeDecodesAsTheFormatSays) {
  int nans = 0;
  for (int code = 0; code < 256; ++code) {
    const double expected = testing::e4m3fn_reference(static_cast<std::uint8_t>(code));
    const float got = io::e4m3fn_to_float(static_cast<std::uint8_t>(code));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
      ++nans;
      continue;
    }
    EXPECT_FALSE(std::isinf(got)) << "code " << code;  // e4m3fn has no infinities
    EXPECT_EQ(static_cast<double>(got), expected) << "code " << code;
  }
  EXPECT_EQ(nans, 2);  // 0x7F and 0xFF only
  EXPECT_EQ(io::e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(io::e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::signbit(io::e4m3fn_to_float(0x80)));        // -0
}

TEST(Float8, EncoderRoundsToNearestEvenAndSaturates) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    EXPECT_EQ(io::float_to_e4m3fn(io::e4m3fn_to_float(static_cast<std::uint8_t>(code))), code);
  }
  // Halfway between consecutive codes: the even one. Just off halfway: the nearer one.
  for (int code = 0; code < 0x7E; ++code) {
    const double lo = testing::e4m3fn_reference(static_cast<std::uint8_t>(code));
    const double hi = testing::e4m3fn_reference(static_cast<std::uint8_t>(code + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);
    EXPECT_EQ(io::float_to_e4m3fn(mid), code % 2 == 0 ? code : code + 1) << "code " << code;
    EXPECT_EQ(io::float_to_e4m3fn(std::nextafter(mid, 0.0f)), code) << "code " << code;
    EXPECT_EQ(io::float_to_e4m3fn(std::nextafter(mid, 1000.0f)), code + 1) << "code " << code;
    EXPECT_EQ(io::float_to_e4m3fn(-mid), 0x80 | (code % 2 == 0 ? code : code + 1));
  }
  EXPECT_EQ(io::float_to_e4m3fn(464.0f), 0x7E);  // beyond 448 saturates (transformers clamps)
  EXPECT_EQ(io::float_to_e4m3fn(1e30f), 0x7E);
  EXPECT_EQ(io::float_to_e4m3fn(-1e30f), 0xFE);
  EXPECT_EQ(io::float_to_e4m3fn(std::nanf("")), 0x7F);
  EXPECT_EQ(io::float_to_e4m3fn(std::ldexp(1.0f, -11)), 0x00);  // a quarter of the subnormal step
}

io::Fp8Scheme scheme(std::int64_t rows, std::int64_t cols) {
  io::Fp8Scheme s;
  s.block_out = rows;
  s.block_in = cols;
  return s;
}

// [50, 70] in 16x32 blocks: 4 x 3 scales, the last row and column of blocks partial (2 rows, 6
// columns).
TEST(Fp8Blocks, DequantizeIsCodeValueTimesItsBlocksScale) {
  const at::Tensor codes =
      at::randint(0, 0x7F, {50, 70}, at::kByte) | (at::randint(0, 2, {50, 70}, at::kByte) * 0x80);
  const at::Tensor scale = at::rand({4, 3}, at::kFloat) + 0.01;
  const at::Tensor got = model::dequantize_fp8_blocks(codes, scale, scheme(16, 32));
  ASSERT_EQ(got.sizes(), codes.sizes());
  ASSERT_EQ(got.scalar_type(), at::kFloat);
  const auto c = codes.accessor<std::uint8_t, 2>();
  const auto s = scale.accessor<float, 2>();
  const auto g = got.accessor<float, 2>();
  for (std::int64_t r = 0; r < 50; ++r)
    for (std::int64_t j = 0; j < 70; ++j) {
      const double expected = testing::e4m3fn_reference(c[r][j]) * s[r / 16][j / 32];
      ASSERT_EQ(static_cast<double>(g[r][j]), static_cast<double>(static_cast<float>(expected)))
          << r << "," << j;
    }
}

// transformers' Fp8Quantize: each block's largest magnitude maps to +-448 and its scale_inv is
// max|w| / 448; every value comes back within half an e4m3 step (2^-4 relative above
// the subnormals, 2^-10 x scale_inv below); an all-zero block keeps scale 1.
TEST(Fp8Blocks, QuantizeFollowsTheTransformersRecipe) {
  at::Tensor w = at::randn({40, 50}, at::kFloat);
  w.narrow(0, 32, 8).narrow(1, 32, 18).zero_();  // the last, partial block: all zeros
  const auto q = model::quantize_fp8_blocks(w, scheme(32, 32));
  ASSERT_EQ(q.scale_inv.sizes(), (std::vector<std::int64_t>{2, 2}));
  const at::Tensor back = model::dequantize_fp8_blocks(q.codes, q.scale_inv, scheme(32, 32));
  for (std::int64_t rb = 0; rb < 2; ++rb)
    for (std::int64_t cb = 0; cb < 2; ++cb) {
      const at::Tensor block = w.narrow(0, rb * 32, std::min<std::int64_t>(32, 40 - rb * 32))
                                   .narrow(1, cb * 32, std::min<std::int64_t>(32, 50 - cb * 32));
      const float max_abs = block.abs().max().item<float>();
      const float inv = q.scale_inv[rb][cb].item<float>();
      EXPECT_EQ(inv, max_abs > 0 ? 1.0f / (448.0f / max_abs) : 1.0f) << rb << "," << cb;
    }
  const at::Tensor inv_per_value =
      q.scale_inv.repeat_interleave(32, 0).narrow(0, 0, 40).repeat_interleave(32, 1).narrow(1, 0,
                                                                                            50);
  // 1.001: the float32 roundings of w x scale and code x scale_inv, far below half a step.
  const at::Tensor bound =
      at::maximum(w.abs() * std::ldexp(1.0, -4), inv_per_value * std::ldexp(1.0, -10)) * 1.001;
  EXPECT_TRUE((back - w).abs().le(bound).all().item<bool>());
  EXPECT_EQ(q.codes.narrow(0, 32, 8).narrow(1, 32, 18).max().item<int>(), 0);
}

io::ModelConfig config_with(nlohmann::json quantization) {
  return io::ModelConfig::from_json(
      {{"model_type", "qwen3"}, {"quantization_config", std::move(quantization)}}, "config.json");
}

nlohmann::json qwen3_fp8() {
  return {{"quant_method", "fp8"},
          {"fmt", "e4m3"},
          {"activation_scheme", "dynamic"},
          {"weight_block_size", {128, 64}}};
}

TEST(Fp8Scheme, ReadsTheReleasedForm) {
  const auto s = io::read_fp8_scheme(config_with(qwen3_fp8()));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->block_out, 128);
  EXPECT_EQ(s->block_in, 64);
  EXPECT_THAT(s->not_converted, ::testing::ElementsAre("lm_head"));
  EXPECT_EQ(s->describe(), "FP8 e4m3, 128x64 blocks");
  EXPECT_FALSE(io::read_fp8_scheme(config_with({{"quant_method", "gptq"}})));
  EXPECT_EQ(io::quant_method(config_with({{"quant_method", "gptq"}})), "gptq");
  EXPECT_EQ(io::quant_method(config_with({{"bits", 4}})), "unnamed");
  EXPECT_FALSE(io::quant_method(io::ModelConfig::from_json({{"model_type", "qwen3"}}, "c")));
  // A VLM's config in both places: equal is the one config; different is refused (engines read
  // one place or the other; the root's was taken silently).
  nlohmann::json nested = qwen3_fp8();
  const auto vlm = [&](const nlohmann::json& text_q) {
    return io::ModelConfig::from_json(
        {{"model_type", "qwen3_5"},
         {"quantization_config", qwen3_fp8()},
         {"text_config", {{"model_type", "qwen3_5_text"}, {"quantization_config", text_q}}}},
        "config.json");
  };
  EXPECT_EQ(io::read_fp8_scheme(vlm(nested))->block_in, 64);
  nested["weight_block_size"] = {64, 64};
  EXPECT_THAT(testing::error_of([&] { io::read_fp8_scheme(vlm(nested)); }),
              ::testing::HasSubstr("config.json: quantization_config at the top level and "
                                   "text_config.quantization_config differ"));
}

TEST(Fp8Scheme, NotConvertedModulesMatchWholeDottedComponents) {
  auto q = qwen3_fp8();
  q["modules_to_not_convert"] = {"model.embed_tokens", "mlp.gate"};
  q["ignored_layers"] = {"model.layers.*.linear_attn.in_proj_a", "model.layers.3.self_attn"};
  const auto s = io::read_fp8_scheme(config_with(q));
  ASSERT_TRUE(s);
  const auto named = [&](const std::string& m) {
    const std::string* e = s->excluding(m);
    return e ? *e : std::string("-");
  };
  EXPECT_EQ(named("lm_head"), "lm_head");
  EXPECT_EQ(named("model.embed_tokens"), "model.embed_tokens");
  EXPECT_EQ(named("model.layers.0.mlp.gate"), "mlp.gate");
  EXPECT_EQ(named("model.layers.0.mlp.gate_proj"), "-");  // a prefix of a component is not it
  EXPECT_EQ(named("model.layers.12.linear_attn.in_proj_a"), "model.layers.*.linear_attn.in_proj_a");
  EXPECT_EQ(named("model.layers.12.linear_attn.in_proj_b"), "-");
  EXPECT_EQ(named("model.layers.3.self_attn.q_proj"), "model.layers.3.self_attn");
  EXPECT_EQ(named("model.layers.13.self_attn.q_proj"), "-");
}

TEST(Fp8Scheme, MalformedConfigsAreBadInputNamingTheKey) {
  const auto refused = [](nlohmann::json q, const std::string& message) {
    try {
      io::read_fp8_scheme(config_with(std::move(q)));
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), "config.json");
      EXPECT_THAT(e.problem(), HasSubstr(message));
    }
  };
  const auto with = [](const char* key, nlohmann::json value) {
    auto q = qwen3_fp8();
    if (value.is_discarded())
      q.erase(key);
    else
      q[key] = std::move(value);
    return q;
  };
  refused(with("fmt", "e5m2"), "quantization_config.fmt \"e5m2\" is not \"e4m3\"");
  refused(with("weight_block_size", nlohmann::json(nlohmann::json::value_t::discarded)),
          "quantization_config.weight_block_size is missing: per-tensor FP8");
  refused(with("weight_block_size", {128}), "weight_block_size [128] is not two positive integers");
  refused(with("weight_block_size", {0, 128}), "is not two positive integers");
  refused(with("weight_block_size", {128.5, 128}), "is not two positive integers");
  refused(with("weight_block_size", "128"), "is not two positive integers");
  refused(with("activation_scheme", "static"), "activation_scheme \"static\" is not \"dynamic\"");
  refused(with("modules_to_not_convert", "lm_head"),
          "modules_to_not_convert \"lm_head\" is not a list");
  refused(with("ignored_layers", {"lm_head", 3}), "ignored_layers holds 3, not a module name");
}

}  // namespace
}  // namespace draftgate
