/* SPDX-License-Identifier: MIT */
/*
 * find_causes.h - the rules of cause.h applied to an Analysis (private to
 * the reader; analyze() calls it last, docs/cause.md lists the rules).
 */
#ifndef CORE_TIMELINE_READER_SRC_FIND_CAUSES_H
#define CORE_TIMELINE_READER_SRC_FIND_CAUSES_H

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/cause.h"
#include "core_timeline/reader/elf_core.h"

namespace core_timeline::reader::detail {

/**
 * Sets a.cause when the evidence supports a claim or leaves something a
 * person would ask about undecided (a fault on heap memory the window
 * cannot see); leaves it nullopt otherwise: for a live snapshot, a core
 * without crash facts, and a crash with no evidence.  Reads the crashing
 * thread's registers and (for SIGABRT, with options.symbolize) glibc's
 * abort message from `core`; the events, windows and crash facts from `a`,
 * which must be complete (symbols included: the claims quote locations).
 * Cost: O(n log n) in the allocation events; one more libdwfl child
 * (symbolize.h) for SIGABRT.  Throws std::bad_alloc only.
 */
void find_causes(const CoreFile &core, const ReadOptions &options, Analysis &a);

}  // namespace core_timeline::reader::detail

#endif  // CORE_TIMELINE_READER_SRC_FIND_CAUSES_H
