#include "draftgate/io/mapped_pages.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace draftgate::io {

std::optional<MappedPages> mapped_pages(const void* begin, std::size_t size) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return std::nullopt;
  const auto lo = reinterpret_cast<std::uintptr_t>(begin), hi = lo + size;
  MappedPages pages;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    char dash = 0;
    // A mapping's first line: "start-end perms offset dev inode [path]"; its fields follow as
    // "Name:   value kB".
    if (std::sscanf(line.c_str(), "%lx%c%lx ", &start, &dash, &end) == 3 && dash == '-') {
      inside = start >= lo && start < hi;  // its end is rounded up to a whole page
      continue;
    }
    if (!inside) continue;
    unsigned long kb = 0;
    if (std::sscanf(line.c_str(), "Rss: %lu kB", &kb) == 1)
      pages.resident_bytes += std::uint64_t{kb} * 1024;
    else if (std::sscanf(line.c_str(), "FilePmdMapped: %lu kB", &kb) == 1)
      pages.file_huge_bytes += std::uint64_t{kb} * 1024;
  }
  return pages;
}

}  // namespace draftgate::io
