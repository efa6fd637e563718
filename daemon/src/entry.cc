/* SPDX-License-Identifier: MIT */
/* entry.cc - see entry.h. */
#include "entry.h"

#include "core_timeline/reader/number.h"

#include <pwd.h>
#include <systemd/sd-daemon.h>
#include <sys/xattr.h>

#include <cstdio>

namespace core_timeline::daemon {

std::vector<std::string_view> RawEntry::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto &[k, v] : fields)
    if (k == name) out.emplace_back(v);
  return out;
}

std::optional<std::string_view> RawEntry::single(std::string_view name) const {
  std::optional<std::string_view> found;
  for (const auto &[k, v] : fields) {
    if (k != name) continue;
    if (found) return std::nullopt;
    found = v;
  }
  return found;
}

TrustPolicy default_trust_policy() {
  TrustPolicy p;
  struct passwd pw, *res = nullptr;
  char buf[4096];
  if (getpwnam_r("systemd-coredump", &pw, buf, sizeof buf, &res) == 0 && res) p.coredump_user_uid = pw.pw_uid;
  p.systemd_pid1 = sd_booted() > 0;
  return p;
}

std::string_view storage_name(Storage s) noexcept {
  switch (s) {
    case Storage::kExternal: return "external";
    case Storage::kJournal: return "journal";
    case Storage::kNone: return "none";
  }
  return "none";
}

std::string CoredumpEntry::key() const {
  return boot_id + "." + std::to_string(pid) + "." + std::to_string(timestamp);
}

std::string CoredumpEntry::core_timeline_name() const { return timeline_name_for_core(core_name); }

std::string CoredumpEntry::state_timeline_name() const {
  return core_timeline::document::format_timeline_name({comm, uid, boot_id, pid, timestamp});
}

namespace {

Error reject(std::string message) { return error_of(0, std::move(message)); }

bool is_boot_id(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

/* The one-value numeric field `name`, or an Error naming it. */
Result<std::uint64_t> number(const RawEntry &raw, std::string_view name) {
  auto all = raw.values(name);
  if (all.size() != 1)
    return reject(std::string(name) + " occurs " + std::to_string(all.size()) + " times (systemd-coredump writes it once)");
  const auto v = core_timeline::reader::parse_unsigned(all[0]);
  if (!v) return reject(std::string(name) + "='" + printable(all[0], 64) + "' is not a decimal number");
  return *v;
}

/* Rule 1 (entry.h): exactly one MESSAGE_ID, systemd-coredump's. */
Result<void> check_message_id(const RawEntry &raw) {
  auto ids = raw.values("MESSAGE_ID");
  if (ids.size() != 1)
    return reject("MESSAGE_ID occurs " + std::to_string(ids.size()) +
                  " times; systemd-coredump's own entries carry exactly one (a second one marks a copy made by "
                  "'systemd-coredump --backtrace', which any user can run)");
  if (ids[0] != kCoredumpMessageId) return reject("MESSAGE_ID=" + printable(ids[0], 64) + " is not systemd-coredump's");
  return {};
}

/* Rule 2: sent by systemd-coredump over the native protocol; the sender's
 * _UID. */
Result<std::uint64_t> check_sender(const RawEntry &raw, const TrustPolicy &policy) {
  auto transport = raw.single("_TRANSPORT");
  if (!transport || *transport != "journal")
    return reject("_TRANSPORT=" + printable(transport.value_or("?"), 64) + ", not 'journal'");
  /* journald reads _COMM and _EXE from /proc/PID after the message
   * arrives; a sender that has already exited (systemd-coredump exits right
   * after logging) has none.  So a missing one is accepted, a wrong one is
   * not; the _UID and file name rules below bound what such an entry can
   * claim. */
  auto comms = raw.values("_COMM");
  if (comms.size() > 1) return reject("_COMM occurs more than once");
  if (comms.size() == 1 && comms[0] != "systemd-coredum")
    return reject("sent by _COMM=" + printable(comms[0], 64) + ", not systemd-coredump");
  auto exes = raw.values("_EXE");
  if (exes.size() > 1) return reject("_EXE occurs more than once");
  if (exes.size() == 1) {
    bool exe_ok = false;
    for (const auto &e : policy.coredump_exes) exe_ok = exe_ok || exes[0] == e;
    if (!exe_ok) return reject("sent by _EXE=" + printable(exes[0], 128) + ", not systemd-coredump");
  }
  const auto sender = raw.single("_UID");
  const auto sender_uid = sender ? core_timeline::reader::parse_unsigned(*sender) : std::nullopt;
  if (!sender_uid) return reject("_UID missing or repeated");
  return *sender_uid;
}

/* Rule 3: the sender may speak of a crash of `crash_uid`.  systemd-coredump
 * logs as the crashed user only when that user is not a system user (uid >
 * SYSTEM_UID_MAX, 999 on Debian). */
Result<void> check_writer(std::uint64_t sender_uid, std::uint64_t crash_uid, const TrustPolicy &policy) {
  const bool writer_ok = sender_uid == 0 || (policy.coredump_user_uid && sender_uid == *policy.coredump_user_uid) ||
                         (sender_uid == crash_uid && crash_uid > kSystemUidMax);
  if (writer_ok) return {};
  return reject("written by _UID=" + std::to_string(sender_uid) + " about a crash of COREDUMP_UID=" +
                std::to_string(crash_uid) +
                "; systemd-coredump logs as root, as systemd-coredump, or as the crashed (non-system) user only");
}

/* Rule 4: the crash's key (boot id, pid, timestamp) and the fields that
 * occur at most once. */
Result<void> read_crash_fields(const RawEntry &raw, CoredumpEntry &e) {
  auto boot = raw.values("_BOOT_ID");
  if (boot.size() != 1 || !is_boot_id(boot[0])) return reject("_BOOT_ID missing or malformed");
  e.boot_id = std::string(boot[0]);
  auto pid = number(raw, "COREDUMP_PID");
  if (!pid) return std::move(pid).error();
  e.pid = *pid;
  auto ts = number(raw, "COREDUMP_TIMESTAMP");
  if (!ts) return std::move(ts).error();
  e.timestamp = *ts;
  if (e.pid == 0) return reject("COREDUMP_PID=0");

  for (std::string_view name : {"COREDUMP_FILENAME", "COREDUMP_COMM", "COREDUMP_EXE", "COREDUMP_TRUNCATED"})
    if (raw.values(name).size() > 1) return reject(std::string(name) + " occurs more than once");
  e.comm = std::string(raw.single("COREDUMP_COMM").value_or(""));
  e.exe = std::string(raw.single("COREDUMP_EXE").value_or(""));
  e.truncated = raw.single("COREDUMP_TRUNCATED").value_or("") == "1";
  return {};
}

/* Rule 5: COREDUMP_FILENAME, if there, is the name systemd-coredump gives
 * this crash, directly inside the coredump directory. */
Result<void> read_core_file(const RawEntry &raw, const TrustPolicy &policy, CoredumpEntry &e) {
  auto file = raw.single("COREDUMP_FILENAME");
  if (!file) return {};
  const std::string prefix = policy.coredump_dir + "/";
  if (!file->starts_with(prefix))
    return reject("COREDUMP_FILENAME=" + printable(*file) + " is outside the coredump directory " +
                  policy.coredump_dir);
  std::string_view name = file->substr(prefix.size());
  if (name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos || name == "." || name == "..")
    return reject("COREDUMP_FILENAME=" + printable(*file) + " is not a file directly inside " + policy.coredump_dir);
  const auto facts = core_timeline::document::parse_core_file_name(name);
  if (!facts || facts->uid != e.uid || facts->boot_id != e.boot_id || facts->pid != e.pid ||
      facts->usec != e.timestamp)
    return reject("COREDUMP_FILENAME=" + printable(*file) + " is not the name systemd-coredump gives this crash (core.COMM." +
                  std::to_string(e.uid) + "." + e.boot_id + "." + std::to_string(e.pid) + "." +
                  std::to_string(e.timestamp) + "[.zst|.lz4|.xz])");
  e.core_path = std::string(*file);
  e.core_name = std::string(name);
  return {};
}

}  // namespace

Result<CoredumpEntry> validate_entry(const RawEntry &raw, const TrustPolicy &policy) {
  CT_TRY_VOID(check_message_id(raw));
  auto sender_uid = check_sender(raw, policy);
  if (!sender_uid) return std::move(sender_uid).error();
  CoredumpEntry e;
  e.cursor = raw.cursor;
  e.realtime_usec = raw.realtime_usec;
  auto uid = number(raw, "COREDUMP_UID");
  if (!uid) return std::move(uid).error();
  e.uid = *uid;
  CT_TRY_VOID(check_writer(*sender_uid, e.uid, policy));
  /* check_writer() let it through: root, "systemd-coredump", or the
   * crashed user, whose word alone is no evidence (entry.h). */
  e.vouched_by_crashed_user =
      *sender_uid != 0 && !(policy.coredump_user_uid && *sender_uid == *policy.coredump_user_uid);
  if (auto cg = raw.single("_SYSTEMD_CGROUP")) e.sender_cgroup = std::string(*cg);
  CT_TRY_VOID(read_crash_fields(raw, e));
  CT_TRY_VOID(read_core_file(raw, policy, e));
  e.storage = e.core_path ? Storage::kExternal : raw.has_core_field ? Storage::kJournal : Storage::kNone;
  for (const auto &[k, v] : raw.fields) e.fields.emplace(k, v);
  return e;
}

std::optional<std::string> file_xattr(int fd, const char *name) {
  char buf[4096];
  const ssize_t n = fgetxattr(fd, name, buf, sizeof buf);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string xattrs_disagree(int fd, const CoredumpEntry &entry) {
  static const char *const kNames[][2] = {
      {"user.coredump.pid", "COREDUMP_PID"},         {"user.coredump.uid", "COREDUMP_UID"},
      {"user.coredump.gid", "COREDUMP_GID"},         {"user.coredump.signal", "COREDUMP_SIGNAL"},
      {"user.coredump.timestamp", "COREDUMP_TIMESTAMP"}, {"user.coredump.comm", "COREDUMP_COMM"},
      {"user.coredump.exe", "COREDUMP_EXE"},
  };
  for (const auto &[xattr, field] : kNames) {
    const auto value = file_xattr(fd, xattr);
    if (!value) continue;
    auto it = entry.fields.find(field);
    if (it == entry.fields.end()) continue;
    if (*value != it->second)
      return std::string(xattr) + "='" + printable(*value, 128) + "' of the core but " + field + "='" +
             printable(it->second, 128) + "' in the entry";
  }
  return "";
}

std::string core_uncorroborated(int fd, const struct stat &st, const CoredumpEntry &entry) {
  if (st.st_uid != 0)
    return "the core is owned by uid " + std::to_string(st.st_uid) +
           ", not root (systemd-coredump writes every core as root)";
  const struct {
    const char *xattr;
    const char *field;
    std::string want;
  } kMust[] = {
      {"user.coredump.pid", "COREDUMP_PID", std::to_string(entry.pid)},
      {"user.coredump.uid", "COREDUMP_UID", std::to_string(entry.uid)},
      {"user.coredump.timestamp", "COREDUMP_TIMESTAMP", std::to_string(entry.timestamp)},
  };
  for (const auto &m : kMust) {
    const auto value = file_xattr(fd, m.xattr);
    if (!value)
      return std::string("the core has no ") + m.xattr +
             " (systemd-coredump sets it, coredump.c fix_xattr(); a file system without user xattrs cannot "
             "corroborate an entry)";
    if (*value != m.want)
      return std::string(m.xattr) + "='" + printable(*value, 64) + "' of the core but " + m.field + "=" + m.want +
             " in the entry";
  }
  return "";
}

std::string cgroup_uncorroborated(const CoredumpEntry &entry, const TrustPolicy &policy) {
  if (!policy.systemd_pid1)
    return "PID 1 is not systemd, so no cgroup vouches for the sender (sd_booted(3))";
  if (!entry.sender_cgroup) return "journald recorded no _SYSTEMD_CGROUP for the sender";
  const std::string_view cg = *entry.sender_cgroup;
  constexpr std::string_view kSuffix = ".service";
  const bool ok = cg.starts_with(kCoredumpCgroupPrefix) && cg.ends_with(kSuffix) &&
                  cg.size() > kCoredumpCgroupPrefix.size() + kSuffix.size() &&
                  cg.substr(kCoredumpCgroupPrefix.size()).find('/') == std::string_view::npos;
  if (ok) return "";
  return "sent from _SYSTEMD_CGROUP=" + printable(cg, 200) + ", not a systemd-coredump@.service instance (" +
         std::string(kCoredumpCgroupPrefix) + "*.service)";
}

}  // namespace core_timeline::daemon
