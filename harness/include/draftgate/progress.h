#pragma once
// A progress line on stderr for long work (`check`, `golden record`, `forward`, `eval`): what is
// being done, step i/N, time elapsed and an estimate of the time left, redrawn in place. Drawn only
// when stderr is a terminal: logs, pipes and CI output stay clean.

#include <chrono>
#include <cstdint>
#include <string>

namespace draftgate {

// "forward: layer 12/64, 0:42 elapsed, ETA 2:48". The ETA assumes the remaining steps take the
// mean time of those done ("ETA --:--" before the first); times are m:ss, or h:mm:ss past an hour.
std::string format_progress(const std::string& what, const std::string& unit, std::int64_t done,
                            std::int64_t total, double elapsed_seconds);

bool stderr_is_terminal();

class Progress {
 public:
  // `unit`: what a step is ("layer", "prompt"). Silent unless `enabled`.
  Progress(std::string what, std::string unit, std::int64_t total,
           bool enabled = stderr_is_terminal());
  ~Progress();  // erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Step `done` of the total finished; redraws at most every 200 ms, and always at the last step.
  void update(std::int64_t done);

 private:
  std::string what_, unit_;
  std::int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace draftgate
