// Module tree rendering: repeated identical layers collapse, different layer kinds stay apart.

#include "draftgate/layout/module_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "synthetic_layouts.h"

namespace draftgate::layout {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(FormatIndexSet, RangesProgressionsAndComplements) {
  EXPECT_EQ(format_index_set({0, 1, 2, 3}), "{0..3}");
  EXPECT_EQ(format_index_set({3, 7, 11, 15}), "{3,7,…,15}");
  EXPECT_EQ(format_index_set({0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14}), "{0..14}\\{3,7,…,11}");
  EXPECT_EQ(format_index_set({0, 1, 2, 5, 7, 8}), "{0..2,5,7..8}");
  EXPECT_EQ(format_index_set({4}), "{4}");
}

TEST(ModuleTree, HybridStackShowsTwoLayerKinds) {
  const auto l = testing::qwen35_vlm(8, 4);
  const std::string tree = render_module_tree(l.names, nullptr);
  EXPECT_THAT(tree, HasSubstr("model\n  language_model\n"));
  EXPECT_THAT(tree, HasSubstr("    layers.{0..2,4..6}  ×6\n"));
  EXPECT_THAT(tree, HasSubstr("    layers.{3,7}  ×2\n"));
  EXPECT_THAT(tree, HasSubstr("    blocks.{0..3}  ×4\n"));
  EXPECT_THAT(tree, HasSubstr("mtp\n"));
  EXPECT_THAT(tree, Not(HasSubstr("layers.5")));
}

TEST(ModuleTree, ShapesAndDtypesWhenKnown) {
  io::TensorInfo info{"model.norm.weight", io::DType::BF16, {64}, 0, 128};
  const std::string tree = render_module_tree({"model.norm.weight"}, [&](const std::string& n) {
    return n == info.name ? &info : nullptr;
  });
  EXPECT_EQ(tree, "model.norm.weight  BF16 [64]\n");
}

TEST(ModuleTree, LayersWithDifferentShapesAreNotMerged) {
  std::vector<io::TensorInfo> infos = {{"l.layers.0.w", io::DType::F32, {2}, 0, 8},
                                       {"l.layers.1.w", io::DType::F32, {2}, 8, 16},
                                       {"l.layers.2.w", io::DType::F32, {3}, 16, 28}};
  const std::string tree = render_module_tree({"l.layers.0.w", "l.layers.1.w", "l.layers.2.w"},
                                              [&](const std::string& n) -> const io::TensorInfo* {
                                                for (auto& i : infos)
                                                  if (i.name == n) return &i;
                                                return nullptr;
                                              });
  EXPECT_THAT(tree, HasSubstr("l.layers.{0..1}  ×2\n  w  F32 [2]\n"));
  EXPECT_THAT(tree, HasSubstr("l.layers.{2}  ×1\n  w  F32 [3]\n"));
}

}  // namespace
}  // namespace draftgate::layout
