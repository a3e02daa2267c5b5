// How the kernel maps memory (io/mapped_pages.h), and a mapped checkpoint whose page cache holds
// it in 4 KB pages read back in 2 MB ones (SafetensorsFile::settle_in_huge_pages).

#include "draftgate/io/mapped_pages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "test_files.h"

namespace draftgate::io {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

TEST(MappedPages, CountsTheResidentBytesOfTheMappingsInARange) {
  const std::size_t size = 8 << 20, page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ::madvise(p, size, MADV_NOHUGEPAGE);  // 4 KB pages: the count below is exact
  auto* bytes = static_cast<char*>(p);
  for (std::size_t at = 0; at < (3 << 20); at += page) bytes[at] = 1;
  const auto pages = mapped_pages(p, size);
  ASSERT_TRUE(pages.has_value()) << "/proc/self/smaps is unreadable";
  EXPECT_EQ(pages->resident_bytes, std::uint64_t{3} << 20);
  EXPECT_EQ(pages->file_huge_bytes, 0u);  // anonymous memory
  const auto beside = mapped_pages(bytes + size, page);
  ASSERT_TRUE(beside.has_value());
  EXPECT_EQ(beside->resident_bytes, 0u) << "a range holding no mapping start counts none";
  ::munmap(p, size);
}

// Bytes [from, to) of the page cache of `path` (the whole file by default) dropped and read again
// 4 KB at a time without readahead: 4 KB folios, as a program reading it in small random pieces
// leaves it.
void cache_in_small_pages(const fs::path& path, off_t from = 0, off_t to = -1) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  if (to < 0) to = ::lseek(fd, 0, SEEK_END);
  ::posix_fadvise(fd, from, to - from, POSIX_FADV_DONTNEED);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  std::string page(4096, '\0');
  for (off_t at = from; at < to; at += 4096) ASSERT_GT(::pread(fd, page.data(), 4096, at), 0);
  ::close(fd);
}

// Whether this kernel maps `path` 2 MB at a time, asked apart from the code under test: its cache
// dropped, a 2 MB aligned mapping advised MADV_HUGEPAGE and read through.
bool kernel_maps_file_in_huge_pages(const fs::path& path, std::size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  void* span = ::mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(span) + kHugePage - 1) /
                                          kHugePage * kHugePage);
  void* p = ::mmap(aligned, size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  ::close(fd);
  bool huge = false;
  if (p != MAP_FAILED) {
    ::madvise(p, size, MADV_HUGEPAGE);
    volatile char sink = 0;
    for (std::size_t at = 0; at < size; at += 4096) sink = sink + aligned[at];
    const auto pages = mapped_pages(p, size);
    huge = pages && pages->file_huge_bytes > 0;
  }
  ::munmap(span, size + kHugePage);
  return huge;
}

char pattern(std::size_t i) { return static_cast<char>((i * 7 + i / 4099) % 251); }

// A 48 MB tensor file in `dir`.
fs::path write_big_file(const std::string& dir, std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = pattern(i);
  const fs::path path = testing::fresh_dir(dir) / "model.safetensors";
  write_safetensors(path, {{"w", DType::U8, {static_cast<std::int64_t>(size)}, bytes}});
  return path;
}

bool same_bytes(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != pattern(i)) return false;
  return true;
}

TEST(SettleInHugePages, ReadsAFileCachedIn4KbPagesBackIn2MbPagesWhereTheKernelCan) {
  const std::size_t size = 48 << 20;
  const fs::path path = write_big_file("settle_small_cache", size);
  const bool kernel_can = kernel_maps_file_in_huge_pages(path, size);
  cache_in_small_pages(path);
  const auto file = SafetensorsFile::open(path);
  const std::string_view bytes = file->bytes(*file->header().find("w"));
  ASSERT_TRUE(same_bytes(bytes));  // the load: every page read through the mapping

  const SafetensorsFile::HugePages settled = file->settle_in_huge_pages();
  EXPECT_TRUE(same_bytes(bytes)) << "the view must read the file's bytes after the pages moved";
  EXPECT_GE(settled.resident_bytes, size - kHugePage);
  EXPECT_LT(settled.huge_before * 4, settled.resident_bytes * 3) << "set-up: 4 KB pages";
  if (kernel_can) {
    EXPECT_TRUE(settled.reread);
    EXPECT_GE(settled.huge_after * 2, settled.resident_bytes)
        << "read back, the file should be mapped mostly 2 MB at a time";
    const SafetensorsFile::HugePages again = file->settle_in_huge_pages();
    EXPECT_FALSE(again.reread) << "a settled file is read once";
  } else {
    EXPECT_FALSE(settled.reread) << "where the kernel maps the file 4 KB at a time only, one "
                                    "block asks it and nothing more is read";
    EXPECT_EQ(settled.huge_after, 0u);
  }
}

// A cache mostly in 2 MB folios with a few blocks in 4 KB ones, as a writer leaves it (a bench
// checkpoint just written was 84-87 % mapped 2 MB at a time): read back too, though three
// quarters of it were mapped 2 MB at a time.
TEST(SettleInHugePages, ReadsBackAFileWithAFewBlocksIn4KbPages) {
  const std::size_t size = 48 << 20;
  const fs::path path = write_big_file("settle_few_small_blocks", size);
  if (!kernel_maps_file_in_huge_pages(path, size))  // leaves the cache in 2 MB folios where it can
    GTEST_SKIP() << "this kernel maps the file 4 KB at a time only";
  cache_in_small_pages(path, 8 * kHugePage, 12 * kHugePage);  // 4 of its 24 blocks
  const auto file = SafetensorsFile::open(path);
  const std::string_view bytes = file->bytes(*file->header().find("w"));
  ASSERT_TRUE(same_bytes(bytes));

  const SafetensorsFile::HugePages settled = file->settle_in_huge_pages();
  EXPECT_TRUE(same_bytes(bytes));
  EXPECT_GE(settled.huge_before * 4, settled.resident_bytes * 3) << "set-up: mostly 2 MB pages";
  EXPECT_LE(settled.huge_before, size - 4 * kHugePage) << "set-up: 4 blocks in 4 KB pages";
  EXPECT_TRUE(settled.reread);
  EXPECT_GE(settled.huge_after, settled.huge_before + 4 * kHugePage)
      << "the 4 blocks should be mapped 2 MB at a time after";
  EXPECT_FALSE(file->settle_in_huge_pages().reread) << "a settled file is read once";
}

// What the benchmarks report beside their times: the file's own mapping, once mapped, and the
// checkpoint's shards summed.
TEST(SettleInHugePages, ReportsHowTheFilesMappingIsMapped) {
  const std::size_t size = 48 << 20;
  const fs::path path = write_big_file("mapping_report", size);
  const auto file = SafetensorsFile::open(path);
  EXPECT_FALSE(file->mapped_pages()) << "not mapped yet";
  ASSERT_TRUE(same_bytes(file->bytes(*file->header().find("w"))));
  const auto pages = file->mapped_pages();
  ASSERT_TRUE(pages);
  EXPECT_GE(pages->resident_bytes, size - kHugePage) << "every page was read";
  EXPECT_LE(pages->file_huge_bytes, pages->resident_bytes);

  std::ofstream(path.parent_path() / "config.json") << R"({"num_hidden_layers": 1})";
  const Checkpoint ckpt = Checkpoint::open(path.parent_path());
  EXPECT_FALSE(ckpt.mapped_pages()) << "its own mapping, not read yet";
  ASSERT_TRUE(same_bytes(ckpt.file_of("w")->bytes(*ckpt.info("w"))));
  const auto summed = ckpt.mapped_pages();
  ASSERT_TRUE(summed);
  EXPECT_GE(summed->resident_bytes, size - kHugePage);
}

TEST(SettleInHugePages, LeavesASmallOrUnreadFileAlone) {
  const fs::path small = write_big_file("settle_small_file", 8 << 20);
  cache_in_small_pages(small);
  const auto file = SafetensorsFile::open(small);
  ASSERT_TRUE(same_bytes(file->bytes(*file->header().find("w"))));
  EXPECT_FALSE(file->settle_in_huge_pages().reread);

  const fs::path unread = write_big_file("settle_unread_file", 48 << 20);
  const auto never_read = SafetensorsFile::open(unread);
  EXPECT_FALSE(never_read->settle_in_huge_pages().reread) << "not mapped yet: nothing to settle";
}

}  // namespace
}  // namespace draftgate::io
