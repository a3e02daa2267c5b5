#include "draftgate/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace draftgate {
namespace {

std::string clock_time(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

}  // namespace

std::string format_progress(const std::string& what, const std::string& unit, std::int64_t done,
                            std::int64_t total, double elapsed_seconds) {
  std::string eta = "--:--";
  if (done > 0 && done <= total)
    eta =
        clock_time(elapsed_seconds / static_cast<double>(done) * static_cast<double>(total - done));
  return what + ": " + unit + " " + std::to_string(done) + "/" + std::to_string(total) + ", " +
         clock_time(elapsed_seconds) + " elapsed, ETA " + eta;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string what, std::string unit, std::int64_t total, bool enabled)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  update(0);
}

Progress::~Progress() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void Progress::update(std::int64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  drawn_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s\033[K", format_progress(what_, unit_, done, total_, elapsed).c_str());
  std::fflush(stderr);
}

}  // namespace draftgate
