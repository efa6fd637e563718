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
 * Header-only (ctl-query uses the reader's headers, not its library).
 * Thread-safety: pure functions.  Not async-signal-safe (allocates).
 */
#ifndef CORE_TIMELINE_READER_PRINTABLE_H
#define CORE_TIMELINE_READER_PRINTABLE_H

#include <cstddef>
#include <cstdint>
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
};

/** `s` with printable ASCII as is and every other byte as \xNN. */
inline std::string printable(std::string_view s, const PrintableOptions &o = {}) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() < o.max_len ? s.size() : o.max_len);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0 && o.stop_at_nul) break;
    if (out.size() >= o.max_len) {
      out += "...";
      break;
    }
    const bool keep = (c >= 0x20 && c < 0x7f && !(c == '\\' && o.escape_backslash)) ||
                      (o.keep_lines && (c == '\n' || c == '\t'));
    if (keep) {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_PRINTABLE_H
