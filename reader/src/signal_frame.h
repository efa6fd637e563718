/* SPDX-License-Identifier: MIT */
/*
 * signal_frame.h - the kernel's signal frame on an unwound stack, and the
 * crash stack merged from the ring's walk and the core's unwind (private to
 * the reader; analyze_symbols.cc uses both).
 */
#ifndef CORE_TIMELINE_READER_SRC_SIGNAL_FRAME_H
#define CORE_TIMELINE_READER_SRC_SIGNAL_FRAME_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/symbolize.h"

namespace core_timeline::reader::detail {

/** A signal frame found on a thread's unwound stack (x86-64). */
struct SignalFrame {
  std::size_t trampoline = 0;   /**< index of the trampoline's frame */
  std::uint64_t ucontext = 0;   /**< address of its struct ucontext */
  std::int32_t signo = 0, err = 0, code = 0;  /**< its siginfo */
  std::uint64_t addr = 0;       /**< si_addr */
  std::int32_t pid = 0;         /**< si_pid */
  std::uint32_t uid = 0;        /**< si_uid */
  std::uint64_t rip = 0, rsp = 0, rbp = 0;  /**< uc_mcontext */
};

/**
 * The innermost signal frame of `frames` (a thread unwound from `core`,
 * innermost first): the first frame after frame 0 that is an activation
 * followed by another activation (libdwfl marks both the trampoline, whose
 * CFI has the 'S' augmentation, and the frame it interrupted), whose stack
 * pointer points at the kernel's struct ucontext, the siginfo after it.
 * Both are read from the core's dumped bytes through a Cursor.  nullopt
 * with `why` empty: no signal frame; with `why` set: one was found but
 * could not be read or did not check out (its saved rip and rsp must be
 * the interrupted frame's pc and sp).  x86-64 only (`why` says so for
 * other machines).
 */
std::optional<SignalFrame> read_signal_frame(const CoreFile &core, std::span<const UnwoundFrame> frames,
                                             std::string &why);

/** One frame of a merged stack: from the core's unwind (`index` in its
 *  frames), the ring's walk (`index` in the ring's list) or both (`index`
 *  in the core's). */
struct MergedFrame {
  FrameFrom from = FrameFrom::kCore;
  std::size_t index = 0;
};

struct MergedStack {
  std::vector<MergedFrame> frames;
  std::uint32_t agree = 0;
  std::string note;
};

/**
 * Merges the ring's crash walk `ring` (the crash pc, then the return
 * addresses of its callers) with the core's unwind `core` (CrashStack in
 * analyze.h says how).  The ring's pc is looked for among the core's
 * activation frames (frame 0, or a frame a signal interrupted), innermost
 * first; when it is in none, the two cannot be lined up: the core's frames
 * are kept, then, if the core's unwind stopped before its outermost frame
 * (`core_complete` false: it may have stopped above the ring's pc, in code
 * without unwind information), the ring's walk after them; `note` says
 * which.
 */
MergedStack merge_stacks(std::span<const std::uint64_t> ring, std::span<const UnwoundFrame> core,
                         bool core_complete);

/**
 * The warning for a crash whose ring holds no CRASH event: what the core
 * shows (a fault the program's own handler re-raised, a signal the process
 * sent itself, or the notes alone), and what the ring's header says of
 * libtimeline's handlers (`installed`: its kCompatHandlers flag, nullopt
 * when no valid ring tells).  Never more than that evidence.
 */
std::string no_crash_event_text(const CrashFacts &c, std::optional<bool> installed);

}  // namespace core_timeline::reader::detail

#endif  // CORE_TIMELINE_READER_SRC_SIGNAL_FRAME_H
