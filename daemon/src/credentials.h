/* SPDX-License-Identifier: MIT */
/*
 * credentials.h - becoming another user, in a child of the daemon: the one
 * way the daemon's children drop root (the child that sends a user's
 * journal entry, timeline_entry.h; each decoder, decode.h).
 *
 * Thread- and signal-safety: become() is async-signal-safe (raw system
 * calls only: it may run between fork or clone and exec, or in a CLONE_VM
 * child) and changes the calling thread's credentials only - glibc's
 * setresuid(3) would signal every thread of the process to change them
 * all (nptl's setxid), which a clone sharing the daemon's memory must not
 * do.  Call it in a single-threaded child.
 */
#ifndef CORE_TIMELINE_DAEMON_CREDENTIALS_H
#define CORE_TIMELINE_DAEMON_CREDENTIALS_H

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

namespace core_timeline::daemon {

/** Whether `uid` is a system uid for journald's and systemd-coredump's
 *  purposes here: <= 999 (SYSTEM_UID_MAX of Debian's login.defs; systemd
 *  src/coredump/coredump.c change_uid_gid() and uid_is_system()), 65534
 *  (nobody, which many unrelated services share) or >= 2^32 - 1 (not a
 *  valid uid).  Pure. */
constexpr bool is_system_uid(std::uint64_t uid) noexcept {
  return uid <= 999 || uid == 65534 || uid >= 0xffffffffull;
}

/**
 * Becomes uid `uid` and gid `gid` with no supplementary groups, in this
 * order: setgroups(0, NULL), setresgid(gid, gid, gid), setresuid(uid, uid,
 * uid) (credentials(7); groups and gid first, while the caller still has
 * CAP_SETGID).  Dropping every uid from 0 clears the capability sets
 * (capabilities(7), "Effect of user ID changes on capabilities"), and the
 * kernel's commit_creds() (kernel/cred.c) resets the dumpable flag and
 * the parent-death signal: a caller that needs them sets them again after.
 * Returns 0, or the errno of the step that failed (EPERM without
 * CAP_SETUID/CAP_SETGID); the credentials may then be half changed, so the
 * caller must exit.
 */
inline int become(uid_t uid, gid_t gid) noexcept {
  if (syscall(SYS_setgroups, 0, nullptr) < 0 || syscall(SYS_setresgid, gid, gid, gid) < 0 ||
      syscall(SYS_setresuid, uid, uid, uid) < 0)
    return errno;
  return 0;
}

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_CREDENTIALS_H
