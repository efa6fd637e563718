/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h - the decoder's own confinement, on top of the service's.
 *
 * A decoder (decode.h) parses an untrusted core.  It runs as the daemon's
 * user, root without capabilities in core-timeline.service, and so could
 * write what root owns and the unit leaves writable: the cores in
 * /var/lib/systemd/coredump, the daemon's state and timelines.  It has no
 * capability to change its uid (CapabilityBoundingSet= is empty), so it
 * confines itself with Landlock (landlock(7)) before it reads the core:
 *  - file systems: no opening for writing, truncating, creating, removing,
 *    renaming or linking anything, no executing, no ioctl on devices;
 *    reading stays allowed (libdwfl reads the executables and libraries the
 *    core names, the reader its event-names file);
 *  - network (Landlock ABI 4): no TCP bind or connect;
 *  - except, when DEBUGINFOD_URLS names servers (the symbolizer then asks
 *    them, debuginfod-client(7)): TCP, and writing beneath the debuginfod
 *    cache directory, stay allowed;
 *  - scope (ABI 6): no signal to, and no abstract unix socket of, a process
 *    outside the decoder (the daemon, journald, systemd).
 * The descriptors it is given (the core, its stdout and stderr) are
 * already open and stay usable.  Everything is best effort on the kernel it
 * finds: each ABI adds what it knows (uapi linux/landlock.h), and a kernel
 * without Landlock leaves the decoder as confined as the service alone,
 * which the decoder says in a warning of its document.
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
   *  if the process is not confined. */
  int abi = 0;
  /** Why not confined (errno text and step), or "" when it is. */
  std::string failure;
  /** With Landlock: why the seccomp filter for what Landlock does not
   *  govern (metadata, other processes' limits and signals, named AF_UNIX
   *  sockets, io_uring, IPC; sandbox.cc) could not be set, or "". */
  std::string seccomp_failure;
};

/** Sets PR_SET_NO_NEW_PRIVS and restricts the calling process as above.
 *  Never fails the caller: the result says what was achieved. */
Confinement confine_decoder();

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_SANDBOX_H
