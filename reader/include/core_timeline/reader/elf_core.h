/* SPDX-License-Identifier: MIT */
/*
 * elf_core.h - an ELF core file, opened defensively.
 *
 * CoreFile parses the parts of a Linux ELF core (core(5), elf(5)) that the
 * timeline needs: the program headers (PT_LOAD: the dumped memory; PT_NOTE)
 * and the notes NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV and NT_FILE,
 * and the "CORE-TIMELINE" note that makes a core a live snapshot (live.h).
 * The layouts are the kernel's, written by fs/binfmt_elf.c (fill_note_info,
 * fill_psinfo, fill_prstatus, fill_files_note, fill_siginfo_note) from the
 * structs of include/uapi/linux/elfcore.h; the register sets are
 * arch/x86/include/asm/user_64.h (user_regs_struct) and
 * arch/arm64/include/uapi/asm/ptrace.h (user_pt_regs).
 *
 * The core is untrusted input.  Every length and offset is checked against
 * the file before use.  A core that systemd-coredump truncated
 * (COREDUMP_TRUNCATED) has PT_LOAD segments whose p_offset + p_filesz runs
 * past the end of the file: those are kept, with `present` saying how many
 * of their bytes the file really holds.  Notes that cannot be parsed are
 * skipped with a warning (notes()->warnings); only an unusable ELF header or
 * program header table makes open() fail.  Those two are read with
 * elf_headers.h, as are the ELF headers of modules dumped in the core's
 * memory (build_id_at).
 *
 * Only 64-bit little-endian cores are supported (x86-64 and AArch64 get
 * register decoding; other machines get everything but pc/sp).
 *
 * Thread-safety: a CoreFile is immutable after open(); its const methods may
 * be called from several threads at once.
 */
#ifndef CORE_TIMELINE_READER_ELF_CORE_H
#define CORE_TIMELINE_READER_ELF_CORE_H

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/live.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

/** One PT_LOAD program header: a mapping of the dead process. */
struct Segment {
  std::uint32_t index = 0;   /**< index in the program header table */
  std::uint64_t vaddr = 0;   /**< p_vaddr: start address in the process */
  std::uint64_t memsz = 0;   /**< p_memsz: size of the mapping, bytes */
  std::uint64_t offset = 0;  /**< p_offset: where its bytes start in the file */
  std::uint64_t filesz = 0;  /**< p_filesz: bytes the kernel dumped (0: the
                                  mapping was excluded from the core) */
  std::uint32_t flags = 0;   /**< p_flags: PF_R 4, PF_W 2, PF_X 1 */
  std::uint64_t present = 0; /**< bytes of [offset, offset + filesz) that the
                                  file actually holds (< filesz: truncated) */
  std::uint64_t end() const { return vaddr + memsz; }
};

/** One entry of the NT_FILE note: a file-backed mapping. */
struct FileMapping {
  std::uint64_t start = 0;        /**< first address */
  std::uint64_t end = 0;          /**< one past the last address */
  std::uint64_t file_offset = 0;  /**< offset in the file, bytes (the note
                                       stores pages; multiplied here) */
  std::string path;               /**< as the kernel wrote it (untrusted) */
  std::string name;               /**< path without a " (deleted)" suffix */
  bool deleted = false;           /**< path ended in " (deleted)" */
};

/** NT_PRSTATUS of one thread (struct elf_prstatus). */
struct ThreadStatus {
  std::uint32_t tid = 0;     /**< pr_pid: the thread id */
  std::int32_t signo = 0;    /**< pr_info.si_signo */
  std::int32_t code = 0;     /**< pr_info.si_code: the kernel leaves it 0
                                  (fill_prstatus), so it is not the
                                  signal's; NT_SIGINFO has that */
  std::int16_t cursig = 0;   /**< pr_cursig */
  bool has_regs = false;     /**< pc and sp decoded (x86-64, AArch64) */
  std::uint64_t pc = 0;
  std::uint64_t sp = 0;
  /** pr_reg as the kernel wrote it, with has_regs: x86-64's struct
   *  user_regs_struct (27 words: r15, r14, ..., rip, ..., rsp, ...),
   *  AArch64's struct user_pt_regs (x0..x30, sp, pc, pstate); names in
   *  cause.h register_name().  Empty without has_regs. */
  std::vector<std::uint64_t> regs;
};

/** NT_PRPSINFO (struct elf_prpsinfo). */
struct ProcessInfo {
  std::uint32_t pid = 0;   /**< pr_pid, in the process's own pid namespace
                                (task_pid_vnr at dump time) */
  std::uint32_t ppid = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  char state = 0;          /**< pr_sname */
  std::string fname;       /**< pr_fname: comm, up to 16 bytes (untrusted) */
  std::string psargs;      /**< pr_psargs: command line prefix (untrusted) */
};

/** NT_SIGINFO (the kernel's siginfo_t of the fatal signal). */
struct SignalInfo {
  std::int32_t signo = 0;
  std::int32_t err = 0;
  std::int32_t code = 0;
  std::uint64_t addr = 0;        /**< si_addr: meaningful for SIGSEGV, SIGBUS,
                                      SIGILL, SIGFPE with si_code > 0 */
  std::int32_t sender_pid = 0;   /**< si_pid: meaningful when si_code <= 0 */
  std::uint32_t sender_uid = 0;
};

/** A file mapped into the dead process (grouped NT_FILE entries). */
struct Module {
  std::string path;     /**< NT_FILE path (untrusted) */
  std::string name;     /**< path without " (deleted)" */
  std::uint64_t base = 0;  /**< start of its mapping at file offset 0 */
  std::uint64_t end = 0;   /**< end of its last mapping */
  /** NT_GNU_BUILD_ID read from the module's ELF header as dumped in the core
   *  (the kernel dumps the first page of ELF mappings: coredump_filter bit
   *  4).  Empty if unknown; build_id_note says why. */
  std::vector<std::uint8_t> build_id;
  std::string build_id_note;
  bool is_elf = false;  /**< an ELF header was found at base in the core */
};

/** All notes the reader uses. */
struct CoreNotes {
  std::optional<ProcessInfo> process;
  /** NT_PRSTATUS in note order.  The kernel writes the thread that took the
   *  fatal signal first (fs/binfmt_elf.c fill_note_info). */
  std::vector<ThreadStatus> threads;
  std::optional<SignalInfo> signal;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> auxv;  /**< (type, value) */
  bool has_file_note = false;
  std::uint64_t file_note_page_size = 0;
  std::vector<FileMapping> files;  /**< NT_FILE entries, in note order */
  std::vector<std::string> warnings;  /**< notes skipped, and why: the first
                                           16, then one line counting the rest */
  std::uint64_t warnings_omitted = 0; /**< warnings counted, not listed */
  /** The "CORE-TIMELINE" note of a live snapshot (live.h): the core is a
   *  copy of a running process, not a crash.  Its threads' registers are
   *  unknown (has_regs false). */
  std::optional<LiveSnapshotNote> live;
};

/** What can be told of a file that CoreFile::open() or from_bytes() read
 *  but refused (not ELF, unsupported, program headers cut off), for the
 *  report of it (analysis_of_error). */
struct FileFacts {
  std::uint64_t size = 0;     /**< bytes in the file */
  std::uint16_t machine = 0;  /**< e_machine, in the byte order EI_DATA
                                   declares (either class: it is at offset
                                   18 in both); 0 without an ELF header */
};

class CoreFile {
 public:
  /**
   * Opens and parses the core at `path` (mapped read-only with mmap(2)).
   * Errors: kIo (open/fstat/mmap; not a regular file), kNotElf (empty file,
   * no ELF magic), kUnsupported (not ELFCLASS64/ELFDATA2LSB/ET_CORE),
   * kTruncated/kBadData (program header table outside the file).
   * The file must not be truncated by someone else while the CoreFile is
   * alive (that would raise SIGBUS on access); callers that cannot promise
   * this should use from_bytes().
   * When the file was read but refused, `refused` (optional) gets its size
   * and e_machine; it is left alone otherwise.
   */
  static Result<CoreFile> open(const std::string &path, FileFacts *refused = nullptr) noexcept;

  /** As open(), over the descriptor `fd`, which it takes (a dup is the
   *  caller's to make), without opening anything by path: core-timelined's
   *  decoder, which runs as the crashed user, gets the core as fd 3 of a
   *  file that user may not open.  `name` is used in messages.  Errors: as
   *  open(), but never the open itself. */
  static Result<CoreFile> from_fd(Fd fd, std::string name, FileFacts *refused = nullptr) noexcept;

  /** As open(), over bytes already in memory (tests, fuzzing, a core the
   *  daemon decompressed).  `name` is used in messages. */
  static Result<CoreFile> from_bytes(std::vector<std::uint8_t> bytes, std::string name,
                                     FileFacts *refused = nullptr) noexcept;

  CoreFile(CoreFile &&) noexcept;
  CoreFile &operator=(CoreFile &&) noexcept;
  CoreFile(const CoreFile &) = delete;
  CoreFile &operator=(const CoreFile &) = delete;
  ~CoreFile();

  /** The whole file. */
  std::span<const std::uint8_t> bytes() const noexcept;
  std::uint64_t file_size() const noexcept { return bytes().size(); }
  /** Path given to open(), or the name given to from_bytes(). */
  const std::string &path() const noexcept;
  /** A read-only descriptor of the file, or -1 for from_bytes(). */
  int fd() const noexcept;
  /** e_machine (EM_X86_64 62, EM_AARCH64 183, ...). */
  std::uint16_t machine() const noexcept;
  /** PT_LOAD segments, in program header order. */
  const std::vector<Segment> &segments() const noexcept;
  /** PT_NOTE segments (same struct; vaddr/memsz unused). */
  const std::vector<Segment> &note_segments() const noexcept;
  const CoreNotes &notes() const noexcept;
  /** Files mapped in the process, from NT_FILE, with build-ids read from
   *  the core's own memory. */
  const std::vector<Module> &modules() const noexcept;
  /** True if any segment's bytes run past the end of the file. */
  bool truncated() const noexcept;

  /** The PT_LOAD whose [vaddr, vaddr + memsz) holds `addr`, or nullptr. */
  const Segment *segment_for(std::uint64_t addr) const noexcept;
  /** The NT_FILE entry whose [start, end) holds `addr`, or nullptr. */
  const FileMapping *file_for(std::uint64_t addr) const noexcept;
  /** The module whose mappings hold `addr`, or nullptr. */
  const Module *module_for(std::uint64_t addr) const noexcept;
  /** The executable's module: the NT_FILE mapping holding AT_PHDR (or
   *  AT_ENTRY) from NT_AUXV, else the first NT_FILE entry; nullptr if the
   *  core has no NT_FILE.  `how` (optional) says which rule picked it. */
  const Module *executable(std::string *how = nullptr) const noexcept;

  /**
   * Bytes of the dead process's memory at [addr, addr + len) that are in
   * the file, as a view of one segment: may be shorter than `len` (the
   * segment ends, was not dumped, or the file was truncated), empty if
   * `addr` is not dumped at all.
   */
  std::span<const std::uint8_t> read_memory(std::uint64_t addr, std::uint64_t len) const noexcept;

  /** Like read_memory, but continues into PT_LOAD segments that follow
   *  without a gap in the address space; copies.  Stops at the first byte
   *  that is not in the file.  `len` bounds the copy. */
  std::vector<std::uint8_t> copy_memory(std::uint64_t addr, std::uint64_t len) const;

  /** Bytes of address space from `addr` to the end of the run of
   *  vaddr-contiguous PT_LOAD segments holding it (by p_memsz, dumped or
   *  not); 0 if no segment holds `addr`. */
  std::uint64_t mapped_extent(std::uint64_t addr) const noexcept;

  /** Reads the NT_GNU_BUILD_ID of the ELF image whose header is dumped at
   *  `base`.  kNotFound with the reason if the core does not tell. */
  Result<std::vector<std::uint8_t>> build_id_at(std::uint64_t base) const;

 private:
  struct Impl;
  explicit CoreFile(std::unique_ptr<Impl> impl) noexcept;
  void fill_build_ids();
  std::unique_ptr<Impl> impl_;
};

/** Parses the notes in `data` (the bytes of one PT_NOTE segment, at file
 *  offset `base`) for machine `machine`, adding to `out`.  Exposed for the
 *  fuzzer and tests; CoreFile::open calls it for every PT_NOTE. */
void parse_core_notes(std::span<const std::uint8_t> data, std::uint64_t base,
                      std::uint16_t machine, CoreNotes &out);

/** Lower-case hex of `bytes` ("" for none). */
std::string hex_bytes(std::span<const std::uint8_t> bytes);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_ELF_CORE_H
