/* SPDX-License-Identifier: MIT */
/*
 * printable.h - the one escaper for untrusted bytes on their way to text.
 *
 * Every string a core, a ring, a journal entry or a stored document carries
 * can hold any byte; a terminal must never receive one raw.  printable()
 * keeps printable ASCII (0x20..0x7e) and writes every other byte as \xNN
 * (lower-case hex).  The reader's text, the daemon's log and ctl-query all
 * use it, so the same bytes read the same everywhere.
 *
 * A payload (an OPEN's path, a tl_mark_ptr snapshot) is shown as a quoted
 * string only when payload_text() finds it is text; it is then escaped by
 * printable() with .quoted, the C string escapes between double quotes.
 *
 * Header-only (ctl-query uses the reader's headers, not its library).
 * Thread-safety: pure functions.  Not async-signal-safe (allocates).
 */
#ifndef CORE_TIMELINE_READER_PRINTABLE_H
#define CORE_TIMELINE_READER_PRINTABLE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace core_timeline::reader {

struct PrintableOptions {
  /** Keep '\n' and '\t' (for multi-line text such as a stored "text"). */
  bool keep_lines = false;
  /** Write '\\' as \x5c too, so that the result cannot be mistaken for an
   *  escape the input did not contain (log lines, thread names). */
  bool escape_backslash = false;
  /** Stop at the first NUL byte (a C string in a fixed-size field). */
  bool stop_at_nul = false;
  /** At most this many bytes of output, then "..." (and the rest is left
   *  out). */
  std::size_t max_len = SIZE_MAX;
  /** C string escapes, for a value written between double quotes
   *  (path="..."): '"' as \", '\\' as \\, newline, tab and carriage return
   *  as \n, \t and \r; every other byte outside printable ASCII is \xNN
   *  still, so the result is printable ASCII with no bare '"'.  keep_lines
   *  and escape_backslash do not apply. */
  bool quoted = false;
};

/** Whether printable() writes the byte `c` as it is under `o`. */
constexpr bool printable_as_is(unsigned char c, const PrintableOptions &o) {
  if (c == 0 && o.stop_at_nul) return false;
  if (o.quoted) return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  return (c >= 0x20 && c < 0x7f && !(c == '\\' && o.escape_backslash)) ||
         (o.keep_lines && (c == '\n' || c == '\t'));
}

/** The bytes printable() writes as they are under given options; for a
 *  long text, looked up in a table of the 256 answers. */
class PrintableBytes {
 public:
  PrintableBytes(const PrintableOptions &o, std::size_t text_size) : o_(o), tabled_(text_size >= 1024) {
    if (tabled_)
      for (int c = 0; c < 256; ++c) table_[c] = printable_as_is(static_cast<unsigned char>(c), o);
  }
  /** Where the run of bytes kept as they are that begins at `from` ends. */
  std::size_t run_end(std::string_view s, std::size_t from) const {
    while (from < s.size() && as_is(static_cast<unsigned char>(s[from]))) ++from;
    return from;
  }

 private:
  bool as_is(unsigned char c) const { return tabled_ ? table_[c] : printable_as_is(c, o_); }
  const PrintableOptions &o_;
  bool tabled_;
  bool table_[256];  // filled when tabled_
};

/** `s` with printable ASCII as is and every other byte as \xNN.  Runs of
 *  bytes kept as they are are copied whole (a 20 MB text of printable
 *  lines is one copy). */
inline std::string printable(std::string_view s, const PrintableOptions &o = {}) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() < o.max_len ? s.size() : o.max_len);
  const PrintableBytes kept(o, s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t run = kept.run_end(s, i);
    const std::size_t room = o.max_len > out.size() ? o.max_len - out.size() : 0;
    out.append(s.substr(i, std::min(run - i, room)));
    if (run - i > room) {
      out += "...";
      break;
    }
    if (run == s.size()) break;
    const auto c = static_cast<unsigned char>(s[run]);
    if (c == 0 && o.stop_at_nul) break;
    if (out.size() >= o.max_len) {
      out += "...";
      break;
    }
    i = run + 1;
    const char *named = !o.quoted    ? nullptr
                        : c == '"'   ? "\\\""
                        : c == '\\'  ? "\\\\"
                        : c == '\n'  ? "\\n"
                        : c == '\t'  ? "\\t"
                        : c == '\r'  ? "\\r"
                                     : nullptr;
    if (named != nullptr) {
      out += named;
      continue;
    }
    out += "\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

/** Whether printable(s, o) is `s` itself (nothing to escape or cut). */
inline bool is_printable(std::string_view s, const PrintableOptions &o = {}) {
  return s.size() <= o.max_len && PrintableBytes(o, s.size()).run_end(s, 0) == s.size();
}

/** A name from untrusted bytes as the timeline keeps thread names and the
 *  exports write the process's name: the bytes up to the first NUL,
 *  printable ASCII other than the backslash as is, every other byte (the
 *  backslash too) as \xNN. */
inline std::string printable_name(std::string_view s) {
  return printable(s, {.escape_backslash = true, .stop_at_nul = true});
}

/** What payload_text() found. */
struct PayloadText {
  /** The payload as printable() with .quoted writes it, without the quotes
   *  and without its trailing NUL bytes. */
  std::string text;
  /** How many bytes that is: the payload's size less its trailing NULs. */
  std::size_t length = 0;
};

/** The payload `b` (untrusted bytes: an OPEN's path, a tl_mark_ptr
 *  snapshot, a sun_path) as text, or nullopt when it is not text and must
 *  stay hex.  It is text when, once the NUL bytes at its end are dropped
 *  (C-string padding):
 *   - it is not empty and holds no other NUL;
 *   - at least three quarters of its bytes are printable ASCII, tab,
 *     newline or carriage return, or belong to a well-formed UTF-8
 *     character of two to four bytes (a character cut short by the end of
 *     the payload does not count, nor does any other byte: control bytes,
 *     DEL, stray bytes of 0x80 and above).
 *  So a path cut in the middle of a character, or one that holds a few
 *  Latin-1 bytes or an escape sequence, is still text (those bytes are
 *  written as \xNN); a pointer, a sockaddr_in or random memory is not.
 *  Whether the payload was cut (the 64-byte inline limit) is the caller's
 *  to say: only it knows how long the original was. */
inline std::optional<PayloadText> payload_text(std::span<const std::uint8_t> b) {
  std::size_t n = b.size();
  while (n > 0 && b[n - 1] == 0) --n;
  if (n == 0) return std::nullopt;
  std::size_t readable = 0;
  for (std::size_t i = 0; i < n;) {
    const std::uint8_t c = b[i];
    if (c == 0) return std::nullopt;
    if ((c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r') {
      ++readable;
      ++i;
      continue;
    }
    /* A well-formed UTF-8 character (RFC 3629: no overlong forms, no
     * surrogates, nothing above U+10FFFF) of `len` bytes. */
    const std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool whole = len != 0 && i + len <= n;
    for (std::size_t k = 1; whole && k < len; ++k) {
      const std::uint8_t lo = k == 1 && c == 0xe0 ? 0xa0 : k == 1 && c == 0xf0 ? 0x90 : 0x80;
      const std::uint8_t hi = k == 1 && c == 0xed ? 0x9f : k == 1 && c == 0xf4 ? 0x8f : 0xbf;
      whole = b[i + k] >= lo && b[i + k] <= hi;
    }
    if (whole) readable += len;
    i += whole ? len : 1;
  }
  if (readable * 4 < n * 3) return std::nullopt;
  return PayloadText{printable({reinterpret_cast<const char *>(b.data()), n}, {.quoted = true}), n};
}

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_PRINTABLE_H
