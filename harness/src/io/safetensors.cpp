#include "draftgate/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "draftgate/error.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/mapped_pages.h"

namespace draftgate::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

std::uint64_t as_u64(const json& value, const std::string& file, const std::string& what) {
  if (!value.is_number_unsigned())
    throw Error(file, what + " must be a non-negative integer, got " + json_excerpt(value));
  return value.get<std::uint64_t>();
}

TensorInfo parse_entry(const std::string& name, const json& entry, const std::string& file) {
  const std::string where = "tensor \"" + name + "\"";
  if (!entry.is_object()) throw Error(file, where + ": entry is not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field)) throw Error(file, where + ": missing \"" + field + "\"");

  TensorInfo info;
  info.name = name;
  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) throw Error(file, where + ": dtype is not a string");
  const auto parsed = parse_dtype(dtype.get<std::string>());
  if (!parsed)
    throw Error(file, where + ": unsupported dtype \"" + dtype.get<std::string>() + "\"",
                "supported: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL F8_*");
  info.dtype = *parsed;

  const json& shape = entry["shape"];
  if (!shape.is_array()) throw Error(file, where + ": shape is not an array");
  if (shape.size() > kMaxRank)
    throw Error(file, where + ": rank " + std::to_string(shape.size()) + " exceeds the limit of " +
                          std::to_string(kMaxRank));
  std::uint64_t numel = 1;
  for (const json& dim : shape) {
    const std::uint64_t d = as_u64(dim, file, where + ": shape dimension");
    if (d > static_cast<std::uint64_t>(INT64_MAX) || mul_overflows(numel, d, &numel))
      throw Error(file,
                  where + ": shape " + json_excerpt(shape) + " overflows 64-bit element count");
    info.shape.push_back(static_cast<std::int64_t>(d));
  }
  std::uint64_t expected_bytes = 0;
  if (mul_overflows(numel, dtype_size(info.dtype), &expected_bytes))
    throw Error(file, where + ": shape " + json_excerpt(shape) + " overflows 64-bit byte count");

  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    throw Error(file, where + ": data_offsets must be [begin, end]");
  info.begin = as_u64(offsets[0], file, where + ": data_offsets begin");
  info.end = as_u64(offsets[1], file, where + ": data_offsets end");
  if (info.end < info.begin)
    throw Error(file, where + ": data_offsets end " + std::to_string(info.end) + " < begin " +
                          std::to_string(info.begin));
  if (info.nbytes() != expected_bytes)
    throw Error(file, where + ": holds " + std::to_string(info.nbytes()) + " bytes but shape " +
                          json_excerpt(shape) + " x " + std::string(dtype_name(info.dtype)) +
                          " needs " + std::to_string(expected_bytes));
  return info;
}

// Offsets must tile the buffer exactly: sorted by begin, each starts where the previous ended.
void check_coverage(const std::vector<TensorInfo>& tensors, std::uint64_t data_size,
                    const std::string& file) {
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors.size());
  for (const auto& t : tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t cursor = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* t : by_offset) {
    if (t->begin < cursor)
      throw Error(file, "tensor \"" + t->name + "\" [" + std::to_string(t->begin) + ", " +
                            std::to_string(t->end) + ") overlaps \"" + previous->name + "\"");
    if (t->begin > cursor)
      throw Error(file, "hole in the data buffer: bytes [" + std::to_string(cursor) + ", " +
                            std::to_string(t->begin) + ") belong to no tensor");
    if (t->end > data_size)
      throw Error(file,
                  "tensor \"" + t->name + "\" ends at byte " + std::to_string(t->end) +
                      " past the data buffer (" + std::to_string(data_size) + " bytes)",
                  "the file is truncated");
    cursor = t->end;
    previous = t;
  }
  if (cursor != data_size)
    throw Error(file, "data buffer has " + std::to_string(data_size - cursor) +
                          " trailing bytes that belong to no tensor");
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::uint64_t TensorInfo::numel() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsHeader parse_safetensors_header(std::string_view json_text, std::uint64_t data_size,
                                           const std::string& file) {
  const auto first = json_text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || json_text[first] != '{')
    throw Error(file, "header is not a JSON object (it must start with '{')");
  const json root = parse_json_strict(json_text, file);
  if (!root.is_object()) throw Error(file, "header is not a JSON object");

  SafetensorsHeader header;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;  // none, as the reference reader's Option reads it
      if (!entry.is_object()) throw Error(file, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          throw Error(file, "__metadata__ value for \"" + key + "\" is not a string");
        header.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    if (name.empty()) throw Error(file, "tensor with an empty name");
    header.tensors.push_back(parse_entry(name, entry, file));
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  check_coverage(header.tensors, data_size, file);
  return header;
}

SafetensorsFile::SafetensorsFile(fs::path path, SafetensorsHeader header, std::uint64_t file_size)
    : path_(std::move(path)), header_(std::move(header)), file_size_(file_size) {}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr && map_ != MAP_FAILED) ::munmap(const_cast<char*>(map_), file_size_);
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const fs::path& path) {
  const std::string file = path.string();
  refuse_pseudo_file(path);
  // O_NONBLOCK: opening a FIFO planted in a checkpoint must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(file, "cannot open: " + errno_text());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(file, "cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode))
    throw Error(file, "not a regular file (it is " + file_kind(st.st_mode) + ")");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < 8)
    throw Error(file,
                "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length",
                "the file is truncated or not safetensors");

  unsigned char len_bytes[8];
  if (::pread(fd, len_bytes, 8, 0) != 8) throw Error(file, "cannot read header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];  // little-endian
  if (header_len > kMaxHeaderBytes)
    throw Error(file,
                "header length " + std::to_string(header_len) + " exceeds the " +
                    std::to_string(kMaxHeaderBytes) + "-byte limit",
                "the file is corrupt or not safetensors");
  if (header_len > size - 8)
    throw Error(file,
                "header length " + std::to_string(header_len) + " runs past the end of the " +
                    std::to_string(size) + "-byte file",
                "the file is truncated");
  if (header_len < 2)
    throw Error(file, "header of " + std::to_string(header_len) + " bytes is empty");

  std::string text(header_len, '\0');
  std::uint64_t done = 0;
  while (done < header_len) {
    const auto n = ::pread(fd, text.data() + done, header_len - done, 8 + done);
    if (n <= 0) throw Error(file, "cannot read header: " + errno_text());
    done += static_cast<std::uint64_t>(n);
  }
  SafetensorsHeader header = parse_safetensors_header(text, size - 8 - header_len, file);
  header.data_offset = 8 + header_len;
  return std::shared_ptr<const SafetensorsFile>(new SafetensorsFile(path, std::move(header), size));
}

std::string_view SafetensorsFile::bytes(const TensorInfo& info) const {
  ensure_mapped();
  return {map_ + header_.data_offset + info.begin, static_cast<std::size_t>(info.nbytes())};
}

void SafetensorsFile::ensure_mapped() const {
  std::call_once(map_once_, [this] {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path_.string(), "cannot open for mapping: " + errno_text());
    void* p = ::mmap(nullptr, file_size_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw Error(path_.string(), "mmap failed: " + errno_text());
    // Huge pages where the kernel gives them: faults then read the page cache in 2 MB folios and
    // map them whole, so a decode streaming every weight misses the TLB once per 2 MB, not per
    // 4 KB (measured: a Qwen3-8B-shaped greedy step 907 -> 695 ms). Ignored where unsupported.
    ::madvise(p, file_size_, MADV_HUGEPAGE);
    map_ = static_cast<const char*>(p);
  });
}

namespace {

constexpr std::uint64_t kHugePage = std::uint64_t{2} << 20;

// Drops bytes [at, at + length) of the mapping `map` (at a page boundary) from this process and
// their clean, unmapped pages from the page cache of `path`; views fault them back in from the
// file. Best effort: where `path` cannot be opened, only this process's pages go.
void drop_pages(const std::filesystem::path& path, const char* map, std::uint64_t at,
                std::uint64_t length) {
  ::madvise(const_cast<char*>(map) + at, length, MADV_DONTNEED);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  ::posix_fadvise(fd, static_cast<off_t>(at), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Reads one byte of each block: the fault reads the block in (2 MB at a time where it can).
void touch_blocks(const char* map, const std::vector<std::uint64_t>& blocks) {
  volatile char sink = 0;
  for (const std::uint64_t b : blocks) sink = sink + map[b * kHugePage];
}

}  // namespace

std::optional<MappedPages> SafetensorsFile::mapped_pages() const {
  if (map_ == nullptr) return std::nullopt;
  return io::mapped_pages(map_, file_size_);
}

SafetensorsFile::HugePages SafetensorsFile::settle_in_huge_pages() const {
  HugePages pages;
  const std::uint64_t whole = file_size_ / kHugePage;
  // Under 32 MB a mapping's TLB misses are few; an unaligned one cannot be mapped 2 MB at a time.
  if (map_ == nullptr || whole < 16 || reinterpret_cast<std::uintptr_t>(map_) % kHugePage != 0)
    return pages;
  const auto before = mapped_pages();
  if (!before) return pages;
  pages.resident_bytes = before->resident_bytes;
  pages.huge_before = pages.huge_after = before->file_huge_bytes;
  if (pages.resident_bytes == 0) return pages;
  // The whole 2 MB blocks holding any resident page: those the load read.
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((whole * kHugePage) / page);
  if (::mincore(const_cast<char*>(map_), whole * kHugePage, resident.data()) != 0) return pages;
  std::vector<std::uint64_t> blocks;
  const std::uint64_t per_block = kHugePage / page;
  for (std::uint64_t b = 0; b < whole; ++b)
    for (std::uint64_t i = b * per_block; i < (b + 1) * per_block; ++i)
      if (resident[i] & 1) {
        blocks.push_back(b);
        break;
      }
  // Settled where all but a 64th of them are mapped 2 MB at a time (three quarters before): the
  // bench checkpoints' caches, after a day of builds and runs, had 13-16 % of their blocks in
  // small folios, which cost a 16-row verify's products 2-5 % of their speed on a Zen 5 EPYC guest
  // (docs/performance.md).
  if (blocks.empty() || pages.huge_before * 64 >= blocks.size() * kHugePage * 63) return pages;
  if (pages.huge_before == 0) {  // can this kernel map this file 2 MB at a time? ask with a block
    drop_pages(path_, map_, blocks.front() * kHugePage, kHugePage);
    touch_blocks(map_, {blocks.front()});
    const auto probe = mapped_pages();
    if (!probe || probe->file_huge_bytes == 0) return pages;
  }
  drop_pages(path_, map_, 0, whole * kHugePage);
  touch_blocks(map_, blocks);
  pages.reread = true;
  if (const auto after = mapped_pages()) pages.huge_after = after->file_huge_bytes;
  return pages;
}

std::pair<char*, std::size_t> SafetensorsFile::page_span(const TensorInfo& info, std::uint64_t from,
                                                         std::uint64_t to) const {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  to = std::min(to, info.nbytes());
  if (map_ == nullptr || from >= to) return {nullptr, 0};
  const std::uint64_t begin = (header_.data_offset + info.begin + from) / page * page;
  const std::uint64_t end = header_.data_offset + info.begin + to;
  return {const_cast<char*>(map_) + begin, static_cast<std::size_t>(end - begin)};
}

void SafetensorsFile::prefetch(const TensorInfo& info, std::uint64_t from, std::uint64_t to) const {
  ensure_mapped();
  const auto [start, length] = page_span(info, from, to);
  if (length > 0) ::madvise(start, length, MADV_WILLNEED);
}

void SafetensorsFile::release(const TensorInfo& info, std::uint64_t from, std::uint64_t to) const {
  const auto [start, length] = page_span(info, from, to);
  // Clean file pages only: dropping them from the page cache frees memory the mapping no longer
  // holds, so a model larger than RAM does not evict everything else on the machine.
  if (length > 0) drop_pages(path_, map_, static_cast<std::uint64_t>(start - map_), length);
}

void write_safetensors(const fs::path& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorWriter> writers;
  writers.reserve(tensors.size());
  for (const auto& t : tensors)
    writers.push_back(
        {t.name, t.dtype, t.shape, t.bytes.size(), [bytes = t.bytes](std::ostream& out) {
           out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
         }});
  write_safetensors(path, std::move(writers), metadata);
}

void write_safetensors(const fs::path& path, std::vector<TensorWriter> tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorWriter& a, const TensorWriter& b) { return a.name < b.name; });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorWriter& t = tensors[i];
    if (t.name.empty() || t.name == "__metadata__")
      throw Error(path.string(), "invalid tensor name \"" + t.name + "\"");
    if (i > 0 && tensors[i - 1].name == t.name)
      throw Error(path.string(), "duplicate tensor name \"" + t.name + "\"");
    std::uint64_t numel = 1;
    for (auto d : t.shape) {
      if (d < 0) throw Error(path.string(), "tensor \"" + t.name + "\" has a negative dimension");
      numel *= static_cast<std::uint64_t>(d);
    }
    if (numel * dtype_size(t.dtype) != t.nbytes)
      throw Error(path.string(), "tensor \"" + t.name + "\" has " + std::to_string(t.nbytes) +
                                     " bytes, shape needs " +
                                     std::to_string(numel * dtype_size(t.dtype)));
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = dump_json(header, -1);
  text.append((8 - text.size() % 8) % 8, ' ');

  write_file_atomically(path, [&](std::ostream& out) {
    unsigned char len_bytes[8];
    std::uint64_t n = text.size();
    for (auto& b : len_bytes) {
      b = static_cast<unsigned char>(n & 0xff);
      n >>= 8;
    }
    out.write(reinterpret_cast<const char*>(len_bytes), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const TensorWriter& t : tensors) {
      const auto before = out.tellp();
      t.write(out);
      if (out && static_cast<std::uint64_t>(out.tellp() - before) != t.nbytes)
        throw Error(path.string(), "tensor \"" + t.name + "\" wrote the wrong number of bytes");
    }
  });
}

}  // namespace draftgate::io
