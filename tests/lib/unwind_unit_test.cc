// SPDX-License-Identifier: MIT
//
// unwind_unit_test - libtimeline's stack walker (lib/src/unwind.cc) on
// frame-pointer chains made by hand on this thread's stack: how each walk
// ends (ring_format.h, StackEnd) when the chain is whole, cut by the depth
// asked for, or broken by a frame pointer that holds no frame.  This
// program has no .sframe section, so every frame takes the frame-pointer
// rule, but for an interrupted one (an exact pc), whose rule comes from
// .eh_frame (two functions in assembly below, with their CFI).  The walks
// on real code and real cores are tests/stacks.
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

#if defined(__x86_64__)
// Where a signal could stop three functions, as their .eh_frame says (the
// assembler's .cfi_* directives): ct_unwind_leaf at its first instruction
// (nothing pushed: CFA = rsp + 8, the return address at rsp),
// ct_unwind_pushed_body after a push of rbp (CFA = rsp + 16, the caller's
// rbp at CFA - 16), and ct_unwind_outermost, whose return address is
// undefined (as _start's is).  None is ever called.
__asm__(
    ".text\n"
    ".globl ct_unwind_leaf\n"
    ".type ct_unwind_leaf, @function\n"
    "ct_unwind_leaf:\n"
    ".cfi_startproc\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_leaf, .-ct_unwind_leaf\n"
    ".globl ct_unwind_pushed\n"
    ".globl ct_unwind_pushed_body\n"
    ".type ct_unwind_pushed, @function\n"
    "ct_unwind_pushed:\n"
    ".cfi_startproc\n"
    "  push %rbp\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbp, -16\n"
    "ct_unwind_pushed_body:\n"
    "  nop\n"
    "  pop %rbp\n"
    ".cfi_def_cfa_offset 8\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_pushed, .-ct_unwind_pushed\n"
    ".globl ct_unwind_outermost\n"
    ".type ct_unwind_outermost, @function\n"
    "ct_unwind_outermost:\n"
    ".cfi_startproc\n"
    ".cfi_undefined %rip\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_outermost, .-ct_unwind_outermost\n");
extern "C" void ct_unwind_leaf();
extern "C" void ct_unwind_outermost();
extern "C" char ct_unwind_pushed_body[];
#endif

struct Walk {
  std::uint32_t depth, end;
  std::uint64_t out[fmt::kMaxStackDepth + 1];
};

// The walk from a frame whose code is code_a and whose frame pointer is
// `fp`, with `sp` its stack pointer.
Walk walk(std::uint64_t sp, std::uint64_t fp, std::uint32_t max) {
  Walk w{};
  const lib::WalkResult st = lib::walk_stack({ra_of(code_a), sp, fp}, false, w.out, max, false);
  w.depth = st.depth;
  w.end = st.end;
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

// The crash handler's walk goes past the 15 frames a Slot.stack byte could
// count (ring format 5's chain holds 64): the depth comes back whole.
TEST_F(Walker, ALongChainIsWalkedToItsEndAndToTheDepthAskedFor) {
  constexpr std::uint32_t kFrames = 40;
  alignas(16) std::uint64_t c[2 * kFrames + 2] = {};
  for (std::uint32_t i = 0; i < kFrames; ++i) {
    c[2 * i] = addr(&c[2 * i + 2]);
    c[2 * i + 1] = i % 2 == 0 ? ra_of(code_a) : ra_of(code_b);
  }
  std::uint64_t out[fmt::kMaxChainedStackDepth];
  const lib::WalkResult whole = lib::walk_stack({ra_of(code_a), addr(c), addr(c)}, false, out,
                                                fmt::kMaxChainedStackDepth, false);
  EXPECT_EQ(whole.end, fmt::kStackComplete);
  ASSERT_EQ(whole.depth, kFrames);
  for (std::uint32_t i = 0; i < kFrames; ++i) EXPECT_EQ(out[i], c[2 * i + 1]) << i;
  const lib::WalkResult cut = lib::walk_stack({ra_of(code_a), addr(c), addr(c)}, false, out, 20, false);
  EXPECT_EQ(cut.end, fmt::kStackDepthLimit);
  EXPECT_EQ(cut.depth, 20u);
}

TEST_F(Walker, AStartInNoObjectsCodeIsABadFrame) {
  CHAIN(chain);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = lib::walk_stack({0x10, addr(chain), addr(chain)}, false, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackBadFrame);
  EXPECT_EQ(st.depth, 0u);
}

#if defined(__x86_64__)
// An interrupted leaf: rbp still holds its caller's frame, and the
// frame-pointer rule would give the caller's caller (code_a) first.  Its
// .eh_frame rule gives its own return address (code_b), then the caller's
// frame follows by frame pointer; with plain reads and with the crash
// handler's process_vm_readv(2) reads alike.
TEST_F(Walker, AnInterruptedLeafTakesItsRuleFromEhFrame) {
  // s[0]: the leaf's return address, at its stack pointer; s[2..3]: its
  // caller's psABI frame (saved rbp -> s[4], return address code_a).
  alignas(16) std::uint64_t s[8] = {};
  s[0] = ra_of(code_b);
  s[2] = addr(&s[4]);
  s[3] = ra_of(code_a);
  for (const bool safe : {false, true}) {
    std::uint64_t out[fmt::kMaxStackDepth];
    const lib::WalkResult st =
        lib::walk_stack({reinterpret_cast<std::uint64_t>(&ct_unwind_leaf), addr(&s[0]), addr(&s[2])}, true, out, 8, safe);
    EXPECT_EQ(st.end, fmt::kStackComplete) << safe;
    ASSERT_EQ(st.depth, 2u) << safe;
    EXPECT_EQ(out[0], ra_of(code_b)) << safe;
    EXPECT_EQ(out[1], ra_of(code_a)) << safe;
  }
}

// Interrupted after `push %rbp`: the CFA is rsp + 16 and the caller's rbp
// is read back from CFA - 16, whatever rbp holds (here no frame at all).
TEST_F(Walker, AnInterruptedFunctionBeforeItsFrameGetsTheCallersFramePointerFromEhFrame) {
  alignas(16) std::uint64_t s[8] = {};
  s[0] = addr(&s[2]);  // the pushed rbp: the caller's frame
  s[1] = ra_of(code_b);
  s[2] = addr(&s[4]);
  s[3] = ra_of(code_a);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st =
      lib::walk_stack({reinterpret_cast<std::uint64_t>(ct_unwind_pushed_body), addr(&s[0]), 8}, true, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackComplete);
  ASSERT_EQ(st.depth, 2u);
  EXPECT_EQ(out[0], ra_of(code_b));
  EXPECT_EQ(out[1], ra_of(code_a));
}

// A frame .eh_frame marks outermost: nothing called it, the walk is
// complete there (whatever rbp and the stack hold).
TEST_F(Walker, TheFrameEhFrameMarksOutermostEndsTheWalkComplete) {
  CHAIN(chain);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = lib::walk_stack({reinterpret_cast<std::uint64_t>(&ct_unwind_outermost), addr(chain),
                                           addr(chain)}, true, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackComplete);
  EXPECT_EQ(st.depth, 0u);
}
#endif

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
