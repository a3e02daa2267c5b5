#pragma once
// Heap blocks on transparent huge pages where the kernel gives them: a fresh block faults once
// per 2 MB instead of once per 4 KB (each fault traps to the hypervisor on a paravirtualized
// guest), and the kernels stream it as they stream a mapped checkpoint's page cache. Shared by
// the big-block allocator cache and the staging buffers of a streamed forward.

#include <cstddef>

namespace draftgate::model {

struct HugePageBlock {
  void* data;
  std::size_t size;  // the request rounded up to whole 2 MB pages
};

// `bytes` rounded up to whole 2 MB pages.
std::size_t whole_huge_pages(std::size_t bytes);

// A 2 MB aligned block of at least `bytes`, advised MADV_HUGEPAGE; std::bad_alloc where there is
// none. Freed with std::free(data).
HugePageBlock allocate_huge_page_block(std::size_t bytes);

}  // namespace draftgate::model
