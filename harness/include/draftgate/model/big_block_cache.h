#pragma once
// ATen's CPU allocator with freed blocks of 32 MB and more kept for the next tensor of about that
// size, and (where asked) middle blocks kept by their power of two. glibc maps every block over its
// mmap threshold (32 MB at most, keep_freed_memory.h) fresh and unmaps it when freed, so a check's
// [positions, vocabulary] float32 logits (127 MB at 128 positions of a 248,320-token vocabulary;
// 0.5 GB at 512) and a 512-position forward's MLP activations came from fresh pages in every
// operation: a page fault each 4 KB, and on a paravirtualized guest every fault traps to the
// hypervisor (docs/performance.md).
//
// The big blocks never hold memory beside a block they could not serve: a request that no kept
// block fits (at most a quarter bigger) first releases every kept big block. So what they add to
// the peak resident memory is what was freed and not yet asked for again. Blocks are 2 MB aligned
// and advised for transparent huge pages: a fresh one faults once per 2 MB.
//
// Middle requests (`middle` bytes up to half of `smallest`, so that no power of two reaches it)
// take blocks of a power of two bytes, 64-byte aligned as ATen's own; freed ones are kept by their
// power, kMiddleKept bytes in all at most: a block kept over that first evicts kept blocks of the
// power with the most bytes kept. A verify pass's activations and products' sums (0.1-10 MB) come
// and go a few hundred times a pass, and glibc's free of each coalesced its heap and consolidated
// its small blocks (~0.8 ms of a Qwen3.5-0.8B 16-row pass, on the calling thread). What the middle
// blocks add to the peak is at most kMiddleKept and each live block's rounding (under 2x).

#include <c10/core/Allocator.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace draftgate::model {

class BigBlockCache final : public c10::Allocator {
 public:
  static constexpr std::size_t kSmallest = std::size_t{32} << 20;
  static constexpr std::size_t kMiddle = std::size_t{64} << 10;
  static constexpr std::size_t kMiddleKept = std::size_t{64} << 20;

  // Requests under `middle` bytes, and those over half of `smallest` and under it, go to
  // `smaller` (all under `smallest` where middle is not less), which must outlive this and hand out
  // data pointers that are their own contexts with a raw deleter (ATen's default CPU allocator
  // does); raw_deallocate, which oneDNN's buffers go through, frees those with it.
  explicit BigBlockCache(c10::Allocator* smaller, std::size_t smallest = kSmallest,
                         std::size_t middle = kSmallest);
  ~BigBlockCache() override;
  BigBlockCache(const BigBlockCache&) = delete;
  BigBlockCache& operator=(const BigBlockCache&) = delete;

  c10::DataPtr allocate(std::size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;

  // Bytes of freed blocks kept for reuse, big and middle ones.
  std::size_t kept_bytes() const;

 private:
  struct Block {
    void* data;
    std::size_t size;     // a multiple of 2 MB, or a middle block's power of two
    bool middle = false;  // of take_middle
  };
  static void release(void* data);
  Block take(std::size_t bytes) const;
  Block take_middle(std::size_t bytes) const;
  void keep(Block block) const;

  c10::Allocator* smaller_;
  std::size_t smallest_, middle_;
  mutable std::mutex mutex_;
  mutable std::vector<Block> kept_;
  mutable std::vector<std::vector<void*>> middle_kept_;  // by log2 of the size
  mutable std::size_t middle_kept_bytes_ = 0;
};

// Makes a process-wide BigBlockCache ATen's CPU allocator, in front of the one it had; once per
// process (later calls do nothing). draftgate_engine_main calls it, and the benchmarks that
// measure what draftgate runs.
void cache_big_cpu_blocks();

}  // namespace draftgate::model
