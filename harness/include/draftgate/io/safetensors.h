#pragma once
// safetensors reader and writer.
//
// Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data buffer. Every
// header is validated in full before any tensor is handed out (see parse_safetensors_header).
// Opening a file reads the header only; the data is memory-mapped read-only on first access and
// views into it are zero-copy.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "draftgate/io/dtype.h"
#include "draftgate/io/mapped_pages.h"

namespace draftgate::io {

inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's cap
inline constexpr std::size_t kMaxRank = 8;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data buffer, [begin, end)
  std::uint64_t end = 0;

  std::uint64_t nbytes() const { return end - begin; }
  std::uint64_t numel() const;
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  // 8 + header length: where the data buffer starts in the file

  const TensorInfo* find(std::string_view name) const;
};

// Validates header JSON against the size of the data buffer that follows it: a JSON object starting
// with '{';
// `__metadata__` a string map; no duplicate keys at any depth; known dtypes; rank <= kMaxRank;
// element counts that do not overflow; byte length = numel x dtype size; offsets inside the buffer
// with no overlap and no hole. Throws draftgate::Error naming `file`.
SafetensorsHeader parse_safetensors_header(std::string_view json_text, std::uint64_t data_size,
                                           const std::string& file);

class SafetensorsFile : public std::enable_shared_from_this<SafetensorsFile> {
 public:
  // Reads and validates the header; touches no tensor data.
  static std::shared_ptr<const SafetensorsFile> open(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }

  // The tensor's bytes inside the read-only mapping (mapped on first call). Valid while this object
  // lives.
  std::string_view bytes(const TensorInfo& info) const;

  // Paging hints for streaming a model through memory one layer at a time (best effort; release
  // is a no-op before the file is mapped). prefetch: read the tensor's pages ahead (MADV_WILLNEED).
  // release: drop them from this process and the page cache (MADV_DONTNEED + POSIX_FADV_DONTNEED);
  // views stay valid and fault the bytes back in from the file if touched again. `from`, `to`:
  // a byte range inside the tensor (default: all of it).
  void prefetch(const TensorInfo& info, std::uint64_t from = 0,
                std::uint64_t to = UINT64_MAX) const;
  void release(const TensorInfo& info, std::uint64_t from = 0, std::uint64_t to = UINT64_MAX) const;

  // How the kernel maps this file's mapping now (io/mapped_pages.h); nullopt where it is not
  // mapped yet or /proc/self/smaps cannot be read. What a benchmark reports beside its times: a
  // page cache in small folios costs every 4 KB of a pass's read a TLB miss.
  std::optional<MappedPages> mapped_pages() const;

  // For a model held in memory, after its load read it through the mapping: where the kernel maps
  // more than a 64th of the resident 2 MB blocks in smaller pages though it maps this file 2 MB at
  // a time (the page cache held them in smaller folios, as a download writes it or another
  // program's reads leave it), drops the file from this process and the page cache and reads the
  // same 2 MB blocks back, which faults on a mapping advised MADV_HUGEPAGE read in 2 MB folios
  // (once per file: the page cache keeps them for later runs). Where the kernel maps none of the
  // file 2 MB at a time, one block is read back to ask it; a kernel that cannot costs that block.
  // Views stay valid (the bytes are the file's). Best effort; returns what it measured.
  struct HugePages {
    std::uint64_t resident_bytes = 0;
    std::uint64_t huge_before = 0;  // bytes mapped 2 MB at a time before
    std::uint64_t huge_after = 0;   // and after
    bool reread = false;            // whether the resident blocks were read back
  };
  HugePages settle_in_huge_pages() const;

 private:
  void ensure_mapped() const;
  // The page-aligned span of the mapping that covers bytes [from, to) of the tensor.
  std::pair<char*, std::size_t> page_span(const TensorInfo& info, std::uint64_t from,
                                          std::uint64_t to) const;

  SafetensorsFile(std::filesystem::path path, SafetensorsHeader header, std::uint64_t file_size);

  std::filesystem::path path_;
  SafetensorsHeader header_;
  std::uint64_t file_size_ = 0;
  mutable std::once_flag map_once_;
  mutable const char* map_ = nullptr;
};

// A tensor to write: raw little-endian row-major bytes.
struct TensorBytes {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::string_view bytes;
};

// Writes a safetensors file atomically (temporary file + rename). Tensors are laid out in name
// order and the header is space-padded so the data buffer starts 8-byte aligned. Throws
// draftgate::Error on bad input.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A tensor whose bytes are produced while the file is written, for files larger than memory:
// `write` must put exactly `nbytes` bytes on the stream.
struct TensorWriter {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t nbytes = 0;
  std::function<void(std::ostream&)> write;
};

// write_safetensors for generated tensors (same layout, same checks).
void write_safetensors(const std::filesystem::path& path, std::vector<TensorWriter> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace draftgate::io
