/* SPDX-License-Identifier: MIT */
/*
 * text_builder.h - a fixed-size text builder for libtimeline's messages.
 *
 * ASYNC-SIGNAL-SAFE: plain stores into a caller's buffer, no malloc, no
 * stdio, no locale, errno untouched (a fork child, which may only make
 * async-signal-safe calls, writes its no-ring reason with it).  The text is
 * always NUL-terminated; what does not fit is cut off.
 */
#ifndef CORE_TIMELINE_LIB_TEXT_BUILDER_H
#define CORE_TIMELINE_LIB_TEXT_BUILDER_H

#include <stddef.h>
#include <stdint.h>

namespace core_timeline::lib {

class Text {
 public:
  /* `buf` holds `cap` >= 1 bytes; the text starts empty. */
  Text(char *buf, size_t cap) : buf_(buf), cap_(cap) { buf_[0] = '\0'; }

  /* Appends `s`, each byte outside printable ASCII (0x20-0x7e) as '?', so
   * the text stays one printable line whatever it quotes.  At most
   * `max` bytes of `s`. */
  Text &put(const char *s, size_t max = SIZE_MAX) {
    for (size_t i = 0; i < max && s[i] != '\0'; ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      byte(c >= 0x20 && c <= 0x7e ? static_cast<char>(c) : '?');
    }
    return *this;
  }
  /* Appends `v` in decimal. */
  Text &put_u64(uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) byte(tmp[--n]);
    return *this;
  }
  /* Appends `bytes` in GiB with two decimals, rounded up, so a size over a
   * limit never reads as the limit ("4.01 GiB", not "4.00 GiB"). */
  Text &put_gib(uint64_t bytes) { return put_scaled(bytes, 30, " GiB"); }
  /* Appends `bytes` as put_gib does, or in MiB below 1 GiB ("2.07 MiB"). */
  Text &put_size(uint64_t bytes) {
    return bytes < (1ull << 30) ? put_scaled(bytes, 20, " MiB") : put_scaled(bytes, 30, " GiB");
  }
  const char *c_str() const { return buf_; }
  size_t size() const { return len_; }

 private:
  /* bytes / 2^shift with two decimals, rounded up; bytes < 2^50. */
  Text &put_scaled(uint64_t bytes, unsigned shift, const char *unit) {
    const uint64_t hundredths = (bytes * 100 + (1ull << shift) - 1) >> shift;
    put_u64(hundredths / 100);
    byte('.');
    byte(static_cast<char>('0' + hundredths / 10 % 10));
    byte(static_cast<char>('0' + hundredths % 10));
    return put(unit);
  }
  void byte(char c) {
    if (len_ + 1 >= cap_) return;
    buf_[len_++] = c;
    buf_[len_] = '\0';
  }
  char *buf_;
  size_t cap_;
  size_t len_ = 0;
};

}  // namespace core_timeline::lib

#endif  // CORE_TIMELINE_LIB_TEXT_BUILDER_H
