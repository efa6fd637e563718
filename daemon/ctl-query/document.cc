/* SPDX-License-Identifier: MIT */
#include "document.h"

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

#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"

namespace core_timeline::ctlq {

using json = nlohmann::ordered_json;

namespace {

/* The top-level values a Timeline keeps (besides "events", "coredump" and
 * "text", which are handled member by member). */
constexpr std::array<std::string_view, 8> kKeptKeys{"schema_version", "status", "exit_code", "reason",
                                                    "source",         "process", "crash",    "daemon"};

bool kept(std::string_view key) {
  for (auto k : kKeptKeys)
    if (k == key) return true;
  return false;
}

/* last_event is looked for among this many last events. */
constexpr std::size_t kTailEvents = 64;

/* A bounds-checked cursor over JSON text that checks and skips structure
 * without building values (the idea of drgn's binary_buffer: a failed step
 * does not advance, and the error names the byte offset).  Strings are
 * checked for termination and raw control characters; numbers and
 * literals only for their characters; nesting for depth and matching
 * brackets.  Values that are used are then parsed by nlohmann::json from
 * the slice skim() returns, which checks them fully. */
class Skimmer {
 public:
  explicit Skimmer(std::string_view s) : s_(s) {}

  std::size_t pos() const { return p_; }
  const std::string &error() const { return error_; }

  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t')) ++p_;
  }
  /* Consumes `c` after optional whitespace. */
  bool eat(char c) {
    ws();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    ws();
    return p_ < s_.size() && s_[p_] == c;
  }
  bool at_end() {
    ws();
    return p_ == s_.size();
  }
  bool fail(std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{} at byte {}", what, p_);
    return false;
  }

  /* Skips one value; on success `out` is its text. */
  bool skim(int depth, std::string_view &out) {
    ws();
    const std::size_t start = p_;
    if (!value(depth)) return false;
    out = s_.substr(start, p_ - start);
    return true;
  }

  /* Reads an object key and the ':' after it. */
  bool key(std::string &out) {
    ws();
    if (p_ >= s_.size() || s_[p_] != '"') return fail("expected a member name");
    const std::size_t start = p_;
    if (!string()) return false;
    std::string_view raw = s_.substr(start, p_ - start);
    if (raw.find('\\') == std::string_view::npos) {
      out.assign(raw.substr(1, raw.size() - 2));
    } else {
      auto j = json::parse(raw.begin(), raw.end(), nullptr, false);
      if (j.is_discarded() || !j.is_string()) return fail("invalid escape in a member name");
      out = j.get<std::string>();
    }
    if (!eat(':')) return fail("expected ':'");
    return true;
  }

  /* After '{' or '[' has been eaten: true if the container ends here
   * (consuming the closing bracket). */
  bool empty_container(char close) { return eat(close); }

  /* After a member or element: ',' (more follow) or the closing bracket.
   * `more` says which. */
  bool next(char close, bool &more) {
    ws();
    if (p_ < s_.size() && s_[p_] == ',') {
      ++p_;
      more = true;
      return true;
    }
    if (p_ < s_.size() && s_[p_] == close) {
      ++p_;
      more = false;
      return true;
    }
    return fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }

 private:
  bool value(int depth) {
    ws();
    if (p_ >= s_.size()) return fail("unexpected end of the document");
    const char c = s_[p_];
    if (c == '"') return string();
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
      const bool object = c == '{';
      const char close = object ? '}' : ']';
      ++p_;
      if (eat(close)) return true;
      for (;;) {
        if (object) {
          ws();
          if (p_ >= s_.size() || s_[p_] != '"') return fail("expected a member name");
          if (!string() || !eat(':')) return fail("expected ':'");
        }
        if (!value(depth + 1)) return false;
        bool more = false;
        if (!next(close, more)) return false;
        if (!more) return true;
      }
    }
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) {
      ++p_;
      while (p_ < s_.size() && ((s_[p_] >= '0' && s_[p_] <= '9') || s_[p_] == '.' || s_[p_] == 'e' ||
                                s_[p_] == 'E' || s_[p_] == '+' || s_[p_] == '-'))
        ++p_;
      return true;
    }
    return fail("unexpected character");
  }

  bool literal(std::string_view word) {
    if (s_.substr(p_, word.size()) != word) return fail("invalid literal");
    p_ += word.size();
    return true;
  }

  /* At the opening quote; moves past the closing one. */
  bool string() {
    std::size_t p = p_ + 1;
    while (p < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[p]);
      if (c == '"') {
        p_ = p + 1;
        return true;
      }
      if (c == '\\') {
        p += 2;
        continue;
      }
      if (c < 0x20) return fail("control character in a string");
      ++p;
    }
    return fail("unterminated string");
  }

  std::string_view s_;
  std::size_t p_ = 0;
  std::string error_;
};

/* Parses a slice the skimmer delimited; nullopt if it is not valid JSON. */
std::optional<json> parse_slice(std::string_view slice) {
  auto j = json::parse(slice.begin(), slice.end(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

/* Records the first syntax error of a whole-document check. */
struct Validator : nlohmann::json_sax<json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &ex) override {
    error = fmt::format("JSON syntax error near byte {}: {}", position, ex.what());
    return false;
  }
  std::string error;
};

/* The document's top level, member by member. */
class Summarizer {
 public:
  Summarizer(std::string_view bytes, Timeline &t, const ReadRequest &r) : k_(bytes), t_(t), r_(r) {}

  bool run() {
    if (!k_.eat('{')) return k_.fail("the document is not a JSON object");
    if (!k_.empty_container('}')) {
      for (;;) {
        std::string key;
        if (!k_.key(key)) return false;
        bool ok = key == "events"     ? events()
                  : key == "coredump" ? coredump()
                  : key == "text"     ? text()
                  : kept(key) || wanted_root(key) ? keep(t_.top, key)
                                                  : skip();
        if (!ok) return false;
        bool more = false;
        if (!k_.next('}', more)) return false;
        if (!more) break;
      }
    }
    if (!k_.at_end()) return k_.fail("text after the document");
    return true;
  }

  const std::string &error() const { return k_.error(); }

 private:
  bool skip() {
    std::string_view v;
    return k_.skim(1, v);
  }

  bool keep(json &into, const std::string &key, int depth = 1) {
    std::string_view v;
    if (!k_.skim(depth, v)) return false;
    auto j = parse_slice(v);
    if (!j) return k_.fail("invalid JSON in \"" + key + "\"");
    into[key] = std::move(*j);
    return true;
  }

  bool text() {
    const bool as_path = wanted_root("text");
    if (!r_.want_text && !as_path) return skip();
    std::string_view v;
    if (!k_.skim(1, v)) return false;
    auto j = parse_slice(v);
    if (!j) return k_.fail("invalid JSON in \"text\"");
    if (as_path) t_.top["text"] = *j;
    if (r_.want_text && j->is_string()) t_.text = std::move(j->get_ref<std::string &>());
    return true;
  }

  /* Whether a path of the request begins with the top-level `key`. */
  bool wanted_root(std::string_view key) const {
    for (const auto &p : r_.paths)
      if (p.starts_with(key) && (p.size() == key.size() || p[key.size()] == '.')) return true;
    return false;
  }

  bool wanted_field(const std::string &name) const {
    if (r_.all_fields) return true;
    for (const char *f : kListFields)
      if (name == f) return true;
    for (const auto &f : r_.fields)
      if (name == f) return true;
    constexpr std::string_view kFieldsPath = "coredump.fields";
    for (const auto &p : r_.paths) {
      const std::string_view v = p;
      if (v == "coredump" || v == kFieldsPath) return true;
      if (v.starts_with(kFieldsPath) && v.size() > kFieldsPath.size() && v[kFieldsPath.size()] == '.' &&
          v.substr(kFieldsPath.size() + 1) == name)
        return true;
    }
    return false;
  }

  bool coredump() {
    json &cd = t_.top["coredump"];
    if (!k_.eat('{')) return k_.fail("\"coredump\" is not an object");
    cd = json::object();
    if (k_.empty_container('}')) return true;
    for (;;) {
      std::string key;
      if (!k_.key(key)) return false;
      if (key == "fields") {
        if (!fields(cd["fields"])) return false;
      } else if (!keep(cd, key, 2)) {
        return false;
      }
      bool more = false;
      if (!k_.next('}', more)) return false;
      if (!more) return true;
    }
  }

  bool fields(json &into) {
    if (!k_.eat('{')) return k_.fail("\"coredump.fields\" is not an object");
    into = json::object();
    if (k_.empty_container('}')) return true;
    for (;;) {
      std::string key;
      if (!k_.key(key)) return false;
      if (wanted_field(key)) {
        if (!keep(into, key, 3)) return false;
      } else {
        std::string_view v;
        if (!k_.skim(3, v)) return false;
      }
      bool more = false;
      if (!k_.next('}', more)) return false;
      if (!more) return true;
    }
  }

  bool events() {
    if (!k_.eat('[')) return k_.fail("\"events\" is not an array");
    t_.has_events = true;
    t_.event_count = 0;
    t_.last_event = nullptr;
    json *all = nullptr;   // with a path into "events": every event, kept
    if (wanted_root("events")) all = &(t_.top["events"] = json::array());
    // Only the last kTailEvents texts are kept (for last_event): memory
    // does not grow with the number of events.
    std::array<std::string_view, kTailEvents> tail;
    std::size_t n = 0;
    if (!k_.empty_container(']')) {
      for (;;) {
        if (n >= kMaxEvents) return k_.fail(fmt::format("more than {} events", kMaxEvents));
        if (!k_.peek('{')) return k_.fail(fmt::format("event {} is not an object", n));
        std::string_view v;
        if (!k_.skim(2, v)) return false;
        const bool to_caller = r_.on_event && (!r_.may_want_event || r_.may_want_event(v));
        if (to_caller || all) {
          auto e = parse_slice(v);
          if (!e) return k_.fail(fmt::format("invalid JSON in event {}", n));
          if (to_caller) r_.on_event(*e, n);
          if (all) all->push_back(std::move(*e));
        }
        tail[n % kTailEvents] = v;
        ++n;
        bool more = false;
        if (!k_.next(']', more)) return false;
        if (!more) break;
      }
    }
    t_.event_count = n;
    // The last event that is not the CRASH slot (the crash is in "crash").
    for (std::size_t back = 1; back <= std::min(n, kTailEvents); ++back) {
      const std::size_t i = n - back;
      auto e = parse_slice(tail[i % kTailEvents]);
      if (!e) return k_.fail(fmt::format("invalid JSON in event {}", i));
      auto kind = e->find("kind");
      if (kind == e->end() || !kind->is_string() || *kind != "CRASH") {
        t_.last_event = std::move(*e);
        break;
      }
    }
    return true;
  }

  Skimmer k_;
  Timeline &t_;
  const ReadRequest &r_;
};


std::string errno_text(int e) { return std::strerror(e); }

using reader::Fd;

}  // namespace

std::string_view problem_name(Problem p) noexcept {
  switch (p) {
    case Problem::kPermissionDenied: return "permission denied";
    case Problem::kVanished: return "vanished";
    case Problem::kNotRegularFile: return "not a regular file";
    case Problem::kTooLarge: return "too large";
    case Problem::kMalformed: return "malformed";
    case Problem::kIoError: return "I/O error";
  }
  return "unknown problem";
}

const std::string &Timeline::status() const { return top.at("status").get_ref<const std::string &>(); }

const std::string *Timeline::field(std::string_view key) const {
  auto cd = top.find("coredump");
  if (cd == top.end() || !cd->is_object()) return nullptr;
  auto fields = cd->find("fields");
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

Expected<Timeline, ReadError> parse_timeline(std::string_view bytes, const std::string &path,
                                             const ReadRequest &request) noexcept {
  try {
    Timeline t;
    t.path = path;
    auto slash = path.rfind('/');
    t.name = parse_timeline_name(slash == std::string::npos ? path : path.substr(slash + 1));
    if (request.validate_all) {
      Validator v;
      if (!json::sax_parse(bytes.begin(), bytes.end(), &v, nlohmann::json::input_format_t::json, true, false))
        return ReadError{Problem::kMalformed, path + ": malformed: " + v.error};
    }
    Summarizer sum(bytes, t, request);
    if (!sum.run()) return ReadError{Problem::kMalformed, path + ": malformed: " + sum.error()};
    auto st = t.top.find("status");
    if (st == t.top.end() || !st->is_string())
      return ReadError{Problem::kMalformed, path + ": malformed: not a timeline document: no \"status\" string"};
    auto cd = t.top.find("coredump");
    if (cd == t.top.end() || !cd->is_object())
      return ReadError{Problem::kMalformed, path + ": malformed: not a core-timelined document: no \"coredump\" object"};
    auto fields = cd->find("fields");
    if (fields == cd->end() || !fields->is_object())
      return ReadError{Problem::kMalformed, path + ": malformed: not a core-timelined document: no \"coredump.fields\" object"};

    std::optional<std::uint64_t> realtime;
    auto rt = cd->find("realtime_usec");
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
    return ReadError{Problem::kIoError, path + ": out of memory while reading it"};
  } catch (const std::exception &e) {
    return ReadError{Problem::kMalformed, path + ": malformed: " + e.what()};
  }
}

Expected<Timeline, ReadError> read_timeline(int dirfd, const std::string &dir, const std::string &name,
                                            const ReadRequest &request) noexcept {
  std::string path;
  try {
    path = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
  } catch (...) {
    return ReadError{Problem::kIoError, "out of memory"};
  }
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == EACCES || e == EPERM) return ReadError{Problem::kPermissionDenied, path + ": permission denied"};
    if (e == ENOENT) return ReadError{Problem::kVanished, path + ": removed while being listed"};
    if (e == ELOOP) return ReadError{Problem::kNotRegularFile, path + ": is a symbolic link, not followed"};
    return ReadError{Problem::kIoError, path + ": cannot open: " + errno_text(e)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0) return ReadError{Problem::kIoError, path + ": fstat: " + errno_text(errno)};
  if (!S_ISREG(st.st_mode)) return ReadError{Problem::kNotRegularFile, path + ": not a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) > request.max_bytes)
    return ReadError{Problem::kTooLarge, fmt::format("{}: too large ({} bytes, the limit is {}; see --max-size)", path,
                                                     st.st_size, request.max_bytes)};
  std::string bytes;
  try {
    bytes.resize(static_cast<std::size_t>(st.st_size) + 1);
  } catch (...) {
    return ReadError{Problem::kIoError, path + ": out of memory"};
  }
  std::size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      // It grew after fstat: read on, up to the limit.
      if (bytes.size() > request.max_bytes)
        return ReadError{Problem::kTooLarge, fmt::format("{}: too large (more than {} bytes; see --max-size)", path,
                                                         request.max_bytes)};
      try {
        bytes.resize(std::min<std::uint64_t>(bytes.size() * 2, request.max_bytes + 1));
      } catch (...) {
        return ReadError{Problem::kIoError, path + ": out of memory"};
      }
    }
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError{Problem::kIoError, path + ": read: " + errno_text(errno)};
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return parse_timeline(bytes, path, request);
}

}  // namespace core_timeline::ctlq
