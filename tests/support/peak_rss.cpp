// peak_rss REPORT CMD ARGS...: runs CMD (its stdout and stderr untouched) and writes "<exit code>
// <peak RSS in KiB> <user CPU s> <system CPU s> <bytes read from storage>" of that process alone to
// the file REPORT. A tiny launcher of its own, because
// a process spawned straight from a big one (a test linking libtorch) inherits its parent's RSS
// high-water mark across exec.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const pid_t pid = fork();
  if (pid == 0) {
    execv(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  std::FILE* report = std::fopen(argv[1], "w");
  if (report == nullptr) return 2;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  std::fprintf(report, "%d %ld %.3f %.3f %ld\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
               usage.ru_maxrss, seconds(usage.ru_utime), seconds(usage.ru_stime),
               usage.ru_inblock * 512L);
  return std::fclose(report) == 0 ? 0 : 2;
}
