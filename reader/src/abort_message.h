/* SPDX-License-Identifier: MIT */
/*
 * abort_message.h - glibc's abort message, as the dead process left it
 * (private to the reader; cause.cc uses it).
 *
 * glibc keeps the message of a fatal error in `__abort_msg` (a
 * GLIBC_PRIVATE variable of libc.so.6, declared in glibc's
 * include/stdlib.h), "so that it is available in the core": assert()'s
 * "prog: f.c:12: main: Assertion `x' failed." and __libc_message's (malloc's
 * "free(): double free detected in tcache 2", the fortify checks' "***
 * buffer overflow detected ***: terminated") set it to a page-rounded
 * mmap of struct abort_msg_s { unsigned int size; char msg[]; } before
 * they abort (glibc 2.36 assert/assert.c, sysdeps/posix/libc_fatal.c).
 */
#ifndef CORE_TIMELINE_READER_SRC_ABORT_MESSAGE_H
#define CORE_TIMELINE_READER_SRC_ABORT_MESSAGE_H

#include <cstdint>
#include <optional>
#include <string>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/symbolize.h"

namespace core_timeline::reader::detail {

struct AbortMessage {
  /** The message (raw bytes up to its NUL, at most kMaxAbortMessage); nullopt when
   *  there is none or it cannot be read: `note` says which. */
  std::optional<std::string> message;
  bool cut = false;           /**< longer than the bytes read */
  std::uint64_t variable = 0; /**< address of __abort_msg, 0 if not found */
  std::uint64_t buffer = 0;   /**< its value: the struct's address */
  /** Why there is no message ("glibc set no abort message: abort() was
   *  called without one", "libc's symbol table was not found: ..."), or
   *  ""; one line. */
  std::string note;
};

/** Most bytes of a message read. */
inline constexpr std::uint64_t kMaxAbortMessage = 4096;

/**
 * Finds `__abort_msg` in the core's libc (find_symbol, under `options`:
 * its file must carry the build-id the core attests for libc, or, with
 * `unverified`, any), reads the pointer and the struct it points to from
 * the core's dumped bytes, and checks them: the struct must be dumped,
 * its size at least the header and at most 1 MiB, the message
 * NUL-terminated within its size (else it is read up to kMaxAbortMessage
 * bytes and marked cut).  Never throws but std::bad_alloc.
 */
AbortMessage read_abort_message(const CoreFile &core, const SymbolizeOptions &options);

}  // namespace core_timeline::reader::detail

#endif  // CORE_TIMELINE_READER_SRC_ABORT_MESSAGE_H
