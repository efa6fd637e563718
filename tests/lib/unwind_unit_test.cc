// SPDX-License-Identifier: MIT
//
// unwind_unit_test - libtimeline's stack walker (lib/src/unwind.cc) on
// frame-pointer chains made by hand on this thread's stack: how each walk
// ends (ring_format.h, StackEnd) when the chain is whole, cut by the depth
// asked for, or broken by a frame pointer that holds no frame.  This
// program has no .sframe section, so every frame takes the frame-pointer
// rule.  The walks on real code and real cores are tests/stacks.
#include <gtest/gtest.h>

#include <cstdint>

#include "core_timeline/ring_format.h"
#include "core_timeline/timeline.h"
#include "unwind.h"

namespace {

namespace fmt = core_timeline::format;
namespace lib = core_timeline::lib;

// Two code addresses of this program, as return addresses (the walker
// looks each up at address - 1).
__attribute__((noinline)) void code_a() { __asm__ volatile(""); }
__attribute__((noinline)) void code_b() { __asm__ volatile(""); }
std::uint64_t ra_of(void (*f)()) { return reinterpret_cast<std::uint64_t>(f) + 1; }
std::uint64_t addr(const void *p) { return reinterpret_cast<std::uint64_t>(p); }

struct Walk {
  std::uint32_t depth, end;
  std::uint64_t out[fmt::kMaxStackDepth + 1];
};

// The walk from a frame whose code is code_a and whose frame pointer is
// `fp`, with `sp` its stack pointer.
Walk walk(std::uint64_t sp, std::uint64_t fp, std::uint32_t max) {
  Walk w{};
  const std::uint8_t st = lib::walk_stack({ra_of(code_a), sp, fp}, false, w.out, max, false);
  w.depth = fmt::stack_depth(st);
  w.end = fmt::stack_end(st);
  return w;
}

class Walker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tl_init(nullptr), 0); }
};

// A psABI chain, on this thread's stack (the walker reads nothing else,
// and a gtest fixture lives on the heap, hence a macro for locals):
// c[0] = saved rbp (-> c[2]), c[1] = return address code_b, c[2] = saved
// rbp (-> c[4]), c[3] = code_a, c[4..5] = 0, 0: the end mark.
#define CHAIN(c)                  \
  alignas(16) std::uint64_t c[8] = {}; \
  c[0] = addr(&c[2]);             \
  c[1] = ra_of(code_b);           \
  c[2] = addr(&c[4]);             \
  c[3] = ra_of(code_a)

TEST_F(Walker, AWholeChainEndsCompleteAtTheZeroReturnAddress) {
  CHAIN(chain);
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackComplete);
  ASSERT_EQ(w.depth, 2u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
  EXPECT_EQ(w.out[1], ra_of(code_a));
}

TEST_F(Walker, TheDepthAskedForEndsItWithDepthLimit) {
  CHAIN(chain);
  const Walk w = walk(addr(chain), addr(chain), 1);
  EXPECT_EQ(w.end, fmt::kStackDepthLimit);
  ASSERT_EQ(w.depth, 1u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
}

// A "return address" that is no code: rbp held no frame, so what it read
// is no frame either, wherever the walk finds out (the next frame's lookup,
// or, for the last place, at once).
TEST_F(Walker, AReturnAddressThatIsNoCodeEndsItWithNoUnwindInformationAndIsDropped) {
  CHAIN(chain);
  chain[1] = 0x1234;
  for (const std::uint32_t max : {1u, 2u, 8u}) {
    const Walk w = walk(addr(chain), addr(chain), max);
    EXPECT_EQ(w.end, fmt::kStackNoUnwind) << max;
    EXPECT_EQ(w.depth, 0u) << max;
  }
  chain[1] = ra_of(code_b);
  chain[3] = 0x1234;
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  ASSERT_EQ(w.depth, 1u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
}

TEST_F(Walker, AFramePointerBelowTheStackPointerOrOffTheStackHoldsNoFrame) {
  CHAIN(chain);
  EXPECT_EQ(walk(addr(&chain[2]), addr(&chain[0]), 8).end, fmt::kStackNoUnwind);
  static std::uint64_t off_stack[4];
  const Walk w = walk(addr(chain), addr(off_stack), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  EXPECT_EQ(w.depth, 0u);
  EXPECT_EQ(walk(addr(chain), addr(chain) + 4, 8).end, fmt::kStackNoUnwind) << "misaligned";
}

// The chain must go up the stack: a saved rbp that points back down ends
// it after the frames before it (here the second frame's saved rbp points
// at the first frame, below the second's CFA).
TEST_F(Walker, AChainThatTurnsBackEndsWhereItTurns) {
  CHAIN(chain);
  chain[2] = addr(&chain[0]);
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  ASSERT_EQ(w.depth, 2u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
  EXPECT_EQ(w.out[1], ra_of(code_a));
}

TEST_F(Walker, AStartInNoObjectsCodeIsABadFrame) {
  CHAIN(chain);
  std::uint64_t out[fmt::kMaxStackDepth];
  const std::uint8_t st = lib::walk_stack({0x10, addr(chain), addr(chain)}, false, out, 8, false);
  EXPECT_EQ(fmt::stack_end(st), fmt::kStackBadFrame);
  EXPECT_EQ(fmt::stack_depth(st), 0u);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
