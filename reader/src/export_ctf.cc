/* SPDX-License-Identifier: MIT */
/*
 * export_ctf.cc - the CTF 1.8 writer (export.h).
 *
 * CTF 1.8.3 (https://diamon.org/ctf/v1.8.3/): a trace is a directory with
 * a `metadata` file, the TSDL text that describes every binary field, and
 * stream files of packets.  Here:
 *  - every integer is byte-aligned little-endian, so no field needs
 *    padding, and each stream file is exactly its packets;
 *  - one stream per thread (`stream_TID`), all of stream class 0, each of
 *    two packets: an empty first one (events_discarded 0) and one holding
 *    the thread's events, whose events_discarded is what the thread's lanes
 *    lost (overwritten, torn, missing).  babeltrace2 reports the difference
 *    of two packets' counters as "discarded events" between them, so the
 *    loss shows where it is: before the thread's kept events;
 *  - packet header: magic 0xC1FC1FC1, the trace uuid, stream_id;
 *    packet context: timestamp_begin, timestamp_end, content_size,
 *    packet_size (bits), packet_seq_num, events_discarded, tid,
 *    thread_name; event header: id (uint32) and a 64-bit timestamp;
 *  - one event class per distinct (kind, name, argument names, inline
 *    text, span, signal, stack, ...), its fields the arguments (named as
 *    the name table names them, else arg0/arg1), then text, span_state,
 *    the signal's fields for CRASH, and the stack's;
 *  - the crashing thread's CRASH carries the crash's whole stack (the
 *    document's crash.stack, each frame's origin in stack_from) and the
 *    re-raised fault; without one, finish() writes a CRASH from the core's
 *    notes at the time reference, then the cause section's CAUSE events
 *    (when there is one; env.cause_* too), and a THREAD_STACK per other
 *    thread unwound from the core;
 *  - the clock: 1 GHz, time 0 the oldest placed event, offset_s/offset the
 *    wall clock of time 0 when known.
 *
 * The packet headers are written with placeholders and patched (pwrite)
 * by finish(), once the last timestamp and the size are known; the
 * metadata is written last, when every event class is known.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <optional>
#include <cstring>
#include <dirent.h>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core_timeline/reader/export.h"
#include "core_timeline/reader/printable.h"

namespace core_timeline::reader {

namespace {

constexpr std::uint32_t kMagic = 0xC1FC1FC1u;
constexpr std::size_t kHeaderBytes = 24;          /* magic, uuid, stream_id */
constexpr std::size_t kContextFixedBytes = 52;    /* 6 x u64, tid */
constexpr std::size_t kStreamBuffer = 16 * 1024;
constexpr std::size_t kMaxFrames = 65535;         /* stack_depth is uint16_t */

/* A TSDL identifier: [A-Za-z0-9_], not starting with a digit, not a
 * keyword (a trailing '_' then: babeltrace2 strips a leading one). */
std::string identifier(std::string_view s) {
  std::string id;
  for (unsigned char c : s) id += std::isalnum(c) ? static_cast<char>(c) : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])) || id[0] == '_') id = "f" + id;
  static const char *const kKeywords[] = {"align",  "callsite", "const",    "char",    "clock",  "double",
                                          "enum",   "env",      "event",    "floating_point", "float",
                                          "integer", "int",     "long",     "short",   "signed", "stream",
                                          "string", "struct",   "trace",    "typealias", "typedef",
                                          "unsigned", "variant", "void",    "_Bool",   "_Complex",
                                          "_Imaginary", "id", "timestamp"};
  for (const char *k : kKeywords)
    if (id == k) return id + "_";
  return id;
}

/* A TSDL string literal's contents: printable ASCII but '"' and '\', the
 * other bytes as octal escapes of exactly three digits.  Not \xHH: a hex
 * escape takes every hex digit after it (C99 6.4.4.4, which TSDL's
 * literals follow), so "\xa9" + "1" would be read as one byte 0xa91. */
std::string literal(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\{:03o}", c);
  }
  return out;
}

void put_u16(std::string &b, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u32(std::string &b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string &b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
}
/* A CTF string: the bytes up to the first NUL, then a NUL. */
void put_string(std::string &b, std::string_view s) {
  b.append(s.substr(0, s.find('\0')));
  b += '\0';
}

struct EventClass {
  std::uint32_t id = 0;
  std::string name;
  std::string arg0, arg1;        /* field identifiers */
  bool text = false, span = false, signal = false;
  bool stack = false;  /* ring format 4: stack_end, stack_depth, then the
                          frames' addresses and names, innermost first */
  bool from = false;   /* stack_from[stack_depth]: a crash stack's or a
                          thread stack's frames, where each came from */
  bool crash_stack = false;  /* core_end, stack_agree, stack_note */
  bool reraised = false;     /* the re-raised fault's fields */
  bool placed = false;       /* placed: a crash from the core's notes */
  bool cause = false;        /* kind, says, relies_on: a CAUSE event */
};

/* What an event carries beyond its ExportEvent: the crashing thread's
 * CRASH carries the whole crash stack and the re-raised fault; the crash
 * from the core's notes and the thread stacks are made by finish(). */
struct Extra {
  const std::vector<ExportFrame> *frames = nullptr;  /* in place of e.stack */
  bool from = false;
  const ExportCrash *crash = nullptr;                /* its stack's and
                                                        re-raised fault's */
  std::string_view placed;                           /* "" : none */
  const ExportCauseClaim *cause = nullptr;           /* a CAUSE event's */
};

class CtfWriter final : public ExportWriter {
 public:
  CtfWriter(ExportTimeline t, std::string dir, int dirfd)
      : t_(std::move(t)), dir_(std::move(dir)), dirfd_(dirfd), tracks_(tracks_by_tid(t_)) {
    std::random_device rd;
    for (auto &b : uuid_) b = static_cast<std::uint8_t>(rd());
  }
  ~CtfWriter() override {
    for (auto &[tid, s] : streams_)
      if (s.fd >= 0) ::close(s.fd);
    if (dirfd_ >= 0) ::close(dirfd_);
  }

  Result<void> event(const ExportEvent &e) override {
    if (error_) return *error_;
    ++seen_;
    if (!e.age_ns) {
      ++unplaced_;
      return {};
    }
    std::int64_t ts_signed = *e.age_ns - t_.origin_age_ns;
    if (ts_signed < 0) ts_signed = 0; /* an age older than the origin given: not from a scan of these events */
    Extra x;
    if (e.signal && t_.crash && e.tid == t_.crash->tid) {
      /* The crashing thread's CRASH: the whole crash stack in place of its
       * own walk, and the re-raised fault. */
      crash_written_ = true;
      x.crash = &*t_.crash;
      if (t_.crash->stack) {
        x.frames = &t_.crash->stack->frames;
        x.from = true;
      }
    }
    CT_TRY_VOID(write_event(e, static_cast<std::uint64_t>(ts_signed), x));
    ++written_;
    return {};
  }

  Result<void> finish() override {
    if (error_) return *error_;
    CT_TRY_VOID(write_crash_events());
    for (auto &[tid, st] : streams_) {
      if (!flush(st)) return *error_;
      if (!patch(tid, st)) return *error_;
      if (::close(st.fd) != 0) return fail(errno, fmt::format("closing {}/stream_{}", dir_, tid));
      st.fd = -1;
    }
    const std::string m = metadata();
    const int fd = ::openat(dirfd_, "metadata", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, fmt::format("creating {}/metadata", dir_));
    const bool ok = write_all(fd, m, 0);
    const int err = errno;
    if (::close(fd) != 0 || !ok) return fail(ok ? errno : err, fmt::format("writing {}/metadata", dir_));
    return {};
  }

 private:
  /* After the last event, at the time reference (age 0) on the thread's
   * stream: the crash from the core's notes when the crashing thread wrote
   * no CRASH event (as the chrome-trace export places it), with the whole
   * crash stack and the re-raised fault; and each other thread's stack
   * unwound from the core (THREAD_STACK). */
  Result<void> write_crash_events() {
    std::int64_t ref = -t_.origin_age_ns;
    if (ref < 0) ref = 0;
    if (!crash_written_ && t_.crash) {
      const ExportCrash &c = *t_.crash;
      ExportEvent e;
      e.tid = c.tid;
      e.kind = "CRASH";
      e.name = "CRASH";
      e.signal = ExportSignal{c.signo, c.signal_name, c.si_code.value_or(0), c.si_code_name,
                              c.fault_address.value_or(0)};
      Extra x;
      x.crash = &c;
      if (c.stack) {
        x.frames = &c.stack->frames;
        x.from = true;
        e.stack_end = c.stack->ring_end.empty() ? std::string_view("none") : std::string_view(c.stack->ring_end);
      }
      /* As the chrome-trace export says it. */
      const std::string placed = std::string(c.ring_slot ? "the ring's CRASH event cannot be placed in time"
                                                         : "not in the ring") +
                                 ": from the core's notes, placed at the time reference (" +
                                 (t_.reference.empty() ? std::string("none") : t_.reference) + ")";
      x.placed = placed;
      CT_TRY_VOID(write_event(e, static_cast<std::uint64_t>(ref), x));
      ++crash_events_;
    }
    if (t_.cause) CT_TRY_VOID(write_cause_events(static_cast<std::uint64_t>(ref)));
    for (const ExportThreadStack &ts : t_.thread_stacks) {
      ExportEvent e;
      e.tid = ts.tid;
      e.kind = "THREAD_STACK";
      e.name = "THREAD_STACK";
      e.stack_end = ts.end.empty() ? std::string_view("complete") : std::string_view(ts.end);
      Extra x;
      x.frames = &ts.frames;
      x.from = true;
      CT_TRY_VOID(write_event(e, static_cast<std::uint64_t>(ref), x));
      ++crash_events_;
    }
    return {};
  }

  /* The cause section (docs/cause.md) at the time reference on the
   * crashing thread's stream, after its CRASH: one CAUSE event per claim
   * (kind, says, relies_on) and then one per cannot_tell line (kind
   * "cannot_tell"), each with line (its index among them) and lines (how
   * many), its strings escaped as the text escapes them (printable()). */
  Result<void> write_cause_events(std::uint64_t ref) {
    const ExportCause &c = *t_.cause;
    std::vector<ExportCauseClaim> lines;
    for (const ExportCauseClaim &x : c.causes)
      lines.push_back({printable(x.kind), printable(x.says), printable(x.window)});
    for (const std::string &t : c.cannot_tell) lines.push_back({"cannot_tell", printable(t), ""});
    for (std::size_t i = 0; i < lines.size(); ++i) {
      ExportEvent e;
      e.tid = t_.crash ? t_.crash->tid : 0;
      e.kind = "CAUSE";
      e.name = "CAUSE";
      e.args = {{{"line", i}, {"lines", lines.size()}}};
      Extra x;
      x.cause = &lines[i];
      CT_TRY_VOID(write_event(e, ref, x));
    }
    return {};
  }

  /* One event at `ts` ns on its thread's stream (raised to the stream's
   * last time if earlier), of its class. */
  Result<void> write_event(const ExportEvent &e, std::uint64_t ts, const Extra &x) {
    auto s = stream(e.tid);
    if (!s) return *error_;
    Stream &st = **s;
    if (st.events > 0 && ts < st.last_ts) {
      /* A stream's clock may not go back; the merged order may (a
       * timestamp earlier than its lane predecessor's sorts after it:
       * docs/timeline-json.md, "Event order"). */
      ts = st.last_ts;
      ++raised_;
    }
    if (st.events == 0) st.first_ts = ts;
    st.last_ts = ts;
    ++st.events;
    const EventClass &c = event_class(e, x);
    std::string &b = st.buf;
    put_u32(b, c.id);
    put_u64(b, ts);
    put_u64(b, e.args[0].value);
    put_u64(b, e.args[1].value);
    if (c.text) put_string(b, e.text ? *e.text : std::string_view());
    if (c.span) {
      const bool known = e.span && *e.span < t_.spans.size();
      put_string(b, known ? std::string_view(t_.spans[*e.span].state) : std::string_view("unknown"));
    }
    if (c.signal) {
      put_u32(b, static_cast<std::uint32_t>(e.signal->signo));
      put_string(b, e.signal->signal_name);
      put_u32(b, static_cast<std::uint32_t>(e.signal->si_code));
      put_string(b, e.signal->si_code_name);
      put_u64(b, e.signal->fault_address);
    }
    if (c.stack) {
      const std::vector<ExportFrame> &frames = x.frames ? *x.frames : e.stack;
      put_string(b, e.stack_end ? *e.stack_end : std::string_view("none"));
      const std::size_t n = std::min<std::size_t>(frames.size(), kMaxFrames);
      put_u16(b, static_cast<std::uint16_t>(n));
      for (std::size_t i = 0; i < n; ++i) put_u64(b, frames[i].address);
      for (std::size_t i = 0; i < n; ++i) put_string(b, frames[i].name);
      if (c.from)
        for (std::size_t i = 0; i < n; ++i)
          put_string(b, frames[i].signal_frame ? frames[i].from + " signal_frame" : frames[i].from);
    }
    if (c.crash_stack) {
      const ExportCrashStack &cs = *x.crash->stack;
      put_string(b, cs.core_end.empty() ? std::string_view("complete") : std::string_view(cs.core_end));
      put_u64(b, cs.agree);
      put_string(b, cs.note);
    }
    if (c.reraised) {
      const ExportReraised &r = *x.crash->reraised;
      put_string(b, reraised_line(r));
      put_u32(b, static_cast<std::uint32_t>(r.signo));
      put_string(b, r.signal_name);
      put_u32(b, static_cast<std::uint32_t>(r.si_code));
      put_string(b, r.si_code_name);
      put_u64(b, r.fault_address.value_or(0));
      put_u64(b, r.pc);
      put_string(b, r.at);
      put_string(b, r.handler);
      put_string(b, r.raised_with);
    }
    if (c.placed) put_string(b, x.placed);
    if (c.cause) {
      put_string(b, x.cause->kind);
      put_string(b, x.cause->says);
      put_string(b, x.cause->window);
    }
    if (b.size() >= kStreamBuffer && !flush(st)) return *error_;
    return {};
  }

  struct Stream {
    int fd = -1;
    std::string buf;
    std::uint64_t offset = 0;      /* bytes written to the file */
    std::uint64_t events = 0, first_ts = 0, last_ts = 0;
    std::string name;
    std::uint64_t discarded = 0;
    std::size_t packet0 = 0;       /* size of the first packet */
  };

  Error fail(int err, const std::string &what) {
    error_ = system_error(err ? err : EIO, what);
    return *error_;
  }

  static bool write_all(int fd, std::string_view b, std::uint64_t offset) {
    while (!b.empty()) {
      const ssize_t n = ::pwrite(fd, b.data(), b.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      b.remove_prefix(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  bool flush(Stream &st) {
    if (st.buf.empty()) return true;
    if (!write_all(st.fd, st.buf, st.offset)) {
      fail(errno, fmt::format("writing a stream of {}", dir_));
      return false;
    }
    st.offset += st.buf.size();
    st.buf.clear();
    return true;
  }

  /* A packet's header and context, timestamps and sizes to be patched. */
  void packet_head(std::string &b, const Stream &st, std::uint32_t tid, std::uint64_t seq, std::uint64_t discarded) {
    put_u32(b, kMagic);
    b.append(reinterpret_cast<const char *>(uuid_.data()), uuid_.size());
    put_u32(b, 0);           /* stream_id */
    put_u64(b, 0);           /* timestamp_begin */
    put_u64(b, 0);           /* timestamp_end */
    put_u64(b, 0);           /* content_size */
    put_u64(b, 0);           /* packet_size */
    put_u64(b, seq);         /* packet_seq_num */
    put_u64(b, discarded);   /* events_discarded */
    put_u32(b, tid);
    put_string(b, st.name);
  }

  Result<Stream *> stream(std::uint32_t tid) {
    auto it = streams_.find(tid);
    if (it != streams_.end()) return &it->second;
    Stream st;
    const auto found = tracks_.find(tid);
    const ExportTrack *tr = found == tracks_.end() ? nullptr : found->second;
    st.name = tr && !tr->name.empty() ? tr->name : fmt::format("tid {}", tid);
    st.discarded = tr ? tr->lost() : 0;
    const std::string file = fmt::format("stream_{}", tid);
    st.fd = ::openat(dirfd_, file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (st.fd < 0) return fail(errno, fmt::format("creating {}/{}", dir_, file));
    st.buf.reserve(kStreamBuffer + 512);
    packet_head(st.buf, st, tid, 0, 0);
    st.packet0 = st.buf.size();
    packet_head(st.buf, st, tid, 1, st.discarded);
    return &streams_.emplace(tid, std::move(st)).first->second;
  }

  /* Timestamps and sizes of both packets, now that they are known. */
  bool patch(std::uint32_t tid, const Stream &st) {
    const auto put = [&](std::uint64_t at, std::uint64_t v) {
      std::string b;
      put_u64(b, v);
      return write_all(st.fd, b, at);
    };
    const std::uint64_t p0 = st.packet0, total = st.offset;
    const bool ok = put(kHeaderBytes, st.first_ts) && put(kHeaderBytes + 8, st.first_ts) &&
                    put(kHeaderBytes + 16, p0 * 8) && put(kHeaderBytes + 24, p0 * 8) &&
                    put(p0 + kHeaderBytes, st.first_ts) && put(p0 + kHeaderBytes + 8, st.last_ts) &&
                    put(p0 + kHeaderBytes + 16, (total - p0) * 8) && put(p0 + kHeaderBytes + 24, (total - p0) * 8);
    if (!ok) fail(errno, fmt::format("writing {}/stream_{}", dir_, tid));
    return ok;
  }

  const EventClass &event_class(const ExportEvent &e, const Extra &x) {
    const bool span = e.kind == "SPAN_BEGIN" || e.kind == "SPAN_END";
    const bool crash_stack = x.crash && x.crash->stack, reraised = x.crash && x.crash->reraised;
    const bool stack = e.stack_end.has_value() || x.frames;
    const unsigned flags = (e.text ? 1u : 0u) | (span ? 2u : 0u) | (e.signal ? 4u : 0u) | (stack ? 8u : 0u) |
                           (x.from ? 16u : 0u) | (crash_stack ? 32u : 0u) | (reraised ? 64u : 0u) |
                           (x.placed.empty() ? 0u : 128u) | (x.cause ? 256u : 0u);
    auto key = std::make_tuple(std::string(e.kind), std::string(e.name), std::string(e.args[0].name),
                               std::string(e.args[1].name), flags);
    auto it = classes_.find(key);
    if (it != classes_.end()) return it->second;
    EventClass c;
    c.id = static_cast<std::uint32_t>(classes_.size());
    c.name = std::string(e.name);
    /* The fixed fields' names are not an argument's, and a struct's fields
     * must differ (argument_keys: arguments "text" and "text_arg" are
     * "text_arg" and "text_arg_1"). */
    static constexpr std::string_view kFixed[] = {
        "text",           "span_state",        "signal",         "signal_name",     "si_code",
        "si_code_name",   "fault_address",     "stack_end",      "stack_depth",     "stack",
        "stack_frames",   "stack_from",        "core_end",       "stack_agree",     "stack_note",
        "reraised",       "reraised_signal",   "reraised_signal_name", "reraised_si_code", "reraised_si_code_name",
        "reraised_fault_address", "reraised_pc", "reraised_at",  "reraised_handler", "reraised_with",
        "placed"};
    auto keys = argument_keys(identifier(e.args[0].name), identifier(e.args[1].name), kFixed);
    c.arg0 = std::move(keys[0]);
    c.arg1 = std::move(keys[1]);
    c.text = e.text.has_value();
    c.span = span;
    c.signal = e.signal.has_value();
    c.stack = stack;
    c.from = x.from && stack;
    c.crash_stack = crash_stack;
    c.reraised = reraised;
    c.placed = !x.placed.empty();
    c.cause = x.cause != nullptr;
    return classes_.emplace(std::move(key), std::move(c)).first->second;
  }

  /* The cause section in env: cause_N_kind, cause_N (the claim),
   * cause_N_relies_on (when it has a window), cause_cannot_tell_N. */
  static std::string cause_env(const ExportCause &c) {
    std::string m;
    for (std::size_t i = 0; i < c.causes.size(); ++i) {
      const ExportCauseClaim &x = c.causes[i];
      m += fmt::format("\tcause_{}_kind = \"{}\";\n\tcause_{} = \"{}\";\n", i, literal(x.kind), i,
                       literal(printable(x.says)));
      if (!x.window.empty()) m += fmt::format("\tcause_{}_relies_on = \"{}\";\n", i, literal(printable(x.window)));
    }
    for (std::size_t i = 0; i < c.cannot_tell.size(); ++i)
      m += fmt::format("\tcause_cannot_tell_{} = \"{}\";\n", i, literal(printable(c.cannot_tell[i])));
    return m;
  }

  std::string metadata() const {
    std::string m = "/* CTF 1.8 */\n\n";
    m += "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
         "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
         "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
         "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
         "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
         "typealias integer { size = 64; align = 8; signed = false; base = 16; } := uint64_hex_t;\n\n";
    std::string uuid;
    for (std::size_t i = 0; i < uuid_.size(); ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
      uuid += fmt::format("{:02x}", uuid_[i]);
    }
    m += fmt::format(
        "trace {{\n"
        "\tmajor = 1;\n\tminor = 8;\n\tuuid = \"{}\";\n\tbyte_order = le;\n"
        "\tpacket.header := struct {{\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n\t}};\n"
        "}};\n\n",
        uuid);
    std::uint64_t shared_lost = t_.shared_overwritten + t_.shared_torn + t_.shared_missing;
    m += "env {\n\ttracer_name = \"core-timeline\";\n";
    m += fmt::format("\tpid = {};\n\tprocname = \"{}\";\n\tstatus = \"{}\";\n\ttime_reference = \"{}\";\n", t_.pid,
                     literal(printable_name(t_.comm)), literal(t_.status), literal(t_.reference));
    m += fmt::format("\tevents = {};\n\tevents_written = {};\n\tevents_without_time = {};\n", t_.events, written_,
                     unplaced_);
    m += fmt::format("\ttimestamps_raised = {};\n\tdropped = {};\n\tshared_lane_lost = {};\n", raised_, t_.dropped,
                     shared_lost);
    m += fmt::format("\tabsence_proves_nothing = {};\n\tts_zero_age_ns = {};\n", t_.absence_proves_nothing ? 1 : 0,
                     t_.origin_age_ns);
    if (t_.crash) {
      const ExportCrash &c = *t_.crash;
      m += fmt::format("\tcrash_signal = {};\n\tcrash_signal_name = \"{}\";\n\tcrash_tid = {};\n", c.signo,
                       literal(c.signal_name), c.tid);
      if (c.si_code) m += fmt::format("\tcrash_si_code = {};\n", *c.si_code);
      if (c.fault_address) m += fmt::format("\tcrash_fault_address = \"{:#x}\";\n", *c.fault_address);
      if (c.stack)
        m += fmt::format("\tcrash_stack_depth = {};\n\tcrash_stack_core_end = \"{}\";\n",
                         std::min<std::size_t>(c.stack->frames.size(), kMaxFrames),
                         literal(c.stack->core_end.empty() ? std::string("complete") : c.stack->core_end));
      if (c.reraised) m += fmt::format("\tcrash_reraised = \"{}\";\n", literal(reraised_line(*c.reraised)));
      if (!c.reraised_note.empty()) m += fmt::format("\tcrash_reraised_note = \"{}\";\n", literal(c.reraised_note));
    }
    m += fmt::format("\tevents_from_core = {};\n", crash_events_);
    if (t_.cause) m += cause_env(*t_.cause);
    for (const auto &tr : t_.tracks)
      m += fmt::format("\tthread_{}_lost = {};\n", tr.tid, tr.lost());
    for (const auto &w : t_.windows) m += fmt::format("\twindow_{} = \"{}\";\n", identifier(w.source), literal(w.says));
    m += "};\n\n";
    std::int64_t zero = t_.reference_realtime_ns ? *t_.reference_realtime_ns + t_.origin_age_ns : 0;
    if (zero < 0) zero = 0;
    m += fmt::format(
        "clock {{\n\tname = core_timeline;\n\tuuid = \"{}\";\n"
        "\tdescription = \"{}\";\n\tfreq = 1000000000;\n\tprecision = 0;\n\toffset_s = {};\n\toffset = {};\n}};\n\n",
        uuid,
        t_.reference_realtime_ns ? "CLOCK_REALTIME from the ring's anchors; 0 is the oldest event kept"
                                 : "no wall clock in the ring: time 0 is the oldest event kept",
        zero / 1000000000, zero % 1000000000);
    m += "typealias integer { size = 64; align = 8; signed = false; map = clock.core_timeline.value; } := "
         "uint64_clock_t;\n\n";
    m += "stream {\n\tid = 0;\n"
         "\tpacket.context := struct {\n\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
         "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
         "\t\tuint64_t events_discarded;\n\t\tuint32_t tid;\n\t\tstring thread_name;\n\t};\n"
         "\tevent.header := struct {\n\t\tuint32_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n};\n\n";
    std::vector<const EventClass *> by_id(classes_.size());
    for (const auto &[k, c] : classes_) by_id[c.id] = &c;
    for (const EventClass *c : by_id) {
      m += fmt::format("event {{\n\tname = \"{}\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n", literal(c->name),
                       c->id);
      m += fmt::format("\t\tuint64_t {};\n\t\tuint64_t {};\n", c->arg0, c->arg1);
      if (c->text) m += "\t\tstring text;\n";
      if (c->span) m += "\t\tstring span_state;\n";
      if (c->signal)
        m += "\t\tint32_t signal;\n\t\tstring signal_name;\n\t\tint32_t si_code;\n\t\tstring si_code_name;\n"
             "\t\tuint64_hex_t fault_address;\n";
      if (c->stack)
        m += "\t\tstring stack_end;\n\t\tuint16_t stack_depth;\n\t\tuint64_hex_t stack[stack_depth];\n"
             "\t\tstring stack_frames[stack_depth];\n";
      if (c->from) m += "\t\tstring stack_from[stack_depth];\n";
      if (c->crash_stack) m += "\t\tstring core_end;\n\t\tuint64_t stack_agree;\n\t\tstring stack_note;\n";
      if (c->reraised)
        m += "\t\tstring reraised;\n\t\tint32_t reraised_signal;\n\t\tstring reraised_signal_name;\n"
             "\t\tint32_t reraised_si_code;\n\t\tstring reraised_si_code_name;\n"
             "\t\tuint64_hex_t reraised_fault_address;\n\t\tuint64_hex_t reraised_pc;\n\t\tstring reraised_at;\n"
             "\t\tstring reraised_handler;\n\t\tstring reraised_with;\n";
      if (c->placed) m += "\t\tstring placed;\n";
      if (c->cause) m += "\t\tstring kind;\n\t\tstring says;\n\t\tstring relies_on;\n";
      m += "\t};\n};\n\n";
    }
    return m;
  }

  ExportTimeline t_;
  std::string dir_;
  int dirfd_ = -1;
  std::array<std::uint8_t, 16> uuid_{};
  std::map<std::uint32_t, Stream> streams_;
  std::unordered_map<std::uint32_t, const ExportTrack *> tracks_;  /* tracks_by_tid(t_) */
  std::map<std::tuple<std::string, std::string, std::string, std::string, unsigned>, EventClass> classes_;
  std::uint64_t seen_ = 0, written_ = 0, unplaced_ = 0, raised_ = 0;
  std::uint64_t crash_events_ = 0;  /* made by finish(): the crash from the
                                       notes, the thread stacks */
  bool crash_written_ = false;
  std::optional<Error> error_;
};

}  // namespace

Result<std::unique_ptr<ExportWriter>> ctf_writer(ExportTimeline timeline, const std::string &dir) {
  if (dir.empty()) return Error{Errc::kInvalidArgument, "the CTF export needs a directory (--output DIR)"};
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return system_error(errno, "creating the CTF directory " + dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return system_error(errno, "opening the CTF directory " + dir);
  /* An existing directory must be empty: a trace's streams are every file
   * in it, and old ones would be read as this crash's. */
  const int dup = ::dup(fd);
  DIR *d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (!d) {
    const int err = errno;
    if (dup >= 0) ::close(dup);
    ::close(fd);
    return system_error(err, "reading the CTF directory " + dir);
  }
  bool empty = true;
  while (const dirent *de = ::readdir(d))
    if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) empty = false;
  ::closedir(d);
  if (!empty) {
    ::close(fd);
    return Error{Errc::kInvalidArgument,
                 dir + " exists and is not empty; give a new or empty directory for the CTF trace"};
  }
  return std::unique_ptr<ExportWriter>(std::make_unique<CtfWriter>(std::move(timeline), dir, fd));
}

}  // namespace core_timeline::reader
