#!/bin/bash
# tests/run.sh - the project's test command.
#
# Installs the build dependencies (packaging/install-build-deps), configures
# with warnings as errors, builds everything and runs every test with ctest.
# Tests that need real cores start the real systemd-coredump pipeline
# themselves (ctest fixture "pipeline", tests/support/pipeline).
#
# Run as root on Debian 12.  Exits non-zero if any step or any test fails.
# CT_BUILD_DIR (default: build) and CT_TEST_TIMEOUT (seconds per test,
# default 300) may be set; CT_TEST_EXCLUDE_LABELS (a ctest -LE regex, for
# example 'pipeline|system') leaves out the tests with those labels, as the
# fresh-machine test does inside its chroot (with CT_DEPS_NO_VIEWER=1, which
# packaging/install-build-deps reads: no chromium, nodejs or npm there).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${CT_BUILD_DIR:-build}
jobs=$(nproc)

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
packaging/install-build-deps

step "configure ($build)"
if [[ -f $build/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
  echo "tests/run.sh: $build/ was configured with another generator; remove it or set CT_BUILD_DIR" >&2
  exit 1
fi
cmake -S . -B "$build" -G Ninja -DCT_WERROR=ON

step "build"
cmake --build "$build" --parallel "$jobs"

step "test"
select=()
if [[ -n ${CT_TEST_EXCLUDE_LABELS:-} ]]; then
  select=(-LE "$CT_TEST_EXCLUDE_LABELS")
  echo "tests/run.sh: leaving out the tests labelled $CT_TEST_EXCLUDE_LABELS (CT_TEST_EXCLUDE_LABELS)"
fi
status=0
ctest --test-dir "$build" --output-on-failure --no-tests=error \
  --timeout "${CT_TEST_TIMEOUT:-300}" --parallel "$jobs" "${select[@]}" || status=$?
if ((status != 0)); then
  echo "tests/run.sh: FAILED (ctest exit status $status); the failed tests' output is above, logs in $build/Testing/Temporary/" >&2
  exit "$status"
fi
echo "tests/run.sh: all tests passed"
