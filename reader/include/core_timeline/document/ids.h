/* SPDX-License-Identifier: MIT */
/*
 * ids.h - the host's and the crash's own pid namespace's ids of a stored
 * timeline ("pids"), and whether the crashed process was dumpable for its
 * user ("coredump.dumpable"): what the core and the systemd-coredump entry
 * tell of them, and nothing more (docs/core-timelined.md, "The document").
 *
 * Two sources, two namespaces:
 *  - the core's NT_PRPSINFO pr_pid and NT_PRSTATUS pr_pid (the reader's
 *    process.pid, process.threads, threads[].tid, events' tid) are the ids
 *    in the crashed process's own pid namespace: the kernel fills them with
 *    task_pid_vnr()/task_tgid_vnr() while the crashing task dumps
 *    (fs/binfmt_elf.c fill_prstatus(), fill_psinfo()); so are the ring's
 *    tids (gettid(2) in the process);
 *  - the entry's COREDUMP_PID is the pid in the initial pid namespace
 *    (core_pattern %P, core(5)), and COREDUMP_PROC_STATUS is
 *    /proc/%P/status as systemd-coredump read it, whose NStgid line lists
 *    the thread group's id in every pid namespace it is in, outermost (the
 *    reader's procfs: the host's) first, its own last (proc(5)).
 * systemd 252's entry names no thread (no %I in its core_pattern, no
 * COREDUMP_TID), so a thread's host tid is known only when the process is
 * not in a pid namespace of its own (then every tid is the host's) and for
 * the thread group leader, whose tid is the pid in every namespace (its
 * host tid is COREDUMP_PID).  Any other host tid is unknown (null), never
 * the namespace's tid copied.
 *
 * Errors: none; what cannot be told is null.  Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_IDS_H
#define CORE_TIMELINE_DOCUMENT_IDS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace core_timeline::document {

/** The NStgid (or, without it, NSpid) values of a /proc/PID/status text,
 *  outermost namespace first; empty when there is no such line, a value
 *  is not a decimal number, or there are more than 32 (the kernel nests at
 *  most 32 pid namespaces, kernel/pid_namespace.c MAX_PID_NS_LEVEL). */
std::vector<std::uint64_t> namespace_pids(std::string_view proc_status);

/** One thread's two ids. */
struct ThreadIds {
  std::uint64_t tid = 0;                 /**< in the crash's pid namespace (the core's) */
  std::optional<std::uint64_t> host_tid; /**< in the initial one; null: cannot be told */
};

/** "pids": the crash's ids in both namespaces. */
struct ProcessIds {
  std::optional<std::uint64_t> host_pid;  /**< COREDUMP_PID */
  std::optional<std::uint64_t> pid;       /**< process.pid (NT_PRPSINFO), else NStgid's last */
  /** Whether the process ran in a pid namespace other than the host's;
   *  null: cannot be told (no NStgid, and the two pids are equal or one
   *  is unknown). */
  std::optional<bool> namespaced;
  /** How `namespaced` was told: "COREDUMP_PROC_STATUS NStgid" or
   *  "COREDUMP_PID differs from the core's pid"; "" when it was not. */
  std::string from;
  /** Every tid the core names (process.threads, threads[].tid,
   *  crash.tid), ascending, with its host tid where it can be told. */
  std::vector<ThreadIds> threads;
};

/** The ids of a crash from the entry's `fields` (COREDUMP_PID,
 *  COREDUMP_PROC_STATUS) and the reader's document `reader` (null when
 *  nothing was decoded).  An NStgid line that disagrees with either pid
 *  (its first is not COREDUMP_PID, or its last not the core's pid) is not
 *  believed.  Pure. */
ProcessIds process_ids(const std::map<std::string, std::string> &fields, const nlohmann::ordered_json *reader);

/** The host tid of `tid` by `ids` (ThreadIds' rule for a tid the core
 *  may not list): `tid` itself when not namespaced, host_pid for the
 *  leader (tid == pid), else nullopt. */
std::optional<std::uint64_t> host_tid_of(const ProcessIds &ids, std::uint64_t tid);

/** "pids" as the stored document has it: host_pid, pid, namespaced, from
 *  (null when ""), threads [{tid, host_tid}]. */
nlohmann::ordered_json ids_json(const ProcessIds &ids);

/** COREDUMP_DUMPABLE (core_pattern %d: the process's dumpable mode, 0, 1
 *  or 2; prctl(2) PR_SET_DUMPABLE, proc(5) /proc/sys/fs/suid_dumpable) as
 *  a number; nullopt when absent or not 0..2. */
std::optional<int> dumpable(const std::map<std::string, std::string> &fields);

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_IDS_H
