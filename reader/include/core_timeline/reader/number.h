/* SPDX-License-Identifier: MIT */
/*
 * number.h - the one parser of unsigned numbers in untrusted text: journal
 * fields, file names, tlmap ids, command-line values.
 *
 * A number is one or more ASCII digits and nothing else: no sign, no space,
 * no suffix (std::from_chars, which also refuses a value that does not fit
 * T).  With allow_hex, "0x" or "0X" and hexadecimal digits are taken too.
 *
 * Header-only (ctl-query uses the reader's headers, not its library).
 * Thread-safety: pure.  Async-signal-safe (no allocation), though nothing
 * in a signal handler uses it.
 */
#ifndef CORE_TIMELINE_READER_NUMBER_H
#define CORE_TIMELINE_READER_NUMBER_H

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace core_timeline::reader {

/** `s` as an unsigned number of type T, or nullopt (see above). */
template <class T = std::uint64_t>
std::optional<T> parse_unsigned(std::string_view s, bool allow_hex = false) noexcept {
  static_assert(std::is_unsigned_v<T>);
  int base = 10;
  if (allow_hex && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return std::nullopt;
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_NUMBER_H
