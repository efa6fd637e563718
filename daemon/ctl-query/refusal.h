/* SPDX-License-Identifier: MIT */
/*
 * refusal.h - why a timeline file this user may not read is not theirs to
 * read, as far as what can be seen without reading it tells
 * (docs/ctl-query.md, "Who sees what").
 *
 * core-timelined gives a timeline its core's owner, mode and ACL
 * (daemon/src/files.h).  systemd-coredump stores a core as root:root 0640
 * and grants the crashed user read through an ACL only when that user is
 * not a system user and the process was dumpable for it: core_pattern %d
 * (COREDUMP_DUMPABLE) is 1, and the core's auxv says it did not start as a
 * setuid, setgid or file-capability program (AT_SECURE 0, AT_UID ==
 * AT_EUID, AT_GID == AT_EGID) (src/coredump/coredump.c, grant_user_access()
 * and fix_acl(), the fix of CVE-2022-4415, which Debian's 252.39 has: its
 * binary holds "No auxv data, not adjusting permissions.").  The
 * kernel makes a process not dumpable for its user (dumpable 2 with
 * fs.suid_dumpable=2, Debian's /usr/lib/sysctl.d/50-coredump.conf) when
 * it ran a setuid or setgid program, gained capabilities on exec, changed
 * its credentials, or called prctl(PR_SET_DUMPABLE, 0) (prctl(2), proc(5)
 * /proc/sys/fs/suid_dumpable; kernel/cred.c commit_creds()).
 *
 * So a timeline whose name gives the caller's own uid (a regular user's),
 * whose file is root's and carries no ACL at all (getxattr(2) ENODATA on
 * system.posix_acl_access, which any user may read), is the timeline of a
 * crash that was not dumpable for its user.  A name with another uid is
 * another user's.  Anything else (no name to go by, a file system that
 * keeps no ACLs, an ACL that does not grant the caller, a system user's
 * crash) is said as what it is, or as "cannot be told".
 *
 * Thread-safety: pure functions, and file_facts() only reads.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_REFUSAL_H
#define CORE_TIMELINE_CTL_QUERY_REFUSAL_H

#include <cstdint>
#include <optional>
#include <string>

#include "core_timeline/document/names.h"

namespace core_timeline::ctl_query {

/** What can be seen of a file without reading it. */
struct FileFacts {
  std::optional<std::uint32_t> owner;  /**< st_uid; nullopt: fstatat failed */
  /** system.posix_acl_access: true present, false absent (ENODATA),
   *  nullopt not known (any other error). */
  std::optional<bool> has_acl;
  bool acl_unsupported = false;        /**< EOPNOTSUPP: no ACLs on that file system */
};

/** fstatat(2) and lgetxattr(2) of `name` in `dirfd` (`dir` is its path),
 *  not following a symbolic link.  Never fails: what cannot be seen is
 *  left unknown. */
FileFacts file_facts(int dirfd, const std::string &dir, const std::string &name);

/** Why, as a problem kind and a sentence. */
struct Refusal {
  /** kNotDumpable, kAnotherUser or "permission denied" (cannot be told). */
  std::string kind;
  std::string why;  /**< without the file's name; "" when nothing is known */
};

inline constexpr const char kNotDumpable[] = "not dumpable for its user";
inline constexpr const char kAnotherUser[] = "another user's";

/** Why uid `caller` may not read a timeline named `name` (nullopt: the
 *  name does not parse) whose file shows `facts`.  Pure. */
Refusal refusal(std::uint32_t caller, const std::optional<core_timeline::document::TimelineName> &name,
                const FileFacts &facts);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_REFUSAL_H
