/* SPDX-License-Identifier: MIT */
/*
 * live.h - a live snapshot of a running process's timeline, as an ELF core.
 *
 * snapshot_process() reads the ring of a running process without stopping
 * it (no ptrace attach: process_vm_readv(2), which also works on a process
 * stopped by SIGSTOP or held by a debugger) and builds, in memory, an ELF
 * core (ET_CORE) that the one reader reads like any other
 * (CoreFile::from_bytes, then analyze()):
 *   - PT_NOTE with NT_PRSTATUS per thread (/proc/PID/task: tids; registers
 *     unknown, zero), NT_PRPSINFO (/proc/PID/stat, status, cmdline),
 *     NT_AUXV (/proc/PID/auxv), NT_FILE (the file mappings of
 *     /proc/PID/maps), no NT_SIGINFO, and the note "CORE-TIMELINE" type
 *     kNtLiveSnapshot (LiveSnapshotNote: a live snapshot, its times);
 *   - one PT_LOAD per mapping of /proc/PID/maps; with bytes only for the
 *     ring mappings (/memfd:core-timeline*) and the first page of each
 *     file mapping at offset 0 that starts with an ELF header (so
 *     build-ids and symbols work as in a kernel core, coredump_filter bit
 *     4) and of the vDSO, p_filesz 0 for the others.
 *
 * The ring is copied lane by lane as docs/ring-format.md, "Reading a live
 * ring", describes: lane descriptor, the lane's slots, the descriptor again,
 * and the slots that may have changed in between are cleared (written
 * after the snapshot's instant, or overwritten during the copy) or left as
 * the copy saw them being written (in flight), so that the reader's
 * checks hold for a ring whose writers keep running.
 *
 * Permission: what process_vm_readv needs, PTRACE_MODE_ATTACH_REALCREDS
 * (ptrace(2), "Ptrace access mode checking"): the same real uid as the
 * target's uids and the target dumpable, or CAP_SYS_PTRACE; and Yama's
 * ptrace_scope (Documentation/admin-guide/LSM/Yama.rst) when the kernel
 * has it.  A refusal is explained by access_refusal().
 *
 * Memory: the ring mappings' size twice (the copy, then the core made of
 * it), plus a page per ELF file mapping.  Work: one process_vm_readv per
 * lane descriptor read, per lane extent and per slot read again (at most
 * the lane's slack), and the pauses of lanes copied again.
 *
 * Thread-safety: snapshot_process() touches only its own memory and the
 * target's /proc files; several may run at once.
 */
#ifndef CORE_TIMELINE_READER_LIVE_H
#define CORE_TIMELINE_READER_LIVE_H

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

/** Name and type of the snapshot's own note (docs/ring-format.md, "Live
 *  snapshots"). */
inline constexpr char kLiveNoteName[] = "CORE-TIMELINE";
inline constexpr std::uint32_t kNtLiveSnapshot = 1;
/** LiveSnapshotNote.version this reader writes and reads. */
inline constexpr std::uint32_t kLiveNoteVersion = 1;

/** The desc of the CORE-TIMELINE note, little-endian, 48 bytes. */
struct LiveSnapshotNote {
  std::uint32_t version;       /**< kLiveNoteVersion */
  std::uint32_t pid;           /**< the process, in the reader's pid namespace */
  std::int64_t monotonic_ns;   /**< CLOCK_MONOTONIC when the copy ended, ns */
  std::int64_t realtime_ns;    /**< CLOCK_REALTIME right after it, ns */
  std::uint64_t ticks;         /**< the slot clock (TSC, CNTVCT) at
                                    monotonic_ns: the midpoint of a read
                                    before and after it; 0: not read (not
                                    x86-64 or AArch64) */
  std::int64_t duration_ns;    /**< CLOCK_MONOTONIC from the copy's start to
                                    its end, ns */
  std::uint32_t lanes_retried; /**< lane copies taken again because the lane
                                    moved or wrapped during its copy */
  std::uint32_t spread_ticks;  /**< slot-clock ticks between those two reads */
};
static_assert(sizeof(LiveSnapshotNote) == 48);

/** What snapshot_process() made. */
struct LiveSnapshot {
  std::vector<std::uint8_t> core;  /**< the ELF core's bytes */
  LiveSnapshotNote note{};
  std::uint32_t rings = 0;         /**< ring mappings copied */
  std::vector<std::string> warnings;
};

/** What snapshot_process() may be asked to do besides its work. */
struct SnapshotOptions {
  /** Called once /proc/PID/maps has been read, before any memory is: a
   *  test's seam for a process that exits in the middle of a snapshot. */
  std::function<void()> after_maps;
};

/**
 * Takes a live snapshot of process `pid` (see above).  Errors:
 *  - kNotFound: no such process, or it exited during the snapshot (the
 *    message says which);
 *  - kIo with sys_errno EPERM/EACCES: access refused; the message is
 *    access_refusal()'s;
 *  - kIo otherwise (a /proc file unreadable, a read failed), kNoMemory.
 * A process without a ring is no error: the snapshot has no ring mapping,
 * and analyze() says so (kNoRing).  Never throws.
 */
Result<LiveSnapshot> snapshot_process(pid_t pid, const SnapshotOptions &options = {}) noexcept;

/**
 * Why reading process `pid`'s memory was refused with `err` (EPERM or
 * EACCES), in one sentence naming the rule, worked out from
 * /proc/PID/status (Uid, Gid), the target's dumpable flag (the owner of
 * /proc/PID/mem: root when not dumpable, proc(5)), this process's
 * credentials and CAP_SYS_PTRACE, and /proc/sys/kernel/yama/ptrace_scope
 * (absent: no Yama).  Says so when none of the rules explains it (another
 * LSM, a user namespace).  Never throws (a short text on bad_alloc).
 */
std::string access_refusal(pid_t pid, int err) noexcept;

/**
 * Writes `bytes` to the regular file `path`, then fsyncs it.  A new file
 * is created with mode 0600 (O_CREAT | O_EXCL | O_NOFOLLOW; the umask may
 * take bits away).  An existing regular file is refused unless
 * `overwrite`, and then truncated and written in place: its mode and owner
 * stay its own.  Anything else at `path` (a directory, a FIFO, a socket, a
 * device, a symbolic link) is refused without being opened, so the call
 * never blocks on a FIFO nor writes to a device.
 * Errors: kInvalidArgument for what is not a regular file; kIo (sys_errno
 * EEXIST) for an existing file without `overwrite`; kIo naming the path
 * and the call for a failed system call.  Nothing is written on an error
 * found before the write (a write that fails leaves what it wrote).
 */
Result<void> save_snapshot(const std::vector<std::uint8_t> &bytes, const std::string &path, bool overwrite);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_LIVE_H
