// safetensors: round trips for every dtype, zero-copy views, header validation, header-only access.

#include "draftgate/io/safetensors.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <numeric>
#include <sstream>

#include "draftgate/model/tensor_view.h"
#include "error_text.h"
#include "synthetic_layouts.h"

namespace draftgate::io {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::error_of;

class DTypeRoundTrip : public ::testing::TestWithParam<DType> {};

TEST_P(DTypeRoundTrip, BytesShapeAndDtypeSurvive) {
  const DType dtype = GetParam();
  const std::vector<std::int64_t> shape = {3, 5};
  std::string bytes(15 * dtype_size(dtype), '\0');
  std::iota(bytes.begin(), bytes.end(), static_cast<char>(1));
  if (dtype == DType::BOOL)
    for (auto& b : bytes) b = static_cast<char>(b & 1);
  const fs::path path =
      testing::fresh_dir("roundtrip") / (std::string(dtype_name(dtype)) + ".safetensors");
  write_safetensors(path, {{"t", dtype, shape, bytes}, {"empty", dtype, {0, 4}, ""}},
                    {{"format", "pt"}});

  const auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file->header().data_offset % 8, 0u) << "data buffer should start 8-byte aligned";
  EXPECT_EQ(file->header().metadata.at("format"), "pt");
  const TensorInfo* info = file->header().find("t");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, dtype);
  EXPECT_EQ(info->shape, shape);
  EXPECT_EQ(file->bytes(*info), bytes);
  EXPECT_EQ(file->header().find("empty")->nbytes(), 0u);

  const at::Tensor view = tensor_view(file, *info);
  if (auto native = aten_dtype(dtype)) {
    EXPECT_EQ(view.scalar_type(), *native);
    EXPECT_EQ(view.sizes().vec(), shape);
    EXPECT_EQ(view.data_ptr(), static_cast<const void*>(file->bytes(*info).data()))
        << "not zero-copy";
  } else {
    EXPECT_EQ(view.scalar_type(), at::kByte);
    EXPECT_EQ(static_cast<std::size_t>(view.numel()), bytes.size());
  }
}

INSTANTIATE_TEST_SUITE_P(AllSpecDtypes, DTypeRoundTrip,
                         ::testing::Values(DType::F64, DType::F32, DType::F16, DType::BF16,
                                           DType::I64, DType::I32, DType::I16, DType::I8,
                                           DType::U64, DType::U32, DType::U16, DType::U8,
                                           DType::BOOL, DType::F8_E4M3, DType::F8_E5M2,
                                           DType::F8_E8M0, DType::F8_E4M3FNUZ, DType::F8_E5M2FNUZ),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

TEST(TensorView, OutlivesTheFileHandleAndWritesBack) {
  const fs::path dir = testing::fresh_dir("view");
  const at::Tensor src = at::arange(12, at::kFloat).reshape({3, 4}).to(at::kBFloat16);
  write_tensors(dir / "a.safetensors", {{"x", src}, {"y", at::ones({2}, at::kLong)}});
  at::Tensor view;
  {
    auto file = SafetensorsFile::open(dir / "a.safetensors");
    view = tensor_view(file, *file->header().find("x"));
  }  // the view keeps the mapping alive
  EXPECT_TRUE(at::equal(view, src));
}

TEST(Writer, IsAtomicAndRejectsBadInput) {
  const fs::path path = testing::fresh_dir("writer") / "w.safetensors";
  const float one = 1.0f;
  const std::string_view bytes(reinterpret_cast<const char*>(&one), 4);
  write_safetensors(path, {{"a", DType::F32, {1}, bytes}});
  EXPECT_THAT(error_of([&] {
                write_safetensors(path, {{"a", DType::F32, {2}, bytes}});
              }),
              HasSubstr("has 4 bytes, shape needs 8"));
  EXPECT_THAT(
      error_of([&] {
        write_safetensors(path, {{"a", DType::F32, {1}, bytes}, {"a", DType::F32, {1}, bytes}});
      }),
      HasSubstr("duplicate tensor name"));
  // The failed writes left the earlier file intact and no temporary files behind.
  EXPECT_NE(SafetensorsFile::open(path)->header().find("a"), nullptr);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(path.parent_path())) (void)e, ++entries;
  EXPECT_EQ(entries, 1);
}

// --- header validation, one case per rule ---

struct BadHeader {
  std::string label;
  std::string json;
  std::uint64_t data_size;
  std::string message;
};

void PrintTo(const BadHeader& c, std::ostream* os) { *os << c.label; }

class BadHeaderTest : public ::testing::TestWithParam<BadHeader> {};

TEST_P(BadHeaderTest, IsRejectedWithAMessage) {
  const auto& c = GetParam();
  EXPECT_THAT(error_of([&] { parse_safetensors_header(c.json, c.data_size, "f.safetensors"); }),
              AllOf(HasSubstr("f.safetensors: "), HasSubstr(c.message)));
}

const char* kOk = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

INSTANTIATE_TEST_SUITE_P(
    Rules, BadHeaderTest,
    ::testing::Values(
        BadHeader{"not_object", "[1,2]", 0, "not a JSON object"},
        BadHeader{"invalid_json", "{\"a\":", 0, "invalid JSON"},
        BadHeader{"invalid_utf8", "{\"a\xff\":1}", 0, "invalid JSON"},
        BadHeader{"duplicate_key", std::string("{") + kOk + "," + kOk + "}", 16,
                  "duplicate JSON key \"a\""},
        BadHeader{"duplicate_nested_key",
                  R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8,
                  "duplicate JSON key \"dtype\""},
        BadHeader{"unknown_dtype", R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8,
                  "unsupported dtype \"Q4\""},
        BadHeader{"sub_byte_dtype", R"({"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1,
                  "unsupported dtype \"F4\""},
        BadHeader{"missing_shape", R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8,
                  "missing \"shape\""},
        BadHeader{"negative_dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
                  "shape dimension must be a non-negative integer"},
        BadHeader{"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
                  "holds 8 bytes but shape [3] x F32 needs 12"},
        BadHeader{"overflow",
                  R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                  8, "overflows 64-bit element count"},
        BadHeader{"rank",
                  R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1,
                  "rank 9 exceeds the limit of 8"},
        BadHeader{"reversed_offsets", R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", 8,
                  "data_offsets end 0 < begin 8"},
        BadHeader{"past_end", std::string("{") + kOk + "}", 4, "past the data buffer"},
        BadHeader{
            "overlap",
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            8, "overlaps"},
        BadHeader{
            "hole",
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
            12, "hole in the data buffer: bytes [4, 8)"},
        BadHeader{"trailing_bytes", std::string("{") + kOk + "}", 12, "4 trailing bytes"},
        BadHeader{"metadata_not_strings", R"({"__metadata__":{"k":1}})", 0, "is not a string"},
        BadHeader{"entry_not_object", R"({"a":3})", 0, "entry is not an object"}),
    [](const auto& p) { return p.param.label; });

// `"__metadata__": null` is no metadata (the reference reader's Option<HashMap> reads null as
// None); a list or a number is not.
TEST(HeaderOnly, NullMetadataIsNone) {
  const SafetensorsHeader h = parse_safetensors_header(
      R"({"__metadata__":null,"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
      "f.safetensors");
  EXPECT_TRUE(h.metadata.empty());
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_THAT(error_of([] { parse_safetensors_header(R"({"__metadata__":[]})", 0, "f"); }),
              HasSubstr("__metadata__ is not an object"));
}

// --- file-level framing ---

void write_raw(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string framed(const std::string& header, std::uint64_t declared_len,
                   const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((declared_len >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(FileFraming, TruncatedLengthAbsurdLengthAndLengthPastTheEnd) {
  const fs::path dir = testing::fresh_dir("framing");
  write_raw(dir / "short.safetensors", "abc");
  EXPECT_THAT(
      error_of([&] { SafetensorsFile::open(dir / "short.safetensors"); }),
      HasSubstr("short.safetensors: file is 3 bytes, shorter than the 8-byte header length"));
  write_raw(dir / "absurd.safetensors", framed("{}", 1ull << 40));
  EXPECT_THAT(error_of([&] { SafetensorsFile::open(dir / "absurd.safetensors"); }),
              HasSubstr("exceeds the 100000000-byte limit"));
  write_raw(dir / "past.safetensors", framed("{}", 64));
  EXPECT_THAT(error_of([&] { SafetensorsFile::open(dir / "past.safetensors"); }),
              HasSubstr("runs past the end of the 10-byte file"));
  EXPECT_THAT(error_of([&] { SafetensorsFile::open(dir / "missing.safetensors"); }),
              HasSubstr("missing.safetensors: cannot open"));
}

// Bytes this process has read through read()/pread() so far.
std::uint64_t bytes_read_by_process() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return 0;
}

TEST(HeaderOnly, OpeningAHugeSparseFileReadsOnlyItsHeader) {
  const fs::path path = testing::fresh_dir("sparse") / "huge.safetensors";
  const std::uint64_t data = 8ull << 30;  // 8 GiB of (sparse) tensor data
  const std::string header =
      R"({"w":{"dtype":"BF16","shape":[65536,65536],"data_offsets":[0,8589934592]}})";
  write_raw(path, framed(header, header.size()));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + data)), 0);

  const std::uint64_t before = bytes_read_by_process();
  const auto file = SafetensorsFile::open(path);
  const std::uint64_t read = bytes_read_by_process() - before;
  EXPECT_EQ(file->header().find("w")->nbytes(), data);
  EXPECT_LT(read, 64u * 1024) << "open() read tensor data";
}

// The VmFlags of the mapping that holds `address` (/proc/self/smaps), empty if none does.
std::string vm_flags_of(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// A mapped checkpoint asks for huge pages (MADV_HUGEPAGE): the kernel then reads its page cache in
// 2 MB folios and maps them whole, and a decode that streams every weight misses the TLB 512x less
// (a Qwen3-8B-shaped greedy step 907 -> 695 ms, docs/performance.md).
TEST(Mapping, AsksTheKernelForHugePages) {
  if (!fs::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  const fs::path path = testing::fresh_dir("mapping") / "w.safetensors";
  const std::string header = R"({"w":{"dtype":"U8","shape":[4194304],"data_offsets":[0,4194304]}})";
  write_raw(path, framed(header, header.size()) + std::string(4u << 20, '\1'));
  const auto file = SafetensorsFile::open(path);
  const std::string_view bytes = file->bytes(*file->header().find("w"));
  EXPECT_THAT(vm_flags_of(bytes.data()), HasSubstr(" hg")) << "no MADV_HUGEPAGE on the mapping";
}

}  // namespace
}  // namespace draftgate::io
