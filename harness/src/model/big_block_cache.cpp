#include "draftgate/model/big_block_cache.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "huge_page_block.h"

namespace draftgate::model {

namespace {

// A middle block's alignment and smallest size (ATen's own allocator aligns to 64 bytes).
constexpr std::size_t kMiddleAlignment = 64;

// Every block a cache has handed out, by address: a deleter gets nothing but the address
// (raw_deallocate), and the pointers that are not here are the smaller allocator's.
struct HandedOut {
  const BigBlockCache* owner;
  std::size_t size;
  bool middle;
};
struct Registry {
  std::mutex mutex;
  std::unordered_map<void*, HandedOut> blocks;
  c10::DeleterFnPtr smaller_deleter = nullptr;
};
Registry& registry() {
  static auto* r = new Registry;  // never destroyed: blocks may come back during exit
  return *r;
}

}  // namespace

BigBlockCache::BigBlockCache(c10::Allocator* smaller, std::size_t smallest, std::size_t middle)
    : smaller_(smaller), smallest_(smallest), middle_(std::min(middle, smallest)) {
  const c10::DeleterFnPtr deleter = smaller->raw_deleter();
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (deleter == nullptr || (r.smaller_deleter != nullptr && r.smaller_deleter != deleter))
    throw std::invalid_argument(
        "BigBlockCache: the smaller allocator has no raw deleter, or another than before");
  r.smaller_deleter = deleter;
}

BigBlockCache::~BigBlockCache() {
  for (const Block& b : kept_) std::free(b.data);
  for (const auto& blocks : middle_kept_)
    for (void* data : blocks) std::free(data);
}

c10::DataPtr BigBlockCache::allocate(std::size_t bytes) const {
  const bool middle = bytes >= middle_ && bytes <= smallest_ / 2;
  if (!middle && bytes < smallest_) return smaller_->allocate(bytes);
  const Block block = middle ? take_middle(bytes) : take(bytes);
  {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.blocks[block.data] = {this, block.size, block.middle};
  }
  return {block.data, block.data, &BigBlockCache::release, c10::Device(c10::DeviceType::CPU)};
}

c10::DeleterFnPtr BigBlockCache::raw_deleter() const { return &BigBlockCache::release; }

std::size_t BigBlockCache::kept_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total = middle_kept_bytes_;
  for (const Block& b : kept_) total += b.size;
  return total;
}

BigBlockCache::Block BigBlockCache::take(std::size_t bytes) const {
  const std::size_t size = whole_huge_pages(bytes);
  std::vector<Block> released;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->size >= size && it->size <= size + size / 4 &&
          (best == kept_.end() || it->size < best->size))
        best = it;
    if (best != kept_.end()) {
      const Block block = *best;
      kept_.erase(best);
      return block;
    }
    released.swap(kept_);
  }
  for (const Block& b : released) std::free(b.data);
  const HugePageBlock fresh = allocate_huge_page_block(size);
  return {fresh.data, fresh.size};
}

BigBlockCache::Block BigBlockCache::take_middle(std::size_t bytes) const {
  std::size_t size = kMiddleAlignment, log2 = 6;
  while (size < bytes) size <<= 1, ++log2;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (log2 < middle_kept_.size() && !middle_kept_[log2].empty()) {
      void* data = middle_kept_[log2].back();
      middle_kept_[log2].pop_back();
      middle_kept_bytes_ -= size;
      return {data, size, true};
    }
  }
  void* data = std::aligned_alloc(kMiddleAlignment, size);
  if (data == nullptr) throw std::bad_alloc();
  return {data, size, true};
}

void BigBlockCache::keep(Block block) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!block.middle) {
    kept_.push_back(block);
    return;
  }
  // Over the cap, the oldest blocks of the power with the most bytes kept go first: powers a
  // pass no longer asks for do not hold the cap for good.
  while (middle_kept_bytes_ + block.size > kMiddleKept) {
    std::size_t fullest = 0, most = 0;
    for (std::size_t p = 0; p < middle_kept_.size(); ++p)
      if ((middle_kept_[p].size() << p) > most) most = middle_kept_[p].size() << p, fullest = p;
    if (most == 0) {  // nothing kept: a block over the cap by itself
      std::free(block.data);
      return;
    }
    std::vector<void*>& blocks = middle_kept_[fullest];
    std::free(blocks.front());
    blocks.erase(blocks.begin());
    middle_kept_bytes_ -= std::size_t{1} << fullest;
  }
  const std::size_t log2 = static_cast<std::size_t>(__builtin_ctzll(block.size));
  if (middle_kept_.size() <= log2) middle_kept_.resize(log2 + 1);
  middle_kept_[log2].push_back(block.data);
  middle_kept_bytes_ += block.size;
}

void BigBlockCache::release(void* data) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  const auto it = r.blocks.find(data);
  if (it == r.blocks.end()) {
    const c10::DeleterFnPtr smaller = r.smaller_deleter;
    lock.unlock();
    smaller(data);
    return;
  }
  const HandedOut block = it->second;
  r.blocks.erase(it);
  lock.unlock();
  block.owner->keep({data, block.size, block.middle});
}

void cache_big_cpu_blocks() {
  static const bool installed = [] {
    // Never destroyed: tensors freed during exit still hand their blocks back to it.
    static auto* cache =
        new BigBlockCache(c10::GetCPUAllocator(), BigBlockCache::kSmallest, BigBlockCache::kMiddle);
    c10::SetCPUAllocator(cache, /*priority=*/1);
    return true;
  }();
  (void)installed;
}

}  // namespace draftgate::model
