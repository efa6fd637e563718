# CtTest.cmake - register gtest executables that need real cores.
#
#   ct_add_pipeline_test(TARGET <gtest executable>
#                        [LABELS <label>...]
#                        [TIMEOUT <seconds>]
#                        [ENVIRONMENT <NAME=VALUE>...]
#                        [ARGS <arg>...])
#
# Adds one ctest test named after the target that runs the whole executable
# (its gtest output is shown on failure with --output-on-failure).  The test
#  - requires the ctest fixture "pipeline" (tests/support/pipeline start before,
#    stop after), so real crashes reach systemd-coredump and the journal;
#  - holds RESOURCE_LOCK ct_coredump_pipeline, so tests that crash never run
#    at the same time as each other: a test may change machine-wide crash
#    settings (core_pattern, coredump.conf drop-ins such as ProcessSizeMax),
#    and it must restore them before it ends;
#  - gets CT_TEST_CORE_DIR=<build>/test-cores, where the crash harness
#    (ct::test::default_core_dir()) writes the decompressed cores;
#  - is labelled "pipeline" plus LABELS.
include_guard(GLOBAL)

function(ct_add_pipeline_test)
  cmake_parse_arguments(PARSE_ARGV 0 CT "" "TARGET;TIMEOUT" "LABELS;ENVIRONMENT;ARGS")
  if(NOT CT_TARGET)
    message(FATAL_ERROR "ct_add_pipeline_test: TARGET is required")
  endif()
  if(NOT TARGET ${CT_TARGET})
    message(FATAL_ERROR "ct_add_pipeline_test: ${CT_TARGET} is not a target")
  endif()
  if(CT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ct_add_pipeline_test: unknown arguments ${CT_UNPARSED_ARGUMENTS}")
  endif()

  add_test(NAME ${CT_TARGET} COMMAND $<TARGET_FILE:${CT_TARGET}> ${CT_ARGS})
  set_tests_properties(${CT_TARGET} PROPERTIES
    FIXTURES_REQUIRED pipeline
    RESOURCE_LOCK ct_coredump_pipeline
    LABELS "pipeline;${CT_LABELS}"
    ENVIRONMENT "CT_TEST_CORE_DIR=${PROJECT_BINARY_DIR}/test-cores;${CT_ENVIRONMENT}")
  if(CT_TIMEOUT)
    set_tests_properties(${CT_TARGET} PROPERTIES TIMEOUT ${CT_TIMEOUT})
  endif()
endfunction()

# ct_discover_sanitized_tests(<gtest executable> LABELS <label>...)
#
# gtest_discover_tests(<target> DISCOVERY_TIMEOUT 30), its tests labelled
# LABELS and "sanitize", and <target> a dependency of sanitize_tests
# (tests/CMakeLists.txt): the tests the sanitizer build runs.  The labels
# are set by a file ctest includes after the discovered tests
# (TEST_INCLUDE_FILES, over their TEST_LIST), since CMake 3.25's
# gtest_discover_tests splits a list given in PROPERTIES ("a;b" becomes
# LABELS a b, and b is taken for a property).
#
# With WIDE: labelled "sanitize_wide" instead, and a dependency of
# sanitize_tests_wide: the tests only the wide sanitizer run has (the
# daemon's and ctl-query's, tests/CMakeLists.txt).
function(ct_discover_sanitized_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 CT "WIDE" "" "LABELS")
  set(label sanitize)
  set(goal sanitize_tests)
  if(CT_WIDE)
    set(label sanitize_wide)
    set(goal sanitize_tests_wide)
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 30 TEST_LIST ${target}_TESTS PROPERTIES LABELS ${label})
  set(labels ${CT_LABELS} ${label})
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${target}_sanitize_labels.cmake)
  file(WRITE ${file} "if(${target}_TESTS)\n  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
  add_dependencies(${goal} ${target})
endfunction()
