// SPDX-License-Identifier: MIT
// Event ids and modes shared by tl_crasher and lib_crash_test.
#pragma once

#include <cstdint>
#include <cstring>

inline constexpr uint32_t kMarkStart = 0xC0DE;
inline constexpr uint32_t kHandlerRan = 0xC0DF;
inline constexpr uint32_t kThreadStarted = 0xC0E0;
inline constexpr uint32_t kRecovered = 0xC0E1;
inline constexpr uint32_t kExecBefore = 0xC0E2;
inline constexpr uint32_t kAfterExec = 0xC0E3;
inline constexpr uint32_t kHammer = 0xD000;  // + thread index
inline constexpr unsigned kHammerThreads = 8;

// What a hammer thread stores in arg1 for (thread index, counter): a slot
// whose arg1 does not match was not fully written.
inline constexpr uint64_t hammer_check(uint64_t index, uint64_t counter) {
  uint64_t x = (index << 48) ^ counter ^ 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

inline constexpr const char *kModes[] = {
    "segv-null",      "abort",          "wait-for-kill", "bus-mmap",   "ill",
    "fpe",            "overflow-thread", "handler-before", "recover-before",
    "recover-after",  "exec",           "after-exec",    "hammer",     "no-handlers",
};

inline int mode_number(const char *mode) {
  for (unsigned i = 0; i < sizeof kModes / sizeof kModes[0]; ++i)
    if (std::strcmp(kModes[i], mode) == 0) return static_cast<int>(i);
  return -1;
}
