// config.json: text sub-config nestings, typed access, and errors that name the file and field.

#include "draftgate/io/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "error_text.h"

namespace draftgate::io {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

ModelConfig cfg(const json& j) { return ModelConfig::from_json(j, "config.json"); }

using testing::error_of;

TEST(ModelConfig, FindsEveryTextConfigNesting) {
  EXPECT_EQ(cfg({{"num_hidden_layers", 2}}).text_path(), "");
  EXPECT_EQ(cfg({{"text_config", {{"num_hidden_layers", 3}}}}).num_hidden_layers(), 3);
  EXPECT_EQ(cfg({{"llm_config", {{"num_hidden_layers", 4}}}}).text_path(), "llm_config");
  EXPECT_EQ(cfg({{"language_config", {{"num_hidden_layers", 5}}}}).num_hidden_layers(), 5);
  const auto thinker = cfg({{"thinker_config", {{"text_config", {{"num_hidden_layers", 6}}}}}});
  EXPECT_EQ(thinker.text_path(), "thinker_config.text_config");
  EXPECT_EQ(thinker.num_hidden_layers(), 6);
}

TEST(ModelConfig, NestedValuesWinAndFlatOnesAreTheFallback) {
  // Qwen2.5-VL >= 4.52 saves: flat params plus a duplicated text_config; nested tie flag may
  // disagree.
  const auto c = cfg({{"num_hidden_layers", 28},
                      {"tie_word_embeddings", false},
                      {"vocab_size", 100},
                      {"text_config", {{"num_hidden_layers", 28}, {"tie_word_embeddings", true}}}});
  EXPECT_EQ(c.tie_word_embeddings(), true);
  EXPECT_EQ(c.find_int("vocab_size"), 100);
  EXPECT_EQ(c.where("tie_word_embeddings"), "text_config.tie_word_embeddings");
}

TEST(ModelConfig, LayerCountAliases) {
  EXPECT_EQ(cfg({{"n_layer", 12}}).num_hidden_layers(), 12);
  EXPECT_EQ(cfg({{"num_layers", 40}}).num_hidden_layers(), 40);
  EXPECT_EQ(cfg({{"num_hidden_layers", 2}, {"num_nextn_predict_layers", 1}}).num_nextn_layers(), 1);
  EXPECT_EQ(cfg({{"text_config", {{"num_hidden_layers", 2}, {"mtp_num_hidden_layers", 1}}}})
                .num_nextn_layers(),
            1);
}

TEST(ModelConfig, ErrorsNameTheFileAndField) {
  EXPECT_THAT(error_of([] {
                cfg({{"hidden_size", 8}}).num_hidden_layers();
              }),
              HasSubstr("config.json: missing num_hidden_layers"));
  EXPECT_THAT(
      error_of([] {
        cfg({{"text_config", {{"num_hidden_layers", "64"}}}}).num_hidden_layers();
      }),
      HasSubstr("config.json: text_config.num_hidden_layers must be an integer, got \"64\""));
  EXPECT_THAT(error_of([] {
                cfg({{"num_hidden_layers", -1}}).num_hidden_layers();
              }),
              HasSubstr("not a plausible layer count"));
  EXPECT_THAT(error_of([] {
                cfg({{"layer_types", "full"}}).layer_types();
              }),
              HasSubstr("layer_types must be an array of strings"));
  EXPECT_THAT(error_of([] {
                cfg({{"text_config", {{"head_dim", 1}}}}).require_int("rope_theta");
              }),
              HasSubstr("missing required field rope_theta (looked in text_config and the root)"));
  EXPECT_THAT(error_of([] { cfg(json::array()); }), HasSubstr("config is not a JSON object"));
}

}  // namespace
}  // namespace draftgate::io
