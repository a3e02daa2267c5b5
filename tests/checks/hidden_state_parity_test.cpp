// hidden_state_parity, specified: backends agree within their budgets; a reference dump names the
// first diverging layer.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "check_runs.h"
#include "checks/check.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "draftgate/model/tensor_view.h"
#include "test_files.h"

namespace draftgate::checks {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using testing::run;

// A random Qwen3.5 target with bf16 weights (exercises both GDN algorithms and the bf16 budget).
const fs::path& hybrid_target() {
  static const fs::path dir = [] {
    const fs::path d = testing::fresh_dir("parity") / "target";
    model::RandomTargetSpec t;
    t.family = model::Family::kQwen3_5;
    t.layout = model::TargetLayout::kVlm;
    model::write_random_target(d, t);
    return d;
  }();
  return dir;
}

TEST(HiddenStateParity, BackendsAgreeWithinTheirBudgets) {
  Artifacts a;
  a.target = hybrid_target();
  const CheckResult gdn = run("hidden_state_parity", a);  // f32 chunked vs recurrent
  EXPECT_EQ(gdn.status, Status::kPass) << gdn.message;
  EXPECT_EQ(gdn.evidence["budget"], "f32");
  const CheckResult dtypes = run("hidden_state_parity", a, {{"a", "cpu:f32"}, {"b", "cpu:bf16"}});
  EXPECT_EQ(dtypes.status, Status::kPass) << dtypes.message;
  EXPECT_EQ(dtypes.evidence["budget"], "bf16");
  const CheckResult strict =
      run("hidden_state_parity", a,
          {{"a", "cpu:f32"},
           {"b", "cpu:bf16"},
           {"bf16", {{"max_nmse", 1e-12}, {"min_cosine", 1.0}, {"min_top1", 1.0}}}});
  EXPECT_EQ(strict.status, Status::kFail) << "bf16 cannot meet an f32-tight budget";
}

TEST(HiddenStateParity, ReferenceDumpNamesTheFirstDivergingLayer) {
  const io::Checkpoint ckpt = io::Checkpoint::open(hybrid_target());
  model::TargetOptions o;
  o.dtype = at::kFloat;
  const auto target = model::TargetModel::load(ckpt, o);
  const std::vector<std::int64_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6};
  const auto r = target->forward(tokens, {0, 1, 2, 3});
  auto dump = [&](const std::string& name, std::int64_t perturbed_layer, std::int64_t drop_layer,
                  const std::string& family = "qwen3_5") {
    io::NamedTensors t = {{"logits", r.logits}};
    for (std::int64_t l = 0; l < 4; ++l) {
      if (l == drop_layer) continue;
      at::Tensor h = r.taps.at(l);
      if (l >= perturbed_layer) h = h + 0.05 * h.abs().max() * at::randn(h.sizes());
      t.emplace_back("hidden." + std::to_string(l), h);
    }
    const fs::path p = hybrid_target().parent_path() / name;
    io::write_tensors(p, t,
                      {{"tokens", "3,1,4,1,5,9,2,6"},
                       {"dtype", "f32"},
                       {"family", family},
                       {"model", "/data/some-target"}});
    return p.string();
  };
  Artifacts a;
  a.target = hybrid_target();
  a.reference_dump = dump("same.safetensors", 99, -1);
  const CheckResult same = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(same.status, Status::kPass) << same.message;
  a.reference_dump = dump("drift.safetensors", 2, -1);
  const CheckResult drift = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(drift.status, Status::kFail);
  EXPECT_EQ(drift.evidence["first_diverging_layer"], 2);
  EXPECT_THAT(drift.message, HasSubstr("diverge from layer 2"));
  a.reference_dump = dump("missing.safetensors", 99, 1);
  const CheckResult missing = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(missing.status, Status::kError);
  EXPECT_THAT(missing.message, HasSubstr("reference dump has no \"hidden.1\""));
  // A dump of another family's model is refused by name (it "diverged from layer 0").
  a.reference_dump = dump("other_family.safetensors", 99, -1, "qwen3");
  const CheckResult other = run("hidden_state_parity", a, {{"a", "cpu:f32"}});
  EXPECT_EQ(other.status, Status::kError);
  EXPECT_THAT(other.message, HasSubstr("reference dump was made with a qwen3 target "
                                       "(/data/some-target) but --target"));
  a.reference_dump = dump("from_layer_0.safetensors", 0, -1);
  EXPECT_THAT(run("hidden_state_parity", a, {{"a", "cpu:f32"}}).message,
              HasSubstr("is the dump of this checkpoint?"));
}

}  // namespace
}  // namespace draftgate::checks
