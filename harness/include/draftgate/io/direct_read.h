#pragma once
// Reads byte ranges of a file straight into the caller's memory (O_DIRECT) with several requests
// in flight: how a streamed forward reads a checkpoint larger than RAM. Through the page cache
// every byte of a 54 GB walk is allocated, mapped and dropped again by the kernel; a direct read
// lands in the buffer. One request at a time reads this machine's virtual disk at ~0.4 GB/s, four
// at ~1 GB/s (its readahead's rate).
// Where the file system refuses O_DIRECT (tmpfs), the same reads go through the page cache and
// the pages read are dropped from it after.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace draftgate::io {

// O_DIRECT needs offsets, lengths and memory aligned to the device's block; 4096 covers 512- and
// 4096-byte blocks.
inline constexpr std::uint64_t kDirectReadAlignment = 4096;

struct ReadRequest {
  std::uint64_t offset = 0;  // multiple of kDirectReadAlignment
  std::uint64_t length = 0;  // multiple of kDirectReadAlignment; may reach past the file's end
  std::uint64_t needed = 0;  // the first bytes of it that must be in the file (<= length)
  char* dest = nullptr;      // aligned to kDirectReadAlignment, `length` bytes writable
};

// Reads every request (the part of it inside the file) into its destination. Throws
// draftgate::Error naming `path` when the file cannot be opened or read, or is shorter than a
// request needs (truncated since its header was read).
void read_direct(const std::filesystem::path& path, const std::vector<ReadRequest>& requests);

}  // namespace draftgate::io
