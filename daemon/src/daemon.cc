/* SPDX-License-Identifier: MIT */
/* daemon.cc - see daemon.h. */
#include "daemon.h"
/* Before <signal.h>, which defines si_pid as a macro (keys.h has a member
 * of that name). */
#include "core_timeline/document/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "coredump_conf.h"
#include "decode.h"
#include "document.h"
#include "extract.h"
#include "core_timeline/document/journal_entry.h"
#include "message_ids.h"
#include "log.h"

namespace core_timeline::daemon {

namespace {

std::string exe_basename(const std::string &exe) {
  const auto slash = exe.rfind('/');
  std::string b = slash == std::string::npos ? exe : exe.substr(slash + 1);
  if (b.empty() || b == "." || b == ".." || b.size() > 200) return "";
  for (unsigned char c : b)
    if (c < 0x20 || c == 0x7f) return "";
  return b;
}

std::string current_boot_id() {
  sd_id128_t id;
  char s[SD_ID128_STRING_MAX];
  if (sd_id128_get_boot(&id) < 0) return "";
  return sd_id128_to_string(id, s);
}


}  // namespace

Daemon::Daemon(Options options, TrustPolicy policy, Parts parts)
    : opt_(std::move(options)),
      policy_(std::move(policy)),
      parts_(std::move(parts)),
      entries_(*parts_.entries),
      store_(*parts_.store) {
  policy_.coredump_dir = opt_.coredump_dir;
  if (!opt_.coredump_exes.empty()) policy_.coredump_exes = opt_.coredump_exes;
}

bool Daemon::keep_going() {
  const std::uint64_t now = monotonic_usec();
  if (watchdog_usec_ && now - last_ping_ >= watchdog_usec_ / 4) {
    sd_notify(0, "WATCHDOG=1");
    last_ping_ = now;
  }
  read_signals();
  return !stop_;
}

void Daemon::read_signals() {
  struct signalfd_siginfo si;
  while (signal_fd_.valid()) {
    ssize_t n = read(signal_fd_.get(), &si, sizeof si);
    if (n != static_cast<ssize_t>(sizeof si)) break;
    if (si.ssi_signo == SIGHUP) {
      spdlog::info("SIGHUP: core-timelined does not reload its configuration; restart it to apply changes");
      continue;
    }
    if (!stop_) spdlog::info("{} received: stopping", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
    stop_ = true;
  }
}

Result<void> Daemon::start() {
  /* Descriptors 0-2 stay taken, so no pipe or file of ours becomes a
   * child's stdin/stdout/stderr by accident (decode.cc). */
  for (int fd = 0; fd < 3; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDWR);
      if (n >= 0 && n != fd) ::close(n);
    }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) < 0) return errno_error(errno, "sigprocmask");
  int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) return errno_error(errno, "signalfd");
  signal_fd_.reset(sfd);
  signal(SIGPIPE, SIG_IGN);

  std::uint64_t wd = 0;
  if (!opt_.once && sd_watchdog_enabled(0, &wd) > 0) watchdog_usec_ = wd;

  if (!opt_.once) core_watch_.emplace(opt_.coredump_dir);
  if (auto log = SentLog::open(opt_.state_dir)) sent_log_.emplace(std::move(*log));
  else
    spdlog::warn("{}: after a restart, only the timeline entries sent as root or from core-timeline.service's cgroup "
                 "are known as this daemon's own",
                 log.error().message);
  if (auto r = position(); !r) return r;
  /* After position(): the decoder server's log line goes to the journal,
   * whose newest entry position() may have just been reading. */
  if (!decoder_users_.has_dedicated())
    spdlog::warn("there is no user {} (the package makes it: /usr/lib/sysusers.d/core-timeline.conf): the cores of "
                 "root and of system users are decoded as nobody (65534:65534) instead",
                 kDecoderUser);
  parts_.decoder->warm_up();
  report_state_space();
  return {};
}

void Daemon::report_state_space() const {
  struct statvfs fs {};
  const std::string tmp = store_.tmp_path();
  if (statvfs(tmp.c_str(), &fs) != 0) {
    spdlog::warn("cannot tell the free space of {}: {}", tmp, strerrordesc_np(errno));
    return;
  }
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  const auto mib = [](std::uint64_t b) { return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20)); };
  /* The largest core systemd-coredump may hand on (coredump_conf.h); it is
   * extracted into tmp/ whole up to --keep-whole-below, sparse beyond, and
   * never more than --max-kept of it. */
  const CoredumpConf conf = read_coredump_conf();
  for (const auto &note : conf.notes) spdlog::warn("coredump.conf: {}", note);
  const std::uint64_t need = std::min(conf.largest_core(), opt_.max_kept);
  std::string files;
  for (const auto &f : conf.files) files += (files.empty() ? "" : ", ") + f;
  const std::string why = fmt::format(
      "systemd-coredump hands on cores of up to {} ({}, from {}), and a core's extraction keeps at most {} of it "
      "(--max-kept)",
      conf.largest_core() == UINT64_MAX ? std::string("any size") : mib(conf.largest_core()), conf.describe(),
      files.empty() ? std::string("its defaults") : files,
      mib(opt_.max_kept));
  if (free_bytes < need)
    spdlog::warn("{} has {} free, less than the {} a core's extraction may need there: {}; a core that does not fit "
                 "will fail for want of space, be tried {} times, then be stored as core_unreadable",
                 tmp, mib(free_bytes), mib(need), why, kResourceAttempts);
  else
    spdlog::info("{} has {} free; a core's extraction needs at most {} there: {}", tmp, mib(free_bytes), mib(need), why);
}

Result<void> Daemon::position() {
  auto saved = store_.load_cursor();
  if (!saved) return std::move(saved).error();
  if (*saved) {
    auto r = entries_.seek_after_cursor(**saved);
    if (!r) return std::move(r).error();
    cursor_saved_ = true;
    spdlog::info("resuming after the saved journal cursor{}",
                 *r ? "" : " (its entry is gone from the journal: rotated or vacuumed; resuming at the next one)");
    return {};
  }
  auto newest = entries_.newest_cursor();
  if (!newest) return std::move(newest).error();
  switch (opt_.first_start) {
    case FirstStart::kNew:
      if (*newest) {
        auto r = entries_.seek_after_cursor(**newest);
        if (!r) return std::move(r).error();
        auto s = store_.save_cursor(**newest);
        if (!s) return s;
        cursor_saved_ = true;
      } else if (auto r = entries_.seek_tail(); !r) {
        return r;
      }
      spdlog::info("first start: handling crashes from now on (first-start=new)");
      return {};
    case FirstStart::kBoot: {
      const std::string boot = current_boot_id();
      if (auto r = boot.empty() ? entries_.seek_head() : entries_.seek_boot_start(boot); !r) return r;
      pending_anchor_ = *newest;
      spdlog::info("first start: handling the crashes of this boot ({}) (first-start=boot)", boot);
      return {};
    }
    case FirstStart::kAll:
      if (auto r = entries_.seek_head(); !r) return r;
      pending_anchor_ = *newest;
      spdlog::info("first start: handling every crash in the journal (first-start=all)");
      return {};
  }
  return {};
}

int Daemon::run() {
  if (auto r = start(); !r) {
    spdlog::error("cannot start: {}", r.error().message);
    return 1;
  }
  if (!opt_.once) sd_notifyf(0, "READY=1\nSTATUS=following the journal for systemd-coredump entries\nMAINPID=%d", getpid());
  spdlog::info("core-timelined {} started: cores in {}, timelines {}, state in {}", version(), opt_.coredump_dir,
               opt_.output_dir.empty() ? "next to the cores" : "in " + opt_.output_dir, opt_.state_dir);
  last_ping_ = monotonic_usec();
  const int status = loop();
  /* Whatever stopped it, the entries done are saved. */
  save_progress();
  report_suppressed_unverified(true);
  if (!opt_.once) sd_notify(0, "STOPPING=1");
  spdlog::info("stopped after handling {} coredump entries", handled_);
  return status;
}

int Daemon::loop() {
  for (;;) {
    auto more = drain();
    if (!more) {
      spdlog::error("reading the journal failed: {}; stopping (systemd restarts the service)", more.error().message);
      return 1;
    }
    save_when_due();
    report_suppressed_unverified(false);
    if (stop_) return failed_ ? 1 : 0;
    save_first_start_anchor();
    if (opt_.once) return 0;
    core_watch_->retry();
    /* Idle: prepare a core that awaits its entry; then look at the journal
     * again before sleeping. */
    const bool busy = prepare_next() || !to_prepare_.empty() || inflight_.has_value();
    if (stop_) return failed_ ? 1 : 0;
    prepared_.expire(monotonic_usec());
    reseek_if_an_entry_is_overdue();
    if (const auto end = wait_for_news(busy ? 0 : poll_timeout_ms())) return *end;
  }
}

void Daemon::save_when_due() {
  /* Saved when due, and when the first start's backlog is done: what it
   * wrote before the anchor could be - and the anchor only if that save
   * succeeded. */
  if (unsaved_cursor_ && (pending_anchor_ || monotonic_usec() - unsaved_since_ >= kCursorSaveMs * 1000))
    save_progress();
}

void Daemon::save_first_start_anchor() {
  if (pending_anchor_ && !cursor_saved_ && !unsaved_cursor_) {
    /* The backlog of the first start is done and held no coredump entry:
     * remember where the journal was, so a restart does not redo it. */
    if (auto s = store_.save_cursor(*pending_anchor_); s) cursor_saved_ = true;
    else spdlog::warn("cannot save the journal cursor: {}", s.error().message);
  }
  pending_anchor_.reset();
}

int Daemon::poll_timeout_ms() {
  int timeout = entries_.timeout_ms();
  auto at_most = [&timeout](int ms) { timeout = timeout < 0 ? ms : std::min(timeout, ms); };
  if (watchdog_usec_) at_most(static_cast<int>(watchdog_usec_ / 4000));
  /* A core awaits its entry: look again soon rather than at journald's
   * announcement (core_watch.h). */
  if (const int eager = core_watch_->timeout_ms(monotonic_usec()); eager >= 0) at_most(eager);
  /* A prepared core's timeline is a write away once its entry is read. */
  if (prepared_awaiting()) at_most(PreparedCores::kPollMs);
  /* Entries handled and not saved: save by kCursorSaveMs after the
   * oldest. */
  if (unsaved_cursor_) {
    const std::uint64_t waited_ms = (monotonic_usec() - unsaved_since_) / 1000;
    at_most(waited_ms >= kCursorSaveMs ? 0 : static_cast<int>(kCursorSaveMs - waited_ms));
  }
  return timeout;
}

void Daemon::reseek_if_an_entry_is_overdue() {
  const auto since = core_watch_->oldest_expected();
  if (!since) return;
  const std::uint64_t now = monotonic_usec();
  if (now - *since < kReseekAfterMs * 1000 || now - reseeked_at_ < kReseekAfterMs * 1000) return;
  reseeked_at_ = now;
  spdlog::debug("a new core has awaited its entry for {:.1f} s: seeking the journal again after the last entry read",
                static_cast<double>(now - *since) / 1e6);
  if (auto rs = entries_.reseek(); !rs) spdlog::warn("seeking the journal again: {}", rs.error().message);
}

std::optional<int> Daemon::wait_for_news(int timeout_ms) {
  struct pollfd p[3] = {{entries_.fd(), entries_.events(), 0},
                        {signal_fd_.get(), POLLIN, 0},
                        {core_watch_->fd(), POLLIN, 0}};
  const int r = poll(p, 3, timeout_ms);
  if (r < 0 && errno != EINTR) {
    spdlog::error("poll: {}", strerrordesc_np(errno));
    return 1;
  }
  if (r > 0 && (p[2].revents & POLLIN)) core_watch_->read_events(monotonic_usec());
  if (!keep_going()) return failed_ ? 1 : 0;
  auto pr = entries_.process();
  if (!pr) {
    spdlog::error("{}; stopping", pr.error().message);
    return 1;
  }
  if (*pr == SD_JOURNAL_INVALIDATE) spdlog::debug("journal files were added or removed (rotation or vacuum)");
  return std::nullopt;
}

Result<bool> Daemon::drain() {
  RawEntry raw;
  std::string warning;
  while (keep_going()) {
    auto n = entries_.next(raw, warning);
    if (!n) return std::move(n).error();
    if (!*n) {
      backlog_read_ = true;
      break;
    }
    if (!warning.empty()) spdlog::warn("journal entry {}: {}", raw.cursor, warning);
    const Handled h = handle(raw);
    /* A big document was parsed and built; give the memory back. */
    malloc_trim(0);
    if (h == Handled::kStop) break; /* this entry is not done: its cursor is not saved */
    unsaved_cursor_ = raw.cursor;
    const std::uint64_t now = monotonic_usec();
    if (!unsaved_since_) unsaved_since_ = now;
    if (now - unsaved_since_ >= kCursorSaveMs * 1000 || unsynced_timelines_.size() >= kMaxUnsynced) save_progress();
  }
  /* Read to its end: save now, unless more entries are due at once (a
   * storm's come in bursts), whose timelines should not wait for these
   * fsyncs; run() saves by kCursorSaveMs at the latest. */
  if (!entries_due()) save_progress();
  return true;
}

void Daemon::sync_later(Fd file, const std::string &dir, const std::string &name, const std::string &key) {
  unsynced_timelines_.push_back({std::move(file), dir + "/" + name, key});
  unsynced_dirs_.insert(dir);
}

bool Daemon::entries_due() const { return core_watch_ && core_watch_->expected() > 0; }

void Daemon::save_progress() {
  if (!unsaved_cursor_) return;
  if (!sync_timelines() || !sync_directories()) {
    /* Nothing more is saved by this run, which stops: a later fsync of the
     * same file may report success for data that never reached the disk. */
    unsynced_timelines_.clear();
    unsynced_dirs_.clear();
    unsaved_cursor_.reset();
    unsaved_since_ = 0;
    stop_ = failed_ = true;
    return;
  }
  if (auto s = store_.save_cursor(*unsaved_cursor_); !s) {
    /* The timelines are durable; without the cursor they would be skipped
     * as existing after a restart, so going on is safe. */
    spdlog::error("cannot save the journal cursor: {}; check {} (space, permissions)", s.error().message,
                  opt_.state_dir);
  } else {
    cursor_saved_ = true;
    if (sent_log_) sent_log_->cursor_saved(backlog_read_);
  }
  unsaved_cursor_.reset();
  unsaved_since_ = 0;
}

bool Daemon::sync_timelines() {
  /* Start the writeback of every timeline, then wait for each: the file
   * system commits them together rather than one commit per fsync. */
  for (const auto &t : unsynced_timelines_)
    (void)sync_file_range(t.file.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
  for (auto it = unsynced_timelines_.begin(); it != unsynced_timelines_.end(); it = unsynced_timelines_.erase(it)) {
    auto synced = store_.sync_file(it->file.get(), it->path);
    if (synced) continue;
    /* The file system lost it (EIO, ENOSPC on a thin volume...): unlink
     * it so that no timeline that may be short stays named, and stop
     * without saving, so that its entry is redone after the restart. */
    unlink(it->path.c_str());
    /* Its entry is redone after the restart: it must not be taken for
     * one whose file the vacuum removed (sent_by_earlier_run()). */
    if (sent_log_) sent_log_->forget(it->key);
    spdlog::error("{}; removed it and stopping without saving the journal cursor (the entries since the last save "
                  "are redone after a restart)",
                  synced.error().message);
    return false;
  }
  return true;
}

bool Daemon::sync_directories() {
  /* The names of the timelines become durable before the cursor goes past
   * their entries. */
  for (auto it = unsynced_dirs_.begin(); it != unsynced_dirs_.end(); it = unsynced_dirs_.erase(it)) {
    auto synced = store_.sync_directory(*it);
    if (synced) continue;
    /* As for a timeline: its names may not be durable, and retrying
     * could report success for what never reached the disk. */
    spdlog::error("{}; stopping without saving the journal cursor (the entries since the last save are redone "
                  "after a restart)",
                  synced.error().message);
    return false;
  }
  return true;
}

Daemon::Handled Daemon::handle(const RawEntry &raw) {
  auto entry = validate_entry(raw, policy_);
  if (!entry) {
    const std::string pid(raw.single("_PID").value_or("?")), uid(raw.single("_UID").value_or("?")),
        exe(raw.single("_EXE").value_or("?"));
    log::event(LOG_WARNING, kMsgEntryRejected,
               "ignoring a journal entry with systemd-coredump's MESSAGE_ID sent by pid " + pid + " (uid " + uid +
                   ", " + printable(exe, 128) + "): " + entry.error().message,
               {{"CORE_TIMELINE_COREDUMP_CURSOR", raw.cursor},
                {"CORE_TIMELINE_SENDER_PID", pid},
                {"CORE_TIMELINE_SENDER_UID", uid},
                {"CORE_TIMELINE_SENDER_EXE", exe},
                {"CORE_TIMELINE_REASON", entry.error().message}});
    return Handled::kDone;
  }
  const CoredumpEntry &e = *entry;
  if (core_watch_ && !e.core_name.empty())
    if (auto since = core_watch_->handled(e.core_name))
      spdlog::debug("pid {}: its core {} appeared in the coredump directory {:.1f} ms before its entry was read",
                    e.pid, printable(e.core_name, 256), static_cast<double>(monotonic_usec() - *since) / 1000.0);
  /* No file can corroborate an entry without one (entry.h): the cgroup
   * journald recorded for its sender must. */
  if (e.vouched_by_crashed_user && e.storage != Storage::kExternal)
    if (const std::string why = cgroup_uncorroborated(e, policy_); !why.empty()) {
      unverified(e, why);
      return Handled::kDone;
    }
  log::Scope scope({{"CORE_TIMELINE_PID", std::to_string(e.pid)},
                    {"CORE_TIMELINE_KEY", e.key()},
                    {"CORE_TIMELINE_COREDUMP_CURSOR", e.cursor}});
  return handle_with_retries(e);
}

namespace {

/* Errors that say a resource ran out, not that the entry or the core is
 * at fault: worth trying again later, and no reason to stop. */
/* The core as a document names it (core.path): the stored file, or
 * journal:core.COMM.UID.BOOT.PID.TS for a core in its entry. */
std::string core_display(const CoredumpEntry &e) {
  if (e.storage != Storage::kJournal) return e.core_path.value_or("");
  const std::string_view suffix = ".timeline.json";
  const std::string state_name = e.state_timeline_name();
  return "journal:" + state_name.substr(0, state_name.size() - suffix.size());
}

bool is_resource_errno(int err) {
  return err == ENOSPC || err == EDQUOT || err == EMFILE || err == ENFILE || err == ENOMEM;
}

/* The verdict of an entry's work (below). */
Verdict verdict_for(const CoredumpEntry &e, const CoreWork &w);

}  // namespace

Daemon::Next Daemon::fail_entry(const CoredumpEntry &e, const std::string &what, int err) {
  if (!is_resource_errno(err)) return stop_on_error(e, what);
  resource_failure_ = what;
  return Next::kStop;
}

Daemon::Handled Daemon::handle_with_retries(const CoredumpEntry &e) {
  for (unsigned attempt = 1;; ++attempt) {
    resource_failure_.reset();
    const Handled h = handle_trusted(e);
    if (!resource_failure_ || stop_) return h;
    if (attempt == kResourceAttempts) return give_up(e, *resource_failure_);
    const std::uint64_t wait = kResourceBackoffMs << (attempt - 1);
    spdlog::warn("pid {}: {}; trying again in {} ms (attempt {} of {})", e.pid, *resource_failure_, wait, attempt,
                 kResourceAttempts);
    if (!pause_ms(wait)) return Handled::kStop;
  }
}

bool Daemon::pause_ms(std::uint64_t ms) {
  const std::uint64_t until = monotonic_usec() + ms * 1000;
  while (keep_going()) {
    const std::uint64_t now = monotonic_usec();
    if (now >= until) return true;
    std::uint64_t left_ms = (until - now + 999) / 1000;
    if (watchdog_usec_) left_ms = std::min<std::uint64_t>(left_ms, watchdog_usec_ / 4000);
    struct pollfd p {signal_fd_.get(), POLLIN, 0};
    (void)poll(&p, signal_fd_.valid() ? 1 : 0, static_cast<int>(left_ms));
  }
  return false;
}

Daemon::Handled Daemon::give_up(const CoredumpEntry &e, const std::string &what) {
  const std::string who = "pid " + std::to_string(e.pid) + " (" + printable(e.exe.empty() ? e.comm : e.exe, 200) + ")";
  const std::string reason = "not processed for want of a resource after " + std::to_string(kResourceAttempts) +
                             " attempts: " + what;
  log::event(LOG_ERR, kMsgResourceGaveUp,
             who + ": " + reason + "; storing it as core_unreadable and going on with the later entries",
             {{"CORE_TIMELINE_EXE", e.exe}, {"CORE_TIMELINE_UID", std::to_string(e.uid)},
              {"CORE_TIMELINE_REASON", reason}});
  Gathered g;
  g.display = core_display(e);
  g.work.status_without_core = Status::kCoreUnreadable;
  g.work.reason_without_core = reason;
  const Destination to = destination_for(e);
  const Verdict verdict = verdict_for(e, g.work);
  resource_failure_.reset();
  const Handled h = store_timeline(e, to, g, verdict, make_document(e, verdict, g, monotonic_usec()));
  if (resource_failure_) {
    spdlog::error("pid {}: cannot store that either ({}); going on without a timeline for it", e.pid,
                  *resource_failure_);
    resource_failure_.reset();
    return Handled::kDone;
  }
  return h;
}

Daemon::Next Daemon::unverified(const CoredumpEntry &e, const std::string &why, bool core_gone) {
  auto field = [&e](const char *name) {
    const auto it = e.fields.find(name);
    return it == e.fields.end() ? std::string("?") : it->second;
  };
  if (!unverified_log_.take(monotonic_usec())) return Next::kDone;
  report_suppressed_unverified(true);  /* the count of those left out first */
  const std::string crash = "not storing the crash of pid " + std::to_string(e.pid) + " (" +
                            printable(e.exe.empty() ? e.comm : e.exe, 128) + ") of uid " + std::to_string(e.uid);
  const std::string sender = "(sent by pid " + field("_PID") + ", uid " + field("_UID") + ")";
  /* A core removed before it was read is what happened, most likely
   * (the vacuum, a backlog): said first, not as a suspected forgery. */
  log::event(LOG_WARNING, kMsgEntryUnverified,
             core_gone ? crash + ": " + why + "; only the core could have shown the crash, as only that user vouches "
                                               "for the entry " + sender
                       : crash + ": only that user vouches for the entry " + sender +
                             " and nothing corroborates it: " + why,
             {{"CORE_TIMELINE_COREDUMP_CURSOR", e.cursor},
              {"CORE_TIMELINE_PID", std::to_string(e.pid)},
              {"CORE_TIMELINE_UID", std::to_string(e.uid)},
              {"CORE_TIMELINE_KEY", e.key()},
              {"CORE_TIMELINE_STORAGE", std::string(storage_name(e.storage))},
              {"CORE_TIMELINE_SENDER_PID", field("_PID")},
              {"CORE_TIMELINE_SENDER_UID", field("_UID")},
              {"CORE_TIMELINE_SENDER_EXE", field("_EXE")},
              {"CORE_TIMELINE_REASON", why}});
  return Next::kDone;
}

void Daemon::report_suppressed_unverified(bool now) {
  if (unverified_log_.suppressed() == 0) return;
  if (!now && !unverified_log_.available(monotonic_usec())) return;
  const std::uint64_t n = unverified_log_.take_suppressed();
  log::event(LOG_WARNING, kMsgEntryUnverified,
             std::to_string(n) + " more unverified coredump entries were not stored and not logged one by one (at "
                                 "most " + std::to_string(kUnverifiedBurst) + " at once and " +
                 std::to_string(kUnverifiedPerMinute) + " a minute are)",
             {{"CORE_TIMELINE_SUPPRESSED", std::to_string(n)}});
}

std::string Daemon::timelines_dir() const {
  return opt_.output_dir.empty() ? opt_.coredump_dir : opt_.output_dir;
}

std::optional<std::string> Daemon::tlmap_for(std::string_view exe) const {
  const std::string b = exe_basename(std::string(exe));
  if (b.empty() || opt_.tlmap_dir.empty()) return std::nullopt;
  const std::string t = opt_.tlmap_dir + "/" + b + ".tlmap";
  struct stat ts;
  if (stat(t.c_str(), &ts) != 0 || !S_ISREG(ts.st_mode)) return std::nullopt;
  return t;
}

namespace {

/* A whole decimal number (a uid or gid field or xattr), or nullopt. */
std::optional<std::uint64_t> decimal(const std::optional<std::string> &t) {
  std::uint64_t v = 0;
  if (!t || t->empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  return ec == std::errc() && end == t->data() + t->size() ? std::optional<std::uint64_t>(v) : std::nullopt;
}

}  // namespace

DecoderCredentials Daemon::decoder_for(const CoredumpEntry &e) const {
  const auto it = e.fields.find("COREDUMP_GID");
  return decoder_users_.for_crash(e.uid, it == e.fields.end() ? std::nullopt : decimal(it->second));
}

Result<std::unique_ptr<Decoder::Run>> Daemon::start_decoder(const CoreWork &w, const Fd &tmp,
                                                             const std::string &display,
                                                             const std::optional<std::string> &tlmap,
                                                             const DecoderCredentials &as) {
  DecodeRequest req;
  req.credentials = as;
  /* The decoder gets a read-only descriptor of the temporary core. */
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", tmp.get());
  Fd ro(::open(proc, O_RDONLY | O_CLOEXEC));
  req.core_fd = ro.valid() ? ro.get() : tmp.get();
  req.core_size = w.extract ? w.extract->core_bytes : 0;
  req.display_name = display;
  req.tlmap = tlmap;
  return parts_.decoder->start(req);
}

Result<void> Daemon::finish_decoder(CoreWork &w, Decoder::Run &run) {
  auto d = run.finish([this] { return keep_going(); });
  if (!d) return std::move(d).error();
  w.decoded = std::move(*d);
  return {};
}

Result<void> Daemon::decode_extracted(CoreWork &w, const Fd &tmp, const std::string &display,
                                      const std::optional<std::string> &tlmap, const DecoderCredentials &as) {
  auto run = start_decoder(w, tmp, display, tlmap, as);
  if (!run) return std::move(run).error();
  return finish_decoder(w, **run);
}

Result<CoreWork> Daemon::extract_core_file(int core_fd, const std::string &name, const std::string &display,
                                           Fd *tmp_out) {
  const std::uint64_t t0 = monotonic_usec();
  CoreWork w;
  /* An uncompressed core the decoder sees whole: it maps the stored file
   * itself, and the state directory's space is not used (extract.h). */
  struct stat st {};
  if (fstat(core_fd, &st) == 0)
    if (auto as_is = parts_.extractor->as_stored(name, st)) {
      if (Fd same(fcntl(core_fd, F_DUPFD_CLOEXEC, 3)); same.valid()) {
        w.extract = *as_is;
        w.work_ms = static_cast<double>(monotonic_usec() - t0) / 1000.0;
        *tmp_out = std::move(same);
        return w;
      }
    }
  auto tmp = make_temp_file(store_.tmp_path());
  if (!tmp) return std::move(tmp).error();
  auto x = parts_.extractor->from_file(core_fd, name, tmp->get(), [this] { return keep_going(); });
  if (!x) {
    if (x.error().sys_errno == ECANCELED) return std::move(x).error();
    return error_of(x.error().sys_errno, "extracting " + display + ": " + x.error().message);
  }
  w.extract = *x;
  if (x->core_bytes == 0) {
    w.status_without_core = Status::kCoreUnreadable;
    w.reason_without_core = "the core file " + display + " holds no data" +
                            (x->stream_error.empty() ? "" : " (" + x->stream_error + ")");
  }
  w.work_ms = static_cast<double>(monotonic_usec() - t0) / 1000.0;
  *tmp_out = std::move(*tmp);
  return w;
}

Result<CoreWork> Daemon::work_on_core_file(int core_fd, const std::string &name, const std::string &display,
                                           const std::optional<std::string> &tlmap, const DecoderCredentials &as) {
  const std::uint64_t t0 = monotonic_usec();
  Fd tmp;
  auto w = extract_core_file(core_fd, name, display, &tmp);
  if (!w) return w;
  if (!w->status_without_core)
    CT_TRY_VOID(decode_extracted(*w, tmp, display, tlmap, as));
  w->work_ms = static_cast<double>(monotonic_usec() - t0) / 1000.0;
  return w;
}

void Daemon::finish_inflight() {
  if (!inflight_) return;
  const std::uint64_t t0 = monotonic_usec();
  InFlight &f = *inflight_;
  auto d = finish_decoder(f.work, *f.run);
  if (!d) {
    if (d.error().sys_errno != ECANCELED)
      spdlog::debug("not preparing {}: {}; its entry will do it", printable(f.name, 256), d.error().message);
    inflight_.reset();
    return;
  }
  /* The daemon's own time: extracting, starting the decoder and reading
   * its result, not the time the decoder ran beside other work. */
  f.work.work_ms += static_cast<double>(monotonic_usec() - t0) / 1000.0;
  spdlog::debug("prepared {} before its entry in {:.1f} ms", printable(f.name, 256), f.work.work_ms);
  prepared_.put(std::move(f.name), f.identity, std::move(f.tlmap), std::move(f.work), monotonic_usec());
  inflight_.reset();
}

bool Daemon::prepare_next() {
  if (!core_watch_) return false;
  for (auto &n : core_watch_->take_new()) {
    if (to_prepare_.size() >= CoreWatch::kMaxExpected) to_prepare_.pop_front();
    to_prepare_.push_back(std::move(n));
  }
  while (!to_prepare_.empty() && keep_going()) {
    const std::string name = std::move(to_prepare_.front());
    to_prepare_.pop_front();
    if (worth_preparing(name) && prepare(name)) return true;
  }
  /* Nothing new: collect the decoder still running. */
  if (!inflight_) return false;
  finish_inflight();
  return true;
}

bool Daemon::worth_preparing(const std::string &name) {
  /* Its entry came first, or it waited too long: the entry does it. */
  if (!core_watch_->is_expected(name) || prepared_.contains(name) || (inflight_ && inflight_->name == name))
    return false;
  /* Its entry was handled before the directory's event was read. */
  if (auto out = open_directory(timelines_dir()); out && file_exists(out->get(), timeline_name_for_core(name))) {
    core_watch_->handled(name);
    return false;
  }
  return true;
}

bool Daemon::prepare(const std::string &name) {
  const std::string display = opt_.coredump_dir + "/" + name;
  auto dir = open_directory(opt_.coredump_dir);
  struct stat st {};
  Result<Fd> core = dir ? open_core_file(dir->get(), name, &st) : Result<Fd>(std::move(dir).error());
  if (!core) {
    spdlog::debug("not preparing {}: {}", printable(display, 256), core.error().message);
    return false;
  }
  /* The entry says which executable crashed; before it, the xattr that
   * systemd-coredump set on the core says the same (coredump.c
   * fix_xattr()); take() compares the two. */
  const auto exe = file_xattr(core->get(), "user.coredump.exe");
  if (!exe && !opt_.tlmap_dir.empty()) {
    /* Without it the event-names file cannot be chosen before the entry,
     * and a preparation with the wrong one would be done twice. */
    spdlog::debug("not preparing {}: it has no user.coredump.exe xattr", printable(display, 256));
    return false;
  }
  /* Whom its decoder runs as, from the same xattrs (the entry's
   * COREDUMP_UID and COREDUMP_GID, which take() compares). */
  const auto uid = file_xattr(core->get(), "user.coredump.uid"), gid = file_xattr(core->get(), "user.coredump.gid");
  if (!decimal(uid)) {
    spdlog::debug("not preparing {}: it has no user.coredump.uid xattr", printable(display, 256));
    return false;
  }
  InFlight next{name, CoreIdentity::of(st), tlmap_for(exe.value_or("")), {}, nullptr,
                decoder_users_.for_crash(*decimal(uid), decimal(gid))};
  /* Extract this core while the previous one decodes (on the other CPU),
   * then start its decoder and collect the previous one. */
  Fd tmp;
  auto w = extract_core_file(core->get(), name, display, &tmp);
  if (!w) {
    if (w.error().sys_errno != ECANCELED)
      spdlog::debug("not preparing {}: {}; its entry will do it", printable(display, 256), w.error().message);
    finish_inflight();
    return true;
  }
  next.work = std::move(*w);
  start_preparation(std::move(next), tmp, display);
  return true;
}

void Daemon::start_preparation(InFlight next, const Fd &tmp, const std::string &display) {
  if (next.work.status_without_core) {
    /* Nothing to decode: done already. */
    finish_inflight();
    prepared_.put(std::move(next.name), next.identity, std::move(next.tlmap), std::move(next.work), monotonic_usec());
    return;
  }
  const std::uint64_t t0 = monotonic_usec();
  auto run = start_decoder(next.work, tmp, display, next.tlmap, next.as);
  next.work.work_ms += static_cast<double>(monotonic_usec() - t0) / 1000.0;
  finish_inflight();
  if (!run) {
    spdlog::debug("not preparing {}: {}; its entry will do it", printable(display, 256), run.error().message);
    return;
  }
  next.run = std::move(*run);
  inflight_.emplace(std::move(next));
}

bool Daemon::timeline_exists(const CoredumpEntry &e, const std::string &dir, int dirfd, const std::string &name) {
  if (dirfd < 0 || name.empty()) return false;
  Fd opened;
  auto x = existing_document(dirfd, name, &opened);
  if (!x) {
    /* Not readable, but there: left as it is, as before it was checked. */
    spdlog::warn("pid {}: {}/{}: {}; taking it for its timeline", e.pid, dir, name, x.error().message);
    return true;
  }
  switch (*x) {
    case Existing::kAbsent:
      return false;
    case Existing::kWhole:
      /* Perhaps written by a run killed before it synced it: this run's
       * cursor goes past the entry only once it is durable; or before it
       * sent its journal entry. */
      sync_later(std::move(opened), dir, name, e.key());
      ensure_entry(e, dirfd, name, dir + "/" + name);
      return true;
    case Existing::kOther:
      spdlog::warn("pid {}: {}/{} is not a regular file of at most {} MiB; left as it is", e.pid, dir, name,
                   kMaxDocumentBytes >> 20);
      return true;
    case Existing::kPartial:
      break;
  }
  /* Only a power cut between linking it and the save that follows leaves
   * this (files.h); this entry comes after the saved cursor. */
  spdlog::warn("pid {}: its timeline {}/{} is empty or cut short (the machine went down before it was synced); "
               "writing it again",
               e.pid, dir, name);
  if (unlinkat(dirfd, name.c_str(), 0) < 0 && errno != ENOENT) {
    spdlog::error("pid {}: cannot remove {}/{}: {}; left as it is", e.pid, dir, name, strerrordesc_np(errno));
    return true;
  }
  /* The removal, too, is durable before the cursor passes this entry: the
   * new timeline may go to the other directory (the core is gone now). */
  unsynced_dirs_.insert(dir);
  return false;
}

bool Daemon::prepared_awaiting() const {
  bool any = false;
  prepared_.for_each_name([&](const std::string &n) { any = any || core_watch_->is_expected(n); });
  return any;
}

namespace {

/* Whatever becomes of an entry, a preparation of its core is not kept (a
 * rejected entry, a core gone, a preparation that did not fit). */
struct DiscardPrepared {
  PreparedCores &p;
  const std::string &name;
  ~DiscardPrepared() {
    if (!name.empty()) p.discard(name);
  }
};

Verdict verdict_for(const CoredumpEntry &e, const CoreWork &w) {
  if (w.decoded) return judge(e, *w.decoded, w.extract);
  Verdict v;
  v.status = w.status_without_core.value_or(Status::kUndecodable);
  v.reason = w.reason_without_core;
  return v;
}

}  // namespace

Daemon::Handled Daemon::handle_trusted(const CoredumpEntry &e) {
  const std::uint64_t t0 = monotonic_usec();
  DiscardPrepared discard_prepared{prepared_, e.core_name};
  const Destination to = destination_for(e);
  /* One timeline per crash: also after a restart that redoes this entry. */
  if (already_has_timeline(e, to)) {
    spdlog::info("pid {}: its timeline already exists; skipping entry", e.pid);
    ++handled_;
    return Handled::kDone;
  }
  if (sent_by_earlier_run(e)) {
    ++handled_;
    return Handled::kDone;
  }
  Gathered g;
  if (const Next n = gather(e, to, g); n != Next::kGoOn) return n == Next::kStop ? Handled::kStop : Handled::kDone;
  warn_once_if_unconfined(g.work);
  const Verdict verdict = verdict_for(e, g.work);
  return store_timeline(e, to, g, verdict, make_document(e, verdict, g, t0));
}

bool Daemon::sent_by_earlier_run(const CoredumpEntry &e) {
  const auto sender = sent_log_ ? sent_log_->earlier_sender(e.key()) : std::nullopt;
  if (!sender) return false;
  auto has = timeline_entries_.has_entry(e, sender);
  if (!has) {
    spdlog::warn("pid {}: an earlier run sent its timeline entry (from pid {}), but the journal cannot be read to "
                 "find it ({}); doing the entry again",
                 e.pid, *sender, has.error().message);
    return false;
  }
  if (!*has) return false;  /* recorded, but killed before the send */
  spdlog::info("pid {}: its timeline entry was sent by an earlier run (pid {}) and its timeline file is gone since "
               "(removed, or vacuumed with its core); not doing the entry again",
               e.pid, *sender);
  return true;
}

void Daemon::stop_here_for_test(const CoredumpEntry &e) const {
  /* A test seam: with CT_TEST_STOP_AFTER_ENTRY_OF=FILE in its
   * environment, the daemon stops itself (SIGSTOP) once it has sent the
   * timeline entry of the crash whose pid FILE holds, after the timeline
   * was linked and before its cursor is saved, so that a test can kill it
   * exactly there (daemon_pipeline_test).  Only whoever starts the daemon
   * sets its environment. */
  static const char *const file = getenv("CT_TEST_STOP_AFTER_ENTRY_OF");
  if (!file || !*file) return;
  char buf[32] = {};
  const int fd = ::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n > 0 && std::strtoull(buf, nullptr, 10) == e.pid) raise(SIGSTOP);
}

Daemon::Destination Daemon::destination_for(const CoredumpEntry &e) {
  Destination to;
  to.out_dir = timelines_dir();
  to.core_name = e.core_timeline_name();
  to.state_name = e.state_timeline_name();
  if (auto fd = open_directory(to.out_dir)) to.out_fd = std::move(*fd);
  else to.out_error = fd.error().message;
  return to;
}

bool Daemon::already_has_timeline(const CoredumpEntry &e, const Destination &to) {
  return timeline_exists(e, to.out_dir, to.out_fd.get(), to.core_name) ||
         timeline_exists(e, store_.timelines_path(), store_.timelines_fd(), to.state_name);
}

Daemon::Next Daemon::stop_on_error(const CoredumpEntry &e, const std::string &what) {
  spdlog::error("pid {}: {}; will retry this entry after a restart", e.pid, what);
  stop_ = failed_ = true;
  return Next::kStop;
}

Daemon::Next Daemon::gather(const CoredumpEntry &e, const Destination &to, Gathered &g) {
  switch (e.storage) {
    case Storage::kExternal:
      return gather_from_file(e, to, g);
    case Storage::kJournal:
      return gather_from_journal(e, g);
    case Storage::kNone:
      break;
  }
  g.work.status_without_core = Status::kCoreMissing;
  g.work.reason_without_core =
      "systemd-coredump stored no core (Storage=none, or the core was larger than ProcessSizeMax=, "
      "ExternalSizeMax= or JournalSizeMax= in coredump.conf)";
  return Next::kGoOn;
}

Daemon::Next Daemon::gather_from_file(const CoredumpEntry &e, const Destination &to, Gathered &g) {
  g.display = *e.core_path;
  auto dir = open_directory(opt_.coredump_dir);
  struct stat st {};
  Result<Fd> core = dir ? open_core_file(dir->get(), e.core_name, &st) : Result<Fd>(std::move(dir).error());
  /* Only the core can corroborate an entry of the crashed user's own
   * (entry.h); without it, there is no evidence of a crash. */
  if (e.vouched_by_crashed_user && !core && core.error().sys_errno == ENOENT)
    return unverified(e, "its core " + *e.core_path + " cannot be opened: it is gone (removed or vacuumed before "
                         "it could be read, or it never existed)", true);
  if (e.vouched_by_crashed_user && !core)
    return unverified(e, "its core " + *e.core_path + " cannot be opened (" + core.error().message +
                             "); systemd-coredump links the core before it sends the entry, so it will not appear");
  if (e.vouched_by_crashed_user)
    if (const std::string why = core_uncorroborated(core->get(), st, e); !why.empty()) return unverified(e, why);
  if (!core) {
    const int err = core.error().sys_errno;
    g.work.status_without_core = err == ENOENT ? Status::kCoreMissing : Status::kCoreUnreadable;
    g.work.reason_without_core = err == ENOENT ? "the core file " + *e.core_path +
                                                     " is gone (removed or vacuumed before core-timelined got to it)"
                                               : core.error().message;
    return Next::kGoOn;
  }
  if (!to.out_fd.valid()) return stop_on_error(e, to.out_error);
  if (rejected_by_xattrs(core->get(), e)) return Next::kDone;
  g.owner = owner_of_core(core->get(), st);
  return work_on_entry_core(e, core->get(), st, g);
}

bool Daemon::rejected_by_xattrs(int core_fd, const CoredumpEntry &e) {
  const std::string d = xattrs_disagree(core_fd, e);
  if (d.empty()) return false;
  log::event(LOG_WARNING, kMsgEntryRejected,
             "ignoring a journal entry that does not match the core it names (" + *e.core_path + "): " + d,
             {{"CORE_TIMELINE_SENDER_PID", e.fields.count("_PID") ? e.fields.at("_PID") : "?"},
              {"CORE_TIMELINE_SENDER_UID", e.fields.count("_UID") ? e.fields.at("_UID") : "?"},
              {"CORE_TIMELINE_REASON", d}});
  return true;
}

Daemon::Next Daemon::work_on_entry_core(const CoredumpEntry &e, int core_fd, const struct stat &st, Gathered &g) {
  const auto tlmap = tlmap_for(e.exe);
  if (inflight_ && inflight_->name == e.core_name) finish_inflight();
  std::string why_not;
  const DecoderCredentials as = decoder_for(e);
  auto p = prepared_.take(e.core_name, CoreIdentity::of(st), tlmap, &why_not);
  if (p && p->decoded && p->decoded->credentials != as) {
    why_not = "it was decoded as uid " + std::to_string(p->decoded->credentials.uid) + ", the entry's decoder is uid " +
              std::to_string(as.uid);
    p.reset();
  }
  if (p) {
    g.work = std::move(*p);
    g.prepared = true;
    g.prepared_ms = g.work.work_ms;
    spdlog::debug("pid {}: using the preparation of {} made before its entry", e.pid, printable(e.core_name, 256));
    return Next::kGoOn;
  }
  if (!why_not.empty())
    spdlog::info("pid {}: not using the preparation of {} made before its entry: {}; doing it again", e.pid,
                 printable(e.core_name, 256), why_not);
  auto w = work_on_core_file(core_fd, e.core_name, g.display, tlmap, as);
  if (!w)
    return w.error().sys_errno == ECANCELED ? Next::kStop : fail_entry(e, w.error().message, w.error().sys_errno);
  g.work = std::move(*w);
  return Next::kGoOn;
}

Daemon::Next Daemon::gather_from_journal(const CoredumpEntry &e, Gathered &g) {
  g.display = core_display(e);
  auto temp = make_temp_file(store_.tmp_path());
  if (!temp) return fail_entry(e, temp.error().message, temp.error().sys_errno);
  auto r = entries_.with_core_field([&](std::span<const std::uint8_t> bytes) -> Result<void> {
    auto x = parts_.extractor->from_bytes(bytes, temp->get(), [this] { return keep_going(); });
    if (!x) return std::move(x).error();
    g.work.extract = *x;
    return {};
  });
  if (!r) {
    if (r.error().sys_errno == ECANCELED) return Next::kStop;
    g.work.status_without_core = Status::kCoreUnreadable;
    g.work.reason_without_core = "the core in the journal entry cannot be read: " + r.error().message;
    return Next::kGoOn;
  }
  if (auto d = decode_extracted(g.work, *temp, g.display, tlmap_for(e.exe), decoder_for(e)); !d)
    return d.error().sys_errno == ECANCELED ? Next::kStop : fail_entry(e, d.error().message, d.error().sys_errno);
  return Next::kGoOn;
}

void Daemon::warn_once_if_unconfined(const CoreWork &w) {
  if (warned_unconfined_ || !w.decoded || !w.decoded->decoded) return;
  const bool landlock = w.decoded->landlock_abi != 0, seccomp = w.decoded->seccomp;
  if (landlock && seccomp) return;
  warned_unconfined_ = true;
  spdlog::warn("decoders run without {}{}{} (a kernel without it, or a seccomp filter of the service or container "
               "that refuses its calls): a decoder taken over by a hostile core is confined only by the service; "
               "see daemon.decoder.landlock_abi and .seccomp in the timelines, and docs/core-timelined.md",
               landlock ? "" : "Landlock", !landlock && !seccomp ? " and " : "", seccomp ? "" : "their seccomp filter");
}

Daemon::Document Daemon::make_document(const CoredumpEntry &e, const Verdict &verdict, const Gathered &g,
                                       std::uint64_t t0) const {
  DocumentParts parts;
  parts.entry = &e;
  parts.verdict = verdict;
  parts.decoded = g.work.decoded ? &*g.work.decoded : nullptr;
  parts.extract = g.work.extract;
  parts.prepared_before_entry = g.prepared;
  parts.decoded_usec = realtime_usec();
  parts.duration_ms = g.prepared_ms + static_cast<double>(monotonic_usec() - t0) / 1000.0;
  Document d;
  d.tree = build_document(parts);
  d.bytes = serialize(d.tree);
  return d;
}

Daemon::Handled Daemon::store_timeline(const CoredumpEntry &e, const Destination &to, const Gathered &g,
                                       const Verdict &verdict, const Document &doc) {
  /* Next to the core when it was opened (its owner is known); otherwise in
   * the state directory with the owner systemd-coredump would have used. */
  const bool beside_core = g.owner.has_value();
  const std::string dir = beside_core ? to.out_dir : store_.timelines_path();
  const std::string &name = beside_core ? to.core_name : to.state_name;
  const int dirfd = beside_core ? to.out_fd.get() : store_.timelines_fd();
  std::string acl_warning;
  /* Named at once; it and its directory are fsynced before the cursor is
   * saved past this entry (save_progress()), for a run of entries. */
  Fd unsynced;
  FileOwner owner = beside_core ? *g.owner : owner_for_uid(e.uid);
  namespace key = core_timeline::document::key;
  /* A crash in a pid namespace: its pid there, for ctl-query's PID
   * matches (document/names.h kNamespacePidXattr). */
  if (const auto ids = doc.tree.find(key::pids); ids != doc.tree.end() && ids->is_object()) {
    const auto ns = ids->find(key::namespaced), pid = ids->find(key::pid);
    if (ns != ids->end() && ns->is_boolean() && ns->get<bool>() && pid != ids->end() && pid->is_number_unsigned())
      owner.xattrs.emplace_back(core_timeline::document::kNamespacePidXattr, std::to_string(pid->get<std::uint64_t>()));
  }
  auto w = store_.write_timeline(dirfd, dir, name, doc.bytes, owner, &acl_warning, &unsynced);
  if (!w) {
    fail_entry(e, "cannot write its timeline: " + w.error().message, w.error().sys_errno);
    return Handled::kStop;
  }
  if (unsynced.valid()) sync_later(std::move(unsynced), dir, name, e.key());
  if (!acl_warning.empty()) spdlog::warn("{}", acl_warning);
  ++handled_;
  const std::string path = dir + "/" + name;
  if (*w == WriteOutcome::kExists) {
    spdlog::info("pid {}: {} appeared meanwhile; left as it is", e.pid, path);
    ensure_entry(e, dirfd, name, path);
    return Handled::kDone;
  }
  report(e, verdict, path, doc, owner);
  return Handled::kDone;
}

void Daemon::report(const CoredumpEntry &e, const Verdict &verdict, const std::string &path, const Document &doc,
                    const FileOwner &owner) {
  const std::string who = "pid " + std::to_string(e.pid) + " (" + printable(e.exe.empty() ? e.comm : e.exe, 200) + ")";
  const std::string status(status_name(verdict.status));
  log::Fields fields{{"CORE_TIMELINE_STATUS", status},
                     {"CORE_TIMELINE_TIMELINE", path},
                     {"CORE_TIMELINE_EXE", e.exe},
                     {"CORE_TIMELINE_UID", std::to_string(e.uid)}};
  if (!verdict.reason.empty()) fields.push_back({"CORE_TIMELINE_REASON", verdict.reason});
  std::size_t events = 0;
  if (const auto ev = doc.tree.find(core_timeline::document::key::events); ev != doc.tree.end() && ev->is_array())
    events = ev->size();
  std::string message;
  switch (verdict.status) {
    case Status::kMappingAbsent:
      log::event(LOG_ERR, kMsgMappingAbsent,
                 who + " crashed with a core-timeline ring, but the ring's mapping is not in its core, so its "
                       "timeline is lost: " + verdict.reason,
                 fields);
      message = who + ": mapping_absent: " + verdict.reason + "; written to " + path;
      break;
    case Status::kRingNotMade:
      log::event(LOG_ERR, kMsgRingNotMade,
                 who + " crashed with libtimeline loaded, but libtimeline had made no ring, so there is no "
                       "timeline: " + verdict.reason,
                 fields);
      message = who + ": ring_not_made: " + verdict.reason + "; written to " + path;
      break;
    case Status::kOk:
      message = who + ": timeline with " + std::to_string(events) + " events written to " + path;
      break;
    case Status::kNoRing:
      message = who + " had no core-timeline ring (no_ring)";
      break;
    default:
      message = who + ": " + status + ": " + verdict.reason + "; written to " + path;
      break;
  }
  send_timeline_entry(e, message, path, doc, owner);
}

void Daemon::send_timeline_entry(const CoredumpEntry &e, const std::string &message, const std::string &path,
                                 const Document &doc, const FileOwner &owner) {
  namespace jn = core_timeline::document::journal;
  namespace key = core_timeline::document::key;
  std::string status, reason;
  if (const auto s = doc.tree.find(key::status); s != doc.tree.end() && s->is_string()) status = s->get<std::string>();
  if (const auto r = doc.tree.find(key::reason); r != doc.tree.end() && r->is_string()) reason = r->get<std::string>();
  const std::optional<Status> parsed = parse_status(status);
  const int priority = parsed == Status::kOk || parsed == Status::kNoRing ? LOG_INFO : LOG_WARNING;
  /* Sent whatever --log-target says: the entry is data (ctl-query reads
   * timelines from the journal), not a log line. */
  const std::uint64_t t0 = monotonic_usec();
  log::Fields f{{"MESSAGE", message},
                {"PRIORITY", std::to_string(priority)},
                {"SYSLOG_IDENTIFIER", std::string(jn::kSyslogIdentifier)},
                {"MESSAGE_ID", std::string(kMsgTimelineWritten)}};
  for (const auto &kv : log::scope_fields()) f.push_back(kv);
  f.push_back({"CORE_TIMELINE_EXE", e.exe});
  f.push_back({"CORE_TIMELINE_UID", std::to_string(e.uid)});
  if (!reason.empty()) f.push_back({"CORE_TIMELINE_REASON", reason});
  jn::EntryInput in;
  in.document = &doc.tree;
  in.document_bytes = doc.bytes;
  in.coredump_fields = &e.fields;
  in.coredump_boot_id = e.boot_id;
  in.timeline_path = path;
  in.document_max = opt_.journal_document_max;
  in.keep_payload = opt_.journal_payload;
  std::string note;
  for (auto &kv : jn::entry_fields(in, &note)) f.push_back(std::move(kv));
  if (!note.empty()) spdlog::warn("pid {}: {}", e.pid, note);
  const auto as = send_as(e, owner);
  const std::size_t document = f.back().first == jn::kDocument ? f.back().second.size() : 0;
  const bool cut = std::any_of(f.begin(), f.end(), [](const auto &kv) { return kv.first == jn::kDocumentCut; });
  const std::size_t n_fields = f.size();
  std::optional<SentRecord> record;
  if (sent_log_) record = SentRecord{sent_log_->fd(), SentLog::prefix(e.key())};
  /* The document in an entry of its own, sent first (document_entry.h). */
  const auto pair = split_for_journal(std::move(f), message);
  const auto send = [&](const std::optional<SendAs> &who) {
    return pair.document ? send_entries({&*pair.document, &pair.timeline}, who, record)
                         : send_entry(pair.timeline, who, record);
  };
  auto sent = send(as);
  /* What the entry cost the daemon (bench_daemon reads it from stderr). */
  log::mirror(priority, fmt::format("{} [journal entry: {} fields, document {} bytes{}, sent as {} in {:.3f} ms]",
                                    message, n_fields, document, cut ? " (cut)" : "",
                                    as ? "uid " + std::to_string(as->uid) : std::string("root"),
                                    static_cast<double>(monotonic_usec() - t0) / 1000.0));
  if (auto &r = sent; !r) {
    spdlog::warn("pid {}: cannot send its timeline entry to the journal as {}: {}", e.pid,
                 as ? "uid " + std::to_string(as->uid) : std::string("root"), r.error().message);
    if (!as) return;
    /* Then as root, into the system journal: late readers (adm,
     * systemd-journal) still have it; the user has the file. */
    if (auto r2 = send(std::nullopt); !r2)
      spdlog::warn("pid {}: cannot send its timeline entry to the journal: {}", e.pid, r2.error().message);
  }
  stop_here_for_test(e);
}

void Daemon::ensure_entry(const CoredumpEntry &e, int dirfd, const std::string &name, const std::string &path) {
  auto has = timeline_entries_.has_entry(e, sent_log_ ? sent_log_->earlier_sender(e.key()) : std::nullopt);
  if (has && *has) return;
  if (!has)
    spdlog::warn("pid {}: cannot tell whether its timeline entry is in the journal ({}); sending it", e.pid,
                 has.error().message);
  const int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    spdlog::warn("pid {}: cannot open {} to send its timeline entry: {}", e.pid, path, strerrordesc_np(errno));
    return;
  }
  Fd file(fd);
  struct stat st {};
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > kMaxDocumentBytes) {
    spdlog::warn("pid {}: {} is not a regular file of at most {} MiB; no timeline entry sent", e.pid, path,
                 kMaxDocumentBytes >> 20);
    return;
  }
  Document doc;
  doc.bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < doc.bytes.size()) {
    const ssize_t n = pread(fd, doc.bytes.data() + got, doc.bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spdlog::warn("pid {}: cannot read {}: {}; no timeline entry sent", e.pid, path,
                   n < 0 ? strerrordesc_np(errno) : "it shrank");
      return;
    }
    got += static_cast<std::size_t>(n);
  }
  auto tree = core_timeline::document::parse_stored_document(doc.bytes);
  if (!tree) {
    spdlog::warn("pid {}: {}: {}; no timeline entry sent", e.pid, path, tree.error().message);
    return;
  }
  doc.tree = std::move(*tree);
  const std::string status = doc.tree[core_timeline::document::key::status].get<std::string>();
  spdlog::info("pid {}: its timeline {} was written before its journal entry was sent (a restart); sending it",
               e.pid, path);
  const std::string who = "pid " + std::to_string(e.pid) + " (" + printable(e.exe.empty() ? e.comm : e.exe, 200) + ")";
  send_timeline_entry(e, who + ": " + status + " timeline " + path + " (its entry sent after a restart)", path, doc,
                      owner_of_core(fd, st));
}

}  // namespace core_timeline::daemon
