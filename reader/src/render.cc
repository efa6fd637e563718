/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/render.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/reader/printable.h"
#include "core_timeline/ring_format.h"
#include "cause_render.h"
#include "io_events.h"
#include "render_parts.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;
namespace key = core_timeline::document::key;
using json = nlohmann::ordered_json;

namespace {

/* Untrusted bytes never reach a terminal raw (printable.h). */
std::string esc(std::string_view s) { return printable(s); }

std::string basename_of(std::string_view p) {
  auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::string spaced_hex(std::span<const std::uint8_t> b) {
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i) s.push_back(' ');
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

/* An event's inline bytes as a string, for the kinds whose inline bytes
 * are one: OPEN's path, USER_PTR's snapshot, THREAD_NAME's name, the
 * payload of READ, WRITE, RECV and SEND (TL_IO_BYTES), and
 * CONNECT's sockaddr when it is AF_UNIX ("unix:PATH", or "unix:@NAME" for
 * an abstract name), each only when payload_text() (printable.h) finds it
 * is text.  Never for bytes that may only look like text: REALLOC's old
 * pointer, CRASH's CrashInfo, a kind this reader does not know. */
struct InlineText {
  /** payload_text()'s, after "unix:" or "unix:@" for CONNECT. */
  std::string text;
  /** kYes: fewer bytes were kept than the event had (a payload below
   *  the call's result, USER_PTR's
   *  inline_len below its len); kMaybe: the bytes fill the 64-byte inline
   *  limit with no NUL after them, so the string may have gone on (OPEN
   *  and CONNECT record at most 64 bytes and not how many there were). */
  enum class Cut { kNo, kMaybe, kYes } cut = Cut::kNo;
};

std::optional<InlineText> inline_text_of(const Event &e, std::span<const std::uint8_t> b) {
  /* kMaybe when `s`, the end of the inline bytes, is all text (no NUL
   * padding after it) and the bytes fill the inline limit. */
  const auto filled = [&](std::span<const std::uint8_t> s, const PayloadText &t) {
    return b.size() >= f::kInlineBytes && t.length == s.size() ? InlineText::Cut::kMaybe : InlineText::Cut::kNo;
  };
  switch (e.kind) {
    case f::kKindOpen:
    case f::kKindThreadName: {
      auto t = payload_text(b);
      if (!t) return std::nullopt;
      return InlineText{std::move(t->text), e.kind == f::kKindOpen ? filled(b, *t) : InlineText::Cut::kNo};
    }
    case f::kKindUserPtr: {
      auto t = payload_text(b);
      if (!t) return std::nullopt;
      return InlineText{std::move(t->text), b.size() < e.arg1 ? InlineText::Cut::kYes : InlineText::Cut::kNo};
    }
    case f::kKindRead:
    case f::kKindWrite:
    case f::kKindRecv:
    case f::kKindSend: {
      /* The payload's first bytes (TL_IO_BYTES); cut when fewer than the
       * call's result. */
      auto t = payload_text(b);
      if (!t) return std::nullopt;
      const std::int64_t r = io_result(e);
      return InlineText{std::move(t->text),
                        r > 0 && b.size() < static_cast<std::uint64_t>(r) ? InlineText::Cut::kYes : InlineText::Cut::kNo};
    }
    case f::kKindConnect: {
      /* struct sockaddr_un: sa_family_t sun_family (AF_UNIX = 1, in the
       * byte order of the machine: little-endian on x86-64 and AArch64),
       * then sun_path; an abstract name starts with a NUL. */
      constexpr std::uint8_t kAfUnix = 1;
      if (b.size() < 3 || b[0] != kAfUnix || b[1] != 0) return std::nullopt;
      const bool abstract = b[2] == 0;
      const std::span<const std::uint8_t> path = b.subspan(abstract ? 3 : 2);
      auto t = payload_text(path);
      if (!t) return std::nullopt;
      return InlineText{(abstract ? "unix:@" : "unix:") + t->text, filled(path, *t)};
    }
    default: return std::nullopt;
  }
}

/* ` NAME="TEXT"`, and after it what was cut: "..." when bytes were left
 * out, "... (64 bytes kept; may be cut)" when they may have been; "" when
 * the bytes are not text. */
std::string text_arg(const std::optional<InlineText> &t, std::string_view name) {
  if (!t) return {};
  std::string s = fmt::format(" {}=\"{}\"", name, t->text);
  if (t->cut == InlineText::Cut::kYes) s += "...";
  if (t->cut == InlineText::Cut::kMaybe) s += fmt::format("... ({} bytes kept; may be cut)", f::kInlineBytes);
  return s;
}

/* text_arg(), or ` HEX_NAME=[2f 65 ...]` for bytes that are not text. */
std::string text_or_hex_arg(const Event &e, std::span<const std::uint8_t> b, std::string_view name,
                            std::string_view hex_name) {
  const auto t = inline_text_of(e, b);
  return t ? text_arg(t, name) : fmt::format(" {}=[{}]", hex_name, spaced_hex(b));
}

std::string location_text(const Location &l) {
  std::string s;
  if (!l.function.empty()) {
    s = fmt::format("{}+{:#x}", esc(l.function), l.function_offset);
    if (!l.source_file.empty()) s += fmt::format(" ({}:{})", esc(basename_of(l.source_file)), l.line);
    s += fmt::format(" in {}", esc(basename_of(l.module)));
  } else if (l.in_module) {
    s = fmt::format("{}+{:#x}", esc(basename_of(l.module)), l.file_offset);
  } else {
    s = fmt::format("{:#x} (in no file mapping)", l.address);
  }
  if (l.verification == Verification::kUnverifiedNoCoreBuildId) s += " [UNVERIFIED: no build-id in core]";
  if (l.mapping_changed) s += " [mappings changed since]";
  return s;
}

std::string mapping_text(const AddressMapping &m) {
  if (m.kind == MappingKind::kUnmapped) return "-> unmapped";
  std::string s = m.kind == MappingKind::kFile ? fmt::format("-> {} {}", esc(m.path), m.perms)
                                   : fmt::format("-> anon {} {:#x}-{:#x}", m.perms, m.start, m.end);
  if (!m.note.empty()) s += fmt::format(" ({})", m.note);
  if (!m.dumped) s += " (not in core)";
  return s;
}

const EventName *names_of(const Analysis &a, const Event &e) {
  if (!e.named) return nullptr;
  auto it = a.names.find(e.id);
  return it == a.names.end() ? nullptr : &it->second;
}

/* "request_id=41 bytes=512" with argument names, "arg=41 arg1=512" without;
 * arg1 is left out when it is 0 and unnamed. */
std::string user_args(const Analysis &a, const Event &e, bool one_arg) {
  const EventName *n = names_of(a, e);
  const std::string a0 = n != nullptr && !n->arg0.empty() ? esc(n->arg0) : "arg";
  std::string s = fmt::format("{}={}", a0, e.arg0);
  if (n != nullptr && !n->arg1.empty() && !one_arg) s += fmt::format(" {}={}", esc(n->arg1), e.arg1);
  else if (e.arg1 != 0 && !one_arg) s += fmt::format(" arg1={}", e.arg1);
  return s;
}

std::string span_note(const Analysis &a, const Event &e) {
  if (!e.span) return {};
  const Span &sp = a.spans[*e.span];
  const bool is_begin = e.kind == f::kKindSpanBegin;
  switch (sp.state) {
    case Span::State::kClosed:
      if (!is_begin && sp.end != std::nullopt && a.events[*sp.end].seq != e.seq) return " (ended again)";
      return sp.duration_ns ? fmt::format(" (lasted {})", format_duration(*sp.duration_ns)) : " (closed)";
    case Span::State::kOpen:
      return sp.open_for_ns ? fmt::format(" (open at the {}: {})",
                                          a.time.reference == TimeBase::Reference::kCrash      ? "crash"
                                          : a.time.reference == TimeBase::Reference::kSnapshot ? "snapshot"
                                                                                               : "newest event",
                                          format_duration(*sp.open_for_ns))
                            : " (open)";
    case Span::State::kOpenOrEndLost: return " (no end found; its end may have been lost)";
    case Span::State::kBeginLost:
      return sp.duration_ns ? fmt::format(" (ended; begin lost, it had begun {} earlier)", format_duration(*sp.duration_ns))
                            : " (ended; begin lost)";
    case Span::State::kNoBegin: return fmt::format(" (not a span of this ring: {})", esc(sp.note));
  }
  return {};
}

/* An I/O result: the number, or the errno's name for -errno ("ENOENT"). */
std::string result_text(std::int64_t r) {
  const int err = result_errno(r);
  return err != 0 ? errno_name(err) : std::to_string(r);
}

/* PREAD, PWRITE and SENDFILE's IoOffset, as far as the inline bytes hold
 * it (ring_format.h). */
std::optional<f::IoOffset> io_offset_of(const Event &e, std::span<const std::uint8_t> b) {
  if (e.kind != f::kKindPread && e.kind != f::kKindPwrite && e.kind != f::kKindSendfile) return std::nullopt;
  const std::size_t need = e.kind == f::kKindSendfile ? f::kSendfileBytes : f::kIoOffsetBytes;
  if (b.size() < need) return std::nullopt;
  f::IoOffset at{};
  std::memcpy(&at, b.data(), need);
  if (e.kind != f::kKindSendfile) at.in_fd = -1;
  return at;
}

/* The address of an ACCEPT's peer or a CONNECT's, as a person writes it. */
std::optional<std::string> peer_of(const Analysis &a, const Event &e) {
  if (e.kind != f::kKindAccept && e.kind != f::kKindConnect) return std::nullopt;
  return sockaddr_text(a.inline_bytes_of(e));
}

/* What the event `o`, which made or named an fd, says of it:
 * "/var/log/app.log", "accepted from 127.0.0.1:53422 at -2.100000s",
 * "connected to [::1]:6379 at -1.000ms", "socket AF_INET SOCK_STREAM at
 * -3.000ms", "duplicate of fd 5 at -1.000ms: /var/log/app.log".  A chain of
 * DUPs is followed a few steps (its events are untrusted: it may be long). */
std::string origin_words(const Analysis &a, const Event &o) {
  const std::string at = o.age_ns ? " at " + format_age(*o.age_ns) : std::string();
  switch (o.kind) {
    case f::kKindOpen:
      if (auto t = inline_text_of(o, a.inline_bytes_of(o)))
        return t->cut == InlineText::Cut::kNo ? t->text : t->text + "...";
      return "opened" + at + ", path not recorded as text";
    case f::kKindAccept: {
      const auto peer = peer_of(a, o);
      return (peer ? "accepted from " + *peer : std::string("accepted")) + at;
    }
    case f::kKindConnect: {
      const auto peer = peer_of(a, o);
      return (peer ? "connected to " + *peer : std::string("connected")) + at;
    }
    case f::kKindSocket:
      return fmt::format("socket {} {}{}", socket_domain_text(o.id), socket_type_text(static_cast<std::uint32_t>(o.arg1)), at);
    case f::kKindDup: {
      std::string s = fmt::format("duplicate of fd {}{}", static_cast<std::int32_t>(o.id), at);
      const Event *x = &o;
      for (int hops = 0; x->kind == f::kKindDup && hops < 8; ++hops) {
        if (x->fd_state != FdOrigin::kFound || x->fd_origin >= a.events.size()) return s + "; its origin not in the window";
        x = &a.events[x->fd_origin];
      }
      return x->kind == f::kKindDup ? s : s + ": " + origin_words(a, *x);
    }
    default: return "origin cannot be told";
  }
}

/* What made the fd an I/O event used, without the fd (origin_words()), or
 * why that cannot be told. */
std::string fd_origin_text(const Analysis &a, const Event &e) {
  if (e.fd_state == FdOrigin::kNotInWindow) return "origin not in the window";
  if (e.fd_origin == kNoIndex || e.fd_origin >= a.events.size()) return "origin cannot be told";
  const Event &o = a.events[e.fd_origin];
  if (e.fd_state == FdOrigin::kClosed)
    return fmt::format("closed{}; what made it again was not recorded", o.age_ns ? " at " + format_age(*o.age_ns) : "");
  return origin_words(a, o);
}

/* "fd=5 (/var/log/app.log)": an I/O event's fd and what made it. */
std::string fd_text(const Analysis &a, const Event &e) {
  const auto fd = io_fd(e);
  if (!fd) return {};
  return fmt::format("fd={} ({})", *fd, fd_origin_text(a, e));
}

/* READ, WRITE, RECV and SEND's payload bytes (TL_IO_BYTES), when kept:
 * ` data="TEXT"` or ` data-bytes=[..]`, then ` (8 of 29 bytes kept)` when
 * they are fewer than the call's result. */
std::string payload_arg(const Event &e, std::span<const std::uint8_t> b) {
  if (b.empty()) return {};
  const auto t = inline_text_of(e, b);
  std::string s = t ? fmt::format(" data=\"{}\"", t->text) : fmt::format(" data-bytes=[{}]", spaced_hex(b));
  const std::int64_t r = io_result(e);
  if (r > 0 && b.size() < static_cast<std::uint64_t>(r)) s += fmt::format(" ({} of {} bytes kept)", b.size(), r);
  return s;
}

/* OPEN's " flags=O_WRONLY|O_CREAT mode=0644", when the ring recorded them. */
std::string open_flags_arg(const Analysis &a, const Event &e) {
  if ((e.arg1 & f::kOpenFlagsRecorded) == 0) return {};
  std::string s = " flags=" + open_flags_text(e.id, a.machine);
  if ((e.id & 0100) != 0 || (e.id & 020000000) != 0) s += fmt::format(" mode={:04o}", e.arg1 & 0xffffffffu);
  return s;
}

/* The I/O kinds' arguments (io_events.h says what each holds). */
std::string io_args_text(const Analysis &a, const Event &e, std::span<const std::uint8_t> inline_bytes) {
  const std::string fd = fd_text(a, e);
  const std::string result = result_text(io_result(e));
  switch (e.kind) {
    case f::kKindOpen:
      return fmt::format("result={}{}{}", result, open_flags_arg(a, e),
                         text_or_hex_arg(e, inline_bytes, "path", "path-bytes"));
    case f::kKindRead:
    case f::kKindWrite:
    case f::kKindRecv:
    case f::kKindSend: return fmt::format("{} result={} count={}{}", fd, result, e.arg1, payload_arg(e, inline_bytes));
    case f::kKindConnect: {
      if (inline_text_of(e, inline_bytes)) return fmt::format("{} result={}{}", fd, result, text_or_hex_arg(e, inline_bytes, "addr", "addr-bytes"));
      if (const auto peer = peer_of(a, e)) return fmt::format("{} result={} addr={}", fd, result, *peer);
      return fmt::format("{} result={}{}", fd, result, text_or_hex_arg(e, inline_bytes, "addr", "addr-bytes"));
    }
    case f::kKindClose: return fmt::format("{} result={}", fd, result);
    case f::kKindAccept: {
      std::string s = fmt::format("{} result={}", fd, result);
      if (const auto peer = peer_of(a, e)) s += " from=" + *peer;
      if (e.arg1 != 0) s += " flags=" + socket_flags_text(static_cast<std::uint32_t>(e.arg1));
      return s;
    }
    case f::kKindPread:
    case f::kKindPwrite:
    case f::kKindSendfile: {
      std::string s = fmt::format("{} result={} count={}", fd, result, e.arg1);
      const auto at = io_offset_of(e, inline_bytes);
      if (at && e.kind == f::kKindSendfile) s += fmt::format(" in_fd={}", at->in_fd);
      if (at) s += at->offset == -1 ? std::string(" offset=(file position)") : fmt::format(" offset={}", at->offset);
      return s;
    }
    case f::kKindSocket:
      return fmt::format("domain={} type={} protocol={} result={}", socket_domain_text(e.id),
                         socket_type_text(static_cast<std::uint32_t>(e.arg1)), e.arg1 >> 32, result);
    case f::kKindFsync: return fmt::format("{} result={}{}", fd, result, e.arg1 == 1 ? " (fdatasync)" : "");
    case f::kKindDup:
      return fmt::format("{} result={}{}", fd, result,
                         e.arg1 != 0 ? " flags=" + open_flag_bits_text(static_cast<std::uint32_t>(e.arg1), a.machine) : "");
  }
  return {};
}

std::string args_text(const Analysis &a, const Event &e) {
  const AddressMapping *pointer = a.pointer_of(e);
  const auto ptr = [&]() { return pointer ? " " + mapping_text(*pointer) : std::string(); };
  const std::span<const std::uint8_t> inline_bytes = a.inline_bytes_of(e);
  switch (e.kind) {
    case f::kKindUser: return user_args(a, e, false);
    case f::kKindSpanBegin: return "begin " + user_args(a, e, true) + span_note(a, e);
    case f::kKindSpanEnd: return "end" + span_note(a, e);
    case f::kKindUserPtr:
      /* A snapshot is memory, not a string the program gave: its bytes
       * always, the string beside them when they are text. */
      return fmt::format("ptr={:#x} len={}/{} bytes=[{}]{}{}", e.arg0, inline_bytes.size(), e.arg1,
                         spaced_hex(inline_bytes), text_arg(inline_text_of(e, inline_bytes), "text"), ptr());
    case f::kKindThreadName: {
      if (auto t = inline_text_of(e, inline_bytes)) return fmt::format("name=\"{}\"", t->text);
      std::string n(inline_bytes.begin(), inline_bytes.end());
      return fmt::format("name=\"{}\"", esc(n.substr(0, n.find('\0'))));
    }
    case f::kKindCrash: {
      const auto &c = *a.crash_of(e);
      std::string s = fmt::format("sig={} code={} addr={:#x} pc={:#x}", c.signal_name, c.si_code_name,
                                  c.fault_address, e.return_address);
      if (c.si_code <= 0) s += fmt::format(" from pid {}", c.sender_pid);
      if (c.handed_outcome == HandedOutcome::kRecovered)
        s += " (handed to the program's handler, which recovered: a handled fault, not the crash)";
      else if (c.handed_outcome == HandedOutcome::kCrash)
        s += " (handed to the program's handler, which did not recover)";
      else if (c.handed)
        s += " (handed to the program's handler: whether it recovered cannot be told)";
      else if (c.chained)
        s += " (after chained handler)";
      return s;
    }
    case f::kKindLaneClaim: return fmt::format("lane={} prev_owner={}", e.arg0, e.arg1);
    case f::kKindMalloc: return fmt::format("ptr={:#x} size={}{}", e.arg0, e.arg1, ptr());
    case f::kKindFree: return fmt::format("ptr={:#x}{}", e.arg0, ptr());
    case f::kKindCalloc: return fmt::format("ptr={:#x} size={}{}", e.arg0, e.arg1, ptr());
    case f::kKindRealloc: {
      std::uint64_t old = 0;
      if (inline_bytes.size() >= 8) std::memcpy(&old, inline_bytes.data(), 8);
      return fmt::format("ptr={:#x} size={} old={:#x}{}", e.arg0, e.arg1, old, ptr());
    }
    default:
      if (e.kind >= f::kKindIoFirst && e.kind <= f::kKindIoLast) return io_args_text(a, e, inline_bytes);
      return fmt::format("id={:#x} arg0={:#x} arg1={:#x} inline=[{}]", e.id, e.arg0, e.arg1,
                         spaced_hex(inline_bytes));
  }
}

std::string ring_summary(const RingReport &r) {
  if (r.state != RingReport::State::kValid)
    return fmt::format("ring {} at {:#x} {}: {}", r.index, r.address, ring_state_name(r.state), r.reason);
  const auto &d = *r.ring;
  std::string lanes;
  std::size_t used = 0;
  for (const auto &l : d.lanes) {
    if (l.committed == 0) continue;
    if (used++ < 8) {
      lanes += fmt::format("{} lane {} seq {}..{}", used > 1 ? "," : "", l.index, l.first_seq, l.last_seq);
      if (d.live && l.in_flight > 0) lanes += fmt::format(" ({} in flight)", l.in_flight);
    }
  }
  if (used > 8) lanes += fmt::format(", and {} more lanes", used - 8);
  if (used == 0) lanes = " no events";
  std::string pools;
  if (!d.header.sources.empty()) {
    for (const auto &src : d.header.sources) pools += fmt::format("{}{}", pools.empty() ? ", pools " : "/", src.pool_slots);
    pools += " slots (user/alloc/io";
    /* Version 5: what each pool lent to other sources' lanes. */
    for (std::size_t c = 0; c < d.header.sources.size(); ++c)
      if (d.header.sources[c].lent != 0)
        pools += fmt::format("; {} lent {} to other sources' lanes", f::source_name(static_cast<std::uint32_t>(c)),
                             d.header.sources[c].lent);
    pools += ")";
  }
  return fmt::format("ring {} at {:#x} ({}, {} lanes x {} slots{}):{}, dropped={} overwritten={} torn={}{}{}{}",
                     r.index, r.address, r.found_by == FoundBy::kSidecar ? "from sidecar" : found_by_name(r.found_by), d.header.lane_count,
                     d.header.slots_per_lane, pools, lanes, d.header.dropped, d.overwritten, d.torn + d.invalid,
                     d.live ? fmt::format(" in_flight={}", d.in_flight) : std::string(),
                     d.counter_inconsistent ? " COUNTER_INCONSISTENT" : "", d.truncated ? " TRUNCATED" : "");
}

json location_json(const Location &l) {
  json j;
  j[key::address] = fmt::format("{:#x}", l.address);
  j[key::module] = l.in_module ? json(l.module) : json(nullptr);
  j[key::build_id] = l.build_id.empty() ? json(nullptr) : json(hex_bytes(l.build_id));
  j[key::file_offset] = l.in_module ? json(fmt::format("{:#x}", l.file_offset)) : json(nullptr);
  j[key::function] = l.function.empty() ? json(nullptr) : json(l.function);
  j[key::offset] = l.function.empty() ? json(nullptr) : json(fmt::format("{:#x}", l.function_offset));
  j[key::source] = l.source_file.empty() ? json(nullptr) : json({{key::file, l.source_file}, {key::line, l.line}});
  j[key::verified] = l.verification == Verification::kVerified;
  j[key::verification] = std::string(verification_name(l.verification));
  j[key::mapping_changed] = l.mapping_changed;
  if (!l.refused_file.empty())
    j[key::refused_file] = {{key::path, l.refused_file},
                            {key::build_id, l.refused_build_id.empty() ? json(nullptr)
                                                                       : json(hex_bytes(l.refused_build_id))}};
  if (!l.note.empty()) j[key::note] = l.note;
  return j;
}

json mapping_json(const AddressMapping &m) {
  json j;
  j[key::kind] = std::string(mapping_kind_name(m.kind));
  j[key::path] = m.kind == MappingKind::kFile ? json(m.path) : json(nullptr);
  j[key::start] = fmt::format("{:#x}", m.start);
  j[key::end] = fmt::format("{:#x}", m.end);
  j[key::perms] = m.perms;
  j[key::dumped] = m.dumped;
  if (!m.note.empty()) j[key::note] = m.note;
  return j;
}

json check_json(const IdentityCheck &c) {
  return json{{key::result, std::string(check_name(c.result))}, {key::detail, c.detail}};
}

json process_json(const Analysis &a) {
  json p;
  p[key::pid] = a.process.pid ? json(*a.process.pid) : json(nullptr);
  p[key::ppid] = a.process.pid ? json(a.process.ppid) : json(nullptr);
  p[key::comm] = a.process.pid ? json(a.process.comm) : json(nullptr);
  p[key::args] = a.process.pid ? json(a.process.args) : json(nullptr);
  p[key::exe] = a.process.exe.empty() ? json(nullptr) : json(a.process.exe);
  p[key::build_id] = a.process.build_id.empty() ? json(nullptr) : json(hex_bytes(a.process.build_id));
  if (!a.process.build_id_note.empty()) p[key::build_id_note] = a.process.build_id_note;
  p[key::threads] = a.process.threads;
  return p;
}

json stack_frames_json(const std::vector<StackFrame> &frames) {
  json out = json::array();
  for (const auto &fr : frames) {
    json j = location_json(fr.location);
    j[key::from] = std::string(frame_from_name(fr.from));
    j[key::signal_frame] = fr.signal_frame;
    out.push_back(std::move(j));
  }
  return out;
}

json crash_stack_json(const CrashStack &s) {
  return {{key::frames, stack_frames_json(s.frames)},
          {key::core_end, s.core_end},
          {key::ring_end, s.ring_end.empty() ? json(nullptr) : json(s.ring_end)},
          {key::agree, s.agree},
          {key::note, s.note.empty() ? json(nullptr) : json(s.note)}};
}

json reraised_json(const ReraisedFault &r) {
  return {{key::signal, r.signo},
          {key::signal_name, r.signal_name},
          {key::si_code, r.si_code},
          {key::si_code_name, r.si_code_name},
          {key::fault_address, r.fault_address ? json(fmt::format("{:#x}", *r.fault_address)) : json(nullptr)},
          {key::sender_pid, r.sender_pid ? json(*r.sender_pid) : json(nullptr)},
          {key::pc, fmt::format("{:#x}", r.pc)},
          {key::sp, fmt::format("{:#x}", r.sp)},
          {key::frame_address, fmt::format("{:#x}", r.frame_address)},
          {key::location, location_json(r.location)},
          {key::handler, r.handler ? location_json(*r.handler) : json(nullptr)},
          {key::raised_with, r.raised_with}};
}

json thread_stack_json(const ThreadStack &t) {
  return {{key::tid, t.tid}, {key::frames, stack_frames_json(t.frames)}, {key::end, t.end.empty() ? json(nullptr) : json(t.end)}};
}

json crash_json(const CrashFacts &c) {
  json cj;
  cj[key::signal] = c.signo != 0 ? json(c.signo) : json(nullptr);
  cj[key::signal_name] = c.signo != 0 ? json(c.signal_name) : json(nullptr);
  if (!c.signal_note.empty()) cj[key::signal_note] = c.signal_note;
  cj[key::si_code] = c.si_code ? json(*c.si_code) : json(nullptr);
  cj[key::si_code_name] = c.si_code ? json(c.si_code_name) : json(nullptr);
  if (!c.si_code_note.empty()) cj[key::si_code_note] = c.si_code_note;
  cj[key::fault_address] = c.fault_address ? json(fmt::format("{:#x}", *c.fault_address)) : json(nullptr);
  cj[key::sender_pid] = c.sender_pid ? json(*c.sender_pid) : json(nullptr);
  cj[key::tid] = c.tid;
  cj[key::pc] = c.has_regs ? json(fmt::format("{:#x}", c.pc)) : json(nullptr);
  cj[key::sp] = c.has_regs ? json(fmt::format("{:#x}", c.sp)) : json(nullptr);
  cj[key::location] = c.location ? location_json(*c.location) : json(nullptr);
  cj[key::ring_slot] = c.ring_slot;
  cj[key::from] = std::string(signal_note_name(c.source));
  cj[key::inside_spans] = c.inside_spans;
  cj[key::stack] = c.stack ? crash_stack_json(*c.stack) : json(nullptr);
  cj[key::reraised] = c.reraised ? reraised_json(*c.reraised) : json(nullptr);
  if (!c.reraised_note.empty()) cj[key::reraised_note] = c.reraised_note;
  return cj;
}

/* A ring's report but its "torn" list (write_ring()). */
json ring_json(const RingReport &r) {
  json rj;
  rj[key::index] = r.index;
  rj[key::state] = std::string(ring_state_name(r.state));
  rj[key::reason] = r.reason.empty() ? json(nullptr) : json(r.reason);
  rj[key::found_by] = std::string(found_by_name(r.found_by));
  rj[key::address] = fmt::format("{:#x}", r.address);
  rj[key::mapping] = r.mapping_name.empty() ? json(nullptr) : json(r.mapping_name);
  rj[key::mapping_size] = r.mapping_size;
  if (r.ring) {
    const auto &d = *r.ring;
    const auto &h = d.header;
    rj[key::identity] = {{key::pid, check_json(r.pid)}, {key::build_id, check_json(r.build_id)},
                      {key::start_time, check_json(r.start_time)}};
    rj[key::header] = {{key::version, h.version},
                    {key::writer_version, fmt::format("{}.{}.{}", h.writer_version >> 16,
                                                   (h.writer_version >> 8) & 0xff, h.writer_version & 0xff)},
                    {key::pid, h.pid},
                    {key::build_id, h.build_id.empty() ? json(nullptr) : json(hex_bytes(h.build_id))},
                    {key::process_start_ticks, h.process_start_ticks},
                    {key::region_size, h.region_size},
                    {key::lane_count, h.lane_count},
                    {key::slots_per_lane, h.slots_per_lane},
                    {key::compat_flags, h.compat_flags},
                    {key::handlers_installed, (h.compat_flags & f::kCompatHandlers) != 0},
                    {key::clock, (h.compat_flags & f::kCompatClockTsc) ? "tsc"
                              : (h.compat_flags & f::kCompatClockCntvct) ? "cntvct" : "unknown"},
                    {key::ticks_per_second, d.ticks_per_second > 0 ? json(d.ticks_per_second) : json(nullptr)},
                    {key::mmap_generation, h.mmap_generation},
                    {key::enabled_sources, h.enabled_sources},
                    {key::names_capacity, h.names_capacity},
                    {key::init_error, h.no_ring ? json(h.init_error) : json(nullptr)},
                    {key::init_error_text, h.no_ring ? json(h.init_error_text) : json(nullptr)}};
    rj[key::names] = d.names.size();
    rj[key::names_rejected] = d.names_rejected;
    rj[key::dropped] = h.dropped;
    rj[key::overwritten] = d.overwritten;
    rj[key::missing] = d.missing;
    rj[key::in_flight] = d.in_flight;
    rj[key::counter_inconsistent] = d.counter_inconsistent;
    rj[key::truncated] = d.truncated;
    rj[key::bytes_present] = d.bytes_present;
    json lanes = json::array();
    for (const auto &l : d.lanes) {
      if (l.committed == 0 && l.write_index == 0 && l.torn == 0 && l.invalid == 0 && !l.counter_inconsistent &&
          l.slots_absent == 0)
        continue; /* never used: left out to keep documents small */
      json lj;
      lj[key::lane] = l.index;
      lj[key::shared] = l.shared;
      lj[key::owner_tid] = l.owner_tid;
      lj[key::owner_name] = l.owner_name;
      lj[key::write_index] = l.write_index;
      lj[key::committed] = l.committed;
      lj[key::first_seq] = l.committed ? json(l.first_seq) : json(nullptr);
      lj[key::last_seq] = l.committed ? json(l.last_seq) : json(nullptr);
      lj[key::overwritten] = l.overwritten;
      lj[key::missing] = l.missing;
      lj[key::torn] = l.torn;
      lj[key::invalid] = l.invalid;
      lj[key::in_flight] = l.in_flight;
      lj[key::slots_absent] = l.slots_absent;
      lj[key::counter_inconsistent] = l.counter_inconsistent;
      lj[key::counter_reason] = l.counter_inconsistent ? json(l.counter_reason) : json(nullptr);
      lanes.push_back(std::move(lj));
    }
    rj[key::lanes] = std::move(lanes);
    /* then "torn": write_ring(), one rejected slot at a time */
  }
  return rj;
}

/* An I/O event's "io" member (docs/timeline-json.md). */
json io_json(const Analysis &a, const Event &e) {
  json j;
  const auto fd = io_fd(e);
  const std::int64_t result = io_result(e);
  const int err = result_errno(result);
  j[key::fd] = fd ? json(*fd) : json(nullptr);
  j[key::result] = result;
  j[key::errno_number] = err != 0 ? json(err) : json(nullptr);
  j[key::errno_name] = err != 0 ? json(errno_name(err)) : json(nullptr);
  if (fd) {
    json o;
    o[key::state] = std::string(fd_origin_name(e.fd_state));
    if (e.fd_origin != kNoIndex && e.fd_origin < a.events.size()) {
      const Event &m = a.events[e.fd_origin];
      o[key::event] = {{key::ring, m.ring}, {key::lane, m.lane}, {key::seq, m.seq},
                       {key::kind, std::string(a.kind_name_of(m))},
                       {key::age_ns, m.age_ns ? json(*m.age_ns) : json(nullptr)}};
    } else {
      o[key::event] = nullptr;
    }
    o[key::says] = fd_origin_text(a, e);
    j[key::origin] = std::move(o);
  } else {
    j[key::origin] = nullptr;
  }
  const auto inline_bytes = a.inline_bytes_of(e);
  if (e.kind == f::kKindOpen && (e.arg1 & f::kOpenFlagsRecorded) != 0) {
    j[key::flags] = open_flags_text(e.id, a.machine);
    j[key::mode] = e.arg1 & 0xffffffffu;
  }
  if (e.kind == f::kKindAccept) j[key::flags] = socket_flags_text(static_cast<std::uint32_t>(e.arg1));
  if (const auto peer = peer_of(a, e)) j[key::peer] = *peer;
  if (const auto at = io_offset_of(e, inline_bytes)) {
    j[key::offset] = at->offset;
    if (e.kind == f::kKindSendfile) j[key::in_fd] = at->in_fd;
  }
  if (e.kind == f::kKindSocket) {
    j[key::domain] = socket_domain_text(e.id);
    j[key::type] = socket_type_text(static_cast<std::uint32_t>(e.arg1));
    j[key::protocol] = e.arg1 >> 32;
  }
  if (e.kind == f::kKindFsync) j[key::call] = e.arg1 == 1 ? "fdatasync" : "fsync";
  if (e.kind == f::kKindDup) j[key::flags] = e.arg1 == 0 ? std::string() : open_flag_bits_text(static_cast<std::uint32_t>(e.arg1), a.machine);
  return j;
}

json event_json(const Analysis &a, const Event &e) {
  json ej;
  ej[key::ring] = e.ring;
  ej[key::lane] = e.lane;
  ej[key::seq] = e.seq;
  ej[key::tid] = e.tid;
  ej[key::thread] = e.thread == 0 ? json(nullptr) : json(a.thread_of(e));
  ej[key::tid_in_core] = e.tid_in_core;
  ej[key::kind] = a.kind_name_of(e);
  ej[key::name] = a.name_of(e);
  ej[key::named] = e.named;
  ej[key::name_from] = e.name_from == NameFrom::kNone ? json(nullptr) : json(name_from_name(e.name_from));
  if (const auto n = a.arg_names_of(e))
    ej[key::arg_names] = {(*n)[0].empty() ? json(nullptr) : json((*n)[0]), (*n)[1].empty() ? json(nullptr) : json((*n)[1])};
  else
    ej[key::arg_names] = nullptr;
  ej[key::id] = e.id;
  ej[key::args] = {e.arg0, e.arg1};
  ej[key::timestamp] = e.timestamp;
  ej[key::time_ns] = e.realtime_ns ? json(*e.realtime_ns) : json(nullptr);
  ej[key::age_ns] = e.age_ns ? json(*e.age_ns) : json(nullptr);
  ej[key::span] = e.span ? json(*e.span) : json(nullptr);
  ej[key::return_address] = fmt::format("{:#x}", e.return_address);
  const Location *location = a.location_of(e);
  const AddressMapping *pointer = a.pointer_of(e);
  ej[key::location] = location ? location_json(*location) : json(nullptr);
  if (e.stack != StackState::kNone) {
    json frames = json::array();
    for (const std::uint32_t l : a.frames_of(e)) frames.push_back(location_json(a.locations[l]));
    ej[key::stack] = {{key::frames, std::move(frames)}, {key::end, stack_state_name(e.stack)}};
  }
  ej[key::inline_bytes] = e.inline_len == 0 ? json(nullptr) : json(hex_bytes(a.inline_bytes_of(e)));
  if (auto t = inline_text_of(e, a.inline_bytes_of(e))) {
    ej[key::inline_text] = std::move(t->text);
    ej[key::inline_cut] = t->cut != InlineText::Cut::kNo;
  }
  ej[key::pointer] = pointer ? mapping_json(*pointer) : json(nullptr);
  if (const CrashSlot *crash = a.crash_of(e)) {
    const auto &c = *crash;
    ej[key::crash] = {{key::signal, c.signo},           {key::signal_name, c.signal_name},
                   {key::si_code, c.si_code},        {key::si_code_name, c.si_code_name},
                   {key::si_errno, c.si_errno},      {key::si_pid, c.sender_pid},
                   {key::fault_address, fmt::format("{:#x}", c.fault_address)},
                   {key::sp, fmt::format("{:#x}", c.sp)},
                   {key::chained, c.chained},        {key::repeated, c.repeated},
                   {key::handed, c.handed},
                   {key::handed_outcome, std::string(handed_outcome_name(c.handed_outcome))},
                   {key::handed_note, c.handed_note}};
  } else {
    ej[key::crash] = nullptr;
  }
  ej[key::source] = std::string(origin_name(e.source));
  if (e.kind >= f::kKindIoFirst && e.kind <= f::kKindIoLast) ej[key::io] = io_json(a, e);
  return ej;
}

}  // namespace

std::optional<std::string> event_inline_text(const Analysis &a, const Event &e) {
  auto t = inline_text_of(e, a.inline_bytes_of(e));
  if (!t) return std::nullopt;
  return std::move(t->text);
}

std::string format_duration(std::int64_t ns) {
  const std::uint64_t u = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  if (u < 1'000'000'000) return fmt::format("{}.{:03}ms", u / 1'000'000, (u / 1'000) % 1'000);
  return fmt::format("{}.{:06}s", u / 1'000'000'000, (u / 1'000) % 1'000'000);
}

std::string format_age(std::int64_t ns) {
  if (ns == 0) return "0.000ms";
  return (ns < 0 ? "-" : "+") + format_duration(ns);
}

std::string_view source_title(std::uint32_t source) noexcept {
  switch (source) {
    case f::kSourceUser: return "user marks and spans";
    case f::kSourceAlloc: return "allocations";
    case f::kSourceIo: return "I/O";
  }
  return "?";
}

namespace {

/* Why a source's window cannot be told, or "" when it can. */
std::string window_unknown(const SourceWindow &w) {
  if (w.dropped > 0) return fmt::format("{} dropped at unknown times", w.dropped);
  if (w.complete_for_ns || w.complete_since_init) return {};
  return fmt::format("{} overwritten, from when cannot be told", w.overwritten);
}

/* "58.204s", or why the length cannot be told. */
std::string since_init(const SourceWindow &w) {
  return w.complete_for_ns ? format_duration(*w.complete_for_ns) : "how long ago cannot be told: no clock rate";
}

}  // namespace

std::string window_text(const SourceWindow &w) {
  std::string s = fmt::format("{}: ", source_title(w.source));
  if (w.recorder_loaded && !*w.recorder_loaded && w.events == 0)
    return s + "not recorded (its wrapper library was not loaded)";
  const std::string unknown = window_unknown(w);
  if (!unknown.empty()) {
    s += "not complete: " + unknown;
  } else if (w.complete_since_init) {
    s += w.complete_for_ns ? fmt::format("complete since tl_init, {} before the reference", since_init(w))
                           : fmt::format("complete since tl_init ({})", since_init(w));
  } else {
    s += fmt::format("complete for the last {}; not known before {} ({} overwritten)", format_duration(*w.complete_for_ns),
                     format_age(-*w.complete_for_ns), w.overwritten);
  }
  s += fmt::format("; {} kept", w.events);
  if (w.oldest_age_ns && w.events > 0) s += fmt::format(", oldest {}", format_age(*w.oldest_age_ns));
  if (w.torn > 0) s += fmt::format("; {} torn or invalid slots inside", w.torn);
  if (!w.losses_by_source && w.overwritten > 0) s += " (a version-1 or -2 ring: lanes mix sources, so any lane's losses count)";
  if (!w.enabled) s += "; recording was off at the end (tl_set_enabled)";
  return s;
}

std::string absence_text(const SourceWindow &w) {
  const std::string title(source_title(w.source));
  const std::string unknown = window_unknown(w);
  if (!unknown.empty()) return fmt::format("{}: not complete ({})", title, unknown);
  if (w.complete_since_init) return fmt::format("{} are complete since tl_init ({})", title, since_init(w));
  return fmt::format("{} before {} are not known; complete for the last {}", title, format_age(-*w.complete_for_ns),
                     format_duration(*w.complete_for_ns));
}

namespace {

/* journalctl -o short-precise: "Dec 01 14:59:51.123456", local time. */
std::string wall_text(std::int64_t ns) {
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  if (localtime_r(&secs, &tm) == nullptr) return "?";
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%b %d %H:%M:%S", &tm) == 0) return "?";
  return fmt::format("{}.{:06}", buf, (ns % 1'000'000'000) / 1'000);
}

std::string time_line(const Analysis &a) {
  const TimeBase &t = a.time;
  if (t.reference == TimeBase::Reference::kNone) return {};
  const std::string ref = t.reference == TimeBase::Reference::kCrash      ? "the CRASH event"
                          : t.reference == TimeBase::Reference::kSnapshot ? "the snapshot"
                                                                          : "the newest event";
  if (t.ticks_per_second <= 0)
    return fmt::format("  time: cannot be told: {}; events are in order, with no ages\n", esc(t.note));
  std::string s = fmt::format("  time: ages relative to {}; slot clock {:.3f} GHz from the {}", ref,
                              t.ticks_per_second / 1e9,
                              t.rate_from == SlotClock::Rate::kHeader          ? "ring header"
                              : t.rate_from == SlotClock::Rate::kInitAndCrash ? "tl_init and crash anchors"
                              : t.rate_from == SlotClock::Rate::kInitAndSnapshot ? "tl_init and snapshot anchors"
                                                                               : "tl_init and helper-thread anchors");
  s += t.rate_error ? fmt::format(" (error at most {:.3f}%)", *t.rate_error * 100) : " (error not bounded)";
  if (!t.note.empty()) s += fmt::format("; {}", esc(t.note));
  return s + "\n";
}

/* Spans a chain shows at each end: one line stays short however deep the
 * nesting (the JSON's threads[].open_spans and crash.inside_spans list
 * them all). */
constexpr std::size_t kChainEnds = 4;

std::string span_chain(const Analysis &a, const std::vector<std::uint32_t> &spans) {
  std::string s;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    if (spans.size() > 2 * kChainEnds && k == kChainEnds) {
      const std::size_t more = spans.size() - 2 * kChainEnds;
      s += fmt::format(" > ... {} more span{} ...", more, more == 1 ? "" : "s");
      k = spans.size() - kChainEnds - 1;
      continue;
    }
    const Span &sp = a.spans[spans[k]];
    const Event &b = a.events[*sp.begin];
    std::string one = esc(a.name_of(b));
    if (const EventName *n = names_of(a, b); n != nullptr && !n->arg0.empty())
      one += fmt::format(" {}={}", esc(n->arg0), sp.arg);
    else if (sp.arg != 0)
      one += fmt::format(" arg={}", sp.arg);
    if (sp.state == Span::State::kOpenOrEndLost) one += " (no end found; its end may have been lost)";
    else if (sp.open_for_ns) one += fmt::format(" (open {})", format_duration(*sp.open_for_ns));
    s += (s.empty() ? "" : " > ") + one;
  }
  return s;
}

std::string open_spans_text(const Analysis &a) {
  if (a.spans.empty()) return {};
  const bool crash = a.time.reference == TimeBase::Reference::kCrash;
  const bool snapshot = a.time.reference == TimeBase::Reference::kSnapshot;
  std::string out = fmt::format("open spans at the {}:", crash ? "crash" : snapshot ? "snapshot" : "newest event");
  std::size_t lines = 0;
  for (const auto &t : a.threads) {
    if (t.open_spans.empty()) continue;
    out += fmt::format("\n  tid {:<7} {:<15} {}{}", t.tid, t.name.empty() ? std::string("-") : esc(t.name),
                       span_chain(a, t.open_spans), t.crashed ? "  <- crashed inside" : "");
    lines++;
  }
  if (lines == 0) out += " none";
  return out + "\n";
}

std::string_view stack_end_text(StackState s) {
  switch (s) {
    case StackState::kComplete: return "complete";
    case StackState::kDepthLimit: return "depth limit reached";
    case StackState::kNoUnwindInfo: return "ended: no unwind information for the next frame";
    case StackState::kBadFrame: return "ended at a bad frame";
    case StackState::kLost: return "its frames were in the next slot, which is gone";
    case StackState::kMalformed: return "malformed stack byte, frames not shown";
    case StackState::kCut: return "cut: the walk went on in STACK slots the ring no longer holds";
    case StackState::kNone: break;
  }
  return "none";
}

/* A stack's frames, one line each, numbered, with where each came from. */
std::string stack_frame_lines(const std::vector<StackFrame> &frames, std::size_t indent, bool sources) {
  std::string out;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const StackFrame &fr = frames[i];
    out += fmt::format("{:{}}  #{:<2} {}{}{}\n", "", indent, i, location_text(fr.location),
                       fr.signal_frame ? "  (signal frame)" : "",
                       sources ? fmt::format("  [{}]", frame_from_name(fr.from)) : std::string());
  }
  return out;
}

std::string crash_stack_text(const CrashStack &s, std::size_t indent) {
  std::size_t ring = 0, core = 0;
  for (const auto &fr : s.frames) {
    if (fr.from == FrameFrom::kRing) ++ring;
    if (fr.from == FrameFrom::kCore) ++core;
  }
  std::string out = stack_frame_lines(s.frames, indent, true);
  out += fmt::format("{:{}}  (crash stack: {} frame{}; {} in both the CRASH walk and the core's unwind, {} from the "
                     "core's unwind only, {} from the CRASH walk only; core unwind {}{})\n",
                     "", indent, s.frames.size(), s.frames.size() == 1 ? "" : "s", s.agree, core, ring,
                     s.core_end.empty() ? "complete" : esc(s.core_end),
                     s.ring_end.empty() ? std::string() : fmt::format("; CRASH walk {}", s.ring_end));
  if (!s.note.empty()) out += fmt::format("{:{}}  ({})\n", "", indent, esc(s.note));
  return out;
}

/* "the program's own handler (in F, OBJECT) caught SIGSEGV (SEGV_ACCERR)
 * at addr=... pc=... in FUNC2 and re-raised it with kill()"; when the
 * CRASH event recorded that fault (ReraisedFault::recorded): "libtimeline's
 * crash handler (in F, OBJECT) caught ..., recorded it (the CRASH event),
 * and the program's own handler it called re-raised it with kill()". */
std::string reraised_text(const ReraisedFault &r) {
  const auto where = [](const Location &l) {
    if (!l.function.empty()) return fmt::format("{}, {}", esc(l.function), esc(basename_of(l.module)));
    return location_text(l);
  };
  std::string s = r.recorded ? "libtimeline's crash handler" : "the program's own handler";
  if (r.handler) s += fmt::format(" (in {})", where(*r.handler));
  s += fmt::format(" caught {} ({})", r.signal_name, r.si_code_name);
  if (r.fault_address) s += fmt::format(" at addr={:#x}", *r.fault_address);
  if (r.sender_pid) s += fmt::format(" sent by pid {}", *r.sender_pid);
  s += fmt::format(" pc={:#x} in {}", r.pc, r.location.function.empty() ? location_text(r.location) : where(r.location));
  s += r.recorded ? fmt::format(", recorded it (the CRASH event), and the program's own handler it called re-raised "
                                "it with {}", r.raised_with)
                  : fmt::format(" and re-raised it with {}", r.raised_with);
  return s;
}

/* `s` after `out`, padded with spaces to `width` on the left (right
 * aligned) or on the right: fmt's "{:>N}" and "{:<N}" of printable ASCII,
 * which is all esc() and the numbers give (one column a byte). */
void padded(std::string &out, std::string_view s, std::size_t width, bool right_aligned) {
  const std::size_t fill = s.size() < width ? width - s.size() : 0;
  if (right_aligned) out.append(fill, ' ');
  out += s;
  if (!right_aligned) out.append(fill, ' ');
}

std::string event_line(const Analysis &a, const Event &e, const TextOptions &o) {
  std::string when;
  if (o.wall_clock) when = e.realtime_ns ? wall_text(*e.realtime_ns) : "?";
  else when = e.age_ns ? format_age(*e.age_ns) : "?";
  /* "{:>12} tid {:<7} {:<15} {:<16} {}", without fmt's width count. */
  std::string line;
  line.reserve(128);
  padded(line, when, o.wall_clock ? 22 : 12, true);
  line += " tid ";
  padded(line, fmt::format_int(e.tid).str(), 7, false);
  line += ' ';
  padded(line, e.thread == 0 ? std::string("-") : esc(a.thread_of(e)), 15, false);
  line += ' ';
  padded(line, esc(a.name_of(e)), 16, false);
  line += ' ';
  line += args_text(a, e);
  if (const Location *l = a.location_of(e); l && (e.return_address != 0 || e.kind == f::kKindCrash))
    line += "  at " + location_text(*l);
  if (e.source != Origin::kCore) line += fmt::format("  [from {}]", origin_name(e.source));
  if (a.rings.size() > 1) line += fmt::format("  [ring {}]", e.ring);
  line += "\n";
  const bool crash_stack = e.kind == f::kKindCrash && a.crash && a.crash->stack && a.crash->tid == e.tid;
  if (crash_stack) {
    /* The crashing thread's whole stack: this walk and the core's unwind. */
    line += crash_stack_text(*a.crash->stack, (o.wall_clock ? 22 : 12) + 1);
  } else if (e.stack != StackState::kNone) {
    /* The stack under its event: the callers beyond "at", innermost first. */
    const std::size_t indent = (o.wall_clock ? 22 : 12) + 1;
    for (const std::uint32_t l : a.frames_of(e))
      line += fmt::format("{:{}}  from {}\n", "", indent, location_text(a.locations[l]));
    line += fmt::format("{:{}}  (stack: {} frame{}, {})\n", "", indent, e.stack_depth, e.stack_depth == 1 ? "" : "s",
                        stack_end_text(e.stack));
  }
  return line;
}

}  // namespace

std::string format_wall_clock(std::int64_t ns) { return wall_text(ns); }

namespace {


/* The events of each thread in a.threads' order, each thread's in merged
 * order: one pass to count, one to place (--by-thread). */
std::vector<std::size_t> by_thread_order(const Analysis &a) {
  std::map<std::uint32_t, std::size_t> thread_at;  /* tid -> index in a.threads */
  for (std::size_t t = 0; t < a.threads.size(); ++t) thread_at.emplace(a.threads[t].tid, t);
  std::vector<std::size_t> start(a.threads.size() + 1, 0);
  std::vector<std::size_t> of(a.events.size(), a.threads.size());  /* event -> thread index */
  for (std::size_t i = 0; i < a.events.size(); ++i)
    if (auto it = thread_at.find(a.events[i].tid); it != thread_at.end()) {
      of[i] = it->second;
      start[it->second + 1]++;
    }
  for (std::size_t t = 0; t < a.threads.size(); ++t) start[t + 1] += start[t];
  std::vector<std::size_t> order(start.back());
  for (std::size_t i = 0; i < a.events.size(); ++i)
    if (of[i] < a.threads.size()) order[start[of[i]]++] = i;
  return order;
}

}  // namespace

bool write_text(const Analysis &a, const Output &output, const TextOptions &o) {
  Buffered out(output);
  if (a.status != Status::kOk && a.events.empty()) {
    out += fmt::format("core-timeline: {}\n", esc(a.reason));
  } else {
    std::string who = a.process.pid ? fmt::format("pid {} ({})", *a.process.pid, esc(a.process.comm))
                                    : std::string("pid unknown");
    /* A process in a pid namespace of its own: the core's pid is that
     * namespace's, the snapshot's the one it was asked for (live.cc). */
    if (a.snapshot && a.process.pid && a.snapshot->pid != *a.process.pid)
      who += fmt::format(" (pid {} where the snapshot was taken: the process is in a pid namespace of its own)",
                         a.snapshot->pid);
    if (a.snapshot)
      out += fmt::format("core-timeline: live snapshot of {}, taken at {} (the copy took {}), {} events\n", who,
                         wall_text(a.snapshot->realtime_ns), format_duration(a.snapshot->duration_ns),
                         a.events.size());
    else
      out += fmt::format("core-timeline: {}, {}, {} events\n", timeline_source_name(a.source), who, a.events.size());
    out += time_line(a);
    for (const auto &w : a.windows)
      if (w.events > 0 || w.lost || w.source == f::kSourceUser) out += "  window: " + esc(window_text(w)) + "\n";
    for (const auto &r : a.rings) out += "  " + esc(ring_summary(r)) + "\n";
    out += open_spans_text(a);
    if (!o.by_thread) {
      for (const auto &e : a.events) {
        out += event_line(a, e, o);
        if (!out.ok()) return false;
      }
    } else {
      const std::vector<std::size_t> order = by_thread_order(a);
      std::size_t next = 0;
      for (const auto &t : a.threads) {
        out += fmt::format("thread {} ({}): {} events\n", t.tid, t.name.empty() ? std::string("-") : esc(t.name),
                           t.events);
        for (; next < order.size() && a.events[order[next]].tid == t.tid; ++next) {
          out += event_line(a, a.events[order[next]], o);
          if (!out.ok()) return false;
        }
      }
    }
  }
  if (a.crash) {
    const auto &c = *a.crash;
    std::string s = c.signo == 0 ? std::string("crash: no signal recorded")
                                 : fmt::format("crash: {} ({})", c.signal_name,
                                               c.si_code ? c.si_code_name : "si_code unknown: no NT_SIGINFO");
    if (c.fault_address) s += fmt::format(" addr={:#x}", *c.fault_address);
    if (c.sender_pid) s += fmt::format(" sent by pid {}", *c.sender_pid);
    s += fmt::format(" in tid {}", c.tid);
    if (c.has_regs) s += fmt::format(" pc={:#x}", c.pc);
    if (c.location) s += " at " + location_text(*c.location);
    if (a.status == Status::kOk || !a.events.empty())
      s += c.ring_slot ? "; CRASH slot present in the ring" : "; no CRASH slot in the ring";
    if (!c.inside_spans.empty()) s += "; inside " + span_chain(a, c.inside_spans);
    out += s + "\n";
    if (c.reraised) out += "  re-raised: " + reraised_text(*c.reraised) + "\n";
    if (!c.reraised_note.empty()) out += "  " + esc(c.reraised_note) + "\n";
    /* Without a CRASH event of its thread, the stack goes under this line. */
    bool shown = false;
    for (const auto &e : a.events) shown = shown || (e.kind == f::kKindCrash && e.tid == c.tid);
    if (c.stack && !shown) {
      out += fmt::format("crash stack of tid {}:\n", c.tid);
      out += crash_stack_text(*c.stack, 0);
    }
  }
  out += detail::cause_text(a); /* cause_render.cc */
  if (a.group) out += group_text(*a.group);
  for (const auto &t : a.thread_stacks) {
    out += fmt::format("stack of tid {} (from the core's unwind):\n", t.tid);
    out += stack_frame_lines(t.frames, 0, false);
    out += fmt::format("  ({} frame{}, {})\n", t.frames.size(), t.frames.size() == 1 ? "" : "s",
                       t.end.empty() ? "complete" : esc(t.end));
  }
  for (const auto &w : a.warnings) out += "warning: " + esc(w) + "\n";
  return out.flush();
}

Output file_output(std::FILE *f) {
  return [f](std::string_view piece) {
    if (std::fwrite(piece.data(), 1, piece.size(), f) == piece.size()) return true;
    if (errno == 0) errno = EIO;
    return false;
  };
}

std::string render_text(const Analysis &a, const TextOptions &o) {
  std::string s;
  s.reserve(4096 + a.events.size() * 160);  // some 160 bytes an event line
  write_text(a, [&](std::string_view piece) { s.append(piece); return true; }, o);
  return s;
}

namespace {

json span_end_json(const Analysis &a, std::optional<std::size_t> i) {
  if (!i) return nullptr;
  const Event &e = a.events[*i];
  return {{key::ring, e.ring}, {key::lane, e.lane}, {key::seq, e.seq}, {key::tid, e.tid},
          {key::age_ns, e.age_ns ? json(*e.age_ns) : json(nullptr)}};
}

json time_json(const Analysis &a) {
  const TimeBase &t = a.time;
  json j;
  j[key::reference] = t.reference == TimeBase::Reference::kNone ? json(nullptr) : json(reference_name(t.reference));
  j[key::reference_event] = t.reference_event ? span_end_json(a, t.reference_event) : json(nullptr);
  j[key::ticks_per_second] = t.ticks_per_second > 0 ? json(t.ticks_per_second) : json(nullptr);
  j[key::rate_from] = t.rate_from == SlotClock::Rate::kUnknown ? json(nullptr) : json(rate_source_name(t.rate_from));
  j[key::rate_error] = t.rate_error && t.ticks_per_second > 0 ? json(*t.rate_error) : json(nullptr);
  json offers = json::array();
  for (const auto &o : t.rate_offers) {
    json against = json::array();
    for (const auto r : o.disagrees_with) against.push_back(rate_source_name(r));
    offers.push_back({{key::from, rate_source_name(o.from)},
                      {key::ticks_per_second, o.ticks_per_second},
                      {key::rate_error, o.error ? json(*o.error) : json(nullptr)},
                      {key::disagrees_with, std::move(against)}});
  }
  j[key::rate_offers] = std::move(offers);
  j[key::wall_clock] = t.wall_clock;
  j[key::note] = t.note.empty() ? json(nullptr) : json(t.note);
  return j;
}

json span_json(const Analysis &a, const Span &sp) {
  json j;
  j[key::token] = fmt::format("{:#x}", sp.token);
  j[key::state] = std::string(span_state_name(sp.state));
  j[key::id] = sp.id_known ? json(sp.id) : json(nullptr);
  /* A journal entry's cut copy may hold neither (compact.h). */
  const Event *any = sp.begin ? &a.events[*sp.begin] : sp.end ? &a.events[*sp.end] : nullptr;
  j[key::name] = sp.id_known && any ? json(a.name_of(*any)) : json(nullptr);
  j[key::arg] = sp.begin ? json(sp.arg) : json(nullptr);
  j[key::tid] = sp.tid;
  j[key::begin] = span_end_json(a, sp.begin);
  j[key::end] = span_end_json(a, sp.end);
  j[key::duration_ns] = sp.duration_ns ? json(*sp.duration_ns) : json(nullptr);
  j[key::open_for_ns] = sp.open_for_ns ? json(*sp.open_for_ns) : json(nullptr);
  j[key::parent] = sp.parent ? json(*sp.parent) : json(nullptr);
  j[key::depth] = sp.depth;
  j[key::extra_ends] = sp.extra_ends;
  j[key::note] = sp.note.empty() ? json(nullptr) : json(sp.note);
  return j;
}

json thread_json(const ThreadSummary &t) {
  return {{key::tid, t.tid}, {key::name, t.name.empty() ? json(nullptr) : json(t.name)},
          {key::events, t.events}, {key::crashed, t.crashed}, {key::open_spans, t.open_spans}};
}

}  // namespace

namespace {

/* A JSON document written as it is made, byte for byte as nlohmann's
 * dump(2) of the whole value would write it: each member or element of a
 * container on a line of its own, indented by 2 per level, a ',' ending
 * every line but a container's last, ": " after a key, and an empty
 * container as {} or [].  Small values (one event, one ring's header) are
 * built with nlohmann, dumped, and indented to the depth they are at. */
class JsonStream {
 public:
  explicit JsonStream(Buffered &out) : out_(out) {}
  void begin_object() { open('{', true); }
  void begin_array() { open('[', false); }
  void end() {
    const Level l = stack_.back();
    stack_.pop_back();
    if (l.count > 0) newline();
    out_ += l.object ? '}' : ']';
  }
  /* The next value or container is this member's. */
  void key(std::string_view k) {
    next();
    out_ += json(k).dump();
    out_ += ": ";
    after_key_ = true;
  }
  void value(const json &v) {
    next();
    const std::string d = v.dump(2, ' ', false, json::error_handler_t::replace);
    std::size_t from = 0;
    for (std::size_t nl; (nl = d.find('\n', from)) != std::string::npos; from = nl + 1) {
      out_ += std::string_view(d).substr(from, nl - from);
      newline();
    }
    out_ += std::string_view(d).substr(from);
  }
  void member(std::string_view k, const json &v) {
    key(k);
    value(v);
  }
  /* False once the output said stop: the rest need not be made. */
  bool ok() const { return out_.ok(); }

 private:
  struct Level {
    bool object;
    std::size_t count;
  };
  void open(char c, bool object) {
    next();
    out_ += c;
    stack_.push_back({object, 0});
  }
  /* Before a value, a container or a key: the separator and the line of
   * the next member or element (a member's value follows its key). */
  void next() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (stack_.empty()) return;
    if (stack_.back().count++ > 0) out_ += ',';
    newline();
  }
  void newline() {
    out_ += '\n';
    for (std::size_t i = 0; i < stack_.size(); ++i) out_ += "  ";
  }

  Buffered &out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

/* A ring's report; its rejected slots (up to one per slot) one by one. */
void write_ring(JsonStream &w, const RingReport &r) {
  const json rj = ring_json(r);
  w.begin_object();
  for (const auto &[k, v] : rj.items()) w.member(k, v);
  if (r.ring) {
    w.key(key::torn);
    w.begin_array();
    for (const auto &t : r.ring->rejected)
      w.value({{key::lane, t.lane}, {key::slot, t.slot}, {key::seq, t.seq},
               {key::kind, t.torn ? "torn" : "invalid"}, {key::reason, t.reason}});
    w.end();
  }
  w.end();
}

void write_document(const Analysis &a, JsonStream &w) {
  w.begin_object();
  w.member(key::schema_version, kJsonSchemaVersion);
  w.member(key::status, std::string(status_name(a.status)));
  w.member(key::exit_code, exit_code(a.status));
  w.member(key::reason, a.status == Status::kOk ? json(nullptr) : json(a.reason));
  w.member(key::source, a.source == TimelineSource::kNone ? json(nullptr) : json(timeline_source_name(a.source)));
  w.member(key::core, parts::core(a));
  w.member(key::process, process_json(a));
  w.member(key::snapshot, parts::snapshot(a));
  {
    /* The members the exports read (crash_document()). */
    const json crash = crash_document(a);
    w.member(key::crash, crash[key::crash]);
    w.member(key::thread_stacks, crash[key::thread_stacks]);
  }
  w.member(key::cause, detail::cause_json(a)); /* cause_render.cc */
  w.member(core_timeline::document::group_key::group, group_json(a));
  w.key(key::rings);
  w.begin_array();
  for (const auto &r : a.rings) write_ring(w, r);
  w.end();
  w.key(key::events);
  w.begin_array();
  for (const auto &e : a.events) {
    w.value(event_json(a, e));
    if (!w.ok()) return;
  }
  w.end();
  w.member(key::time, time_json(a));
  w.key(key::spans);
  w.begin_array();
  for (const auto &sp : a.spans) w.value(span_json(a, sp));
  w.end();
  w.key(key::threads);
  w.begin_array();
  for (const auto &t : a.threads) w.value(thread_json(t));
  w.end();
  w.member(key::windows, parts::windows(a));
  w.member(key::names, parts::names(a));
  w.member(key::magic_rejected, parts::magic_rejected(a));
  w.member(key::sidecar, parts::sidecar(a));
  w.member(key::absence_proves_nothing, a.absence_proves_nothing);
  w.member(key::warnings, a.warnings);
  w.end();
}

}  // namespace

bool write_json(const Analysis &a, const Output &output) {
  Buffered out(output);
  JsonStream w(out);
  write_document(a, w);
  out += '\n';
  return out.flush();
}

std::string render_json(const Analysis &a) {
  std::string s;
  write_json(a, [&](std::string_view piece) { s.append(piece); return true; });
  return s;
}

json to_json(const Analysis &a) { return json::parse(render_json(a)); }

json crash_document(const Analysis &a) {
  json thread_stacks = json::array();
  for (const auto &t : a.thread_stacks) thread_stacks.push_back(thread_stack_json(t));
  return {{key::crash, a.crash ? crash_json(*a.crash) : json(nullptr)}, {key::thread_stacks, std::move(thread_stacks)}};
}

}  // namespace core_timeline::reader

namespace core_timeline::reader::parts {

json location(const Location &l) { return location_json(l); }
json mapping(const AddressMapping &m) { return mapping_json(m); }
json process(const Analysis &a) { return process_json(a); }
json event(const Analysis &a, const Event &e) { return event_json(a, e); }
json time(const Analysis &a) { return time_json(a); }
json span(const Analysis &a, const Span &sp) { return span_json(a, sp); }
json thread(const ThreadSummary &t) { return thread_json(t); }

json ring(const RingReport &r) {
  json rj = ring_json(r);
  if (r.ring) {
    json torn = json::array();
    for (const auto &t : r.ring->rejected)
      torn.push_back({{key::lane, t.lane}, {key::slot, t.slot}, {key::seq, t.seq},
                      {key::kind, t.torn ? "torn" : "invalid"}, {key::reason, t.reason}});
    rj[key::torn] = std::move(torn);
  }
  return rj;
}

json core(const Analysis &a) {
  return {{key::path, a.core_path}, {key::size, a.core_size}, {key::truncated, a.core_truncated},
          {key::machine, a.machine}};
}

json snapshot(const Analysis &a) {
  if (!a.snapshot) return nullptr;
  return {{key::pid, a.snapshot->pid},
          {key::realtime_ns, a.snapshot->realtime_ns},
          {key::monotonic_ns, a.snapshot->monotonic_ns},
          {key::ticks, a.snapshot->ticks != 0 ? json(a.snapshot->ticks) : json(nullptr)},
          {key::duration_ns, a.snapshot->duration_ns},
          {key::lanes_retried, a.snapshot->lanes_retried}};
}

json windows(const Analysis &a) {
  json windows = json::array();
  for (const auto &x : a.windows) {
    const auto opt = [](const std::optional<std::int64_t> &v) { return v ? json(*v) : json(nullptr); };
    windows.push_back({{key::source, f::source_name(x.source)},
                       {key::events, x.events},
                       {key::overwritten, x.overwritten},
                       {key::dropped, x.dropped},
                       {key::torn, x.torn},
                       {key::losses_by_source, x.losses_by_source},
                       {key::oldest_age_ns, opt(x.oldest_age_ns)},
                       {key::complete_for_ns, opt(x.complete_for_ns)},
                       {key::complete_since_init, x.complete_since_init},
                       {key::recorder_loaded, x.recorder_loaded ? json(*x.recorder_loaded) : json(nullptr)},
                       {key::enabled, x.enabled},
                       {key::says, window_text(x)}});
  }
  return windows;
}

json names(const Analysis &a) {
  json names = json::array();
  for (const auto &[id, n] : a.names)
    names.push_back({{key::id, id}, {key::name, n.name},
                     {key::arg_names, {n.arg0.empty() ? json(nullptr) : json(n.arg0), n.arg1.empty() ? json(nullptr) : json(n.arg1)}},
                     {key::name_from, std::string(name_from_name(n.from))}});
  return names;
}

json magic_rejected(const Analysis &a) {
  json mr = json::array();
  for (const auto &m : a.magic_rejected) mr.push_back({{key::address, fmt::format("{:#x}", m.address)}, {key::reason, m.reason}});
  return {{key::total, a.magic_rejected_total}, {key::first, std::move(mr)}};
}

json sidecar(const Analysis &a) {
  return a.sidecar_path ? json{{key::path, *a.sidecar_path},
                               {key::status, sidecar_status_name(a.sidecar_status)},
                               {key::detail, a.sidecar_detail}}
                        : json(nullptr);
}

}  // namespace core_timeline::reader::parts
