/* SPDX-License-Identifier: MIT */
/*
 * io_events.h - what the reader makes of the I/O wrappers' events
 * (libtimeline-io.so; ring_format.h kinds 32-45): each fd tied to the event
 * that made it, and the words for their arguments (open flags, socket
 * domains and types, socket addresses).  Internal to the reader library;
 * analyze.h declares the parts other modules use (io_fd, fd_made,
 * errno_name).
 *
 * Every argument comes from an untrusted slot: any value is accepted and
 * bits or values without a name are shown as numbers.  The constants are
 * Linux's, for the machine the core is of (x86-64's, which are
 * asm-generic's, and AArch64's where its open flags differ:
 * arch/arm64/include/uapi/asm/fcntl.h).
 */
#ifndef CORE_TIMELINE_READER_IO_EVENTS_H
#define CORE_TIMELINE_READER_IO_EVENTS_H

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"

namespace core_timeline::reader {

/** Ties each I/O event's fd (io_fd()) to the latest event before it, in
 *  the same ring (one process), that made or named that fd (fd_made()),
 *  unless a CLOSE of the fd came between them (Event::fd_state,
 *  fd_origin).  A DUP's new fd is tied to the DUP, which is tied to what
 *  made its old fd.  `events` must be in the timeline's merged order; indices
 *  stay valid only as long as that order does.  O(n log n). */
void tie_fds(std::vector<Event> &events);

/** A socket address's prefix (the inline bytes of ACCEPT and CONNECT) as
 *  a person writes it: "127.0.0.1:53422", "[::1]:6379", "unix:/run/x.sock",
 *  "unix:@name" (abstract), "unix:" (unnamed); nullopt for another family
 *  or too few bytes.  A unix path is escaped by printable(). */
std::optional<std::string> sockaddr_text(std::span<const std::uint8_t> b);

/** open(2) flags: "O_RDWR|O_CREAT|O_CLOEXEC", unknown bits as one hex
 *  number at the end ("|0x40000000").  `machine` is the core's e_machine. */
std::string open_flags_text(std::uint32_t flags, std::uint16_t machine);
/** The same without the access mode: "O_CLOEXEC" (dup3's flags), "" for
 *  none. */
std::string open_flag_bits_text(std::uint32_t flags, std::uint16_t machine);

/** socket(2)'s domain ("AF_INET"), else "AF_<n>"; and its type
 *  ("SOCK_STREAM|SOCK_CLOEXEC"), unknown values as numbers. */
std::string socket_domain_text(std::uint32_t domain);
std::string socket_type_text(std::uint32_t type);
/** accept4(2)'s flags: "SOCK_NONBLOCK|SOCK_CLOEXEC", other bits in hex,
 *  "" for none. */
std::string socket_flags_text(std::uint32_t flags);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_IO_EVENTS_H
