#!/bin/bash
# tests/run.sh - the project's test command.
#
# Installs the build dependencies (packaging/install-build-deps), configures
# with warnings as errors, builds everything and runs every test with ctest.
# Tests that need real cores start the real systemd-coredump pipeline
# themselves (ctest fixture "pipeline", tests/support/pipeline).
#
# Run as root on Debian 12.  Exits non-zero if any step or any test fails.
# Stops at once, with one line saying why, where other users cannot reach
# the build directory (a clone under /root, mode 0700): the tests run its
# programs as other users.
# CT_BUILD_DIR (default: build) and CT_TEST_TIMEOUT (seconds per test,
# default 300) may be set; CT_TEST_EXCLUDE_LABELS (a ctest -LE regex, for
# example 'pipeline|system') leaves out the tests with those labels, as the
# fresh-machine test does inside its chroot (with CT_DEPS_NO_VIEWER=1, which
# packaging/install-build-deps reads: no chromium, nodejs or npm there).
#
# The compilers run through ccache, with its cache in CT_CCACHE_DIR (default
# <build>-ccache, next to the build directory; exported to the tests): the
# fresh-machine test (tests/packaging/fresh-machine) lends it, read-only, to
# the same build of the same commit in its chroot, which then compiles only
# what differs there.  ccache hashes the compiler and every header a file
# includes, so a header or compiler that differs or is missing on the fresh
# machine is a miss, compiled (and failed) there for real.  CT_CCACHE=0
# builds without it.
#
# Then the sanitizer step: a second build directory, <build>-asan
# (CT_SANITIZE_BUILD_DIR), configured with CT_SANITIZE=address,undefined
# (gcc's ASan and UBSan, every finding fatal), builds only the target
# sanitize_tests (the tests labelled "sanitize" and what they run: the unit
# tests and the reader's hostile cores) through the same ccache, and runs
# those tests with ASAN_OPTIONS and UBSAN_OPTIONS that stop at the first
# finding and report leaks (docs/hacking.md, "Sanitizers", says why
# those tests and not the others).  The step runs by default, and so in CI;
# CT_SANITIZE_RUN=0 leaves it out (the fresh-machine test does, in its
# chroot: the host's run has it).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${CT_BUILD_DIR:-build}
jobs=$(nproc)

step() { printf '\n== %s (%d s since the start)\n' "$*" "$SECONDS"; }

# Other users must reach the build directory: the daemon's decoders (its
# own user, or the crashed user's) read the crashed programs and the event
# names there, and tests run programs there as users of their own.  Under a
# directory only root may enter (a clone in /root, mode 0700) those tests
# fail, so stop now, before the build, with one line.  The test is uid
# 65534 with no group: the rights of "others".  Only the build directory
# is checked: with it elsewhere (CT_BUILD_DIR), the tests that failed in a
# clone under /root passed.
first_closed() {  # the first existing directory of $1's path uid 65534 cannot enter
  local prefix='' part parts
  IFS=/ read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    [[ -n $part ]] || continue
    prefix+=/$part
    [[ -d $prefix ]] || return 1
    setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$prefix" 2>/dev/null || { echo "$prefix"; return 0; }
  done
  return 1
}
if ((EUID == 0)) && command -v setpriv >/dev/null; then
  build_path=$build
  [[ $build_path == /* ]] || build_path=$(pwd -P)/$build_path
  if closed=$(first_closed "$build_path"); then
    echo "tests/run.sh: other users cannot enter $closed (mode $(stat -c %a "$closed")), so they cannot reach the build directory $build_path, but the tests run its programs as other users (the decoder's, their own) and would fail: clone under a directory others may enter, such as /srv or /var/tmp, or set CT_BUILD_DIR to one" >&2
    exit 1
  fi
fi

step "dependencies"
packaging/install-build-deps

step "configure ($build)"
if [[ -f $build/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
  echo "tests/run.sh: $build/ was configured with another generator; remove it or set CT_BUILD_DIR" >&2
  exit 1
fi
launcher=()
if [[ ${CT_CCACHE:-1} != 0 ]]; then
  command -v ccache >/dev/null || { echo "tests/run.sh: ccache is missing: run packaging/install-build-deps (or set CT_CCACHE=0)" >&2; exit 1; }
  CT_CCACHE_DIR=${CT_CCACHE_DIR:-${build%/}-ccache}
  mkdir -p "$CT_CCACHE_DIR"
  CT_CCACHE_DIR=$(cd "$CT_CCACHE_DIR" && pwd)
  # compiler_check=content: the compiler's own bytes, not its mtime, so a
  # cache made on another machine (the host, for the fresh-machine chroot)
  # is used only with the very same compiler.
  export CT_CCACHE_DIR CCACHE_DIR=$CT_CCACHE_DIR CCACHE_COMPILERCHECK=content CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  echo "tests/run.sh: compiling through ccache, cache $CT_CCACHE_DIR${CCACHE_READONLY:+ (read-only)}"
else
  launcher=(-UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER)
fi
cmake -S . -B "$build" -G Ninja -DCT_WERROR=ON "${launcher[@]}"

step "build"
cmake --build "$build" --parallel "$jobs"
if [[ ${CT_CCACHE:-1} != 0 ]]; then
  if [[ -n ${CCACHE_STATSLOG:-} && -f $CCACHE_STATSLOG ]]; then
    ccache --show-log-stats 2>/dev/null || true   # a read-only cache keeps no counters
  else
    ccache --show-stats 2>/dev/null || true
  fi
fi

# The sanitizer build (below) compiles beside the tests, at nice 19: much
# of the tests' time is spent waiting (for journald, for crashes, for the
# fresh-machine test's downloads), and a cold build of it after them would
# add its whole time to CI's.  Nice 19, below everything else, since it has
# the most slack: its tests wait for the last normal test anyway, while the
# fresh-machine test's dpkg-buildpackage (nice 15) is what the whole run
# waits for (docs/hacking.md, "CI's time").  Its output goes to
# <build>-asan/sanitize-build.log, shown if it fails.
sanitize=1
[[ ${CT_SANITIZE_RUN:-1} == 0 ]] && sanitize=0
asan_build=${CT_SANITIZE_BUILD_DIR:-${build%/}-asan}
# CT_SANITIZE_WIDE=1: also the daemon's and ctl-query's unit tests
# (tests/CMakeLists.txt; their build more than doubles the step's:
# docs/hacking.md, "Sanitizers").
asan_target=sanitize_tests asan_labels='^sanitize$'
if [[ ${CT_SANITIZE_WIDE:-0} == 1 ]]; then asan_target=sanitize_tests_wide asan_labels='^sanitize(_wide)?$'; fi
asan_pid=
if ((sanitize)); then
  step "sanitizers: configure ($asan_build, CT_SANITIZE=address,undefined), build (target $asan_target) beside the tests"
  t0=$SECONDS
  cmake -S . -B "$asan_build" -G Ninja -DCT_WERROR=ON -DCT_SANITIZE=address,undefined \
    -DCT_BUILD_BENCH=OFF -DCT_BUILD_FUZZ=OFF "${launcher[@]}"
  nice -n 19 cmake --build "$asan_build" --parallel "$jobs" --target "$asan_target" > "$asan_build/sanitize-build.log" 2>&1 &
  asan_pid=$!
  # On any exit before it is waited for: stop it (ninja stops its compilers).
  trap '[[ -n $asan_pid ]] && { pkill -TERM -P "$asan_pid"; kill "$asan_pid"; } 2>/dev/null; true' EXIT
fi

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

if ((!sanitize)); then
  echo "tests/run.sh: all tests passed (the sanitizer step left out: CT_SANITIZE_RUN=0)"
  exit 0
fi
step "sanitizers: build (target $asan_target; begun before the tests)"
asan_status=0
wait "$asan_pid" || asan_status=$?
asan_pid=
tail -n 3 "$asan_build/sanitize-build.log"
if ((asan_status != 0)); then
  tail -n 60 "$asan_build/sanitize-build.log"
  echo "tests/run.sh: FAILED: the sanitizer build (exit status $asan_status); its log is $asan_build/sanitize-build.log" >&2
  exit "$asan_status"
fi
echo "tests/run.sh: the sanitizer build was done $((SECONDS - t0)) s after it began"
step "sanitizers: test (labels $asan_labels)"
# halt_on_error: the first finding fails the test (the build also has
# -fno-sanitize-recover=all).  detect_leaks: the daemon and ctl-query are
# long-lived, and a leak per crash or per entry is a bug there; LeakSanitizer
# runs at each test process's exit (a decoder ends with _exit, in a seccomp
# filter that refuses the ptrace LeakSanitizer needs, so it checks none).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
ctest --test-dir "$asan_build" --output-on-failure --no-tests=error \
  --timeout "${CT_TEST_TIMEOUT:-300}" --parallel "$jobs" -L "$asan_labels" || status=$?
# What a test left out under the sanitizers says why (GTEST_SKIP).
grep -ho '^\[  SKIPPED \] [A-Za-z][^ ]*' "$asan_build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u || true
echo "tests/run.sh: the sanitizer step took $((SECONDS - t0)) s"
if ((status != 0)); then
  echo "tests/run.sh: FAILED under the sanitizers (ctest exit status $status); the failed tests' output is above, logs in $asan_build/Testing/Temporary/" >&2
  exit "$status"
fi
echo "tests/run.sh: all tests passed, and the tests labelled $asan_labels under ASan and UBSan"
