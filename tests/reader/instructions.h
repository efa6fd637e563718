// SPDX-License-Identifier: MIT
//
// instructions.h - the work a piece of code does, counted in instructions
// by callgrind (tests only).
//
// The hostile-core tests check that the reader's work follows what a core
// holds, not what it claims: that 4 times the entries cost about 4 times
// the work, not 16.  Time would say so only on a quiet machine, and speed
// is for the benchmarks (docs/performance.md); an instruction count is a
// property of the code and its input, the same on every run and under any
// load, so a test can compare the counts of two inputs exactly.
#ifndef CORE_TIMELINE_TESTS_READER_INSTRUCTIONS_H
#define CORE_TIMELINE_TESTS_READER_INSTRUCTIONS_H

#include <cstdint>
#include <functional>
#include <vector>

namespace ct::test {

/**
 * The instructions each of `works` executes (with what it calls), in order.
 *
 * Call from a googletest test.  The count comes from callgrind, which this
 * starts the way googletest starts a death test: the calling test is run
 * again, alone (--gtest_filter), in a child process under
 * `valgrind --tool=callgrind --instr-atstart=no`; when the child reaches this
 * call it counts each work between client requests, writes the counts and
 * exits, and this process reads them.  So a test must reach this call the
 * same way every time and make it once, and builds its inputs before it,
 * outside the works (that is not counted; the child builds them again).
 *
 * On failure (valgrind missing, the child failing before it counted) the
 * test fails with the reason and the child's output, and the result is
 * empty.  CI installs valgrind (packaging/install-build-deps).
 */
std::vector<std::uint64_t> instructions_of(const std::vector<std::function<void()>> &works);

/**
 * Whether instructions_of() counts: not in a sanitizer build (CT_SANITIZE,
 * CT_SANITIZED_BUILD), whose binaries valgrind cannot run (ASan's shadow
 * memory and allocator against valgrind's own), and whose counts would be
 * the sanitizers' checks more than the code's work.  There instructions_of()
 * runs each work once in this process, where the sanitizers check it, and
 * returns no counts; the test then ends with CT_SKIP_UNLESS_COUNTED().  The
 * normal build's run checks the counts.
 */
#ifdef CT_SANITIZED_BUILD
inline constexpr bool kCountsInstructions = false;
#else
inline constexpr bool kCountsInstructions = true;
#endif

}  // namespace ct::test

/** In a test, right after instructions_of(): skips the rest of the test
 *  when nothing was counted (kCountsInstructions), saying why. */
#define CT_SKIP_UNLESS_COUNTED()                                                                        \
  do {                                                                                                 \
    if (!::ct::test::kCountsInstructions)                                                           \
      GTEST_SKIP() << "a sanitizer build counts no instructions (tests/reader/instructions.h); the works " \
                      "ran once under the sanitizers";                                                 \
  } while (0)

namespace ct::test {

}  // namespace ct::test

#endif
