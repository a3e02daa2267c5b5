#include "draftgate/io/input_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "draftgate/error.h"

namespace draftgate::io {
namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

std::string file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "a regular file";
}

std::string pseudo_filesystem_of(const fs::path& path) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return "";  // nothing resolvable: the open that follows reports it
  auto it = real.begin();
  if (it == real.end() || ++it == real.end()) return "";
  const std::string top = it->string();
  return top == "proc" || top == "sys" || top == "dev" ? "/" + top : "";
}

void refuse_pseudo_file(const fs::path& path) {
  const std::string root = pseudo_filesystem_of(path);
  if (!root.empty())
    throw Error(path.string(),
                "resolves into " + root +
                    ", a kernel pseudo-filesystem whose files can block, never end or change while "
                    "read; not an input",
                "pass a regular file");
}

namespace {

// A read-only descriptor of the regular file `path`, and its size; draftgate::Error naming the path
// otherwise (no such file, not a regular file and what it is, cannot open and why).
std::pair<int, std::uint64_t> open_regular_file(const fs::path& path) {
  const std::string file = path.string();
  refuse_pseudo_file(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw Error(file, "no such file");
    throw Error(file, "cannot open for reading: " + errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(file, "cannot stat: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(file, "not a regular file (it is " + file_kind(st.st_mode) + ")");
  }
  return {fd, static_cast<std::uint64_t>(st.st_size)};
}

}  // namespace

void require_input_file(const fs::path& path) { ::close(open_regular_file(path).first); }

std::string read_input_file(const fs::path& path, std::uint64_t max_bytes,
                            const std::string& kind) {
  const std::string file = path.string();
  const auto [fd, size] = open_regular_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > max_bytes)
    throw Error(file, "file is " + std::to_string(size) + " bytes, over the " +
                          std::to_string(max_bytes) + "-byte limit for " + kind);
  std::string bytes(size, '\0');
  std::uint64_t done = 0;
  while (done < size) {
    const auto n = ::read(fd, bytes.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(file, "cannot read: " + errno_text(errno));
    if (n == 0) break;  // shrank while reading
    done += static_cast<std::uint64_t>(n);
  }
  bytes.resize(done);
  if (bytes.empty()) throw Error(file, "file is empty (0 bytes), expected " + kind);
  return bytes;
}

void require_input_directory(const fs::path& dir, const std::string& hint) {
  const std::string name = dir.string();
  refuse_pseudo_file(dir);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw Error(name, "no such directory", hint);
    throw Error(name, "cannot access: " + errno_text(err), hint);
  }
  if (!S_ISDIR(st.st_mode))
    throw Error(name, "not a directory (it is " + file_kind(st.st_mode) + ")", hint);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) throw Error(name, "cannot read the directory: " + errno_text(errno));
  ::closedir(d);
}

}  // namespace draftgate::io
