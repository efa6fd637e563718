/* SPDX-License-Identifier: MIT */
/* prepared.cc - see prepared.h. */
#include "prepared.h"

namespace core_timeline::daemon {

namespace {

bool same_time(const struct timespec &a, const struct timespec &b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

CoreIdentity CoreIdentity::of(const struct stat &st) noexcept {
  CoreIdentity id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = st.st_size;
  id.mtime = st.st_mtim;
  id.ctime = st.st_ctim;
  return id;
}

std::string CoreIdentity::differs(const CoreIdentity &o) const {
  if (dev != o.dev || ino != o.ino) return "it is another file now (device or inode)";
  if (size != o.size) return "its size changed";
  if (!same_time(mtime, o.mtime)) return "it was modified (mtime)";
  if (!same_time(ctime, o.ctime)) return "its metadata changed (ctime)";
  return "";
}

void PreparedCores::put(std::string name, const CoreIdentity &identity, std::optional<std::string> tlmap,
                        CoreWork work, std::uint64_t now_usec) {
  discard(name);
  Entry e{identity, std::move(tlmap), std::move(work), now_usec, 0};
  e.bytes = e.work.decoded ? e.work.decoded->output_bytes : 0;
  if (e.bytes > kMaxBytes) return;
  while (!cores_.empty() && (cores_.size() >= kMaxCores || bytes_ + e.bytes > kMaxBytes)) drop_oldest();
  bytes_ += e.bytes;
  cores_.emplace(std::move(name), std::move(e));
}

std::optional<CoreWork> PreparedCores::take(std::string_view name, const CoreIdentity &identity,
                                            const std::optional<std::string> &tlmap, std::string *why_not) {
  if (why_not) why_not->clear();
  auto it = cores_.find(name);
  if (it == cores_.end()) return std::nullopt;
  Entry e = std::move(it->second);
  bytes_ -= e.bytes;
  cores_.erase(it);
  std::string why = e.identity.differs(identity);
  if (why.empty() && e.tlmap != tlmap)
    why = "its event names file differs (" + e.tlmap.value_or("none") + " when prepared, " + tlmap.value_or("none") +
          " for the entry's COREDUMP_EXE)";
  if (!why.empty()) {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  }
  return std::move(e.work);
}

void PreparedCores::discard(std::string_view name) {
  if (auto it = cores_.find(name); it != cores_.end()) {
    bytes_ -= it->second.bytes;
    cores_.erase(it);
  }
}

void PreparedCores::expire(std::uint64_t now_usec) {
  for (auto it = cores_.begin(); it != cores_.end();) {
    if (now_usec - it->second.made_usec > kMaxAgeMs * 1000) {
      bytes_ -= it->second.bytes;
      it = cores_.erase(it);
    } else {
      ++it;
    }
  }
}

void PreparedCores::drop_oldest() {
  auto oldest = cores_.begin();
  for (auto it = cores_.begin(); it != cores_.end(); ++it)
    if (it->second.made_usec < oldest->second.made_usec) oldest = it;
  bytes_ -= oldest->second.bytes;
  cores_.erase(oldest);
}

}  // namespace core_timeline::daemon
