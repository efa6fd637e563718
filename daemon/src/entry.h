/* SPDX-License-Identifier: MIT */
/*
 * entry.h - one systemd-coredump journal entry: which ones to trust, what
 * they say, and the names of the timelines they give.
 *
 * A journal entry is untrusted input.  Any local user can write one with
 * any user fields (sd_journal_send(3)), and can even make
 * /lib/systemd/systemd-coredump itself write one: `systemd-coredump
 * --backtrace PID UID GID SIG TS RLIMIT HOST` run as an ordinary user
 * copies the fields it reads on stdin (MESSAGE_ID=..., COREDUMP_FILENAME=
 * /etc/shadow) into an entry with _EXE=/usr/lib/systemd/systemd-coredump and
 * _TRANSPORT=journal (measured on systemd 252; that mode adds its own second
 * MESSAGE_ID, the backtrace one).  journald does guarantee the trusted
 * fields, those starting with "_" (systemd.journal-fields(7)): a sender
 * cannot set them.  So an entry is accepted only if ALL of these hold:
 *
 *  - MESSAGE_ID has exactly one value, fc2e22bc6ee647b6b90729ab34a250b1
 *    (SD_MESSAGE_COREDUMP); a second MESSAGE_ID marks --backtrace copies;
 *  - _TRANSPORT=journal; _COMM, if present, systemd-coredum (comm is cut
 *    at 15 bytes); _EXE, if present, one of the configured systemd-coredump
 *    paths.  Either may be missing: journald reads them from /proc after
 *    the message arrives, and systemd-coredump has often exited by then
 *    (measured here: some entries of a test run lack _EXE and _CMDLINE,
 *    a few also _COMM);
 *  - _UID is 0, the uid of the "systemd-coredump" user, or COREDUMP_UID if
 *    that is not a system uid (> 999): systemd-coredump drops to the
 *    crashed user before it logs (so the user can read the entry), or to
 *    "systemd-coredump" when that user is a system user
 *    (src/coredump/coredump.c, change_uid_gid()).  A forger running as uid
 *    U therefore can only speak about crashes of uid U, and only if U is
 *    not a system user;
 *  - _BOOT_ID, COREDUMP_PID, COREDUMP_UID, COREDUMP_TIMESTAMP each exactly
 *    once and well formed; COREDUMP_FILENAME, COREDUMP_COMM, COREDUMP_EXE at
 *    most once;
 *  - COREDUMP_FILENAME, if present, is <coredump dir>/<name> where <name>
 *    is one path component that is exactly the name systemd-coredump gives
 *    that crash: "core." <anything> "." UID "." BOOT_ID "." PID "." TS,
 *    optionally ".zst", ".lz4" or ".xz" (make_filename() in coredump.c).
 *
 * The daemon adds one check once the core is open: the user.coredump.*
 * xattrs systemd-coredump (as root) puts on the core must agree with the
 * entry (xattrs_disagree()).
 *
 * Those rules still let the crashed user U speak: an entry with _UID U
 * about a crash of U passes them if U sent it (journald fills _EXE and
 * _COMM from /proc after the message arrives, so a sender that execs
 * /lib/systemd/systemd-coredump at once wins that race about 4 times in
 * 10: docs/core-timelined.md).  Such an entry (CoredumpEntry::vouched_by_crashed_user) is
 * only evidence of a crash when something U cannot make corroborates it:
 *
 *  - Storage=external: its core, opened in the coredump directory, is
 *    owned by root and carries user.coredump.pid, .uid and .timestamp
 *    equal to the entry's COREDUMP_PID, COREDUMP_UID and
 *    COREDUMP_TIMESTAMP (core_uncorroborated()).  systemd-coredump writes
 *    the core as root, sets those xattrs (coredump.c fix_xattr(), mode
 *    0640, only a read ACL for U: fix_acl()) and links it before it drops
 *    to U and sends the entry (submit_coredump(): save_external_coredump(),
 *    then change_uid_gid(), then sd_journal_sendv()), so a missing core is
 *    final: it was vacuumed or removed, or never existed.  U cannot create
 *    files in the coredump directory (root's, 0755) nor set user.* xattrs
 *    on root's file.  The boot id in the name was already checked against
 *    _BOOT_ID (rule 5).
 *  - Storage=journal or none: no file exists.  The entry counts only if
 *    journald recorded that its sender ran in a systemd-coredump@.service
 *    instance, _SYSTEMD_CGROUP=/system.slice/system-systemd\x2dcoredump.slice/
 *    systemd-coredump@<instance>.service (systemd.journal-fields(7): a
 *    trusted field, from /proc/PID/cgroup), and PID 1 is systemd
 *    (sd_booted(3)): only systemd places processes in /system.slice, a
 *    user's delegated subtree is under /user.slice, and exec does not
 *    change a cgroup (cgroup_uncorroborated()).
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef CORE_TIMELINE_DAEMON_ENTRY_H
#define CORE_TIMELINE_DAEMON_ENTRY_H

#include <sys/stat.h>
#include <sys/types.h>
#include <systemd/sd-messages.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core_timeline/document/names.h"
#include "util.h"

namespace core_timeline::daemon {

/** MESSAGE_ID of systemd-coredump's entries, fc2e22bc6ee647b6b90729ab34a250b1
 *  (<systemd/sd-messages.h>). */
inline constexpr std::string_view kCoredumpMessageId = SD_MESSAGE_COREDUMP_STR;

/** Highest system uid (SYSTEM_UID_MAX of login.defs on Debian). */
inline constexpr std::uint64_t kSystemUidMax = 999;

/** The fields of one journal entry, as read (untrusted). */
struct RawEntry {
  std::string cursor;                /**< sd_journal_get_cursor(3) */
  std::uint64_t realtime_usec = 0;   /**< __REALTIME_TIMESTAMP */
  /** Every field but COREDUMP=, in journal order; a field may repeat. */
  std::vector<std::pair<std::string, std::string>> fields;
  bool has_core_field = false;       /**< a COREDUMP= field is present */

  /** All values of field `name`. */
  std::vector<std::string_view> values(std::string_view name) const;
  /** The value of `name` if it occurs exactly once. */
  std::optional<std::string_view> single(std::string_view name) const;
};

/** What makes an entry trusted (see the top of this file). */
struct TrustPolicy {
  std::vector<std::string> coredump_exes{"/usr/lib/systemd/systemd-coredump", "/lib/systemd/systemd-coredump"};
  /** Uid of the "systemd-coredump" user, if it exists (getpwnam(3)). */
  std::optional<std::uint64_t> coredump_user_uid;
  /** Where systemd-coredump stores cores; no trailing slash. */
  std::string coredump_dir = "/var/lib/systemd/coredump";
  /** PID 1 is systemd (sd_booted(3)), so the cgroup journald records for
   *  a sender (_SYSTEMD_CGROUP) is one systemd placed it in. */
  bool systemd_pid1 = false;
};

/** The cgroup of every systemd-coredump@.service instance, up to the
 *  instance name: the unit sets no Slice=, and systemd places instances of
 *  a template in a per-template slice under system.slice named after it
 *  (systemd.service(5), "Implicit Dependencies"; systemd.resource-control(5),
 *  Slice=); systemd-coredump.socket has Accept=yes, one instance per core. */
inline constexpr std::string_view kCoredumpCgroupPrefix =
    "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@";

/** The policy for this machine: the default exes and dir, the uid of the
 *  "systemd-coredump" user looked up with getpwnam(3), and whether PID 1 is
 *  systemd (sd_booted(3)). */
TrustPolicy default_trust_policy();

/** Where the entry says the core is. */
enum class Storage { kExternal, kJournal, kNone };
std::string_view storage_name(Storage s) noexcept;  /* "external", ... */

/** A trusted systemd-coredump entry. */
struct CoredumpEntry {
  std::string cursor;
  std::uint64_t realtime_usec = 0;
  std::string boot_id;               /**< _BOOT_ID, 32 lower-case hex digits */
  std::uint64_t pid = 0;             /**< COREDUMP_PID (initial pid namespace) */
  std::uint64_t uid = 0;             /**< COREDUMP_UID */
  std::uint64_t timestamp = 0;       /**< COREDUMP_TIMESTAMP, usec */
  std::string comm;                  /**< COREDUMP_COMM (untrusted bytes) */
  std::string exe;                   /**< COREDUMP_EXE (untrusted bytes) */
  std::optional<std::string> core_path;  /**< COREDUMP_FILENAME, validated */
  std::string core_name;             /**< its last component, "" if none */
  bool truncated = false;            /**< COREDUMP_TRUNCATED=1 */
  Storage storage = Storage::kNone;
  /** Only the crashed user vouches for it: _UID is COREDUMP_UID (a
   *  non-system uid), not root nor "systemd-coredump".  Such an entry is
   *  evidence of a crash only when corroborated (top of this file). */
  bool vouched_by_crashed_user = false;
  /** _SYSTEMD_CGROUP if journald recorded it exactly once (trusted). */
  std::optional<std::string> sender_cgroup;
  /** First value of every field but COREDUMP=, for the document. */
  std::map<std::string, std::string> fields;

  /** "BOOT_ID.PID.TIMESTAMP": one crash, whatever pid reuse does. */
  std::string key() const;
  /** The name of its timeline next to the core: core_name without
   *  .zst/.lz4/.xz, plus ".timeline.json"; "" if there is no core file. */
  std::string core_timeline_name() const;
  /** The name of its timeline in the state directory:
   *  core.COMM.UID.BOOT_ID.PID.TIMESTAMP.timeline.json, COMM escaped as
   *  systemd escapes it (xescape "./ " plus '/'). */
  std::string state_timeline_name() const;
};

/**
 * Checks `raw` against `policy` (the rules at the top of this file).
 * Returns the entry, or an Error whose message says which rule failed and
 * quotes the offending field (printable()).  err is 0.
 */
Result<CoredumpEntry> validate_entry(const RawEntry &raw, const TrustPolicy &policy);

/**
 * Compares the user.coredump.{pid,uid,gid,signal,timestamp,comm,exe}
 * xattrs of the open core `fd` (set by systemd-coredump, coredump.c
 * fix_xattr()) with the entry's COREDUMP_* fields.  Missing xattrs (a file
 * system without user xattrs) are not a disagreement.  Returns "" if they
 * agree, else which one differs.
 */
std::string xattrs_disagree(int fd, const CoredumpEntry &entry);

/**
 * Whether the core open on `fd` (fstat'ed into `st`, opened by
 * open_core_file()) corroborates `entry`: owned by root, with
 * user.coredump.pid, .uid and .timestamp present and equal to COREDUMP_PID,
 * COREDUMP_UID and COREDUMP_TIMESTAMP (coredump.c fix_xattr()).  Returns ""
 * if it does, else what is missing or differs (untrusted values quoted with
 * printable()).  Reads xattrs only; thread-safe.
 */
std::string core_uncorroborated(int fd, const struct stat &st, const CoredumpEntry &entry);

/**
 * Whether journald's _SYSTEMD_CGROUP of `entry` corroborates it: PID 1 is
 * systemd (policy.systemd_pid1) and the cgroup is exactly
 * kCoredumpCgroupPrefix + INSTANCE + ".service", INSTANCE non-empty and
 * without '/'.  Returns "" if it does, else why not.  Pure.
 */
std::string cgroup_uncorroborated(const CoredumpEntry &entry, const TrustPolicy &policy);

/** The value of extended attribute `name` of the open file `fd` (at most
 *  4096 bytes), or nothing if it is not set or cannot be read. */
std::optional<std::string> file_xattr(int fd, const char *name);

/* The file names of timelines: core_timeline/document/names.h. */
using core_timeline::document::strip_compression_suffix;
using core_timeline::document::timeline_name_for_core;
using core_timeline::document::xescape_comm;

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_ENTRY_H
