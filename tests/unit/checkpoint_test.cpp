// Checkpoint directories: single file, sharded, metadata-only, and what makes one bad input.

#include "draftgate/io/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "draftgate/io/tensor_view.h"
#include "error_text.h"
#include "synthetic_layouts.h"

namespace draftgate::io {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::error_of;

void write_json(const fs::path& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(); }

TEST(Checkpoint, SingleFileLoadsZeroCopyTensors) {
  const fs::path dir = testing::fresh_dir("single");
  testing::write_tiny_weights(dir, testing::qwen3_dense(2, true));
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_FALSE(ckpt.metadata_only());
  EXPECT_TRUE(ckpt.contains("model.norm.weight"));
  EXPECT_EQ(ckpt.info("model.norm.weight")->shape, std::vector<std::int64_t>{2});
  const at::Tensor t = load_tensor(ckpt, "model.norm.weight");
  EXPECT_FLOAT_EQ(t[1].item<float>(), -2.0f);
}

TEST(Checkpoint, ShardedThroughTheIndexIgnoringConsolidated) {
  const fs::path dir = testing::fresh_dir("sharded");
  const float v[1] = {3.0f};
  const std::string_view b(reinterpret_cast<const char*>(v), 4);
  write_safetensors(dir / "a.safetensors", {{"x", DType::F32, {1}, b}});
  write_safetensors(dir / "b.safetensors", {{"y", DType::F32, {1}, b}});
  write_safetensors(dir / "consolidated.safetensors", {{"x", DType::F32, {1}, b}});
  write_json(dir / "config.json", {{"num_hidden_layers", 1}});
  write_json(dir / "model.safetensors.index.json",
             {{"metadata", {{"total_size", 8}}},
              {"weight_map", {{"x", "a.safetensors"}, {"y", "b.safetensors"}}}});
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ckpt.shard_names(), (std::vector<std::string>{"a.safetensors", "b.safetensors"}));

  fs::remove(dir /
             "model.safetensors.index.json");  // without an index: all shards but consolidated*
  EXPECT_EQ(Checkpoint::open(dir).shard_names(),
            (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
}

TEST(Checkpoint, MetadataOnlyHasNamesButNoData) {
  const fs::path dir = testing::fresh_dir("metaonly");
  testing::write_metadata_only(dir, testing::qwen3_dense(2, true));
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_TRUE(ckpt.metadata_only());
  EXPECT_TRUE(ckpt.contains("model.layers.1.mlp.up_proj.weight"));
  EXPECT_EQ(ckpt.info("model.norm.weight"), nullptr);
  EXPECT_THAT(error_of([&] { load_tensor(ckpt, "model.norm.weight"); }),
              HasSubstr("metadata-only checkpoint"));
}

TEST(Checkpoint, BadDirectories) {
  EXPECT_THAT(error_of([] { Checkpoint::open("/nonexistent/dir"); }),
              HasSubstr("/nonexistent/dir: no such directory"));
  const fs::path empty = testing::fresh_dir("empty");
  EXPECT_THAT(error_of([&] { Checkpoint::open(empty); }), HasSubstr("config.json: missing"));
  write_json(empty / "config.json", {{"num_hidden_layers", 1}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(empty); }),
              HasSubstr("no model.safetensors.index.json, model.safetensors or *.safetensors"));
}

TEST(Checkpoint, IndexProblems) {
  const fs::path dir = testing::fresh_dir("badindex");
  const float v[1] = {3.0f};
  write_safetensors(dir / "a.safetensors",
                    {{"x", DType::F32, {1}, {reinterpret_cast<const char*>(v), 4}}});
  write_json(dir / "config.json", {{"num_hidden_layers", 1}});
  const fs::path index = dir / "model.safetensors.index.json";

  write_json(index, {{"weight_map", {{"x", "a.safetensors"}, {"y", "b.safetensors"}}}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir); }),
              HasSubstr("b.safetensors: shard listed in model.safetensors.index.json is missing"));
  write_json(index, {{"weight_map", {{"x", "a.safetensors"}, {"z", "a.safetensors"}}}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir); }),
              HasSubstr("maps \"z\" to a.safetensors, which has no such tensor"));
  write_json(index, {{"weight_map", {{"x", "../a.safetensors"}}}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir); }), HasSubstr("not a plain file name"));
  write_json(index, {{"metadata", {}}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir); }), HasSubstr("missing \"weight_map\""));
}

TEST(Checkpoint, DuplicateTensorAcrossShardsWithoutIndex) {
  const fs::path dir = testing::fresh_dir("dupshards");
  const float v[1] = {3.0f};
  const std::string_view b(reinterpret_cast<const char*>(v), 4);
  write_safetensors(dir / "a.safetensors", {{"x", DType::F32, {1}, b}});
  write_safetensors(dir / "b.safetensors", {{"x", DType::F32, {1}, b}});
  write_json(dir / "config.json", {{"num_hidden_layers", 1}});
  EXPECT_THAT(error_of([&] { Checkpoint::open(dir); }),
              HasSubstr("tensor \"x\" also appears in a.safetensors"));
}

}  // namespace
}  // namespace draftgate::io
