// Staged reads (staged_tensors.h, io/direct_read.h) against the mapping: every tensor's view holds
// the stored bytes, dtype and shape across shards, gaps, misaligned offsets and reads of many
// requests; direct reads on disk and on tmpfs (no O_DIRECT: through the page cache); a view
// outlives later reads; a file cut short while it is read is named.

#include "draftgate/model/staged_tensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "draftgate/error.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/direct_read.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/model/weights.h"
#include "test_files.h"

namespace draftgate::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Two shards: odd-sized tensors (offsets off any block), a 20 MB one (several 8 MB requests),
// a 3 MB one between staged tensors (a gap bigger than the ranges merge over) and bf16, f32, i64.
fs::path write_checkpoint(const fs::path& dir) {
  fs::create_directories(dir);
  const auto values = [](std::int64_t n, at::ScalarType type, double seed) {
    return (at::arange(n, at::kDouble) * seed).sin().mul(100).to(type);
  };
  io::write_tensors(dir / "a.safetensors", {{"layer.0.a", values(777, at::kBFloat16, 0.1)},
                                            {"layer.0.b", values(5'000'001, at::kFloat, 0.2)},
                                            {"layer.0.gap", values(750'000, at::kFloat, 0.3)},
                                            {"layer.0.c", values(13, at::kLong, 1.0)}});
  io::write_tensors(dir / "b.safetensors", {{"layer.0.d", values(1'001, at::kBFloat16, 0.4)},
                                            {"layer.1.a", values(999, at::kFloat, 0.5)}});
  testing::write_file(dir / "config.json", R"({"num_hidden_layers": 2})");
  testing::write_file(dir / "model.safetensors.index.json",
                      R"({"weight_map": {"layer.0.a": "a.safetensors", "layer.0.b": "a.safetensors",
          "layer.0.gap": "a.safetensors", "layer.0.c": "a.safetensors",
          "layer.0.d": "b.safetensors", "layer.1.a": "b.safetensors"}})");
  return dir;
}

const std::vector<std::string> kStaged = {"layer.0.a", "layer.0.b", "layer.0.c", "layer.0.d"};

void expect_as_mapped(const io::Checkpoint& ckpt, const StagedTensors& staged) {
  for (const std::string& name : kStaged) {
    const at::Tensor got = staged.find(name), want = io::load_tensor(ckpt, name);
    ASSERT_TRUE(got.defined()) << name;
    EXPECT_EQ(got.scalar_type(), want.scalar_type()) << name;
    EXPECT_EQ(got.sizes(), want.sizes()) << name;
    EXPECT_TRUE(at::equal(got, want)) << name;
  }
  EXPECT_FALSE(staged.find("layer.0.gap").defined());
}

TEST(StagedTensors, ViewsHoldTheStoredTensors) {
  const io::Checkpoint ckpt =
      io::Checkpoint::open(write_checkpoint(testing::fresh_dir("staged") / "ckpt"));
  TensorStager stager(ckpt);
  // Whole 4 KB blocks of each merged range; the 3 MB gap is not read.
  EXPECT_LT(stager.staged_bytes(kStaged), std::uint64_t{21'000'000});
  EXPECT_GE(stager.staged_bytes(kStaged), std::uint64_t{20'000'004 + 1'554 + 104 + 2'002});
  expect_as_mapped(ckpt, stager.stage(kStaged).get());
}

// Each float tensor is scanned for NaN and Inf as it is read; a loader of the staged tensors then
// skips its own pass, and still names a tensor that holds one.
TEST(StagedTensors, FloatTensorsAreVerifiedFiniteAsTheyAreRead) {
  const fs::path dir = write_checkpoint(testing::fresh_dir("staged_finite") / "ckpt");
  io::write_tensors(dir / "b.safetensors", {{"layer.0.d", at::full({1'001}, NAN, at::kBFloat16)},
                                            {"layer.1.a", at::zeros({999}, at::kFloat)}});
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  TensorStager stager(ckpt);
  const StagedTensors staged = stager.stage(kStaged).get();
  EXPECT_TRUE(staged.verified_finite("layer.0.a"));
  EXPECT_TRUE(staged.verified_finite("layer.0.b"));
  EXPECT_FALSE(staged.verified_finite("layer.0.c")) << "an integer tensor";
  EXPECT_FALSE(staged.verified_finite("layer.0.d")) << "holds NaN";
  EXPECT_FALSE(staged.verified_finite("layer.0.gap")) << "not staged";
  const WeightLoader w(ckpt, at::kFloat, at::kCPU, nullptr, nullptr, &staged);
  EXPECT_TRUE(
      at::equal(w.get("layer.0.a", {777}), io::load_tensor(ckpt, "layer.0.a").to(at::kFloat)));
  try {
    w.get("layer.0.d", {1'001});
    ADD_FAILURE() << "a NaN weight was loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor \"layer.0.d\" holds NaN or Inf"));
  }
}

// Ranges of a file read into aligned memory, on disk (O_DIRECT) and on tmpfs (which refuses
// O_DIRECT: the same reads through the page cache), one range ending past the file's end.
TEST(DirectRead, ReadsEveryRangeOnDiskAndOnTmpfs) {
  std::string bytes(std::size_t{19} << 20 | 777, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) >> 7);
  std::vector<fs::path> files = {testing::fresh_dir("direct_read") / "data"};
  if (fs::is_directory("/dev/shm"))
    files.push_back(fs::path("/dev/shm") / ("draftgate_direct_read_" + std::to_string(::getpid())));
  constexpr std::uint64_t kBlock = io::kDirectReadAlignment;
  const std::uint64_t size = bytes.size(), last = size / kBlock * kBlock;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    testing::write_file(file, bytes);
    auto* memory = static_cast<char*>(std::aligned_alloc(kBlock, std::size_t{24} << 20));
    const std::vector<io::ReadRequest> requests = {
        {kBlock, std::uint64_t{10} << 20, std::uint64_t{10} << 20, memory},
        {last, 2 * kBlock, size - last, memory + (std::size_t{12} << 20)},
        {0, kBlock, kBlock, memory + (std::size_t{20} << 20)}};
    io::read_direct(file, requests);
    for (const io::ReadRequest& r : requests)
      EXPECT_EQ(std::string_view(r.dest, r.needed),
                std::string_view(bytes).substr(r.offset, r.needed))
          << "range at " << r.offset;
    // A range the file no longer holds is named, not left unread.
    EXPECT_THROW(io::read_direct(file, {{last, 2 * kBlock, size - last + 1, memory}}), Error);
    std::free(memory);
    if (file.string().rfind("/dev/shm", 0) == 0) fs::remove(file);
  }
}

TEST(StagedTensors, AViewOutlivesLaterReadsAndAFreedBufferIsReused) {
  const io::Checkpoint ckpt =
      io::Checkpoint::open(write_checkpoint(testing::fresh_dir("staged_reuse") / "ckpt"));
  TensorStager stager(ckpt);
  // layer.0.a starts its file, so its view is of the buffer itself (a misaligned one is a copy).
  const at::Tensor held = stager.stage({"layer.0.a"}).get().find("layer.0.a");
  // Another read of the same size while `held` lives does not land in its buffer.
  at::Tensor second = stager.stage({"layer.0.a"}).get().find("layer.0.a");
  EXPECT_NE(second.data_ptr(), held.data_ptr());
  const void* freed = second.data_ptr();
  second = at::Tensor();  // its last holder
  const at::Tensor third = stager.stage({"layer.0.a"}).get().find("layer.0.a");
  EXPECT_EQ(third.data_ptr(), freed) << "a buffer nobody holds is read into again";
  EXPECT_TRUE(at::equal(held, io::load_tensor(ckpt, "layer.0.a")));
  EXPECT_TRUE(at::equal(third, held));
}

// A walk over layers of two sizes: with the largest reserved, a small read's buffer serves the
// big read after it (no fresh memory to fault in at each change of size).
TEST(StagedTensors, AReservedBufferServesReadsOfAnySize) {
  const io::Checkpoint ckpt =
      io::Checkpoint::open(write_checkpoint(testing::fresh_dir("staged_reserve") / "ckpt"));
  TensorStager stager(ckpt);
  stager.reserve(stager.staged_bytes(kStaged));
  const void* small = stager.stage({"layer.0.a"}).get().find("layer.0.a").data_ptr();
  const StagedTensors big = stager.stage(kStaged).get();
  EXPECT_EQ(big.find("layer.0.a").data_ptr(), small) << "a bigger buffer was made";
  expect_as_mapped(ckpt, big);
}

TEST(StagedTensors, AFileCutShortAfterOpeningIsNamed) {
  const fs::path dir = write_checkpoint(testing::fresh_dir("staged_cut") / "ckpt");
  const io::Checkpoint ckpt = io::Checkpoint::open(dir);
  fs::resize_file(dir / "a.safetensors", 4096);
  TensorStager stager(ckpt);
  try {
    stager.stage(kStaged).get();
    FAIL() << "a truncated file was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a.safetensors"));
    EXPECT_THAT(e.what(), HasSubstr("truncated"));
  }
}

}  // namespace
}  // namespace draftgate::model
