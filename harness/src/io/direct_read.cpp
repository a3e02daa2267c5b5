#include "draftgate/io/direct_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "draftgate/error.h"

namespace draftgate::io {
namespace {

constexpr std::uint64_t kChunkBytes = std::uint64_t{8} << 20;  // one request to the disk
constexpr int kInFlight = 4;

struct Chunk {
  std::uint64_t offset, length;
  char* dest;
};

class File {
 public:
  explicit File(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd_ < 0 && errno == EINVAL) {  // no O_DIRECT on this file system
      direct_ = false;
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd_ < 0) throw Error(path.string(), std::string("cannot open: ") + std::strerror(errno));
    if (direct_ && !direct_reads_work()) {  // opened with O_DIRECT, but reads are refused
      ::close(fd_);
      direct_ = false;
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw Error(path.string(), std::string("cannot open: ") + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw Error(path.string(), std::string("cannot stat: ") + std::strerror(err));
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  std::uint64_t size() const { return size_; }

  // Fills chunk.dest with the chunk's bytes inside the file.
  void read(const Chunk& chunk) const {
    const std::uint64_t want = std::min(chunk.length, size_ - std::min(size_, chunk.offset));
    std::uint64_t done = 0;
    while (done < want) {
      // A direct read must ask for whole blocks, also for the file's last partial one.
      const ssize_t n = ::pread(fd_, chunk.dest + done, chunk.length - done,
                                static_cast<off_t>(chunk.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw Error(path_.string(), "read failed at byte " + std::to_string(chunk.offset + done) +
                                        ": " + std::strerror(errno));
      if (n == 0)
        throw Error(path_.string(),
                    "file ends at byte " + std::to_string(chunk.offset + done) + ", " +
                        std::to_string(chunk.offset + want) + " expected",
                    "the file was truncated or replaced while being read; download it again");
      done += static_cast<std::uint64_t>(n);
    }
    if (!direct_ && want > 0)
      ::posix_fadvise(fd_, static_cast<off_t>(chunk.offset), static_cast<off_t>(want),
                      POSIX_FADV_DONTNEED);
  }

 private:
  bool direct_reads_work() const {
    void* block = std::aligned_alloc(kDirectReadAlignment, kDirectReadAlignment);
    if (block == nullptr) return false;  // the buffered reads then
    const bool works = ::pread(fd_, block, kDirectReadAlignment, 0) >= 0 || errno != EINVAL;
    std::free(block);
    return works;
  }

  std::filesystem::path path_;
  int fd_ = -1;
  bool direct_ = true;
  std::uint64_t size_ = 0;
};

}  // namespace

void read_direct(const std::filesystem::path& path, const std::vector<ReadRequest>& requests) {
  if (requests.empty()) return;
  const File file(path);
  std::vector<Chunk> chunks;
  for (const ReadRequest& r : requests) {
    if (file.size() < r.offset + r.needed)
      throw Error(path.string(),
                  "file ends at byte " + std::to_string(file.size()) +
                      ", but its tensors run to byte " + std::to_string(r.offset + r.needed),
                  "the file was truncated or replaced while being read; download it again");
    for (std::uint64_t at = 0; at < r.length && r.offset + at < file.size(); at += kChunkBytes)
      chunks.push_back({r.offset + at, std::min(kChunkBytes, r.length - at), r.dest + at});
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto reader = [&] {
    try {
      for (std::size_t i = next++; i < chunks.size(); i = next++) file.read(chunks[i]);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = chunks.size();
    }
  };
  std::vector<std::thread> readers;
  const auto threads = std::min<std::size_t>(kInFlight, chunks.size());
  for (std::size_t t = 1; t < threads; ++t) readers.emplace_back(reader);
  reader();
  for (std::thread& t : readers) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace draftgate::io
