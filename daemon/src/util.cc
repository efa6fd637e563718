/* SPDX-License-Identifier: MIT */
/* util.cc - see util.h. */
#include "util.h"

#include "core_timeline/reader/printable.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace core_timeline::daemon {

Error error_of(int err, std::string message) {
  const Errc code = err == 0 ? Errc::kBadData
                    : err == EINVAL ? Errc::kInvalidArgument
                    : err == ENOMEM ? Errc::kNoMemory
                    : err == ECANCELED ? Errc::kCancelled
                                       : Errc::kIo;
  return Error{code, std::move(message), err};
}

static std::uint64_t clock_usec(clockid_t id) noexcept {
  struct timespec ts;
  clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

std::uint64_t realtime_usec() noexcept { return clock_usec(CLOCK_REALTIME); }
std::uint64_t monotonic_usec() noexcept { return clock_usec(CLOCK_MONOTONIC); }

Result<void> write_all(int fd, std::string_view data, std::string_view what) {
  const char *p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, std::string("cannot write ") + std::string(what));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

std::string printable(std::string_view s, std::size_t max_len) {
  return core_timeline::reader::printable(s, {.escape_backslash = true, .max_len = max_len});
}

}  // namespace core_timeline::daemon
