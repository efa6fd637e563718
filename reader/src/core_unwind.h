/* SPDX-License-Identifier: MIT */
/*
 * core_unwind.h - threads of a core unwound with libdwfl (private to the
 * reader: symbolize.cc calls it in the Dwfl it made for the symbols, with
 * the core's modules reported and its file rules in force).
 */
#ifndef CORE_TIMELINE_READER_SRC_CORE_UNWIND_H
#define CORE_TIMELINE_READER_SRC_CORE_UNWIND_H

#include <elfutils/libdwfl.h>

#include <string>
#include <vector>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/symbolize.h"

namespace core_timeline::reader::detail {

/**
 * Attaches `dwfl` to the core's thread states (dwfl_core_file_attach, over
 * an Elf of the core's bytes) and unwinds the threads `req` asks for, into
 * `out` (frames without symbols).  Returns "" or why nothing could be
 * unwound.  `dwfl` must already have its modules reported.  Not thread-safe
 * for one Dwfl; the Elf it makes lives as long as `dwfl` needs it and is
 * freed by the caller's holder `elf_out` (elf_end after dwfl_end).
 */
std::string unwind_core_threads(Dwfl *dwfl, const CoreFile &core, const UnwindRequest &req,
                                std::vector<UnwoundThread> &out, Elf **elf_out);

}  // namespace core_timeline::reader::detail

#endif  // CORE_TIMELINE_READER_SRC_CORE_UNWIND_H
