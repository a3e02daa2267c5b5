# `cmake --install`: the front end in bin/, the engine library (every verb, the check framework and
# the checks) in lib/, the public headers in include/draftgate/, and a CMake package so a team can
# build its own checks against the installed engine: find_package(draftgate) → draftgate::engine.

# The front end loads the engine from beside itself (build tree) or from this path relative to its
# own directory (install tree), so an installed prefix can be moved as a whole.
file(RELATIVE_PATH engine_from_bin "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
target_compile_definitions(draftgate PRIVATE DRAFTGATE_ENGINE_FROM_BIN="${engine_from_bin}")

set_target_properties(draftgate_engine PROPERTIES EXPORT_NAME engine
  # libtorch from a Python wheel lives outside the system paths: keep its directory.
  INSTALL_RPATH_USE_LINK_PATH ON)
# What a check built out of tree needs: the headers (check.h includes "draftgate/…" and the checks'
# own headers include "checks/…"), JSON, and libtorch for checks that compute with tensors.
target_include_directories(draftgate_engine INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/draftgate>)
target_link_libraries(draftgate_engine INTERFACE nlohmann_json::nlohmann_json torch)

install(TARGETS draftgate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS draftgate_engine EXPORT draftgateTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY harness/include/draftgate DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Of checks/, only what a check of one's own uses: the framework, the engine's model computations
# and the metric helper (the rest are internals of the bundled checks).
install(FILES checks/check.h checks/model_engine.h checks/metrics.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/draftgate/checks)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/draftgate)
install(EXPORT draftgateTargets NAMESPACE draftgate:: DESTINATION ${config_dir})
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/draftgateConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/draftgateConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/draftgateConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/draftgateConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/draftgateConfigVersion.cmake DESTINATION ${config_dir})
