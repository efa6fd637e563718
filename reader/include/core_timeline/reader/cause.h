/* SPDX-License-Identifier: MIT */
/*
 * cause.h - a probable cause of the crash, stated only when the core holds
 * the evidence (docs/cause.md): a use after free, a double or invalid free,
 * an overflow hint, glibc's abort message, a use of a bad fd.
 *
 * Facts and their sources:
 *  - blocks: the allocation wrappers' MALLOC, CALLOC, REALLOC and FREE
 *    events (libtimeline-alloc.so), replayed in the timeline's merged
 *    order, one ring (one process) at a time;
 *  - pointers: the fault address (NT_SIGINFO si_addr, for a fault whose
 *    si_code gives one) and the general registers of the crashing thread
 *    (its NT_PRSTATUS pr_reg, ThreadStatus::regs);
 *  - fds: the I/O wrappers' events, each tied to what made or closed its
 *    fd (Event::fd_state, io_events.h tie_fds);
 *  - the abort message: glibc's `__abort_msg` (found by its symbol in
 *    libc's symbol table through libdwfl, symbolize.h find_symbol), a
 *    pointer to the `struct abort_msg_s { unsigned int size; char msg[]; }`
 *    glibc mmaps before it aborts (assert(), malloc's checks,
 *    __libc_message), read from the core's dumped bytes with bounds.
 * Every claim names the window it relies on (SourceWindow; render.h
 * absence_text): one that needs the absence of an event (a free "not
 * allocated again since") is made only when the events it needs are inside
 * the part of the window that is complete, with no torn slot in it; where
 * that cannot be known, CauseReport::cannot_tell says so instead.
 *
 * Thread-safety: values.
 */
#ifndef CORE_TIMELINE_READER_CAUSE_H
#define CORE_TIMELINE_READER_CAUSE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace core_timeline::reader {

/** "use_after_free", "double_free", "invalid_free", "overflow_hint",
 *  "abort_message", "bad_fd". */
enum class CauseKind : std::uint8_t { kUseAfterFree, kDoubleFree, kInvalidFree, kOverflowHint, kAbortMessage, kBadFd };
std::string_view cause_kind_name(CauseKind k) noexcept;

/** A value of the crashing thread that points where the claim says: a
 *  register ("rdi", "x0") or "fault_address". */
struct CausePointer {
  std::string name;
  std::uint64_t value = 0;
};

/** An event a claim cites (index in Analysis::events) and its part in it:
 *  "allocation", "free", "first_free", "second_free", "use", "close",
 *  "made". */
struct CitedEvent {
  std::uint32_t event = 0;
  std::string role;
};

/** One claim, with its evidence. */
struct Cause {
  CauseKind kind = CauseKind::kUseAfterFree;
  /** The claim as one line of text, with its evidence (locations,
   *  threads, ages); untrusted bytes in it (an abort message, a path) are
   *  raw: renderers escape them. */
  std::string text;
  /** The window it relies on (render.h absence_text of its source), ""
   *  when it relies on the core alone (the abort message). */
  std::string window;
  /** What points into the block (the fault address first, then
   *  registers); empty for frees, abort messages and fds. */
  std::vector<CausePointer> pointers;
  /** The block: its start, size in bytes (as asked for), and where the
   *  first pointer lies relative to its start (past its end for an
   *  overflow hint). */
  std::optional<std::uint64_t> block, block_size;
  std::optional<std::int64_t> offset;
  std::optional<std::int32_t> fd;       /**< kBadFd */
  std::optional<std::string> message;   /**< kAbortMessage: glibc's text
                                             (raw bytes, untrusted) */
  std::vector<CitedEvent> events;
};

/** The cause section: its claims, strongest first, and what the evidence
 *  could not decide (each one line, naming the window that limits it). */
struct CauseReport {
  std::vector<Cause> causes;
  std::vector<std::string> cannot_tell;
};

/** Most claims the text shows (one "cause:" line each, and a "relies on:"
 *  line under each that has a window), then one line counting the rest
 *  when there are more, then one "cause cannot be told:" line each; the
 *  JSON has every claim.  Readers of stored texts count the lines so. */
inline constexpr std::size_t kMaxCauseLines = 4;

/** A register of NT_PRSTATUS's pr_reg by its index, for machine
 *  (EM_X86_64: user_regs_struct order; EM_AARCH64: "x0".."x30", "sp",
 *  "pc", "pstate"); "" for another machine or index. */
std::string_view register_name(std::uint16_t machine, std::size_t index) noexcept;

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_CAUSE_H
