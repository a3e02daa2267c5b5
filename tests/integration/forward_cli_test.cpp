// `draftgate forward` and `draftgate make-target` end to end: the dump format, and bad input
// exiting 2.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/target.h"
#include "draftgate/model/tensor_view.h"
#include "run_cli.h"
#include "synthetic_layouts.h"

namespace draftgate {
namespace {

using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

fs::path make_target(const std::string& name, const std::string& args) {
  const fs::path dir = testing::fresh_dir(name);
  const auto r = run_draftgate("make-target " + args + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

TEST(ForwardCli, DumpMatchesTheLibraryForBothFamilies) {
  for (const std::string family : {"qwen3", "qwen3_5"}) {
    const fs::path dir = make_target("fwd_" + family, "--family " + family + " --seed 3");
    const fs::path out = dir.string() + "-dump.safetensors";
    const auto r = run_draftgate("forward --model " + dir.string() +
                                 " --tokens 5,6,7,8 --taps 0,3 --dtype f32 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("logits [4, 256]"));
    EXPECT_EQ(r.err, "") << "no progress line when stderr is not a terminal";

    const auto file = io::SafetensorsFile::open(out);
    const auto& h = file->header();
    EXPECT_EQ(h.metadata.at("family"), family);
    EXPECT_EQ(h.metadata.at("dtype"), "f32");
    EXPECT_EQ(h.find("logits")->shape, (std::vector<std::int64_t>{4, 256}));
    EXPECT_EQ(h.find("hidden.3")->shape, (std::vector<std::int64_t>{4, 64}));
    EXPECT_EQ(h.find("hidden.3")->dtype, io::DType::F32);

    model::TargetOptions o;
    o.dtype = at::kFloat;
    const auto ckpt = io::Checkpoint::open(dir);
    const auto ref = model::TargetModel::load(ckpt, o)->forward({5, 6, 7, 8}, {0, 3});
    EXPECT_TRUE(at::equal(io::tensor_view(file, *h.find("logits")), ref.logits)) << family;
    EXPECT_TRUE(at::equal(io::tensor_view(file, *h.find("hidden.0")), ref.taps.at(0))) << family;
  }
}

TEST(ForwardCli, ChunkedAndRecurrentDumpsAgree) {
  const fs::path dir = make_target("fwd_gdn", "--family qwen3_5 --layout text");
  std::vector<at::Tensor> logits;
  for (const std::string gdn : {"chunked", "recurrent"}) {
    const fs::path out = dir.string() + "-" + gdn + ".safetensors";
    ASSERT_EQ(
        run_draftgate("forward --model " + dir.string() +
                      " --tokens 1,2,3,4,5,6,7 --dtype f32 --gdn " + gdn + " --out " + out.string())
            .exit_code,
        0);
    const auto file = io::SafetensorsFile::open(out);
    logits.push_back(io::tensor_view(file, *file->header().find("logits")).clone());
  }
  EXPECT_TRUE(at::allclose(logits[0], logits[1], 1e-5, 1e-5));
}

struct BadForward {
  std::string label;
  std::string args;     // appended after --model DIR
  std::string message;  // expected in the one-line error
};
void PrintTo(const BadForward& c, std::ostream* os) { *os << c.label; }

class BadForwardTest : public ::testing::TestWithParam<BadForward> {};

TEST_P(BadForwardTest, ExitsTwoWithOneLine) {
  static const fs::path dir = make_target("fwd_bad", "--family qwen3_5");
  const auto r = run_draftgate("forward --model " + dir.string() + " " + GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadForwardTest,
    ::testing::Values(
        BadForward{"token_out_of_vocab", "--tokens 1,999 --out /tmp/x.safetensors",
                   "token id 999 is outside the vocabulary [0, 256)"},
        BadForward{"tap_out_of_range", "--tokens 1 --taps 4 --out /tmp/x.safetensors",
                   "tap 4 is not a decoder layer (0..3)"},
        BadForward{"bad_dtype", "--tokens 1 --dtype fp8 --out /tmp/x.safetensors",
                   "unknown dtype \"fp8\""},
        BadForward{"bad_gdn", "--tokens 1 --gdn fla --out /tmp/x.safetensors",
                   "unknown algorithm \"fla\""},
        BadForward{"no_cuda", "--tokens 1 --device cuda --out /tmp/x.safetensors",
                   "built without CUDA"},
        BadForward{"bad_tokens", "--tokens 1,x --out /tmp/x.safetensors", "usage error"},
        BadForward{"unwritable_out", "--tokens 1 --out /nonexistent/dir/x.safetensors",
                   "--out /nonexistent/dir/x.safetensors: the folder /nonexistent/dir does not "
                   "exist"}),
    [](const auto& p) { return p.param.label; });

// Checkpoints whose config and weights disagree: the error names the checkpoint and the tensor or
// field.
TEST(ForwardCli, ConfigAndWeightsDisagree) {
  const fs::path dir = make_target("fwd_mismatch", "--family qwen3");
  auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["intermediate_size"] = 96;
  std::ofstream(dir / "config.json") << config.dump();
  auto r =
      run_draftgate("forward --model " + dir.string() + " --tokens 1 --out /tmp/x.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.err, HasSubstr("tensor \"model.layers.0.mlp.gate_proj.weight\" has shape [128, 64], config "
                       "implies [96, 64]"));

  config["intermediate_size"] = 128;
  config.erase("head_dim");
  std::ofstream(dir / "config.json") << config.dump();
  r = run_draftgate("forward --model " + dir.string() + " --tokens 1 --out /tmp/x.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("config.json: missing required field head_dim"));

  config["head_dim"] = 16;
  config["model_type"] = "gemma3_text";
  std::ofstream(dir / "config.json") << config.dump();
  r = run_draftgate("forward --model " + dir.string() + " --tokens 1 --out /tmp/x.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("model_type \"gemma3_text\" is not a target family draftgate knows"));
}

TEST(ForwardCli, MetadataOnlyCheckpointHasNoWeights) {
  const auto r =
      run_draftgate("forward --model " + std::string(DRAFTGATE_SOURCE_DIR) +
                    "/fixtures/real-layouts/qwen3-4b-hf --tokens 1 --out /tmp/x.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("metadata-only checkpoint"));
}

TEST(ForwardCli, QuantisedCheckpointIsRefusedByName) {
  const fs::path dir = make_target("fwd_quantised", "--family qwen3");
  const fs::path weights = dir / "model.safetensors";
  io::NamedTensors renamed;
  {
    const auto file = io::SafetensorsFile::open(weights);
    for (const auto& info : file->header().tensors) {
      std::string name = info.name;
      if (name == "model.layers.1.self_attn.q_proj.weight")
        name = "model.layers.1.self_attn.q_proj.weight_packed";
      renamed.emplace_back(name, io::tensor_view(file, info).clone());
    }
  }
  io::write_tensors(weights, renamed);
  const auto r =
      run_draftgate("forward --model " + dir.string() + " --tokens 1 --out /tmp/x.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("tensor \"model.layers.1.self_attn.q_proj.weight\" is stored quantised "
                        "(model.layers.1.self_attn.q_proj.weight_packed)"));
}

}  // namespace
}  // namespace draftgate
