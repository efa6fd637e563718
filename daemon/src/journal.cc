/* SPDX-License-Identifier: MIT */
/* journal.cc - see journal.h. */
#include "journal.h"

#include <errno.h>
#include <poll.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

#include <spdlog/spdlog.h>

#include <cstring>

#include "sigbus.h"

namespace core_timeline::daemon {

using core_timeline::sigbus::zeroed_pages;

namespace {

const std::string kMatch = "MESSAGE_ID=" + std::string(kCoredumpMessageId);

Result<void> add_match(sd_journal *j) {
  int r = sd_journal_add_match(j, kMatch.data(), kMatch.size());
  if (r < 0) return errno_error(-r, "sd_journal_add_match(" + kMatch + ")");
  return {};
}

}  // namespace

Result<Journal> Journal::finish_open(sd_journal *j, int r, const std::string &what) {
  if (r < 0)
    return errno_error(-r, what + " failed (core-timelined must run as root or in group systemd-journal to read "
                              "systemd-coredump's entries)");
  Journal out(j);
  out.seen_pages_ = zeroed_pages();
  r = sd_journal_set_data_threshold(j, kFieldThreshold);
  if (r < 0) return errno_error(-r, "sd_journal_set_data_threshold");
  auto m = add_match(j);
  if (!m) return std::move(m).error();
  return out;
}

Result<Journal> Journal::open() {
  sd_journal *j = nullptr;
  int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
  return finish_open(j, r, "sd_journal_open(SD_JOURNAL_LOCAL_ONLY)");
}

Result<Journal> Journal::open_directory(const std::string &directory) {
  sd_journal *j = nullptr;
  int r = sd_journal_open_directory(&j, directory.c_str(), 0);
  auto out = finish_open(j, r, "sd_journal_open_directory(" + directory + ")");
  if (out) out->directory_ = directory;
  return out;
}

Journal::Journal(Journal &&o) noexcept
    : j_(std::exchange(o.j_, nullptr)),
      last_cursor_(std::move(o.last_cursor_)),
      directory_(std::move(o.directory_)),
      start_(o.start_),
      boot_(std::move(o.boot_)),
      seen_pages_(o.seen_pages_) {}
Journal &Journal::operator=(Journal &&o) noexcept {
  if (this != &o) {
    sd_journal_close(j_);
    j_ = std::exchange(o.j_, nullptr);
    last_cursor_ = std::move(o.last_cursor_);
    directory_ = std::move(o.directory_);
    start_ = o.start_;
    boot_ = std::move(o.boot_);
    seen_pages_ = o.seen_pages_;
  }
  return *this;
}

Result<void> Journal::reopen() {
  sd_journal *j = nullptr;
  const int r = directory_.empty() ? sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY)
                                   : sd_journal_open_directory(&j, directory_.c_str(), 0);
  auto fresh = finish_open(j, r, "opening the journal again");
  if (!fresh) return std::move(fresh).error();
  sd_journal_close(j_);
  j_ = std::exchange(fresh->j_, nullptr);
  seen_pages_ = zeroed_pages();
  if (!last_cursor_.empty()) {
    auto s = seek_after_cursor(last_cursor_);
    if (!s) return std::move(s).error();
    return {};
  }
  return start_ == Start::kBoot ? seek_boot_start(boot_) : seek_head();
}

Result<bool> Journal::reopen_if_truncated(const char *during) {
  const std::uint64_t pages = zeroed_pages();
  if (pages == seen_pages_) return false;
  spdlog::warn("a journal file was truncated under the reader during {} ({} page(s) past its end read as zeros; "
               "journald of systemd 252 truncates archived files at rotation): opening the journal again and "
               "reading on after the last entry read",
               during, pages - seen_pages_);
  if (auto r = reopen(); !r) return std::move(r).error();
  return true;
}
Journal::~Journal() { sd_journal_close(j_); }

Result<void> Journal::reseek() {
  if (last_cursor_.empty()) return {};
  const std::string c = last_cursor_;
  auto r = seek_after_cursor(c);
  if (!r) return std::move(r).error();
  return {};
}

Result<bool> Journal::seek_after_cursor(const std::string &cursor) {
  last_cursor_ = cursor;
  int r = sd_journal_seek_cursor(j_, cursor.c_str());
  if (r < 0) return errno_error(-r, "sd_journal_seek_cursor('" + printable(cursor) + "')");
  r = sd_journal_next(j_);
  if (r < 0) return errno_error(-r, "sd_journal_next after seeking to the saved cursor");
  if (r == 0) {
    /* Nothing at or after the position: the next entry will come later.
     * sd_journal_next has not moved; stay where the seek put us. */
    return false;
  }
  r = sd_journal_test_cursor(j_, cursor.c_str());
  if (r < 0) return errno_error(-r, "sd_journal_test_cursor");
  if (r > 0) return true;  /* the handled entry itself: next() moves past it */
  /* A later entry: step back so that next() returns it. */
  r = sd_journal_previous(j_);
  if (r < 0) return errno_error(-r, "sd_journal_previous");
  if (r == 0) {
    /* It was the first matching entry; seek before it. */
    r = sd_journal_seek_head(j_);
    if (r < 0) return errno_error(-r, "sd_journal_seek_head");
  }
  return false;
}

Result<void> Journal::seek_boot_start(const std::string &boot_id) {
  start_ = Start::kBoot;
  boot_ = boot_id;
  sd_id128_t id;
  int r = sd_id128_from_string(boot_id.c_str(), &id);
  if (r < 0) return errno_error(-r, "boot id '" + printable(boot_id) + "'");
  r = sd_journal_seek_monotonic_usec(j_, id, 0);
  if (r < 0) return errno_error(-r, "sd_journal_seek_monotonic_usec(" + boot_id + ", 0)");
  return {};
}

Result<void> Journal::seek_tail() {
  int r = sd_journal_seek_tail(j_);
  if (r < 0) return errno_error(-r, "sd_journal_seek_tail");
  /* After seek_tail, sd_journal_next would return the last entry again on
   * some versions; step onto it so next() returns only newer ones. */
  r = sd_journal_previous(j_);
  if (r < 0) return errno_error(-r, "sd_journal_previous");
  /* Reopened, the journal goes on after that entry; with none (no coredump
   * entry yet), from the head, which holds none older. */
  start_ = Start::kHead;
  if (r > 0) {
    char *c = nullptr;
    if (sd_journal_get_cursor(j_, &c) >= 0) {
      last_cursor_ = c;
      free(c);
    }
  }
  return {};
}

Result<void> Journal::seek_head() {
  start_ = Start::kHead;
  int r = sd_journal_seek_head(j_);
  if (r < 0) return errno_error(-r, "sd_journal_seek_head");
  return {};
}

Result<std::optional<std::string>> Journal::newest_cursor() {
  sd_journal_flush_matches(j_);
  std::optional<std::string> out;
  int r = sd_journal_seek_tail(j_);
  if (r >= 0) r = sd_journal_previous(j_);
  if (r > 0) {
    char *c = nullptr;
    r = sd_journal_get_cursor(j_, &c);
    if (r >= 0) {
      out = std::string(c);
      free(c);
    }
  }
  auto m = add_match(j_);
  if (!m) return std::move(m).error();
  if (r < 0) return errno_error(-r, "finding the newest journal entry");
  return out;
}

Result<bool> Journal::next(RawEntry &out, std::string &warning) {
  for (int attempt = 0;; ++attempt) {
    if (auto t = reopen_if_truncated("an earlier read"); !t) return std::move(t).error();
    const std::string before = last_cursor_;
    auto r = next_once(out, warning);
    if (zeroed_pages() == seen_pages_) return r;
    /* What was read may be zeros: read it again from the journal opened
     * anew, after the entry before it. */
    last_cursor_ = before;
    if (attempt == 2)
      return error_of(EIO, "journal files were truncated under every read of the next entry (SIGBUS, 3 times)");
    if (auto t = reopen_if_truncated("the read of an entry"); !t) return std::move(t).error();
  }
}

Result<bool> Journal::next_once(RawEntry &out, std::string &warning) {
  warning.clear();
  int r = sd_journal_next(j_);
  if (r < 0) return errno_error(-r, "sd_journal_next");
  if (r == 0) return false;
  out = RawEntry{};
  char *c = nullptr;
  r = sd_journal_get_cursor(j_, &c);
  if (r < 0) return errno_error(-r, "sd_journal_get_cursor");
  out.cursor = c;
  free(c);
  last_cursor_ = out.cursor;
  r = sd_journal_get_realtime_usec(j_, &out.realtime_usec);
  if (r < 0) out.realtime_usec = 0;

  const void *data;
  size_t len;
  sd_journal_restart_data(j_);
  for (;;) {
    r = sd_journal_enumerate_available_data(j_, &data, &len);
    if (r == 0) break;
    if (r < 0) {
      warning = std::string("cannot read all fields of journal entry (") + strerrordesc_np(-r) + ")";
      break;
    }
    const char *p = static_cast<const char *>(data);
    const void *eq = std::memchr(p, '=', len);
    if (!eq) continue;
    std::string name(p, static_cast<const char *>(eq));
    if (name == "COREDUMP") {
      out.has_core_field = true;
      continue;
    }
    out.fields.emplace_back(std::move(name), std::string(static_cast<const char *>(eq) + 1, p + len));
  }
  return true;
}

Result<void> Journal::with_core_field(const std::function<Result<void>(std::span<const std::uint8_t>)> &fn) {
  int r = sd_journal_set_data_threshold(j_, 0);
  if (r < 0) return errno_error(-r, "sd_journal_set_data_threshold(0)");
  const void *data = nullptr;
  size_t len = 0;
  const std::uint64_t pages = zeroed_pages();
  r = sd_journal_get_data(j_, "COREDUMP", &data, &len);
  Result<void> res;
  if (r < 0) {
    res = errno_error(-r, "reading the COREDUMP= field (sd_journal_get_data)");
  } else if (len < 9) {
    res = error_of(EBADMSG, "the COREDUMP= field is malformed");
  } else {
    res = fn(std::span<const std::uint8_t>(static_cast<const std::uint8_t *>(data) + 9, len - 9));
  }
  /* Back to the normal threshold; this also lets sd-journal drop its
   * buffer of the core at the next read. */
  sd_journal_set_data_threshold(j_, kFieldThreshold);
  /* (The next read opens the journal again.) */
  if (zeroed_pages() != pages)
    return error_of(EIO, "the journal file holding it was truncated while it was read (SIGBUS: pages read as zeros)");
  return res;
}

int Journal::fd() const noexcept { return sd_journal_get_fd(j_); }

short Journal::events() const noexcept {
  int e = sd_journal_get_events(j_);
  return e < 0 ? POLLIN : static_cast<short>(e);
}

int Journal::timeout_ms() const noexcept {
  uint64_t t = 0;
  if (sd_journal_get_timeout(j_, &t) < 0 || t == UINT64_MAX) return -1;
  /* t is an absolute CLOCK_MONOTONIC time in usec. */
  const uint64_t now = monotonic_usec();
  if (t <= now) return 0;
  const uint64_t ms = (t - now + 999) / 1000;
  return ms > 60000 ? 60000 : static_cast<int>(ms);
}

Result<int> Journal::process() {
  auto t = reopen_if_truncated("an earlier read");
  if (!t) return std::move(t).error();
  if (*t) return SD_JOURNAL_INVALIDATE;
  int r = sd_journal_process(j_);
  t = reopen_if_truncated("sd_journal_process");
  if (!t) return std::move(t).error();
  if (*t) return SD_JOURNAL_INVALIDATE;
  if (r < 0) return errno_error(-r, "sd_journal_process");
  return r;
}

}  // namespace core_timeline::daemon
