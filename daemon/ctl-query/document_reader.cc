/* SPDX-License-Identifier: MIT */
#include "document_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compact_timeline.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/document/names.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace document = core_timeline::document;
namespace key = core_timeline::document::key;

namespace {

/* The top-level members a Timeline keeps (besides "events", "coredump" and
 * "text", which are handled member by member). */
constexpr std::array<const char *, 9> kKeptKeys{key::schema_version, key::status, key::exit_code,
                                                key::reason,         key::source, key::process,
                                                key::crash,          key::daemon, key::pids};

bool kept(std::string_view k) {
  for (const char *c : kKeptKeys)
    if (k == c) return true;
  return false;
}

/* last_event is looked for among this many last events. */
constexpr std::size_t kTailEvents = 64;

/* Thrown by the parser callback to stop at the first thing that makes the
 * document malformed; Reader::error() says what. */
struct Stop {};

using Event = nlohmann::json::parse_event_t;

/* nlohmann's parser callback (json::parse(..., callback)): it is called
 * with the nesting depth for each key, value and container boundary, and
 * what it returns false for is not built.  It keeps what the request
 * needs, checks the shape of what it keeps, and stops the parse (Stop) at
 * the first member too deep or of the wrong type.  Depths: 0 the document,
 * 1 its members, 2 the members of "coredump" and the elements of
 * "events", 3 the members of "coredump.fields". */
class Reader {
 public:
  Reader(Timeline &t, const ReadRequest &r) : t_(t), r_(r), all_events_(wanted_root(key::events)) {}

  bool operator()(int depth, Event event, json &parsed) {
    const bool opens = event == Event::object_start || event == Event::array_start;
    if (opens && depth >= document::kMaxDepth) fail(fmt::format("nested deeper than {} levels", document::kMaxDepth));
    if (depth == 0) {
      if (event != Event::object_start && event != Event::object_end) fail("the document is not a JSON object");
      return true;
    }
    if (depth == 1 && event == Event::key) {
      top_ = parsed.get<std::string>();
      in_fields_ = false;
      return top_ == key::coredump || top_ == key::events || top_ == key::text || kept(top_) || wanted_root(top_);
    }
    if (top_ == key::process && depth == 1 && event == Event::object_end && r_.on_process) r_.on_process(parsed);
    if (top_ == key::coredump) return coredump(depth, event, parsed);
    if (top_ == key::events) return events(depth, event, parsed);
    if (top_ == key::text && depth == 1 && event == Event::value) {
      if (r_.want_text && parsed.is_string()) t_.text = parsed.get<std::string>();
      return wanted_root(key::text);
    }
    return true;
  }

  /* After the parse: the count, and the last event that is not the CRASH
   * slot (the crash is in "crash") nor, unless asked, bookkeeping. */
  void finish() {
    t_.event_count = n_;
    for (std::size_t back = 1; back <= std::min(n_, kTailEvents); ++back) {
      json &e = tail_[(n_ - back) % kTailEvents];
      auto kind = e.find(key::kind);
      if (!r_.bookkeeping && document::is_bookkeeping_event(e)) continue;
      if (kind == e.end() || !kind->is_string() || *kind != "CRASH") {
        t_.last_event = std::move(e);
        break;
      }
    }
  }

  const std::string &error() const { return error_; }

 private:
  [[noreturn]] void fail(std::string what) {
    error_ = std::move(what);
    throw Stop{};
  }

  bool coredump(int depth, Event event, json &parsed) {
    if (depth == 1) {
      if (event != Event::object_start && event != Event::object_end) fail("\"coredump\" is not an object");
      return true;
    }
    if (depth == 2 && event == Event::key) {
      in_fields_ = parsed == key::fields;
      return true;
    }
    if (!in_fields_) return true;
    if (depth == 2 && event != Event::object_start && event != Event::object_end)
      fail("\"coredump.fields\" is not an object");
    if (depth == 3 && event == Event::key) return wanted_field(parsed.get_ref<const std::string &>());
    return true;
  }

  bool events(int depth, Event event, json &parsed) {
    if (depth == 1) {
      if (event != Event::array_start && event != Event::array_end) fail("\"events\" is not an array");
      t_.has_events = true;
      // Built (its elements reach the callback), but kept at its end only
      // for a path into it; unkept, it is left as a discarded value.
      return event == Event::array_start || all_events_;
    }
    if (depth > 2) return true;
    if (event == Event::object_start) {
      if (n_ >= kMaxEvents) fail(fmt::format("more than {} events", kMaxEvents));
      return true;
    }
    if (event != Event::object_end) fail(fmt::format("event {} is not an object", n_));
    if (r_.on_event) r_.on_event(parsed, n_);
    json &slot = tail_[n_ % kTailEvents];
    ++n_;
    if (all_events_) {
      slot = parsed;
      return true;
    }
    slot = std::move(parsed);
    return false;  // not built into the document: memory does not grow with the events
  }

  /* Whether a path of the request begins with the top-level `k`. */
  bool wanted_root(std::string_view k) const {
    for (const auto &p : r_.paths)
      if (p.starts_with(k) && (p.size() == k.size() || p[k.size()] == '.')) return true;
    return false;
  }

  bool wanted_field(const std::string &name) const {
    if (r_.all_fields) return true;
    for (const char *f : kListFields)
      if (name == f) return true;
    for (const auto &f : r_.fields)
      if (name == f) return true;
    const std::string fields_path = std::string(key::coredump) + "." + key::fields;
    for (const auto &p : r_.paths) {
      const std::string_view v = p;
      if (v == key::coredump || v == fields_path) return true;
      if (v.starts_with(fields_path) && v.size() > fields_path.size() && v[fields_path.size()] == '.' &&
          v.substr(fields_path.size() + 1) == name)
        return true;
    }
    return false;
  }

  Timeline &t_;
  const ReadRequest &r_;
  const bool all_events_;   // a path into "events": every event is kept
  std::string top_;         // the top-level member being parsed
  bool in_fields_ = false;  // inside coredump.fields
  std::size_t n_ = 0;       // events so far
  std::array<json, kTailEvents> tail_;  // the last kTailEvents events
  std::string error_;
};

/* nlohmann's parse_error text without its "[json.exception.parse_error.101] " tag. */
std::string syntax_error(const nlohmann::json::parse_error &e) {
  std::string_view w = e.what();
  if (w.starts_with("[json.exception.")) {
    const auto close = w.find("] ");
    if (close != std::string_view::npos) w.remove_prefix(close + 2);
  }
  return "JSON syntax error: " + std::string(w);
}

/* "<what>: <strerror>", thread-safe (reader::system_error): documents
 * are read in parallel. */
std::string errno_text(std::string what, int e) { return reader::system_error(e, what).message; }

using reader::Fd;

}  // namespace

std::string_view problem_name(Errc code) noexcept {
  switch (code) {
    case Errc::kPermissionDenied: return "permission denied";
    case Errc::kNotFound: return "vanished";
    case Errc::kNotRegularFile: return "not a regular file";
    case Errc::kTooLarge: return "too large";
    case Errc::kBadData: return "malformed";
    default: return "I/O error";
  }
}

const std::string &Timeline::status() const { return top.at(key::status).get_ref<const std::string &>(); }

const std::string *Timeline::field(std::string_view key) const {
  auto cd = top.find(key::coredump);
  if (cd == top.end() || !cd->is_object()) return nullptr;
  auto fields = cd->find(key::fields);
  if (fields == cd->end() || !fields->is_object()) return nullptr;
  auto it = fields->find(std::string(key));
  if (it == fields->end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string &>();
}

const json *Timeline::lookup(std::string_view dotted) const {
  const json *cur = &top;
  while (!dotted.empty()) {
    auto dot = dotted.find('.');
    std::string part(dotted.substr(0, dot));
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
    if (cur->is_array()) {
      const auto i = reader::parse_unsigned<std::size_t>(part);
      if (!i || *i >= cur->size()) return nullptr;
      cur = &(*cur)[*i];
      continue;
    }
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur == &top ? nullptr : cur;
}

Result<Timeline> parse_timeline(std::string_view bytes, const std::string &path,
                                             const ReadRequest &request) noexcept {
  try {
    Timeline t;
    t.path = path;
    auto slash = path.rfind('/');
    t.name = document::parse_timeline_name(slash == std::string::npos ? path : path.substr(slash + 1));
    const std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || bytes[first] != '{')
      return Error{Errc::kBadData, path + ": malformed: the document is not a JSON object"};
    if (reader::looks_compact(bytes)) {
      /* The compact document (schema_version 7): compact_timeline.h. */
      if (auto problem = read_compact(bytes, request, t)) return Error{Errc::kBadData, path + ": malformed: " + *problem};
    } else {
      Reader reader(t, request);
      try {
        t.top = json::parse(bytes.begin(), bytes.end(), std::ref(reader));
      } catch (const Stop &) {
        return Error{Errc::kBadData, path + ": malformed: " + reader.error()};
      } catch (const nlohmann::json::parse_error &e) {
        return Error{Errc::kBadData, path + ": malformed: " + syntax_error(e)};
      }
      reader.finish();
      if (auto ev = t.top.find(key::events); ev != t.top.end() && ev->is_discarded()) t.top.erase(ev);
    }
    auto st = t.top.find(key::status);
    if (st == t.top.end() || !st->is_string())
      return Error{Errc::kBadData, path + ": malformed: not a timeline document: no \"status\" string"};
    auto cd = t.top.find(key::coredump);
    if (cd == t.top.end() || !cd->is_object())
      return Error{Errc::kBadData, path + ": malformed: not a core-timelined document: no \"coredump\" object"};
    auto fields = cd->find(key::fields);
    if (fields == cd->end() || !fields->is_object())
      return Error{Errc::kBadData, path + ": malformed: not a core-timelined document: no \"coredump.fields\" object"};

    std::optional<std::uint64_t> realtime;
    auto rt = cd->find(key::realtime_usec);
    if (rt != cd->end() && rt->is_number_unsigned()) realtime = rt->get<std::uint64_t>();
    else if (rt != cd->end() && rt->is_number_integer() && rt->get<std::int64_t>() >= 0)
      realtime = static_cast<std::uint64_t>(rt->get<std::int64_t>());
    std::optional<std::uint64_t> crash_time;
    if (const std::string *ts = t.field("COREDUMP_TIMESTAMP")) crash_time = reader::parse_unsigned(*ts);
    if (crash_time) t.time_usec = *crash_time;
    else if (realtime) t.time_usec = *realtime;
    else if (t.name) t.time_usec = t.name->usec;
    t.realtime_usec = realtime ? *realtime : t.time_usec;
    if (request.keep_raw) t.raw.assign(bytes.data(), bytes.size());
    return t;
  } catch (const std::bad_alloc &) {
    return Error{Errc::kIo, path + ": out of memory while reading it"};
  } catch (const std::exception &e) {
    return Error{Errc::kBadData, path + ": malformed: " + e.what()};
  }
}

Result<Timeline> read_timeline(int dirfd, const std::string &dir, const std::string &name,
                                            const ReadRequest &request) noexcept {
  std::string path;
  try {
    path = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
  } catch (...) {
    return Error{Errc::kIo, "out of memory"};
  }
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == EACCES || e == EPERM) return Error{Errc::kPermissionDenied, path + ": permission denied"};
    if (e == ENOENT) return Error{Errc::kNotFound, path + ": removed while being listed"};
    if (e == ELOOP) return Error{Errc::kNotRegularFile, path + ": is a symbolic link, not followed"};
    return Error{Errc::kIo, errno_text(path + ": cannot open", e)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0) return Error{Errc::kIo, errno_text(path + ": fstat", errno)};
  if (!S_ISREG(st.st_mode)) return Error{Errc::kNotRegularFile, path + ": not a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) > request.max_bytes)
    return Error{Errc::kTooLarge, fmt::format("{}: too large ({} bytes, the limit is {}; see --max-size)", path,
                                                     st.st_size, request.max_bytes)};
  std::string bytes;
  try {
    bytes.resize(static_cast<std::size_t>(st.st_size) + 1);
  } catch (...) {
    return Error{Errc::kIo, path + ": out of memory"};
  }
  std::size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      // It grew after fstat: read on, up to the limit.
      if (bytes.size() > request.max_bytes)
        return Error{Errc::kTooLarge, fmt::format("{}: too large (more than {} bytes; see --max-size)", path,
                                                         request.max_bytes)};
      try {
        bytes.resize(std::min<std::uint64_t>(bytes.size() * 2, request.max_bytes + 1));
      } catch (...) {
        return Error{Errc::kIo, path + ": out of memory"};
      }
    }
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{Errc::kIo, errno_text(path + ": read", errno)};
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return parse_timeline(bytes, path, request);
}

}  // namespace core_timeline::ctl_query
