// Attention in query chunks (attention.h): a long sequence gives the same result chunked and
// unchunked on both target families and in the drafter's training-mode forward — the same bits at
// bf16, within float32 rounding at f32 (OpenBLAS's sgemm may round a row differently when fewer
// rows are multiplied at once) — and the scores a chunk allocates are bounded by the chunk, not by
// S × S × heads.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/attention.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/target.h"
#include "target_families.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

// Sets the attention score limit for one scope.
class ScopedScoreElements {
 public:
  explicit ScopedScoreElements(std::int64_t elements)
      : previous_(set_attention_score_elements(elements)) {}
  ~ScopedScoreElements() { set_attention_score_elements(previous_); }

 private:
  std::int64_t previous_;
};

constexpr std::int64_t kUnchunked = std::int64_t{1} << 62;

std::vector<std::int64_t> long_tokens(std::int64_t n) {
  std::vector<std::int64_t> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back((i * 53 + 5) % 256);
  return t;
}

io::Checkpoint random_target(const std::string& name, Family family, std::int64_t layers) {
  RandomTargetSpec spec;
  spec.family = family;
  spec.layers = layers;
  spec.layout = entry_of(family).layouts.front();
  spec.seed = 21;
  const auto dir = testing::fresh_dir("chunked_attention_" + name);
  write_random_target(dir, spec);
  return io::Checkpoint::open(dir);
}

// The same bits at bf16; at f32 within 1e-5 of the reference's RMS, the engine's float32 numerics
// tolerance (measured: up to 1.8e-6 of the RMS, a few float32 ulps of the largest elements).
void expect_same(const at::Tensor& chunked, const at::Tensor& whole, at::ScalarType dtype,
                 const std::string& what) {
  ASSERT_EQ(chunked.sizes(), whole.sizes()) << what;
  const double diff = (chunked.to(at::kDouble) - whole.to(at::kDouble)).abs().max().item<double>();
  if (dtype == at::kBFloat16) {
    EXPECT_TRUE(at::equal(chunked, whole)) << what << ": max |diff| " << diff;
  } else {
    const double rms = whole.to(at::kDouble).pow(2).mean().sqrt().item<double>();
    EXPECT_LE(diff, 1e-5 * rms) << what << ": max |diff| " << diff << ", RMS " << rms;
  }
}

std::int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;
}

TEST(ChunkedAttention, QueriesPerChunkStayWithinTheLimit) {
  EXPECT_EQ(attention_query_chunk(4, 4096, 1 << 20), 64);  // 4 × 64 × 4096 = 2^20
  EXPECT_EQ(attention_query_chunk(24, 16384, std::int64_t{1} << 24), 42);
  EXPECT_EQ(attention_query_chunk(64, 1 << 20, 1 << 20), 1);  // never fewer than one query
  for (std::int64_t keys : {1, 7, 1000, 4096})
    EXPECT_LE(4 * attention_query_chunk(4, keys, 5000) * keys,
              std::max<std::int64_t>(5000, 4 * keys));
}

// A sequence of 300 positions in chunks of 7 queries (uneven, the last one short) against one
// chunk: logits and every tap, bf16 and f32, dense Qwen3 and hybrid Qwen3.5 (its full-attention
// layer).
TEST(ChunkedAttention, LongSequenceGivesTheUnchunkedResultOnEveryFamily) {
  const auto tokens = long_tokens(300);
  for (const auto& f : testing::every_family()) {
    const Family family = f.family;
    const io::Checkpoint ckpt = random_target(f.name, family, 4);
    for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
      TargetOptions o;
      o.dtype = dtype;
      const auto target = TargetModel::load(ckpt, o);
      const std::int64_t heads = target->config().num_heads;
      ForwardResult whole, chunked;
      {
        ScopedScoreElements limit(kUnchunked);
        whole = target->forward(tokens, {0, 1, 2, 3});
      }
      {
        ScopedScoreElements limit(7 * heads * static_cast<std::int64_t>(tokens.size()));
        chunked = target->forward(tokens, {0, 1, 2, 3});
      }
      const std::string what = std::string(family_name(family)) + " " + at::toString(dtype);
      expect_same(chunked.logits, whole.logits, dtype, what + " logits");
      for (const auto& [tap, h] : whole.taps)
        expect_same(chunked.taps.at(tap), h, dtype, what + " tap " + std::to_string(tap));
    }
  }
}

// The drafter's training-mode forward attends N·B block queries over S + N·B keys at once.
TEST(ChunkedAttention, DrafterTrainingForwardGivesTheUnchunkedResult) {
  const auto dir = testing::fresh_dir("chunked_attention_drafter");
  RandomTargetSpec t;
  t.dtype = at::kFloat;
  t.seed = 3;
  write_random_target(dir / "target", t);
  RandomDrafterSpec d;
  d.dtype = at::kFloat;
  d.seed = 4;
  write_random_drafter(dir / "drafter", d);
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  const auto drafter_ckpt = io::Checkpoint::open(dir / "drafter");
  const auto tokens = long_tokens(200);
  const at::Tensor features =
      at::randn({200, 2 * t.hidden}, at::TensorOptions().dtype(at::kFloat)).mul_(0.5);
  std::vector<std::int64_t> anchors;
  for (std::int64_t a = 3; a < 190; a += 9) anchors.push_back(a);
  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    TargetOptions o;
    o.dtype = dtype;
    const auto target = TargetModel::load(target_ckpt, o);
    const auto drafter = DFlashDrafter::load(drafter_ckpt, *target);
    at::Tensor whole, chunked;
    {
      ScopedScoreElements limit(kUnchunked);
      whole = drafter->training_logits(features, tokens, anchors);
    }
    {
      ScopedScoreElements limit(5 * d.heads * 400);  // a few queries per chunk
      chunked = drafter->training_logits(features, tokens, anchors);
    }
    expect_same(chunked, whole, dtype,
                std::string("drafter training logits ") + at::toString(dtype));
  }
}

// 3072 positions, 4 heads: unchunked, one layer's scores alone are 4 × 3072² float32 = 151 MB
// (several such buffers live at once); in chunks of 2^20 elements each buffer is 4 MB. Peak RSS
// (monotonic) is read around the chunked forward first, then around the unchunked one, which must
// show the growth the meter is there to see.
TEST(ChunkedAttention, ScoreMemoryIsBoundedByTheChunk) {
  const io::Checkpoint ckpt = random_target("memory", Family::kQwen3, 1);
  TargetOptions o;
  o.dtype = at::kFloat;
  const auto target = TargetModel::load(ckpt, o);
  const auto tokens = long_tokens(3072);
  const double full_scores = 4.0 * 3072 * 3072 * 4;
  target->forward(long_tokens(64), {0});  // libtorch's one-time allocations
  const std::int64_t before = peak_rss_bytes();
  {
    ScopedScoreElements limit(1 << 20);
    target->forward(tokens, {0});
  }
  const std::int64_t chunked = peak_rss_bytes() - before;
  {
    ScopedScoreElements limit(kUnchunked);
    target->forward(tokens, {0});
  }
  const std::int64_t unchunked = peak_rss_bytes() - before;
  EXPECT_LT(static_cast<double>(chunked), 0.25 * full_scores)
      << "chunked attention grew peak RSS by " << chunked / (1 << 20) << " MiB";
  EXPECT_GT(static_cast<double>(unchunked), full_scores)
      << "the unchunked forward grew peak RSS by only " << unchunked / (1 << 20) << " MiB";
}

}  // namespace
}  // namespace draftgate::model
