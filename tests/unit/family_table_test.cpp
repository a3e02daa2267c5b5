// The family table (arch/family_table.h): well formed, read by detection (TargetConfig) and
// engine_support, mirrored in tests/support/families.json for the Python references, its traits
// named one by one. The engine against the naive reference for every family of the table:
// target_numerics_test.cpp; the CLI's refusal of unknown model types: family_cli_test.cpp.

#include "draftgate/arch/family_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "draftgate/arch/target_config.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/engine_support.h"
#include "draftgate/model/random_checkpoint.h"
#include "target_families.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A random checkpoint of the case; `patch` merged into its text config.
fs::path random_target(const testing::FamilyCase& c, const nlohmann::json& patch = {},
                       const std::string& tag = "") {
  const fs::path dir = testing::fresh_dir("family_table_" + c.name + tag);
  RandomTargetSpec spec;
  spec.family = c.family;
  spec.layout = c.layout;
  spec.layers = 4;
  write_random_target(dir, spec);
  if (!patch.is_null()) {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    (config.contains("text_config") ? config["text_config"] : config).merge_patch(patch);
    std::ofstream(dir / "config.json") << config.dump(2);
  }
  return dir;
}

TEST(FamilyTable, EveryEntryIsWellFormed) {
  std::set<std::string> names, types, classes;
  std::set<Family> enumerators;
  for_each_family([&](const FamilyEntry& f) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " twice";
    EXPECT_TRUE(enumerators.insert(f.family).second) << f.name << ": its enumerator is taken";
    EXPECT_FALSE(f.display_name.empty()) << f.name;
    EXPECT_THAT(f.model_types, ::testing::Contains(f.name))
        << f.name << ": the name must be one of its model types (make-target --family takes both)";
    for (const auto& t : f.model_types)
      EXPECT_TRUE(types.insert(t).second) << "model_type " << t << " belongs to two families";
    EXPECT_FALSE(f.architectures.empty()) << f.name << " names no architectures class";
    for (const auto& a : f.architectures)
      EXPECT_TRUE(classes.insert(a).second) << "architectures class " << a << " in two families";
    EXPECT_FALSE(f.layouts.empty()) << f.name << " has no layout";
    EXPECT_FALSE(f.engine.rope_types.empty()) << f.name << " runs no RoPE type";
    EXPECT_EQ(&entry_of(f.family), &f);
    EXPECT_EQ(family_name(f.family), f.name);
  });
}

TEST(FamilyTable, EveryModelTypeFindsItsFamilyAndNoOtherDoes) {
  for_each_family([](const FamilyEntry& f) {
    for (const auto& t : f.model_types) {
      const auto config = io::ModelConfig::from_json({{"model_type", t}}, "config.json");
      EXPECT_EQ(&family_of(config), &f) << t;
    }
  });
  EXPECT_EQ(find_family("qwen2_moe"), nullptr);  // Qwen2-MoE (shared expert): not a family
  EXPECT_EQ(find_family(""), nullptr);
  try {
    family_of(io::ModelConfig::from_json({{"model_type", "mystery"}}, "dir/config.json"));
    ADD_FAILURE() << "an unknown model type was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "dir/config.json");
    EXPECT_EQ(e.problem(), unknown_model_type("mystery"));
    for (const auto& f : families())
      for (const auto& t : f.model_types) EXPECT_THAT(e.problem(), HasSubstr(t));
  }
}

// Each family's classes go with each of its model types; a class of another family is refused
// naming both, a class no family lists (a drafter's DFlashDraftModel) is not.
TEST(FamilyTable, ArchitecturesOfAnotherFamilyAreRefused) {
  for_each_family([](const FamilyEntry& f) {
    for (const auto& t : f.model_types) {
      for (const auto& a : f.architectures)
        EXPECT_EQ(&family_of(io::ModelConfig::from_json({{"model_type", t}, {"architectures", {a}}},
                                                        "config.json")),
                  &f)
            << t << " with " << a;
      EXPECT_EQ(&family_of(io::ModelConfig::from_json(
                    {{"model_type", t}, {"architectures", {"DFlashDraftModel"}}}, "config.json")),
                &f);
      for (const auto& other : families()) {
        if (&other == &f) continue;
        try {
          family_of(io::ModelConfig::from_json(
              {{"model_type", t}, {"architectures", {other.architectures.front()}}},
              "dir/config.json"));
          ADD_FAILURE() << t << " with " << other.architectures.front() << " was accepted";
        } catch (const Error& e) {
          EXPECT_EQ(e.file(), "dir/config.json");
          EXPECT_THAT(e.problem(), HasSubstr("architectures names " + other.architectures.front() +
                                             ", a " + other.display_name + " class"));
          EXPECT_THAT(e.problem(), HasSubstr("model_type \"" + t + "\" is " + f.display_name));
        }
      }
    }
  });
}

// Not a list of class names is refused by name; absent or null is no claim at all.
TEST(FamilyTable, ArchitecturesMustBeAListOfClassNames) {
  const FamilyEntry& qwen3 = entry_of(Family::kQwen3);
  const auto with = [](nlohmann::json architectures) {
    return io::ModelConfig::from_json({{"model_type", "qwen3"}, {"architectures", architectures}},
                                      "config.json");
  };
  for (const nlohmann::json& bad :
       {nlohmann::json("Qwen3ForCausalLM"), nlohmann::json::array({3}), nlohmann::json::object()})
    EXPECT_THAT(architectures_disagree(with(bad), qwen3).value_or(""),
                HasSubstr("architectures must be a list of class names, got"))
        << bad.dump();
  EXPECT_FALSE(architectures_disagree(with(nullptr), qwen3));
}

class FamilyTableCase : public ::testing::TestWithParam<testing::FamilyCase> {};

// Detection: TargetConfig takes the family and every trait from the table entry.
TEST_P(FamilyTableCase, DetectionTakesFamilyAndTraitsFromTheTable) {
  const auto ckpt = io::Checkpoint::open(random_target(GetParam()));
  const TargetConfig c = TargetConfig::from(ckpt.config(), layout::resolve_decoder_stack(ckpt));
  const FamilyEntry& f = entry_of(GetParam().family);
  EXPECT_EQ(c.family, f.family);
  EXPECT_EQ(c.traits.norm, f.traits.norm);
  EXPECT_EQ(c.traits.qk_norm, f.traits.qk_norm);
  EXPECT_EQ(c.traits.partial_rope, f.traits.partial_rope);
  EXPECT_EQ(c.traits.attn_output_gate, f.traits.attn_output_gate);
  EXPECT_EQ(c.traits.linear_attention, f.traits.linear_attention);
  EXPECT_EQ(c.traits.mlp, f.traits.mlp);
  EXPECT_EQ(c.traits.shared_expert, f.traits.shared_expert);
}

// engine_support: every family of the table runs at its released layouts; a RoPE type or a
// quantisation outside its entry does not, and neither does an unknown model type — refused with
// the line detection refuses it with.
TEST_P(FamilyTableCase, EngineSupportReadsTheTable) {
  const auto support = [](const fs::path& dir) {
    const auto ckpt = io::Checkpoint::open(dir);
    return layout::engine_support(ckpt, layout::resolve_decoder_stack(ckpt));
  };
  const auto ok = support(random_target(GetParam()));
  EXPECT_TRUE(ok.supported) << ::testing::PrintToString(ok.reasons);

  const auto yarn =
      support(random_target(GetParam(), {{"rope_scaling", {{"rope_type", "yarn"}}}}, "_yarn"));
  EXPECT_FALSE(yarn.supported);
  EXPECT_THAT(yarn.reasons, ::testing::Contains(HasSubstr("rope_scaling.rope_type \"yarn\"")));

  const auto gptq = support(
      random_target(GetParam(), {{"quantization_config", {{"quant_method", "gptq"}}}}, "_gptq"));
  EXPECT_FALSE(gptq.supported);
  EXPECT_THAT(gptq.reasons, ::testing::Contains(HasSubstr("quant_method gptq")));
  // Fine-grained FP8 is in every entry: runnable, the scheme named.
  const auto fp8 = support(random_target(
      GetParam(),
      {{"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}}}},
      "_fp8"));
  EXPECT_TRUE(fp8.supported) << ::testing::PrintToString(fp8.reasons);
  EXPECT_EQ(fp8.quantization, "FP8 e4m3, 128x128 blocks");

  const fs::path unknown = random_target(GetParam(), {{"model_type", "mystery"}}, "_unknown");
  const auto refused = support(unknown);
  EXPECT_FALSE(refused.supported);
  EXPECT_THAT(refused.reasons, ::testing::Contains(unknown_model_type("mystery")));
  const auto ckpt = io::Checkpoint::open(unknown);
  try {
    TargetConfig::from(ckpt.config(), layout::resolve_decoder_stack(ckpt));
    ADD_FAILURE() << "detection accepted model_type mystery";
  } catch (const Error& e) {
    EXPECT_EQ(e.problem(), unknown_model_type("mystery"));
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTableCase,
                         ::testing::ValuesIn(testing::every_family_layout()),
                         [](const auto& p) { return p.param.name; });

// A config may leave out what the family's config class defaults (LlamaConfig: head_dim =
// hidden_size / num_attention_heads, rope_theta 10000); a family without such defaults requires
// the field. Biased projections are refused, never ignored.
TEST(FamilyTable, ConfigDefaultsComeFromTheEntry) {
  const auto load = [](const fs::path& dir) {
    const auto ckpt = io::Checkpoint::open(dir);
    return TargetConfig::from(ckpt.config(), layout::resolve_decoder_stack(ckpt));
  };
  const testing::FamilyCase llama{"llama", Family::kLlama, TargetLayout::kFlat};
  const fs::path bare =
      random_target(llama, {{"head_dim", nullptr}, {"rope_theta", nullptr}}, "_bare");
  const TargetConfig c = load(bare);
  EXPECT_EQ(c.head_dim, 64 / 4);
  EXPECT_EQ(c.rope_theta, 10000.0);
  const testing::FamilyCase qwen3{"qwen3", Family::kQwen3, TargetLayout::kFlat};
  try {
    load(random_target(qwen3, {{"head_dim", nullptr}}, "_bare"));
    ADD_FAILURE() << "qwen3 without head_dim was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.problem(), HasSubstr("missing required field head_dim"));
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    try {
      load(random_target(llama, {{key, true}}, std::string("_") + key));
      ADD_FAILURE() << key << " = true was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.problem(), HasSubstr(std::string(key) + " = true is not supported"));
    }
  }
}

// make-target's writer refuses a layout the family's entry does not list.
TEST(FamilyTable, RandomTargetsUseOnlyTheLayoutsOfTheEntry) {
  for_each_family([](const FamilyEntry& f) {
    for (TargetLayout l : {TargetLayout::kFlat, TargetLayout::kVlm, TargetLayout::kTextResave}) {
      if (std::find(f.layouts.begin(), f.layouts.end(), l) != f.layouts.end()) continue;
      RandomTargetSpec spec;
      spec.family = f.family;
      spec.layout = l;
      try {
        write_random_target(testing::fresh_dir("family_table_refused"), spec);
        ADD_FAILURE() << f.name << " wrote layout " << layout_name(l);
      } catch (const Error& e) {
        EXPECT_THAT(e.problem(), HasSubstr(std::string("not ") + layout_name(l)));
      }
    }
  });
}

// The Python references (tiny_dflash.py, peer_target.py) take the family from this copy.
TEST(FamilyTable, CheckedInJsonMirrorEqualsTheTable) {
  const fs::path mirror = fs::path(DRAFTGATE_SOURCE_DIR) / "tests/support/families.json";
  const nlohmann::json expected = families_json();
  const nlohmann::json stored = nlohmann::json::parse(std::ifstream(mirror), nullptr, false);
  if (stored == expected) return;
  // Outside the test process's scratch root, which is removed at exit: the hint's cp must work.
  const fs::path fresh = fs::temp_directory_path() / "draftgate-families.json";
  std::ofstream(fresh) << expected.dump(2) << "\n";
  ADD_FAILURE() << mirror.string() << " differs from the family table (arch/family_table.cpp); "
                << "the table's form is in " << fresh.string() << ": cp " << fresh.string() << " "
                << mirror.string();
}

// docs/targets.md describes every family of the table, named as `name`.
TEST(FamilyTable, DocsTargetsNamesEveryFamily) {
  const fs::path doc = fs::path(DRAFTGATE_SOURCE_DIR) / "docs/targets.md";
  const std::string text = testing::read_file(doc);
  for_each_family([&](const FamilyEntry& f) {
    EXPECT_THAT(text, HasSubstr("(`" + f.name + "`"))
        << doc.string() << " has no line for family " << f.name << " (a bullet \"**"
        << f.display_name << "** (`" << f.name << "`; ...)\" under \"Target engines\")";
  });
}

// Every trait named once: a trait left out, or named twice, throws (a compile error in the
// table's constexpr entries).
TEST(FamilyTable, TraitsBuilderWantsEveryTraitNamedOnce) {
  const auto all = [] {
    return TraitsBuilder()
        .norm(NormStyle::kOnePlusW)
        .qk_norm(false)
        .partial_rope(true)
        .attn_output_gate(false)
        .linear_attention(true)
        .mlp(MlpKind::kDense)
        .shared_expert(true);
  };
  const FamilyTraits t = all();
  EXPECT_EQ(t.norm, NormStyle::kOnePlusW);
  EXPECT_FALSE(t.qk_norm);
  EXPECT_TRUE(t.partial_rope);
  EXPECT_FALSE(t.attn_output_gate);
  EXPECT_TRUE(t.linear_attention);
  EXPECT_TRUE(t.shared_expert);
  const auto convert = [](const TraitsBuilder& b) { return static_cast<FamilyTraits>(b); };
  EXPECT_THROW(convert(TraitsBuilder().norm(NormStyle::kPlain)), std::logic_error);
  EXPECT_THROW(all().mlp(MlpKind::kMoe), std::logic_error);
}

}  // namespace
}  // namespace draftgate::model
