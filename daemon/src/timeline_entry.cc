/* SPDX-License-Identifier: MIT */
/* timeline_entry.cc - see timeline_entry.h. */
#include "timeline_entry.h"

#include <errno.h>
#include <grp.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "core_timeline/document/journal_entry.h"

namespace ctd {

namespace jn = core_timeline::document::journal;

namespace {

std::optional<std::uint64_t> number(const std::map<std::string, std::string> &fields, const char *name) {
  const auto it = fields.find(name);
  if (it == fields.end()) return std::nullopt;
  std::uint64_t v = 0;
  const std::string &s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool system_uid(std::uint64_t uid) { return uid <= kSystemUidMax || uid == 65534 || uid >= 0xffffffffull; }

/* The value of `field` of the current entry ("" prefix stripped), if any. */
std::optional<std::string> get(sd_journal *j, const char *field) {
  const void *data = nullptr;
  size_t len = 0;
  if (sd_journal_get_data(j, field, &data, &len) < 0) return std::nullopt;
  const std::size_t skip = std::strlen(field) + 1;
  if (len < skip) return std::nullopt;
  return std::string(static_cast<const char *>(data) + skip, len - skip);
}

struct Closer {
  sd_journal *j;
  ~Closer() { sd_journal_close(j); }
};

}  // namespace

std::optional<SendAs> send_as(const CoredumpEntry &e, const FileOwner &owner) {
  if (system_uid(e.uid) || !grants_read(owner, static_cast<std::uint32_t>(e.uid))) return std::nullopt;
  const auto gid = number(e.fields, "COREDUMP_GID");
  SendAs as;
  as.uid = static_cast<uid_t>(e.uid);
  as.gid = static_cast<gid_t>(gid && *gid < 0xffffffffull ? *gid : e.uid);
  return as;
}

Result<void> send_entry(const log::Fields &fields, const std::optional<SendAs> &as) {
  std::vector<std::string> parts;
  parts.reserve(fields.size());
  for (const auto &[k, v] : fields) parts.push_back(k + "=" + v);
  std::vector<struct iovec> iov;
  iov.reserve(parts.size());
  for (auto &p : parts) iov.push_back({p.data(), p.size()});
  if (!as) {
    const int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    if (r < 0) return errno_error(-r, "sd_journal_sendv");
    return {};
  }
  const pid_t pid = fork();
  if (pid < 0) return errno_error(errno, "fork (to send the journal entry as uid " + std::to_string(as->uid) + ")");
  if (pid == 0) {
    /* Exit status: 0 sent; 1..127 sd_journal_sendv's errno; 128 + errno
     * (at most 255) a failed drop. */
    if (setgroups(0, nullptr) < 0 || setresgid(as->gid, as->gid, as->gid) < 0 ||
        setresuid(as->uid, as->uid, as->uid) < 0)
      _exit(128 + (errno > 127 ? 127 : errno));
    const int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    _exit(r < 0 ? (-r > 127 ? 127 : -r) : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return errno_error(errno, "waitpid (the child sending the journal entry)");
  if (!WIFEXITED(status)) return error_of(EIO, "the child sending the journal entry was killed");
  const int code = WEXITSTATUS(status);
  if (code == 0) return {};
  if (code >= 128)
    return errno_error(code - 128, "dropping to uid " + std::to_string(as->uid) + " gid " + std::to_string(as->gid) +
                                       " to send the journal entry (the daemon needs CAP_SETUID and CAP_SETGID)");
  return errno_error(code, "sd_journal_sendv as uid " + std::to_string(as->uid));
}

Result<bool> TimelineEntries::has_entry(const CoredumpEntry &e) {
  sd_journal *j = nullptr;
  int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
  if (r < 0) return errno_error(-r, "sd_journal_open(SD_JOURNAL_LOCAL_ONLY)");
  Closer closer{j};
  for (const std::string &m :
       {"MESSAGE_ID=" + std::string(jn::kTimelineMessageId), "COREDUMP_PID=" + std::to_string(e.pid),
        "COREDUMP_TIMESTAMP=" + std::to_string(e.timestamp), std::string(jn::kBootId) + "=" + e.boot_id}) {
    r = sd_journal_add_match(j, m.data(), m.size());
    if (r < 0) return errno_error(-r, "sd_journal_add_match(" + m + ")");
  }
  r = sd_journal_set_data_threshold(j, 4096);  // never the document
  if (r < 0) return errno_error(-r, "sd_journal_set_data_threshold");
  while ((r = sd_journal_next(j)) > 0) {
    const auto uid = get(j, "_UID"), transport = get(j, "_TRANSPORT"), cuid = get(j, "COREDUMP_UID");
    jn::Sender s;
    if (uid) s.uid = *uid;
    if (transport) s.transport = *transport;
    if (cuid) s.coredump_uid = *cuid;
    if (jn::trusted_sender(s)) return true;
  }
  if (r < 0) return errno_error(-r, "sd_journal_next (looking for the timeline entry)");
  return false;
}

}  // namespace ctd
