#pragma once
// Anonymous memory advised for transparent huge pages, for the buffers the bandwidth benchmarks
// read: a mapped checkpoint is advised so too (io/safetensors.cpp) and its page cache is then
// PMD-mapped (FilePmdMapped in /proc/PID/smaps_rollup during a decode), so buffers on 4 KB pages
// would measure TLB misses a decode does not pay (a 0.6B-sized weight read at 20.7 GB/s on 4 KB
// pages, 32.4 on huge pages, measured 2026-12-02) and understate the read bandwidth a decode is
// bound by.

#include <ATen/ATen.h>

#include <cstddef>
#include <memory>

namespace draftgate::bench {

class HugePageMemory {
 public:
  explicit HugePageMemory(std::size_t bytes);
  // A tensor over [offset, offset + its bytes) of the region; valid while the region lives.
  at::Tensor tensor(std::size_t offset, at::IntArrayRef shape, at::ScalarType dtype) const;
  // The share of the region the kernel backs with huge pages (0 where it gives none), read after
  // the region was written.
  double huge_page_share() const;

 private:
  std::shared_ptr<void> region_;
  std::size_t bytes_;
  double huge_kb_before_;
};

// What the read-bandwidth measurements sum: 1 GiB of float32 ones on huge pages.
struct BandwidthBuffer {
  HugePageMemory memory;
  at::Tensor values;
};
BandwidthBuffer bandwidth_buffer();

}  // namespace draftgate::bench
