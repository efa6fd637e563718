/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h - the decoder's own confinement, on top of the service's.
 *
 * A decoder (decode.h) parses an untrusted core.  It does not run as root:
 * before this is called it has dropped to the crashed user's uid and gid,
 * or to the dedicated user core-timeline-decoder for crashes of root and
 * system users (decode.h, "Whose rights"; credentials.h become()), which
 * cleared its capabilities; the filter below refuses any further change
 * of uids, gids or capabilities.  Before it reads the core it confines
 * itself in two halves:
 *
 * Landlock (landlock(7)), as far as the kernel's ABI goes:
 *  - file systems: no opening for writing, truncating (ABI 3), creating,
 *    removing, renaming or linking anything, no executing, no ioctl on
 *    devices (ABI 5); reading stays allowed (libdwfl reads the executables
 *    and libraries the core names, the reader its event-names file);
 *  - network (ABI 4): no TCP bind, and no TCP connect but to the ports
 *    of the servers DEBUGINFOD_URLS names (debuginfod_ports(); the
 *    symbolizer asks them, debuginfod-client(7)), and with DEBUGINFOD_URLS
 *    writing beneath the debuginfod cache (DEBUGINFOD_CACHE_PATH);
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
 * usable.  Reading is left to the credentials it dropped to: a decoder
 * taken over by a hostile core reads what its user could read (and
 * /usr/lib/debug), which that user could put in a timeline anyway
 * (docs/core-timelined.md, "Decoding in isolation").
 *
 * Thread-safety: call in the single-threaded decoder child, before it
 * touches the core; it applies to that process and its future children.
 */
#ifndef CORE_TIMELINE_DAEMON_SANDBOX_H
#define CORE_TIMELINE_DAEMON_SANDBOX_H

#include <cstdint>
#include <string>
#include <vector>

namespace core_timeline::daemon {

/** The TCP ports of the servers a DEBUGINFOD_URLS value names (space
 *  separated URLs; the explicit :PORT, else 80 for http and 443 for
 *  https), without repeats; URLs of other schemes or unreadable ports give
 *  none.  A proxy (http_proxy) is not among them: it cannot be reached. */
std::vector<std::uint16_t> debuginfod_ports(const char *urls);

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

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_SANDBOX_H
