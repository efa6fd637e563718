# TestHarness.cmake - ct::test_harness, for the tests and bench_daemon
# (included from tests/support, and from bench when the tests are not built).
#
#   process.h         ct::test::run / spawn: the one way to run a program
#   daemon_harness.h  ct::test::DaemonHarness (core-timelined started and
#                     stopped in a directory of its own) and CorePipeLimit
#
# Plain C++, no gtest.
include_guard(GLOBAL)

find_package(nlohmann_json 3 REQUIRED)
set(CT_TEST_HARNESS_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(ct_test_harness STATIC ${CT_TEST_HARNESS_DIR}/process.cc ${CT_TEST_HARNESS_DIR}/daemon_harness.cc)
add_library(ct::test_harness ALIAS ct_test_harness)
target_include_directories(ct_test_harness PUBLIC ${CT_TEST_HARNESS_DIR})
target_link_libraries(ct_test_harness PUBLIC nlohmann_json::nlohmann_json PRIVATE ct::reader)
