// Decoder-stack resolution on the real checkpoint layouts and on synthetic variants of every
// family.

#include "draftgate/layout/decoder_stack.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "error_text.h"
#include "fixture_paths.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using testing::kRealLayouts;

using layout::DecoderStack;
using layout::resolve_decoder_stack;
using ::testing::Contains;
using ::testing::HasSubstr;

DecoderStack resolve(const testing::SyntheticLayout& l) {
  return resolve_decoder_stack(l.names, io::ModelConfig::from_json(l.config, "config.json"),
                               "synthetic");
}

std::vector<std::int64_t> indices_of(const DecoderStack& s, const std::string& type) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < s.layer_types.size(); ++i)
    if (s.layer_types[i] == type) out.push_back(static_cast<std::int64_t>(i));
  return out;
}

std::vector<std::string> rejected_prefixes(const DecoderStack& s) {
  std::vector<std::string> out;
  for (const auto& r : s.rejected) out.push_back(r.prefix);
  return out;
}

std::vector<std::int64_t> every(std::int64_t first, std::int64_t step, std::int64_t last) {
  std::vector<std::int64_t> v;
  for (auto i = first; i <= last; i += step) v.push_back(i);
  return v;
}

struct RealLayoutCase {
  std::string dir;
  std::string prefix;
  std::int64_t layers;
  std::string special_type;  // a layer type whose indices are checked
  std::vector<std::int64_t> special_indices;
  std::string lm_head;
  bool tied;
  std::vector<std::string> rejected;
};

void PrintTo(const RealLayoutCase& c, std::ostream* os) { *os << c.dir; }

class RealLayoutTest : public ::testing::TestWithParam<RealLayoutCase> {};

TEST_P(RealLayoutTest, ResolvesToTheExpectedStack) {
  const auto& c = GetParam();
  const auto ckpt = io::Checkpoint::open(kRealLayouts / c.dir);
  EXPECT_TRUE(ckpt.metadata_only());
  const DecoderStack s = resolve_decoder_stack(ckpt);
  EXPECT_EQ(s.prefix, c.prefix);
  EXPECT_EQ(s.num_layers, c.layers);
  ASSERT_EQ(static_cast<std::int64_t>(s.layer_types.size()), c.layers);
  EXPECT_EQ(indices_of(s, c.special_type), c.special_indices);
  EXPECT_EQ(s.lm_head, c.lm_head);
  EXPECT_EQ(s.tied_embeddings, c.tied);
  EXPECT_EQ(rejected_prefixes(s), c.rejected);
}

INSTANTIATE_TEST_SUITE_P(
    SharedRealLayouts, RealLayoutTest,
    ::testing::Values(RealLayoutCase{"qwen36-27b-awq-fantasylord",
                                     "model.language_model.layers",
                                     64,
                                     "full_attention",
                                     every(3, 4, 63),
                                     "lm_head.weight",
                                     false,
                                     {"model.visual.blocks", "mtp.layers"}},
                      RealLayoutCase{"jev-qwen35-2b-text",
                                     "model.language_model.layers",
                                     24,
                                     "full_attention",
                                     every(3, 4, 23),
                                     "model.language_model.embed_tokens.weight",
                                     true,
                                     {}},
                      RealLayoutCase{"olmocr-qwen2vl",
                                     "model.layers",
                                     28,
                                     "full_attention",
                                     every(0, 1, 27),
                                     "lm_head.weight",
                                     false,
                                     {"visual.blocks"}},
                      RealLayoutCase{"medgemma-27b-it",
                                     "language_model.model.layers",
                                     62,
                                     "full_attention",
                                     every(5, 6, 59),
                                     "language_model.model.embed_tokens.weight",
                                     true,
                                     {"vision_tower.vision_model.encoder.layers"}},
                      RealLayoutCase{"qwen3-4b-hf",
                                     "model.layers",
                                     36,
                                     "full_attention",
                                     every(0, 1, 35),
                                     "model.embed_tokens.weight",
                                     true,
                                     {}}),
    [](const auto& p) {
      std::string name = p.param.dir;
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(RealLayout, Qwen36LinearLayersAreAllTheOthers) {
  const auto s =
      resolve_decoder_stack(io::Checkpoint::open(kRealLayouts / "qwen36-27b-awq-fantasylord"));
  EXPECT_EQ(indices_of(s, "linear_attention").size(), 48u);
  ASSERT_EQ(s.rejected.size(), 2u);
  EXPECT_EQ(s.rejected[0].count, 27);
  EXPECT_THAT(s.rejected[0].reason, HasSubstr("non-text tower"));
  EXPECT_THAT(s.rejected[1].reason, HasSubstr("MTP"));
}

TEST(RealLayout, JevTextOnlyDeclaresMtpButShipsNone) {
  const auto s = resolve_decoder_stack(io::Checkpoint::open(kRealLayouts / "jev-qwen35-2b-text"));
  EXPECT_TRUE(s.inline_mtp_layers.empty());
  EXPECT_TRUE(s.rejected.empty());
}

TEST(Synthetic, Qwen3DenseTiedAndUntied) {
  auto tied = resolve(testing::qwen3_dense(4, true));
  EXPECT_EQ(tied.prefix, "model.layers");
  EXPECT_TRUE(tied.tied_embeddings);
  EXPECT_EQ(tied.lm_head, "model.embed_tokens.weight");
  EXPECT_EQ(tied.layer_types, std::vector<std::string>(4, "full_attention"));
  auto untied = resolve(testing::qwen3_dense(4, false));
  EXPECT_FALSE(untied.tied_embeddings);
  EXPECT_EQ(untied.lm_head, "lm_head.weight");
}

TEST(Synthetic, Qwen35VlmRejectsVisionAndMtp) {
  auto s = resolve(testing::qwen35_vlm(8, 8));  // vision depth equal to the text depth on purpose
  EXPECT_EQ(s.prefix, "model.language_model.layers");
  EXPECT_EQ(indices_of(s, "full_attention"), (std::vector<std::int64_t>{3, 7}));
  EXPECT_EQ(rejected_prefixes(s), (std::vector<std::string>{"model.visual.blocks", "mtp.layers"}));
}

TEST(Synthetic, Qwen35TextOnlyResaveKeepsLanguageModelPrefix) {
  auto s = resolve(testing::qwen35_text_only(8));
  EXPECT_EQ(s.prefix, "model.language_model.layers");
  EXPECT_TRUE(s.tied_embeddings);
}

TEST(Synthetic, Qwen2VlOldFlatLayout) {
  auto s = resolve(testing::qwen2vl_old(6, 6));
  EXPECT_EQ(s.prefix, "model.layers");
  EXPECT_EQ(rejected_prefixes(s), std::vector<std::string>{"visual.blocks"});
}

TEST(Synthetic, LlavaAndGemmaStyleWithSameDepthVisionTower) {
  auto s = resolve(testing::llava_style(6, 6));
  EXPECT_EQ(s.prefix, "language_model.model.layers");
  EXPECT_EQ(s.lm_head, "language_model.lm_head.weight");
  EXPECT_EQ(rejected_prefixes(s),
            std::vector<std::string>{"vision_tower.vision_model.encoder.layers"});
}

TEST(Synthetic, Llama4FusedExperts) {
  auto s = resolve(testing::llama4_style(4, 4));
  EXPECT_EQ(s.prefix, "language_model.model.layers");
  EXPECT_EQ(rejected_prefixes(s), std::vector<std::string>{"vision_model.model.layers"});
}

TEST(Synthetic, MllamaCrossAttentionLayers) {
  auto s = resolve(testing::mllama_style(10, {3, 8}, 10, 2));
  EXPECT_EQ(s.prefix, "language_model.model.layers");
  EXPECT_EQ(indices_of(s, "cross_attention"), (std::vector<std::int64_t>{3, 8}));
  EXPECT_EQ(rejected_prefixes(s),
            (std::vector<std::string>{"vision_model.global_transformer.layers",
                                      "vision_model.transformer.layers"}));
}

TEST(Synthetic, Glm45InlineMtpLayerIsExcluded) {
  auto s = resolve(testing::glm45_inline_mtp(5));
  EXPECT_EQ(s.prefix, "model.layers");
  EXPECT_EQ(s.num_layers, 5);
  EXPECT_EQ(s.layer_types.size(), 5u);
  EXPECT_EQ(s.inline_mtp_layers, std::vector<std::int64_t>{5});
}

TEST(Synthetic, DuplicatedWrapperPrefix) {
  auto s = resolve(testing::duplicated_wrapper(4));
  EXPECT_EQ(s.prefix, "model.language_model.language_model.language_model.layers");
  EXPECT_EQ(s.embed_tokens,
            "model.language_model.language_model.language_model.embed_tokens.weight");
  EXPECT_EQ(rejected_prefixes(s), std::vector<std::string>{"model.language_model.visual.blocks"});
  EXPECT_THAT(s.notes.front(), HasSubstr("repeats the wrapper"));
}

TEST(Synthetic, GptqQuantisedSuffixes) {
  auto s = resolve(testing::gptq_quantised(3));
  EXPECT_EQ(s.prefix, "model.layers");
  EXPECT_EQ(s.layer_types.size(), 3u);
}

TEST(Synthetic, QuantisedEmbeddingAndHead) {
  auto l = testing::qwen3_dense(2, false);
  for (auto& n : l.names)
    if (n == "lm_head.weight") n = "lm_head.weight_packed";
  EXPECT_EQ(resolve(l).lm_head, "lm_head.weight_packed");
}

TEST(Synthetic, FilesWinOverTheTieFlag) {
  auto l = testing::qwen3_dense(2, true);
  l.config["tie_word_embeddings"] = false;
  auto s = resolve(l);
  EXPECT_TRUE(s.tied_embeddings);
  EXPECT_THAT(s.notes, Contains(HasSubstr("the files decide")));
}

TEST(Synthetic, IntervalWithoutLayerTypes) {
  auto l = testing::qwen35_vlm(8, 2);
  l.config["text_config"].erase("layer_types");
  EXPECT_EQ(indices_of(resolve(l), "full_attention"), (std::vector<std::int64_t>{3, 7}));
}

TEST(Synthetic, LegacyLayerTypeNamesAreRemapped) {
  auto l = testing::qwen35_vlm(4, 2);
  l.config["text_config"]["layer_types"] = {"mamba", "mamba", "mamba", "attention"};
  auto s = resolve(l);
  EXPECT_EQ(s.layer_types.front(), "linear_attention");
  EXPECT_EQ(s.layer_types.back(), "full_attention");
}

// --- errors: never a silent fallback ---

std::string error_of(const testing::SyntheticLayout& l) {
  return testing::error_of([&] { resolve(l); });
}

TEST(ResolutionError, NoneFoundListsEveryCandidate) {
  auto l = testing::qwen35_vlm(8, 3);
  l.config["text_config"]["num_hidden_layers"] = 9;
  l.config["text_config"].erase("layer_types");
  const std::string e = error_of(l);
  EXPECT_THAT(e, HasSubstr("no decoder stack matches num_hidden_layers = 9 (text_config)"));
  EXPECT_THAT(
      e, HasSubstr("model.language_model.layers [0..7] 8 layers - count 8 != num_hidden_layers 9"));
  EXPECT_THAT(e, HasSubstr("model.visual.blocks [0..2] 3 layers - non-text tower"));
  EXPECT_THAT(e, HasSubstr("mtp.layers [0..0] 1 layers - MTP"));
}

TEST(ResolutionError, AmbiguousWhenTwoStacksQualify) {
  auto a = testing::qwen3_dense(3, true);
  auto b = testing::llava_style(3, 0);
  a.names.insert(a.names.end(), b.names.begin(), b.names.end());
  const std::string e = error_of(a);
  EXPECT_THAT(e, HasSubstr("ambiguous decoder stack: 2 stacks"));
  EXPECT_THAT(e, HasSubstr("language_model.model.layers [0..2]"));
  EXPECT_THAT(e, HasSubstr("model.layers [0..2]"));
}

TEST(ResolutionError, TwoStacksOnlyOneWithEmbeddingIsChosen) {
  auto l = testing::qwen3_dense(3, true);
  for (int i = 0; i < 3; ++i) {
    auto extra = testing::dense_layer("model.draft.layers." + std::to_string(i));
    l.names.insert(l.names.end(), extra.begin(), extra.end());
  }
  auto s = resolve(l);
  EXPECT_EQ(s.prefix, "model.layers");
  EXPECT_THAT(s.rejected.front().reason, HasSubstr("owns no embedding"));
}

TEST(ResolutionError, NonContiguousIndices) {
  auto l = testing::qwen3_dense(4, true);
  l.names.erase(
      std::remove_if(l.names.begin(), l.names.end(),
                     [](const std::string& n) { return n.rfind("model.layers.2.", 0) == 0; }),
      l.names.end());
  l.config["num_hidden_layers"] = 3;
  EXPECT_THAT(error_of(l), HasSubstr("indices are not contiguous from 0"));
}

TEST(ResolutionError, ConfigTypeContradictsTensors) {
  auto l = testing::qwen35_vlm(8, 2);
  l.config["text_config"]["layer_types"][0] = "full_attention";
  EXPECT_THAT(error_of(l),
              HasSubstr("makes layer 0 full_attention but model.language_model.layers.0 owns "
                        "linear_attn.* tensors"));
}

TEST(ResolutionError, LayerTypesOfTheWrongLength) {
  auto l = testing::qwen35_vlm(8, 2);
  l.config["text_config"]["layer_types"].erase(0);
  EXPECT_THAT(error_of(l),
              HasSubstr("text_config.layer_types has 7 entries but num_hidden_layers is 8"));
}

TEST(ResolutionError, MissingLayerCount) {
  auto l = testing::qwen3_dense(2, true);
  l.config.erase("num_hidden_layers");
  EXPECT_THAT(error_of(l), HasSubstr("config.json: missing num_hidden_layers"));
}

TEST(ResolutionError, MissingEmbeddingAndNorm) {
  auto l = testing::qwen3_dense(2, false);
  auto drop = [&](const std::string& name) {
    l.names.erase(std::remove(l.names.begin(), l.names.end(), name), l.names.end());
  };
  drop("model.norm.weight");
  EXPECT_THAT(error_of(l), HasSubstr("has no final norm at model.norm"));
  drop("model.embed_tokens.weight");
  EXPECT_THAT(error_of(l), HasSubstr("has no token embedding at model.embed_tokens"));
}

TEST(SplitStackName, FirstIndexAfterAContainerWordIsTheLayer) {
  layout::StackName s;
  ASSERT_TRUE(layout::split_stack_name("model.layers.12.mlp.experts.7.up_proj.weight", &s));
  EXPECT_EQ(s.prefix, "model.layers");
  EXPECT_EQ(s.index, 12);
  EXPECT_EQ(s.suffix, "mlp.experts.7.up_proj.weight");
  EXPECT_FALSE(layout::split_stack_name("visual.merger.mlp.0.weight", &s));
  EXPECT_FALSE(layout::split_stack_name("model.layers.weight", &s));
}

}  // namespace
}  // namespace draftgate
