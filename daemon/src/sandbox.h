/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h - the decoder's own confinement, on top of the service's.
 *
 * A decoder (decode.h) parses an untrusted core.  It runs as the daemon's
 * user, root without capabilities in core-timeline.service: the owner of
 * every root-owned file and the same uid as the daemon, journald and PID 1.
 * Its only capabilities are CAP_SETUID and CAP_SETGID, which the daemon
 * needs for the child that sends a crash's journal entry as the crashed
 * user (timeline_entry.h); the filter below refuses every call that
 * would use them.  Before it reads the core it confines itself in two
 * halves:
 *
 * Landlock (landlock(7)), as far as the kernel's ABI goes:
 *  - file systems: no opening for writing, truncating (ABI 3), creating,
 *    removing, renaming or linking anything, no executing, no ioctl on
 *    devices (ABI 5); reading stays allowed (libdwfl reads the executables
 *    and libraries the core names, the reader its event-names file);
 *  - network (ABI 4): no TCP bind, and no TCP connect unless
 *    DEBUGINFOD_URLS names servers (the symbolizer then asks them,
 *    debuginfod-client(7), and may write beneath the debuginfod cache);
 *  - scope (ABI 6): no signal to, and no abstract unix socket of, a process
 *    outside the decoder; ptrace of one is refused at every ABI.
 * A seccomp filter (seccomp(2); x86-64), for what Landlock does not govern
 * and a decoder never needs, answering EPERM: changing the metadata of
 * files (chmod, chown, xattrs - the user.coredump.* the daemon trusts -,
 * times, truncate by path), io_uring, System V and POSIX IPC, ptrace and
 * process_vm_*, keyrings, changing uids, gids or capabilities (setuid,
 * setresuid, setgroups, capset...), sockets (none; only AF_INET and AF_INET6 with
 * DEBUGINFOD_URLS), and signals, resource limits and scheduling of any
 * process but itself.  It applies also where Landlock is missing.
 *
 * The descriptors it is given (the core, its stdout and stderr) stay
 * usable.  Reading is not restricted: a decoder taken over by a hostile
 * core can read what root can and put it in that core's timeline, which
 * the crashed user reads (docs/core-timelined.md, "Known gaps").
 *
 * Thread-safety: call in the single-threaded decoder child, before it
 * touches the core; it applies to that process and its future children.
 */
#ifndef CORE_TIMELINE_DAEMON_SANDBOX_H
#define CORE_TIMELINE_DAEMON_SANDBOX_H

#include <string>

namespace ctd {

struct Confinement {
  /** The Landlock ABI version the restrictions were made for (1..), or 0
   *  if Landlock could not confine the process. */
  int abi = 0;
  /** Why Landlock did not (errno text and step), or "" when it did. */
  std::string failure;
  /** Whether the seccomp filter is in place. */
  bool seccomp = false;
  /** Why it is not (errno text, or an architecture it is not built for),
   *  or "". */
  std::string seccomp_failure;
};

/** Sets PR_SET_NO_NEW_PRIVS and restricts the calling process with both
 *  halves above.  Never fails the caller: the result says what was
 *  achieved. */
Confinement confine_decoder();

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_SANDBOX_H
