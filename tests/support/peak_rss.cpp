// peak_rss CMD ARGS...: runs CMD and prints "<exit code> <peak RSS in KiB>" of that process alone.
// A tiny launcher of its own, because a process spawned straight from a big one (a test linking
// libtorch) inherits its parent's RSS high-water mark across exec.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const pid_t pid = fork();
  if (pid == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  std::printf("%d %ld\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss);
  return 0;
}
