#include "huge_page_block.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace draftgate::model {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

std::size_t whole_huge_pages(std::size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

HugePageBlock allocate_huge_page_block(std::size_t bytes) {
  const std::size_t size = whole_huge_pages(bytes);
  void* data = std::aligned_alloc(kHugePage, size);
  if (data == nullptr) throw std::bad_alloc();
  ::madvise(data, size, MADV_HUGEPAGE);  // advice: where the kernel gives none, 4 KB pages
  return {data, size};
}

}  // namespace draftgate::model
