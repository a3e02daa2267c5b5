// The progress line of long runs: its format, and silence when stderr is not a terminal.

#include "draftgate/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace draftgate {
namespace {

using ::testing::HasSubstr;

TEST(Progress, FormatsStepsElapsedAndEta) {
  EXPECT_EQ(format_progress("forward", "layer", 0, 64, 0.4),
            "forward: layer 0/64, 0:00 elapsed, ETA --:--");
  // 16 of 64 layers in 42 s: 48 more at the same pace take 126 s.
  EXPECT_EQ(format_progress("forward", "layer", 16, 64, 42.0),
            "forward: layer 16/64, 0:42 elapsed, ETA 2:06");
  EXPECT_EQ(format_progress("eval", "prompt", 1, 3, 3725.0),
            "eval: prompt 1/3, 1:02:05 elapsed, ETA 2:04:10");
  EXPECT_EQ(format_progress("eval", "prompt", 3, 3, 9.6),
            "eval: prompt 3/3, 0:10 elapsed, ETA 0:00");
}

TEST(Progress, SilentWhenNotEnabledAndByDefaultOffATerminal) {
  ::testing::internal::CaptureStderr();
  {
    Progress off("forward", "layer", 4, /*enabled=*/false);
    for (int i = 1; i <= 4; ++i) off.update(i);
    Progress by_default("forward", "layer", 4);  // ctest's stderr is a file or a pipe
    for (int i = 1; i <= 4; ++i) by_default.update(i);
  }
  EXPECT_FALSE(stderr_is_terminal());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(Progress, OnATerminalRedrawsOneLineAndErasesIt) {
  ::testing::internal::CaptureStderr();
  {
    Progress on("check fc_excludes_target_layer", "layer", 4, /*enabled=*/true);
    on.update(4);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("\rcheck fc_excludes_target_layer: layer 0/4, 0:00 elapsed"));
  EXPECT_THAT(err,
              HasSubstr("\rcheck fc_excludes_target_layer: layer 4/4, 0:00 elapsed, ETA 0:00"));
  EXPECT_EQ(err.substr(err.size() - 4), "\r\033[K") << "the line is erased at the end";
  EXPECT_EQ(err.find('\n'), std::string::npos) << "never scrolls";
}

}  // namespace
}  // namespace draftgate
