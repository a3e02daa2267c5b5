#pragma once
// glibc hands blocks over its mmap threshold (which it raises as they are freed, to 32 MB at most)
// and the heap's freed top back to the kernel, so the next step's or layer's tensors of the same
// sizes come from fresh pages: a page fault each 4 KB, and on a paravirtualized guest every fault
// traps to the hypervisor. Pinning the threshold at its maximum and never trimming took a streamed
// 27B check run from 51 to 39 s (system time 19 -> 10 s) at the same peak RSS, and the 0.6B
// speculative loop from 6.7-6.9 to 11.3-12.2 tokens/s (docs/performance.md). Called first thing
// by draftgate and by the benchmarks, which measure what it runs; malloc settings the user gives
// in GLIBC_TUNABLES are kept.

#include <malloc.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace draftgate {

inline void keep_freed_memory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace draftgate
