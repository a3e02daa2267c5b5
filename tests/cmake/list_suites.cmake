# Run by the build after each test executable links (draftgate_add_suite_tests): lists its GoogleTest suites and
# writes one ctest test per suite. One process per suite, not per case: every process pays libtorch's ~1 s of
# static initialisation, which per case was most of the suite's time.
# In: TEST_EXECUTABLE, TEST_LABEL, WORKING_DIR, CTEST_FILE. A suite name another executable already registered
# is registered as EXECUTABLE/Suite, so that no suite is lost to a name clash.
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${status}): ${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # Suite lines start in column one ("Suite." or "Prefix/Suite.  # TypeParam = ..."); cases are indented.
  if(line MATCHES "^([^ #.][^ #.]*)\\.")
    set(suite "${CMAKE_MATCH_1}")
    if(suite MATCHES "^DISABLED_|/DISABLED_")
      continue()
    endif()
    get_filename_component(executable "${TEST_EXECUTABLE}" NAME)
    string(APPEND script
      "set(draftgate_suite [=[${suite}]=])\n"
      "list(FIND DRAFTGATE_SUITES \"\${draftgate_suite}\" draftgate_seen)\n"
      "if(NOT draftgate_seen EQUAL -1)\n  set(draftgate_suite [=[${executable}/${suite}]=])\nendif()\n"
      "list(APPEND DRAFTGATE_SUITES \"\${draftgate_suite}\")\n"
      "add_test(\"\${draftgate_suite}\" [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${suite}.*]=])\n"
      "set_tests_properties(\"\${draftgate_suite}\" PROPERTIES LABELS [=[${TEST_LABEL}]=] SKIP_RETURN_CODE 77"
      " WORKING_DIRECTORY [=[${WORKING_DIR}]=])\n")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}.tmp" "${script}")
file(RENAME "${CTEST_FILE}.tmp" "${CTEST_FILE}")
