// The test executables' main: GoogleTest's, plus ctest's skip code. ctest runs one process per test
// suite (tests/cmake/suite_tests.cmake); a suite whose every test skipped exits 77 so ctest shows
// it skipped, while a suite in which anything failed or passed keeps GoogleTest's own exit status.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  constexpr int kCtestSkip = 77;
  if (status == 0 && run.successful_test_count() == 0 && run.skipped_test_count() > 0)
    return kCtestSkip;
  return status;
}
