/* SPDX-License-Identifier: MIT */
#include "io_events.h"

#include <arpa/inet.h>
#include <elf.h>

#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/reader/printable.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

std::optional<std::int32_t> io_fd(const Event &e) noexcept {
  switch (e.kind) {
    case f::kKindRead:
    case f::kKindWrite:
    case f::kKindConnect:
    case f::kKindClose:
    case f::kKindAccept:
    case f::kKindRecv:
    case f::kKindSend:
    case f::kKindPread:
    case f::kKindPwrite:
    case f::kKindSendfile:
    case f::kKindFsync:
    case f::kKindDup: return static_cast<std::int32_t>(e.id);
    default: return std::nullopt;
  }
}

int result_errno(std::int64_t result) noexcept {
  return result < 0 && result >= -4095 ? static_cast<int>(-result) : 0;
}

std::optional<std::int32_t> fd_made(const Event &e) noexcept {
  const std::int64_t r = io_result(e);
  switch (e.kind) {
    case f::kKindOpen:
    case f::kKindAccept:
    case f::kKindSocket:
    case f::kKindDup:
      if (r >= 0 && r <= INT32_MAX) return static_cast<std::int32_t>(r);
      return std::nullopt;
    case f::kKindConnect:
      /* A non-blocking connect returns EINPROGRESS and goes on. */
      if (r == 0 || result_errno(r) == EINPROGRESS) return static_cast<std::int32_t>(e.id);
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::string errno_name(int e) {
  if (const char *n = e > 0 ? strerrorname_np(e) : nullptr) return n;
  return fmt::format("errno {}", e);
}

std::string_view fd_origin_name(FdOrigin o) noexcept {
  switch (o) {
    case FdOrigin::kFound: return "found";
    case FdOrigin::kNotInWindow: return "not_in_window";
    case FdOrigin::kClosed: return "closed";
    case FdOrigin::kNone: break;
  }
  return "none";
}

void tie_fds(std::vector<Event> &events) {
  /* (ring, fd) -> the latest event that made, named or closed it. */
  std::map<std::pair<std::uint32_t, std::int32_t>, std::uint32_t> latest;
  for (std::size_t i = 0; i < events.size() && i < kNoIndex; ++i) {
    Event &e = events[i];
    if (const auto fd = io_fd(e)) {
      const auto it = latest.find({e.ring, *fd});
      if (it == latest.end()) {
        e.fd_state = FdOrigin::kNotInWindow;
      } else {
        e.fd_origin = it->second;
        e.fd_state = events[it->second].kind == f::kKindClose ? FdOrigin::kClosed : FdOrigin::kFound;
      }
    }
    const auto index = static_cast<std::uint32_t>(i);
    if (const auto made = fd_made(e)) latest[{e.ring, *made}] = index;
    /* close(2) releases the fd whatever it returns, but EBADF: there was
     * none. */
    if (e.kind == f::kKindClose && result_errno(io_result(e)) != EBADF)
      latest[{e.ring, static_cast<std::int32_t>(e.id)}] = index;
  }
}

std::optional<std::string> sockaddr_text(std::span<const std::uint8_t> b) {
  /* sa_family_t is host order (little-endian here, ring_format.h); ports
   * and addresses are network order (ip(7), ipv6(7), unix(7)). */
  if (b.size() < 2) return std::nullopt;
  const unsigned family = b[0] | b[1] << 8;
  if (family == AF_INET && b.size() >= 8) {
    char host[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, b.data() + 4, host, sizeof host) == nullptr) return std::nullopt;
    return fmt::format("{}:{}", host, b[2] << 8 | b[3]);
  }
  if (family == AF_INET6 && b.size() >= 24) {
    char host[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, b.data() + 8, host, sizeof host) == nullptr) return std::nullopt;
    return fmt::format("[{}]:{}", host, b[2] << 8 | b[3]);
  }
  if (family == AF_UNIX) {
    if (b.size() == 2) return std::string("unix:");
    const bool abstract = b[2] == 0;
    std::span<const std::uint8_t> path = b.subspan(abstract ? 3 : 2);
    if (!abstract) {
      const auto *nul = static_cast<const std::uint8_t *>(std::memchr(path.data(), 0, path.size()));
      if (nul != nullptr) path = path.first(static_cast<std::size_t>(nul - path.data()));
    }
    const std::string_view s(reinterpret_cast<const char *>(path.data()), path.size());
    return (abstract ? "unix:@" : "unix:") + printable(s);
  }
  return std::nullopt;
}

namespace {

struct Bit {
  std::uint32_t value;
  const char *name;
};

/* Bits are taken in table order; a name whose bits are all set takes them. */
std::string bits_text(std::uint32_t v, std::span<const Bit> table) {
  std::string s;
  for (const Bit &b : table) {
    if ((v & b.value) != b.value) continue;
    s += (s.empty() ? "" : "|") + std::string(b.name);
    v &= ~b.value;
  }
  if (v != 0) s += fmt::format("{}{:#x}", s.empty() ? "" : "|", v);
  return s;
}

}  // namespace

std::string open_flags_text(std::uint32_t flags, std::uint16_t machine) {
  const std::uint32_t mode = flags & 03;
  std::string s = mode == 0 ? "O_RDONLY" : mode == 1 ? "O_WRONLY" : mode == 2 ? "O_RDWR" : "O_ACCMODE";
  const std::string rest = open_flag_bits_text(flags & ~std::uint32_t{03}, machine);
  return rest.empty() ? s : s + "|" + rest;
}

std::string open_flag_bits_text(std::uint32_t flags, std::uint16_t machine) {
  const bool arm = machine == EM_AARCH64;
  const std::uint32_t directory = arm ? 040000 : 0200000, nofollow = arm ? 0100000 : 0400000,
                      direct = arm ? 0200000 : 040000, largefile = arm ? 0400000 : 0100000;
  const Bit table[] = {
      {020000000 | directory, "O_TMPFILE"}, {04000000 | 010000, "O_SYNC"}, {0100, "O_CREAT"},
      {0200, "O_EXCL"}, {0400, "O_NOCTTY"}, {01000, "O_TRUNC"}, {02000, "O_APPEND"}, {04000, "O_NONBLOCK"},
      {010000, "O_DSYNC"}, {020000, "O_ASYNC"}, {direct, "O_DIRECT"}, {largefile, "O_LARGEFILE"},
      {directory, "O_DIRECTORY"}, {nofollow, "O_NOFOLLOW"}, {01000000, "O_NOATIME"}, {02000000, "O_CLOEXEC"},
      {010000000, "O_PATH"},
  };
  return bits_text(flags, table);
}

std::string socket_domain_text(std::uint32_t domain) {
  switch (domain) {
    case AF_UNIX: return "AF_UNIX";
    case AF_INET: return "AF_INET";
    case AF_INET6: return "AF_INET6";
    case AF_NETLINK: return "AF_NETLINK";
    case AF_PACKET: return "AF_PACKET";
  }
  return fmt::format("AF_{}", domain);
}

std::string socket_type_text(std::uint32_t type) {
  const std::uint32_t base = type & 0xf;
  const char *names[] = {nullptr, "SOCK_STREAM", "SOCK_DGRAM", "SOCK_RAW", "SOCK_RDM", "SOCK_SEQPACKET", "SOCK_DCCP"};
  std::string s = base < std::size(names) && names[base] != nullptr ? names[base]
                  : base == 10                                        ? "SOCK_PACKET"
                                                                      : std::to_string(base);
  const std::string rest = socket_flags_text(type & ~std::uint32_t{0xf});
  return rest.empty() ? s : s + "|" + rest;
}

std::string socket_flags_text(std::uint32_t flags) {
  const Bit table[] = {{04000, "SOCK_NONBLOCK"}, {02000000, "SOCK_CLOEXEC"}};
  return bits_text(flags, table);
}

}  // namespace core_timeline::reader
