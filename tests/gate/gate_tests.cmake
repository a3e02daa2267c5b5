# Read by ctest (the tests directory's TEST_INCLUDE_FILES) each time it loads the tests: one `gate.<check>` test
# per registered check, from the list the build wrote with `draftgate check --list --json` — the registry is the
# only list of checks, so a new check gets its gate test without anyone editing a list.
# Set by the including file (tests/CMakeLists.txt): DRAFTGATE_GATE_LIST, DRAFTGATE_GATE_BINARY,
# DRAFTGATE_GATE_RUNNER, DRAFTGATE_GATE_ENVIRONMENT.
if(NOT EXISTS "${DRAFTGATE_GATE_LIST}")
  # Not built yet: say so as a failing test rather than listing no gate tests at all.
  add_test(gate.not_built sh -c
    "echo '${DRAFTGATE_GATE_LIST}: missing: build first (cmake --build BUILD_DIR)' >&2; exit 1")
  set_tests_properties(gate.not_built PROPERTIES LABELS gate)
  return()
endif()
file(READ "${DRAFTGATE_GATE_LIST}" checks_json)
string(JSON count ERROR_VARIABLE json_error LENGTH "${checks_json}" checks)
if(json_error OR count EQUAL 0)
  string(REPLACE "'" "" json_error "${json_error}")  # it goes inside a single-quoted echo
  add_test(gate.bad_list sh -c
    "echo '${DRAFTGATE_GATE_LIST}: not a check list (${json_error}): rebuild' >&2; exit 1")
  set_tests_properties(gate.bad_list PROPERTIES LABELS gate)
  return()
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON check GET "${checks_json}" checks ${i} name)
  add_test(gate.${check} sh "${DRAFTGATE_GATE_RUNNER}" "${DRAFTGATE_GATE_BINARY}" ${check})
  set_tests_properties(gate.${check} PROPERTIES LABELS gate SKIP_RETURN_CODE 77
    ENVIRONMENT "${DRAFTGATE_GATE_ENVIRONMENT}")
endforeach()
