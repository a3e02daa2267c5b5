// The streamed single-pass target (sequence_target.h) against the in-memory one: the same bits at
// the same dtype on both families, bf16 and f32, tied and untied, lm_head in vocabulary blocks;
// the memory budget picks the path; the step-record checks give the same verdicts streamed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "checks/check.h"
#include "checks/model_engine.h"
#include "checks/target_cache.h"
#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/few_row_matmul.h"
#include "draftgate/model/memory_budget.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/sequence_target.h"
#include "synthetic_layouts.h"
#include "synthetic_step_record.h"
#include "target_families.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Sets the memory budget variable for the scope of one test.
class ScopedBudget {
 public:
  explicit ScopedBudget(const char* mib) { ::setenv(kMemoryBudgetVariable, mib, 1); }
  ~ScopedBudget() { ::unsetenv(kMemoryBudgetVariable); }
};

// Each family of the table at its default layout, with an lm_head and tied to the embedding.
struct StreamCase {
  std::string name;
  Family family;
  TargetLayout layout;
  bool tied;
};
void PrintTo(const StreamCase& c, std::ostream* os) { *os << c.name; }
std::vector<StreamCase> stream_cases() {
  std::vector<StreamCase> cases;
  for (const auto& f : testing::every_family())
    for (bool tied : {false, true})
      cases.push_back({f.name + (tied ? "_tied" : ""), f.family, f.layout, tied});
  return cases;
}

class StreamedTargetTest : public ::testing::TestWithParam<StreamCase> {
 protected:
  // A bf16 checkpoint of the case's family, written once per case.
  const io::Checkpoint& checkpoint() {
    static std::map<std::string, std::unique_ptr<io::Checkpoint>> cache;
    auto& slot = cache[GetParam().name];
    if (!slot) {
      RandomTargetSpec spec;
      spec.family = GetParam().family;
      spec.layout = GetParam().layout;
      spec.tied = GetParam().tied;
      spec.layers = 4;
      spec.seed = 11;
      const auto dir = testing::fresh_dir("streamed_" + GetParam().name);
      write_random_target(dir, spec);
      slot = std::make_unique<io::Checkpoint>(io::Checkpoint::open(dir));
    }
    return *slot;
  }
  static std::vector<std::int64_t> tokens() {
    std::vector<std::int64_t> t;
    for (std::int64_t i = 0; i < 24; ++i) t.push_back((i * 53 + 5) % 256);
    return t;
  }
};

void expect_identical(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_EQ(a.scalar_type(), b.scalar_type()) << what;
  EXPECT_TRUE(at::equal(a, b))
      << what << ": max |diff| "
      << (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Both ways of reading a layer (into memory ahead of use, or through the mapping) at both dtypes.
TEST_P(StreamedTargetTest, GivesTheInMemoryForwardBitForBitAtEitherDtype) {
  const std::vector<std::int64_t> taps = {0, 1, 2, 3};
  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    for (GdnAlgorithm gdn : {GdnAlgorithm::kChunked, GdnAlgorithm::kRecurrent}) {
      for (LayerReads reads : {LayerReads::kStaged, LayerReads::kMapped}) {
        TargetOptions o;
        o.dtype = dtype;
        o.gdn = gdn;
        const auto in_memory = open_sequence_target(checkpoint(), o, TargetPath::kInMemory);
        // bf16: 100-row vocabulary blocks, lm_head in three pieces, the last one short. f32, and
        // bf16 where the CPU has no bf16 dot products (a float32 GEMM then, ops.h): the default
        // blocks (one here) — OpenBLAS multiplies tiny f32 blocks with its small-matrix kernels,
        // whose sums differ from the whole product's by an ulp (measured 1e-6).
        const bool float32_gemm =
            dtype == at::kFloat || !few_row_kernel_available(FewRowKernel::kBf16Dot);
        const StreamedTarget streamed(checkpoint(), o,
                                      float32_gemm ? StreamedTarget::kVocabChunkRows : 100, reads);
        ASSERT_FALSE(in_memory->streamed());
        ASSERT_TRUE(streamed.streamed());
        const std::string label = std::string(dtype == at::kFloat ? "f32" : "bf16") +
                                  (reads == LayerReads::kStaged ? " staged" : " mapped");
        std::int64_t layers_reported = 0;
        const ForwardResult want = in_memory->forward(tokens(), taps);
        const ForwardResult got =
            streamed.forward(tokens(), taps, true, [&](auto done, auto total) {
              EXPECT_EQ(done, ++layers_reported);
              EXPECT_EQ(total, 4);
            });
        EXPECT_EQ(layers_reported, 4);
        expect_identical(got.logits, want.logits, label + " logits");
        // Without taps each layer's last add runs in the next layer's input norm (the final
        // norm's for the last): the bits of the sums taken at every layer.
        expect_identical(in_memory->forward(tokens(), {}).logits, want.logits,
                         label + " logits without taps");
        for (auto l : taps)
          expect_identical(got.taps.at(l), want.taps.at(l), label + " tap " + std::to_string(l));
        const at::Tensor h = want.taps.at(3);
        expect_identical(streamed.final_norm(h), in_memory->final_norm(h), label + " final norm");
        expect_identical(streamed.lm_head(h), in_memory->lm_head(h), label + " lm_head");
        expect_identical(streamed.embed(tokens()), in_memory->embed(tokens()), label + " embed");
        if (float32_gemm) {  // the blocks still, within a few roundings of the largest logit
          const at::Tensor blocks = StreamedTarget(checkpoint(), o, 100, reads).lm_head(h);
          const at::Tensor whole = in_memory->lm_head(h);
          const double ulp = std::ldexp(1.0, dtype == at::kFloat ? -23 : -7);
          EXPECT_LE((blocks - whole).abs().max().item<double>(),
                    4 * ulp * whole.abs().max().item<double>())
              << label << " lm_head in blocks";
        }
      }
    }
  }
}

// One walk for a float32 and a bf16 target of the checkpoint (a layer read once, run at both
// dtypes): each result is that target's own forward, bit for bit; progress counts layers once.
TEST_P(StreamedTargetTest, ForwardTogetherGivesEachTargetItsOwnForward) {
  const std::vector<std::int64_t> taps = {1, 3};
  TargetOptions f32, bf16;
  f32.dtype = at::kFloat;
  bf16.dtype = at::kBFloat16;
  const StreamedTarget a(checkpoint(), f32), b(checkpoint(), bf16);
  std::int64_t layers_reported = 0;
  const auto both = StreamedTarget::forward_together(
      {&a, &b}, tokens(), taps, true, [&](auto done, auto) { EXPECT_EQ(done, ++layers_reported); });
  EXPECT_EQ(layers_reported, 4);
  ASSERT_EQ(both.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    const StreamedTarget& t = k == 0 ? a : b;
    const std::string label = k == 0 ? "f32" : "bf16";
    const ForwardResult alone = t.forward(tokens(), taps);
    expect_identical(both[k].logits, alone.logits, label + " logits");
    for (auto l : taps)
      expect_identical(both[k].taps.at(l), alone.taps.at(l), label + " tap " + std::to_string(l));
  }
  EXPECT_FALSE(at::equal(both[0].logits, both[1].logits)) << "the two dtypes ran the same stream";
}

TEST_P(StreamedTargetTest, RefusesWhatTheInMemoryForwardRefuses) {
  const StreamedTarget streamed(checkpoint(), {});
  EXPECT_THROW(streamed.forward({}, {}), Error);
  EXPECT_THROW(streamed.forward({256}, {}), Error);
  EXPECT_THROW(streamed.forward({1, 2}, {4}), Error);
}

INSTANTIATE_TEST_SUITE_P(Families, StreamedTargetTest, ::testing::ValuesIn(stream_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(MemoryBudget, TheVariableCapsTheBudgetAndPicksTheStreamedPath) {
  const fs::path dir = testing::training_step_models() / "target";
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  TargetOptions o;
  o.dtype = at::kFloat;
  EXPECT_FALSE(open_sequence_target(ckpt, o)->streamed()) << "a small model stays in memory";
  {
    const ScopedBudget budget("1");
    EXPECT_EQ(available_memory_bytes(), 1u << 20);
    EXPECT_TRUE(open_sequence_target(ckpt, o)->streamed());
  }
  for (const char* bad : {"x", "-5", "0", "12MB"}) {
    const ScopedBudget budget(bad);
    try {
      available_memory_bytes();
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(kMemoryBudgetVariable));
    }
  }
}

// A float32 load converts what it does not keep as stored: a bf16 checkpoint's untied lm_head is
// kept (it is multiplied as stored, as every linear weight), so the untied checkpoint needs no more
// converted memory than the same one tied, whose head is the embedding; at bf16 nothing is
// converted, and training copies every tensor.
TEST(MemoryBudget, AnUntiedBf16HeadIsNotCountedAsConverted) {
  std::map<bool, std::unique_ptr<io::Checkpoint>> by_tie;
  for (bool tied : {false, true}) {
    RandomTargetSpec spec;
    spec.tied = tied;
    spec.seed = 3;
    const fs::path dir = testing::fresh_dir(tied ? "budget_tied" : "budget_untied");
    write_random_target(dir, spec);
    by_tie[tied] = std::make_unique<io::Checkpoint>(io::Checkpoint::open(dir));
  }
  const auto bytes = [&](bool tied, std::size_t element_bytes, bool copy_all) {
    const io::Checkpoint& c = *by_tie.at(tied);
    return materialised_weight_bytes(c, layout::resolve_decoder_stack(c), element_bytes, copy_all);
  };
  const io::Checkpoint& untied = *by_tie.at(false);
  const std::uint64_t head =
      untied.info(layout::resolve_decoder_stack(untied).lm_head)->numel() * sizeof(float);
  EXPECT_GT(bytes(false, 4, false), 0u);
  EXPECT_EQ(bytes(false, 4, false), bytes(true, 4, false));
  EXPECT_EQ(bytes(false, 2, false), 0u);
  EXPECT_EQ(bytes(false, 4, true), bytes(true, 4, true) + head);
}

// The three target-side step-record checks reach the same verdict with the same numbers when the
// budget forces the streamed path.
TEST(MemoryBudget, StepRecordChecksAgreeStreamed) {
  const fs::path dir = testing::training_step_models();
  train::StepRecord rec = testing::training_step(train::LossType::kHardCrossEntropy);
  const fs::path path = dir / "streamed_checks.safetensors";
  train::write_step_record(path, rec);
  checks::Artifacts a;
  a.target = dir / "target";
  a.drafter = dir / "drafter";
  a.step_record = path;
  a.engine = &checks::model_engine();
  for (const char* check :
       {"target_logits_noise_free", "fc_excludes_target_layer", "train_infer_consistency"}) {
    const checks::CheckResult in_memory = run_check(*checks::find_check(check), a, nullptr);
    const ScopedBudget budget("1");
    const checks::CheckResult streamed = run_check(*checks::find_check(check), a, nullptr);
    EXPECT_EQ(in_memory.status, checks::Status::kPass) << check << ": " << in_memory.message;
    EXPECT_EQ(streamed.status, in_memory.status) << check << ": " << streamed.message;
    EXPECT_EQ(streamed.measured, in_memory.measured) << check;
  }
}

// A streamed forward reads the whole checkpoint: the next check on the same sequence gets the last
// one's result (fc_excludes_target_layer taps every layer, then target_logits_noise_free asks for
// the last tap and the logits), the same bits as a fresh forward; another sequence is recomputed.
TEST(MemoryBudget, TheNextCheckReusesTheLastStreamedForward) {
  // Generated before the budget shrinks (generation itself is held to the budget).
  const io::Checkpoint ckpt = io::Checkpoint::open(testing::training_step_models() / "target");
  const ScopedBudget budget("1");
  const SequenceTarget& target = checks::sequence_target(ckpt, at::kFloat);
  ASSERT_TRUE(target.streamed());
  const std::int64_t last = target.config().num_layers - 1;
  std::vector<std::int64_t> all(target.config().num_layers);
  for (std::int64_t l = 0; l <= last; ++l) all[l] = l;
  const std::vector<std::int64_t> ids = {5, 9, 2, 7, 1, 3};
  const ForwardResult first =
      checks::forward_with_progress("fc", target, ids, all, /*want_logits=*/false);
  EXPECT_FALSE(first.logits.defined()) << "not asked for";
  const ForwardResult second = checks::forward_with_progress("noise", target, ids, {last});
  EXPECT_EQ(second.taps.at(last).data_ptr(), first.taps.at(last).data_ptr()) << "recomputed";
  EXPECT_EQ(second.taps.size(), 1u);
  const ForwardResult fresh = target.forward(ids, {last});
  EXPECT_TRUE(at::equal(second.logits, fresh.logits));
  EXPECT_TRUE(at::equal(second.taps.at(last), fresh.taps.at(last)));

  const std::vector<std::int64_t> other = {5, 9, 2, 7, 1, 4};
  const ForwardResult third = checks::forward_with_progress("noise", target, other, {last});
  EXPECT_TRUE(at::equal(third.logits, target.forward(other, {}).logits));
  EXPECT_FALSE(at::equal(third.logits, fresh.logits));
}

// The float32 walk of a streamed target computes the bf16 forward the precision models ask for
// beside it (bf16 records: the common case): asking for it then costs no second read of the
// checkpoint — the float32 result stays stored, which a new walk would have replaced — and it has
// the bits of the bf16 target's own forward.
TEST(MemoryBudget, TheFloat32WalkServesTheBf16ForwardOfThePrecisionModels) {
  RandomTargetSpec spec;  // 1.5 MB at bf16: streamed at both dtypes under a 1 MiB budget
  spec.hidden = 128, spec.intermediate = 256, spec.head_dim = 32;
  const fs::path dir = testing::fresh_dir("streamed_companion");
  write_random_target(dir, spec);
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  const ScopedBudget budget("1");
  const SequenceTarget& f32 = checks::sequence_target(ckpt, at::kFloat);
  const SequenceTarget& bf16 = checks::sequence_target(ckpt, at::kBFloat16);
  ASSERT_TRUE(f32.streamed());
  ASSERT_TRUE(bf16.streamed());
  const std::int64_t last = f32.config().num_layers - 1;
  const std::vector<std::int64_t> ids = {4, 8, 15, 16, 23, 42};
  const ForwardResult first = checks::forward_with_progress("fc", f32, ids, {0, last});
  const ForwardResult precision = checks::forward_with_progress("noise", bf16, ids, {last});
  const ForwardResult again = checks::forward_with_progress("fc", f32, ids, {last});
  EXPECT_EQ(again.taps.at(last).data_ptr(), first.taps.at(last).data_ptr())
      << "the bf16 request ran a walk of its own";
  const ForwardResult fresh = bf16.forward(ids, {last});
  EXPECT_TRUE(at::equal(precision.logits, fresh.logits));
  EXPECT_TRUE(at::equal(precision.taps.at(last), fresh.taps.at(last)));
  EXPECT_FALSE(at::equal(precision.logits, first.logits));
}

// Where the run expects no bf16 forward (records declared float32: checks::plan_target_forwards),
// the walk computes float32 alone: a bf16 request is then a walk of its own, which replaces the
// stored float32 result.
TEST(MemoryBudget, AFloat32WalkComputesNoBf16ForwardTheRunDoesNotExpect) {
  RandomTargetSpec spec;
  spec.hidden = 128, spec.intermediate = 256, spec.head_dim = 32;
  const fs::path dir = testing::fresh_dir("streamed_alone");
  write_random_target(dir, spec);
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  const ScopedBudget budget("1");
  checks::expect_bf16_forwards(false);
  const SequenceTarget& f32 = checks::sequence_target(ckpt, at::kFloat);
  const SequenceTarget& bf16 = checks::sequence_target(ckpt, at::kBFloat16);
  const std::int64_t last = f32.config().num_layers - 1;
  const std::vector<std::int64_t> ids = {4, 8, 15, 16, 23, 42};
  const ForwardResult first = checks::forward_with_progress("fc", f32, ids, {0, last});
  const ForwardResult precision = checks::forward_with_progress("noise", bf16, ids, {last});
  const ForwardResult again = checks::forward_with_progress("fc", f32, ids, {last});
  checks::expect_bf16_forwards(true);
  EXPECT_NE(again.taps.at(last).data_ptr(), first.taps.at(last).data_ptr())
      << "the float32 walk kept a bf16 forward beside it";
  EXPECT_TRUE(at::equal(again.taps.at(last), first.taps.at(last)));
  EXPECT_TRUE(at::equal(precision.logits, bf16.forward(ids, {last}).logits));
}

}  // namespace
}  // namespace draftgate::model
