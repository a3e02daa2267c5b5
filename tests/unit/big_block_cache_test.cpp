// The CPU allocator that keeps freed big blocks (model/big_block_cache.h): reuse of a block of
// about the size asked, release of every kept block on a miss, middle blocks by powers of two up to
// their cap, the small requests left to the allocator behind it, and tensors on it under many
// threads.

#include "draftgate/model/big_block_cache.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace draftgate::model {
namespace {

constexpr std::size_t kMB = std::size_t{1} << 20;

TEST(BigBlockCache, AFreedBlockServesTheNextRequestOfAboutItsSize) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 4 * kMB);
  void* first = nullptr;
  {
    c10::DataPtr a = cache.allocate(8 * kMB);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % (2 * kMB), 0u) << "2 MB aligned";
    static_cast<char*>(first)[8 * kMB - 1] = 1;  // the whole size is writable
  }
  EXPECT_EQ(cache.kept_bytes(), 8 * kMB);
  {
    c10::DataPtr b = cache.allocate(7 * kMB);  // within a quarter: the kept block
    EXPECT_EQ(b.get(), first);
    EXPECT_EQ(cache.kept_bytes(), 0u);
  }
  EXPECT_EQ(cache.kept_bytes(), 8 * kMB);
}

TEST(BigBlockCache, ARequestNoKeptBlockFitsReleasesThemAll) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 4 * kMB);
  { c10::DataPtr a = cache.allocate(8 * kMB), b = cache.allocate(10 * kMB); }
  EXPECT_EQ(cache.kept_bytes(), 18 * kMB);
  {
    c10::DataPtr big = cache.allocate(16 * kMB);  // 10 MB is too small, none is within a quarter
    EXPECT_EQ(cache.kept_bytes(), 0u);
    c10::DataPtr small = cache.allocate(4 * kMB);
    EXPECT_NE(small.get(), big.get());
  }
  EXPECT_EQ(cache.kept_bytes(), 20 * kMB);
}

TEST(BigBlockCache, SmallRequestsGoToTheAllocatorBehindIt) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 4 * kMB);
  {
    c10::DataPtr small = cache.allocate(4 * kMB - 1);
    EXPECT_EQ(small.get_deleter(), c10::GetDefaultCPUAllocator()->allocate(1).get_deleter());
  }
  EXPECT_EQ(cache.kept_bytes(), 0u);
}

// oneDNN's buffers come and go through raw_allocate / raw_deallocate: a bare address.
TEST(BigBlockCache, RawAllocationsOfEitherSizeGoBackWhereTheyCameFrom) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 4 * kMB);
  void* big = cache.raw_allocate(6 * kMB);
  void* small = cache.raw_allocate(1024);
  static_cast<char*>(small)[1023] = 1;
  cache.raw_deallocate(small);
  EXPECT_EQ(cache.kept_bytes(), 0u);
  cache.raw_deallocate(big);
  EXPECT_EQ(cache.kept_bytes(), 6 * kMB);
  EXPECT_EQ(cache.raw_allocate(5 * kMB), big);
  cache.raw_deallocate(big);
}

// Middle requests (where asked: 64 KB up to the big ones) take a power of two bytes, and a freed
// one serves the next request of its power.
TEST(BigBlockCache, AFreedMiddleBlockServesTheNextRequestOfItsPowerOfTwo) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 4 * kMB, 64 * 1024);
  void* first = nullptr;
  {
    c10::DataPtr a = cache.allocate(100 * 1024);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u) << "64-byte aligned";
    static_cast<char*>(first)[128 * 1024 - 1] = 1;  // the whole power of two is writable
    EXPECT_NE(a.get_deleter(), c10::GetDefaultCPUAllocator()->allocate(1).get_deleter());
  }
  EXPECT_EQ(cache.kept_bytes(), 128 * 1024u);
  {
    c10::DataPtr other = cache.allocate(200 * 1024);  // the next power: a block of its own
    EXPECT_NE(other.get(), first);
    c10::DataPtr same = cache.allocate(65 * 1024);
    EXPECT_EQ(same.get(), first);
    EXPECT_EQ(cache.kept_bytes(), 0u);
  }
  EXPECT_EQ(cache.kept_bytes(), (128 + 256) * 1024u);
  void* raw = cache.raw_allocate(120 * 1024);  // oneDNN's way: the kept block too
  EXPECT_EQ(raw, first);
  cache.raw_deallocate(raw);
  {
    c10::DataPtr small = cache.allocate(64 * 1024 - 1);  // under the middle: the allocator behind
    EXPECT_EQ(small.get_deleter(), c10::GetDefaultCPUAllocator()->allocate(1).get_deleter());
  }
  EXPECT_EQ(cache.kept_bytes(), (128 + 256) * 1024u);
}

// Freed middle blocks are kept up to kMiddleKept bytes in all; past it the oldest blocks of the
// power with the most bytes kept go first, so the powers a pass asks for now take the cap from
// those it no longer does. Requests over half of the big blocks' size go to the allocator behind
// (their power of two would reach it).
TEST(BigBlockCache, FreedMiddleBlocksAreKeptUpToTheirCap) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 32 * kMB, 64 * 1024);
  const std::size_t blocks = BigBlockCache::kMiddleKept / (2 * kMB) + 8;
  {
    std::vector<c10::DataPtr> held;
    for (std::size_t i = 0; i < blocks; ++i) held.push_back(cache.allocate(2 * kMB - 1));
  }
  EXPECT_EQ(cache.kept_bytes(), BigBlockCache::kMiddleKept);
  std::vector<void*> small;
  {
    std::vector<c10::DataPtr> held;
    for (int i = 0; i < 8; ++i) {
      held.push_back(cache.allocate(100 * 1024));
      small.push_back(held.back().get());
    }
  }
  // One 2 MB block made room for the eight of 128 KB.
  EXPECT_EQ(cache.kept_bytes(), BigBlockCache::kMiddleKept - 2 * kMB + 8 * 128 * 1024);
  {
    c10::DataPtr again = cache.allocate(100 * 1024);
    EXPECT_NE(std::find(small.begin(), small.end(), again.get()), small.end()) << "kept";
    c10::DataPtr behind = cache.allocate(16 * kMB + 1);
    EXPECT_EQ(behind.get_deleter(), c10::GetDefaultCPUAllocator()->allocate(1).get_deleter());
  }
  EXPECT_EQ(cache.kept_bytes(), BigBlockCache::kMiddleKept - 2 * kMB + 8 * 128 * 1024);
}

TEST(BigBlockCache, TensorsOnItKeepTheirValuesUnderManyThreads) {
  BigBlockCache cache(c10::GetDefaultCPUAllocator(), 1 * kMB, 64 * 1024);
  std::atomic<int> wrong{0};
  at::parallel_for(0, 64, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      // floats: middle blocks (~120 KB) and big ones (1-3 MB)
      const std::int64_t n =
          i % 4 == 0 ? 30000 + i : (1 + i % 3) * static_cast<std::int64_t>(kMB) / 4 + i;
      at::Tensor t(at::detail::empty_generic(
          {n}, &cache, c10::DispatchKeySet(c10::DispatchKey::CPU), at::kFloat, c10::nullopt));
      t.fill_(static_cast<float>(i));
      if (!at::equal(t, at::full({n}, static_cast<float>(i)))) ++wrong;
    }
  });
  EXPECT_EQ(wrong, 0);
  EXPECT_LE(cache.kept_bytes(), (4 * 2 * kMB + 128 * 1024) * at::get_num_threads())
      << "reused, not piled up";
}

TEST(BigBlockCache, OnceInstalledItIsAtensCpuAllocator) {
  cache_big_cpu_blocks();
  cache_big_cpu_blocks();  // a second call changes nothing
  EXPECT_NE(dynamic_cast<BigBlockCache*>(c10::GetCPUAllocator()), nullptr);
  const at::Tensor big = at::ones({static_cast<std::int64_t>(40 * kMB / 4)});
  EXPECT_EQ(big.sum().item<double>(), static_cast<double>(40 * kMB / 4));
  // oneDNN's bf16 GEMM takes its buffers through raw_allocate / raw_deallocate.
  const at::Tensor y =
      at::linear(at::ones({64, 256}, at::kBFloat16), at::ones({128, 256}, at::kBFloat16));
  EXPECT_EQ(y.to(at::kFloat).sum().item<double>(), 64.0 * 128 * 256);
}

}  // namespace
}  // namespace draftgate::model
