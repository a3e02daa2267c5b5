#include "draftgate/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "draftgate/error.h"

namespace draftgate::io {
namespace fs = std::filesystem;

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write,
                           WriteMode mode) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw Error(path.string(),
                std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::close(fd);
  const fs::path tmp = tmpl;
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw Error(path.string(), "cannot open temporary file " + tmp.string());
      write(out);
      out.flush();
      if (!out) throw Error(path.string(), "write failed (disk full?)");
    }
    // fsync the data before the rename makes it visible.
    const int sync_fd = ::open(tmp.c_str(), O_RDONLY);
    if (sync_fd >= 0) {
      ::fsync(sync_fd);
      ::close(sync_fd);
    }
    ::chmod(tmp.c_str(), 0644);
    if (mode == WriteMode::kCreateNew) {
      // link(2) never replaces: of two runs racing for a new path, exactly one gets it.
      if (::link(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        if (err == EEXIST)
          throw Error(path.string(), "exists; refusing to replace it",
                      "pass --force to replace it");
        throw Error(path.string(), std::string("cannot create: ") + std::strerror(err));
      }
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return;
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw Error(path.string(), "cannot rename temporary file into place: " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

void write_text_atomically(const fs::path& path, std::string_view text, WriteMode mode) {
  write_file_atomically(
      path, [&](std::ostream& out) { out.write(text.data(), text.size()); }, mode);
}

}  // namespace draftgate::io
