/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - code addresses to function+offset with elfutils libdwfl.
 *
 * The modules and their build-ids come from the core, as CoreFile reads
 * them (NT_FILE, and the NT_GNU_BUILD_ID in each module's dumped ELF
 * header).  libdwfl is not given the core itself: dwfl_core_file_report
 * opens every path the core names (NT_FILE, and the link_map's l_name
 * strings in the dead process's memory) with a plain open(2), so a FIFO
 * blocks it, a device is opened, and a privileged caller reads files the
 * crashed user could not.  Instead the modules holding a queried address
 * (at most 256) are reported with dwfl_report_module at their mapping at
 * file offset 0, with the core's build-id, and libdwfl opens only what the
 * callbacks hand it: EXECUTABLE for the executable's module,
 * /usr/lib/debug/.build-id/xx/yyyy (dwfl_build_id_find_elf), else the
 * module's NT_FILE path when it is a regular file on a real file system,
 * world-readable or owned by the crashed user (NT_PRPSINFO pr_uid), opened
 * O_PATH first so no FIFO or device is ever opened, and carrying the
 * build-id the core attests (any build-id, or none, with `unverified`).
 * Debug info is looked up by build-id only (/usr/lib/debug/.build-id, then
 * debuginfod when DEBUGINFOD_URLS is set), never next to the module; a
 * module's own file comes from debuginfod only when neither EXECUTABLE,
 * /usr/lib/debug/.build-id nor its NT_FILE path gives it.
 *
 * debuginfod (debuginfod_find_debuginfo(3)): libdebuginfod.so.1 is
 * dlopen'ed on the first question, only when DEBUGINFOD_URLS names a
 * server (it loads libcurl and a TLS stack: about 3 ms).  The library reads
 * its own environment as documented there (DEBUGINFOD_URLS,
 * DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME,
 * DEBUGINFOD_MAXSIZE, DEBUGINFOD_RETRY_LIMIT...); on top of that, all the
 * debuginfod questions of one call share one budget,
 * `debuginfod_timeout_ms` from the first question on, enforced with
 * debuginfod_set_progressfn (which the library calls about once a second
 * while it waits, and which aborts the download).  The library's own
 * default is long: 90 s without progress per try, two retries.  A failure
 * other than "not found" (the server cannot be reached, times out, the
 * budget is spent) stops all further questions of the call, so a server
 * that is down costs one failure, not one per module; each module whose
 * file or debug info was then not found carries the reason in
 * Symbol::debuginfod_failure.
 *
 * This layer does not decide what is trustworthy: it reports the build-id
 * of the file it used for each address, and the caller compares it with the
 * build-id the core attests (core_timeline::reader::analyze does).
 *
 * libdwfl still parses untrusted files: the modules it is handed may be
 * the crashed user's own, and their DWARF anything.  With `isolate` (the
 * default) the lookups run in a forked child, so a crash or hang inside
 * libdwfl costs the symbols and never the caller: the child's results come
 * back over a pipe.
 * The child only runs libdwfl and writes to the pipe; glibc's malloc is
 * fork-safe, but callers with threads holding other locks at the time of
 * the call should know the child does not touch them.
 *
 * Thread-safety: symbolize() may be called from several threads; each call
 * has its own Dwfl.
 */
#ifndef CORE_TIMELINE_READER_SYMBOLIZE_H
#define CORE_TIMELINE_READER_SYMBOLIZE_H

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

struct SymbolizeOptions {
  /** Handed to dwfl_core_file_report as the executable; only a file whose
   *  build-id was checked against the core (or, with no build-id in the
   *  core, one the user vouched for with --unverified-symbols). */
  std::optional<std::string> executable;
  /** Also give libdwfl the files of modules the core attests no build-id
   *  for (--unverified-symbols); otherwise such modules get no file. */
  bool unverified = false;
  /** Run libdwfl in a forked child (see above). */
  bool isolate = true;
  /** Give up on the child after this long (debuginfod downloads count). */
  int timeout_ms = 120000;
  /** The most time all debuginfod questions of one call take together,
   *  in ms, counted from the first (see above); 0: no budget of ours, only
   *  the library's own limits.  Keep it below timeout_ms: the child is
   *  killed, and every symbol lost, at timeout_ms. */
  int debuginfod_timeout_ms = 5000;
};

/** What libdwfl says about one address. */
struct Symbol {
  std::string function;            /**< "" if no symbol covers the address */
  std::uint64_t function_offset = 0;
  std::string source_file;         /**< "" without line info */
  int line = 0;
  std::string module_file;         /**< the ELF file libdwfl read */
  std::vector<std::uint8_t> file_build_id; /**< that file's NT_GNU_BUILD_ID */
  /** Why debuginfod gave nothing for this module's file or debug info
   *  when they were not found elsewhere: "debuginfod could not be reached
   *  (URL: Connection refused)", "... did not answer within 5 s ..."; ""
   *  when debuginfod was not needed, not configured, or answered (a "not
   *  found" answer included).  A Symbol with only this set (no function,
   *  no module_file) means no file of the module was found at all. */
  std::string debuginfod_failure;
  /** The module's file at its NT_FILE path when it was found but not used
   *  because it does not carry the build-id the core attests (the program
   *  was rebuilt or replaced since it ran); "" when not so.  Set only when
   *  no file of the module was used (module_file ""). */
  std::string refused_file;
  /** That file's NT_GNU_BUILD_ID; empty when it has none. */
  std::vector<std::uint8_t> refused_build_id;
};

/** A code address to look up. */
struct SymbolQuery {
  std::uint64_t address = 0;
  /** A return address: look up address - 1 (the call instruction), report
   *  the offset of `address` itself. */
  bool is_return_address = false;
};

/** Which threads to unwind from the core's registers (NT_PRSTATUS), with
 *  libdwfl's unwinder (dwfl_core_file_attach, dwfl_getthread_frames), in the
 *  same Dwfl and under the same rules as the symbols: only the files the
 *  callbacks above hand it, never a path the core names.  The stack words
 *  are read from the core's PT_LOAD bytes. */
struct UnwindRequest {
  bool crashed_thread = true;   /**< the first NT_PRSTATUS */
  bool all_threads = false;     /**< every NT_PRSTATUS */
  std::uint32_t max_frames = 256;  /**< per thread (systemd-coredump: 64) */
};

/** One frame of a thread unwound from the core, innermost first. */
struct UnwoundFrame {
  std::uint64_t pc = 0;
  /** pc is the instruction that was executing (the thread's first frame,
   *  a frame interrupted by a signal, and the signal trampoline itself:
   *  dwfl_frame_pc's isactivation), not a return address. */
  bool activation = false;
  /** The stack pointer of this frame (DWARF register 7 on x86-64, 31 on
   *  AArch64), when libdwfl knows it. */
  std::optional<std::uint64_t> sp;
  std::optional<Symbol> symbol;  /**< of pc, or pc - 1 for a return address */
};

struct UnwoundThread {
  std::uint32_t tid = 0;
  std::vector<UnwoundFrame> frames;
  /** Why the unwind stopped: "" when it reached the outermost frame (no
   *  return address), "depth limit (N frames)" at max_frames, else
   *  libdwfl's message. */
  std::string end;
};

/** A symbol found by its name (find_symbol). */
struct NamedSymbol {
  std::uint64_t address = 0;   /**< in the dead process: st_value plus the
                                    module's load bias */
  std::uint64_t size = 0;      /**< st_size, bytes */
  std::string module;          /**< the module's NT_FILE name */
  std::string module_file;     /**< the ELF file libdwfl read it from */
  std::vector<std::uint8_t> file_build_id;  /**< that file's build-id */
};

struct SymbolizeResult {
  std::vector<std::optional<Symbol>> symbols;  /**< one per query */
  /** find_symbol's answer; nullopt: no module searched defines it. */
  std::optional<NamedSymbol> named;
  std::vector<UnwoundThread> threads;          /**< UnwindRequest's, in
                                                    NT_PRSTATUS order */
  std::string unwind_error;  /**< libdwfl could not attach to the core */
};

/**
 * Looks up every query and, with `unwind`, unwinds threads of the core
 * (every module of the core's NT_FILE, at most 256, is then reported, so
 * that the unwinder finds each frame's CFI).  Errors as symbolize(); an
 * unwinding that fails leaves the symbols and says why in unwind_error or
 * a thread's `end`.
 */
Result<SymbolizeResult> symbolize_and_unwind(const CoreFile &core, std::span<const SymbolQuery> queries,
                                             const SymbolizeOptions &options, const UnwindRequest *unwind);

/**
 * Looks up every query.  Returns one entry per query (nullopt where libdwfl
 * knows nothing), or an Error if libdwfl could not report the core at all,
 * or the isolated child failed (the message says how).
 */
Result<std::vector<std::optional<Symbol>>> symbolize(const CoreFile &core, std::span<const SymbolQuery> queries,
                                                     const SymbolizeOptions &options);

/**
 * The data or function symbol `name` (STT_OBJECT, STT_TLS excluded, or
 * STT_FUNC) in the modules of the core whose NT_FILE name's file name
 * starts with `module_prefix` ("libc.so" finds libc.so.6), in NT_FILE
 * order, from each module's symbol table as libdwfl reads it (.symtab of
 * its debug file when there is one, else .dynsym), under the same file
 * rules, isolation and time limits as symbolize().  An empty prefix
 * searches every module (the executable first).  nullopt when no module
 * searched defines it or none of their files was found.  The caller
 * compares file_build_id with the module's build-id from the core before
 * it trusts the address.  Errors as symbolize().
 */
Result<std::optional<NamedSymbol>> find_symbol(const CoreFile &core, std::string_view name,
                                               std::string_view module_prefix, const SymbolizeOptions &options);

/** The NT_GNU_BUILD_ID of the ELF file at `path` (libelf).  kIo, kNotElf,
 *  kNotFound (the file has no build-id). */
Result<std::vector<std::uint8_t>> file_build_id(const std::string &path);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_SYMBOLIZE_H
