#include "huge_page_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

namespace draftgate::bench {
namespace {

// This process's anonymous memory on huge pages, in kB.
double anon_huge_kb() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  double kb = 0;
  while (f >> key)
    if (key == "AnonHugePages:" && f >> kb) return kb;
  return 0;
}

}  // namespace

HugePageMemory::HugePageMemory(std::size_t bytes) : bytes_(bytes), huge_kb_before_(anon_huge_kb()) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("HugePageMemory: mmap of " + std::to_string(bytes) + " bytes failed");
  ::madvise(p, bytes, MADV_HUGEPAGE);  // advice: where the kernel gives none, 4 KB pages
  region_ = std::shared_ptr<void>(p, [bytes](void* q) { ::munmap(q, bytes); });
}

at::Tensor HugePageMemory::tensor(std::size_t offset, at::IntArrayRef shape,
                                  at::ScalarType dtype) const {
  const at::Tensor t =
      at::from_blob(static_cast<char*>(region_.get()) + offset, shape, at::TensorOptions(dtype));
  if (offset + t.nbytes() > bytes_) throw std::out_of_range("HugePageMemory: beyond the region");
  return t;
}

double HugePageMemory::huge_page_share() const {
  return std::clamp((anon_huge_kb() - huge_kb_before_) * 1024 / static_cast<double>(bytes_), 0.0,
                    1.0);
}

BandwidthBuffer bandwidth_buffer() {
  constexpr std::int64_t kFloats = std::int64_t{256} << 20;
  BandwidthBuffer b{HugePageMemory(kFloats * sizeof(float)), {}};
  b.values = b.memory.tensor(0, {kFloats}, at::kFloat).fill_(1.0f);
  return b;
}

}  // namespace draftgate::bench
