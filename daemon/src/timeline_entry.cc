/* SPDX-License-Identifier: MIT */
/* timeline_entry.cc - see timeline_entry.h. */
#include "timeline_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "core_timeline/document/journal_entry.h"
#include "credentials.h"
#include "sigbus.h"

namespace core_timeline::daemon {

using core_timeline::sigbus::zeroed_pages;

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

/* The value of `field` of the current entry ("" prefix stripped), if any. */
std::optional<std::string> get(sd_journal *j, const char *field) {
  const void *data = nullptr;
  size_t len = 0;
  if (sd_journal_get_data(j, field, &data, &len) < 0) return std::nullopt;
  const std::size_t skip = std::strlen(field) + 1;
  if (len < skip) return std::nullopt;
  return std::string(static_cast<const char *>(data) + skip, len - skip);
}

/* What the sending child is given, and what it says (in the memory it
 * shares with the daemon). */
struct ChildSend {
  const std::vector<struct iovec> *entries;  /* one iovec array per entry */
  std::size_t n_entries;
  uid_t uid;
  gid_t gid;
  int drop_errno;  /* set*id failed with this */
  int send_errno;  /* sd_journal_sendv failed with this */
  int record_fd;   /* the SentLog's, or -1 */
  const char *record_prefix;
  std::size_t record_prefix_len;
};

/* Appends "PREFIX PID\n" to `fd` with one write(2): PID is the caller's.
 * Only a copy and a write, so the sending child (which shares the daemon's
 * memory, CLONE_VM) may call it. */
void write_record(int fd, const char *prefix, std::size_t prefix_len) {
  char line[160];
  if (fd < 0 || prefix_len > sizeof line - 24) return;
  std::memcpy(line, prefix, prefix_len);
  char digits[20];
  int nd = 0;
  for (unsigned long v = static_cast<unsigned long>(syscall(SYS_getpid)); nd == 0 || v > 0; v /= 10)
    digits[nd++] = static_cast<char>('0' + v % 10);
  std::size_t len = prefix_len;
  while (nd > 0) line[len++] = digits[--nd];
  line[len++] = '\n';
  (void)!write(fd, line, len);
}

int send_as_child(void *arg) {
  auto *job = static_cast<ChildSend *>(arg);
  if (const int err = become(job->uid, job->gid); err != 0) {
    job->drop_errno = err;
    syscall(SYS_exit, 1);
  }
  write_record(job->record_fd, job->record_prefix, job->record_prefix_len);
  for (std::size_t i = 0; i < job->n_entries; ++i) {
    const auto &iov = job->entries[i];
    const int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    if (r < 0) {
      job->send_errno = -r;
      syscall(SYS_exit, 2);
    }
  }
  syscall(SYS_exit, 0);
  return 0;
}

/* The SentLog's file `fd`, at most its first MiB (a few hundred lines
 * are all it holds between two saves). */
std::string read_sent_log(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; text.size() < (1u << 20) && (n = pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  return text;
}

struct Closer {
  sd_journal *j;
  ~Closer() { sd_journal_close(j); }
};

}  // namespace

std::optional<SendAs> send_as(const CoredumpEntry &e, const FileOwner &owner) {
  if (is_system_uid(e.uid) || !grants_read(owner, static_cast<std::uint32_t>(e.uid))) return std::nullopt;
  const auto gid = number(e.fields, "COREDUMP_GID");
  SendAs as;
  as.uid = static_cast<uid_t>(e.uid);
  as.gid = static_cast<gid_t>(gid && *gid < 0xffffffffull ? *gid : e.uid);
  return as;
}

Result<SentLog> SentLog::open(const std::string &state_dir) {
  SentLog log;
  log.path_ = state_dir + "/sent";
  const int fd = ::open(log.path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno_error(errno, "open " + log.path_);
  log.fd_.reset(fd);
  /* Its own file, in a directory only root writes; still read with care. */
  const std::string text = read_sent_log(fd);
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  /* a line cut short is no record */
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    const std::size_t sp = line.rfind(' ');
    if (sp == std::string_view::npos || sp == 0) continue;
    unsigned long pid = 0;
    const auto [p, ec] = std::from_chars(line.data() + sp + 1, line.data() + line.size(), pid);
    if (ec != std::errc() || p != line.data() + line.size() || pid == 0 || pid > 0x7fffffff) continue;
    log.earlier_[std::string(line.substr(0, sp))] = static_cast<pid_t>(pid);
  }
  return log;
}

std::optional<pid_t> SentLog::earlier_sender(const std::string &key) const {
  const auto it = earlier_.find(key);
  if (it == earlier_.end()) return std::nullopt;
  return it->second;
}

void SentLog::cursor_saved(bool forget_earlier) {
  if (!fd_.valid()) return;
  if (forget_earlier) earlier_.clear();
  if (ftruncate(fd_.get(), 0) < 0) return;
  std::string text;
  for (const auto &[key, pid] : earlier_) text += key + " " + std::to_string(pid) + "\n";
  if (!text.empty()) (void)!write(fd_.get(), text.data(), text.size());
}

void SentLog::forget(const std::string &key) {
  earlier_.erase(key);
  if (!fd_.valid()) return;
  const std::string text = read_sent_log(fd_.get());
  std::string kept;
  const std::string prefix = SentLog::prefix(key);
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) break;
    if (text.compare(at, prefix.size(), prefix) != 0) kept.append(text, at, end + 1 - at);
  }
  if (ftruncate(fd_.get(), 0) == 0 && !kept.empty()) (void)!write(fd_.get(), kept.data(), kept.size());
}

Result<void> send_entry(const log::Fields &fields, const std::optional<SendAs> &as,
                        const std::optional<SentRecord> &record) {
  return send_entries({&fields}, as, record);
}

Result<void> send_entries(std::initializer_list<const log::Fields *> entries, const std::optional<SendAs> &as,
                          const std::optional<SentRecord> &record) {
  std::vector<std::vector<std::string>> parts;
  std::vector<std::vector<struct iovec>> iovs;
  parts.reserve(entries.size());
  iovs.reserve(entries.size());
  for (const log::Fields *fields : entries) {
    auto &p = parts.emplace_back();
    auto &iov = iovs.emplace_back();
    p.reserve(fields->size());
    for (const auto &[k, v] : *fields) p.push_back(k + "=" + v);
    iov.reserve(p.size());
    for (auto &f : p) iov.push_back({f.data(), f.size()});
  }
  const int record_fd = record ? record->fd : -1;
  const std::string record_prefix = record ? record->prefix : std::string();
  if (!as) {
    write_record(record_fd, record_prefix.data(), record_prefix.size());
    for (const auto &iov : iovs) {
      const int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
      if (r < 0) return errno_error(-r, "sd_journal_sendv");
    }
    return {};
  }
  /* A child that shares this process's memory and descriptors while this
   * one waits for it (CLONE_VM, as posix_spawn(3) starts one, but without
   * CLONE_VFORK: the crashed user may signal a process of its uid, and a
   * SIGSTOP would then hold this thread for as long as it likes; here a
   * stopped child is killed and the entry sent as root).  No copy of the
   * daemon's page tables, so it costs tens of
   * microseconds whatever the daemon's size, where fork(2) and wait cost
   * 0.4-0.7 ms for a process of 10 MiB and 2.5-3.7 ms for one of 60 MiB
   * on this project's machines (clone with CLONE_VM: 0.04 ms for both).  CLONE_FILES: the journal socket sd_journal_sendv
   * caches in a static is the same descriptor in both.  Its credentials
   * are its own: the raw set*id calls change the child only (glibc's
   * wrappers would try to change every thread of the shared memory's
   * process), and the kernel attaches the child's uid and gid to what it
   * sends (SCM_CREDENTIALS).  Dropping root clears the dumpable flag of
   * the memory it shares with the daemon (prctl(2) PR_SET_DUMPABLE; kernel
   * commit_creds()): it is put back after. */
  static void *stack = nullptr;
  constexpr std::size_t kStack = 1u << 20;  // sd_journal_sendv allocas 5 iovecs a field
  if (!stack) {
    void *m = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) return errno_error(errno, "mmap (the stack of the child sending the journal entry)");
    stack = m;
  }
  ChildSend job{iovs.data(), iovs.size(), as->uid, as->gid, 0, 0,
                record_fd, record_prefix.data(), record_prefix.size()};
  const int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  const pid_t pid = clone(send_as_child, static_cast<char *>(stack) + kStack, CLONE_VM | CLONE_FILES | SIGCHLD, &job);
  if (pid < 0) return errno_error(errno, "clone (to send the journal entry as uid " + std::to_string(as->uid) + ")");
  int status = 0;
  bool stopped = false;
  for (;;) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      /* Not reaped: its stack must not be used again. */
      stack = nullptr;
      return errno_error(errno, "waitpid (the child sending the journal entry)");
    }
    if (!WIFSTOPPED(status)) break;
    stopped = true;
    kill(pid, SIGKILL);
  }
  if (dumpable > 0) prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
  if (stopped) return error_of(EINTR, "the child sending the journal entry was stopped (by a signal of the crashed user?)");
  if (!WIFEXITED(status)) return error_of(EIO, "the child sending the journal entry was killed");
  if (job.drop_errno)
    return errno_error(job.drop_errno, "dropping to uid " + std::to_string(as->uid) + " gid " + std::to_string(as->gid) +
                                           " to send the journal entry (the daemon needs CAP_SETUID and CAP_SETGID)");
  if (job.send_errno) return errno_error(job.send_errno, "sd_journal_sendv as uid " + std::to_string(as->uid));
  return {};
}

jn::EntryPair split_for_journal(log::Fields timeline, const std::string &message) {
  sd_id128_t id;
  char text[SD_ID128_STRING_MAX];
  const bool random = sd_id128_randomize(&id) >= 0;
  auto pair = jn::split_document(std::move(timeline), random ? sd_id128_to_string(id, text) : "");
  if (pair.document) {
    log::Fields head{{"MESSAGE", "the timeline document of " + message},
                     {"PRIORITY", "7"},
                     {"SYSLOG_IDENTIFIER", std::string(jn::kSyslogIdentifier)}};
    pair.document->insert(pair.document->begin(), std::make_move_iterator(head.begin()),
                          std::make_move_iterator(head.end()));
  }
  return pair;
}

Result<bool> TimelineEntries::has_entry(const CoredumpEntry &e, std::optional<pid_t> sender) {
  /* A file truncated under the read (sigbus.h) reads as zeros, which may
   * hide the entry: that read says nothing, the second one is made on the
   * journal opened anew. */
  for (int attempt = 0;; ++attempt) {
    const std::uint64_t pages = zeroed_pages();
    auto has = has_entry_once(e, sender);
    if (zeroed_pages() == pages) return has;
    if (attempt == 1)
      return error_of(EIO, "journal files were truncated under both reads (SIGBUS: pages read as zeros)");
  }
}

Result<bool> TimelineEntries::has_entry_once(const CoredumpEntry &e, std::optional<pid_t> sender) {
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
    const auto uid = get(j, "_UID"), transport = get(j, "_TRANSPORT"), cuid = get(j, "COREDUMP_UID"),
               cgroup = get(j, "_SYSTEMD_CGROUP"), pid = get(j, "_PID");
    /* The process an earlier run recorded as its sender: journald took
     * _PID from the socket's credentials (SCM_CREDENTIALS). */
    if (sender && pid && *pid == std::to_string(*sender) && transport && *transport == "journal") return true;
    jn::Sender s;
    if (uid) s.uid = *uid;
    if (transport) s.transport = *transport;
    if (cuid) s.coredump_uid = *cuid;
    if (cgroup) s.cgroup = *cgroup;
    if (jn::sender_trust(s) == jn::Trust::kDaemon) return true;
  }
  if (r < 0) return errno_error(-r, "sd_journal_next (looking for the timeline entry)");
  return false;
}

}  // namespace core_timeline::daemon
