/* SPDX-License-Identifier: MIT */
/* core_watch.cc - see core_watch.h. */
#include "core_watch.h"

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <utility>

#include <spdlog/spdlog.h>

namespace core_timeline::daemon {

CoreWatch::CoreWatch(std::string dir) : dir_(std::move(dir)) { retry(); }

void CoreWatch::retry() {
  if (fd_.valid()) return;
  Fd fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd.valid()) {
    spdlog::debug("inotify_init1: {}; new cores are seen at journald's pace", strerrordesc_np(errno));
    return;
  }
  /* IN_CREATE: systemd-coredump links its O_TMPFILE in; IN_MOVED_TO: it
   * renames a ".#core..." temporary where O_TMPFILE is not supported.
   * IN_DELETE_SELF, IN_MOVE_SELF: the directory is gone from its path, so
   * the path is watched again (retry()).  IN_ONLYDIR: never a watch on a
   * file put in the directory's place. */
  if (inotify_add_watch(fd.get(), dir_.c_str(),
                        IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0) {
    spdlog::debug("cannot watch {}: {}; new cores are seen at journald's pace", dir_, strerrordesc_np(errno));
    return;
  }
  fd_ = std::move(fd);
}

void CoreWatch::read_events(std::uint64_t now_usec) {
  if (!fd_.valid()) return;
  alignas(struct inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* EAGAIN: all read */
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(struct inotify_event)) <= n;) {
      const auto *ev = reinterpret_cast<const struct inotify_event *>(buf + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        /* The directory went away: watch again when it is back. */
        fd_.reset();
        return;
      }
      if (ev->mask & IN_Q_OVERFLOW) continue; /* entries still come; just later */
      if (ev->len == 0 || (ev->mask & IN_ISDIR)) continue;
      const std::string_view name(ev->name);  /* NUL-padded within len */
      /* Only systemd-coredump's cores ("core.COMM.UID.BOOT.PID.USEC[.zst]",
       * coredump.c make_filename) get an entry.  The timelines this daemon
       * writes next to them ("core....timeline.json", by default into this
       * very directory) and its hidden fallback temporaries never do: each
       * would be expected, and the journal read every 5 ms, for 5 s after
       * every crash. */
      if (!name.starts_with("core.") || name.ends_with(".timeline.json")) continue;
      if (expected_.size() >= kMaxExpected) {
        auto oldest = expected_.begin();
        for (auto it = expected_.begin(); it != expected_.end(); ++it)
          if (it->second < oldest->second) oldest = it;
        expected_.erase(oldest);
      }
      expected_.insert_or_assign(std::string(name), now_usec);
      if (new_.size() >= kMaxExpected) new_.erase(new_.begin());
      new_.emplace_back(name);
    }
  }
}

std::vector<std::string> CoreWatch::take_new() { return std::exchange(new_, {}); }

std::optional<std::uint64_t> CoreWatch::handled(std::string_view name) {
  auto it = expected_.find(name);
  if (it == expected_.end()) return std::nullopt;
  const std::uint64_t since = it->second;
  expected_.erase(it);
  return since;
}

std::optional<std::uint64_t> CoreWatch::oldest_expected() const {
  std::optional<std::uint64_t> oldest;
  for (const auto &[name, since] : expected_)
    if (!oldest || since < *oldest) oldest = since;
  return oldest;
}

int CoreWatch::timeout_ms(std::uint64_t now_usec) {
  std::erase_if(expected_, [&](const auto &kv) { return now_usec - kv.second > kEagerMaxMs * 1000; });
  return expected_.empty() ? -1 : kEagerPollMs;
}

}  // namespace core_timeline::daemon
