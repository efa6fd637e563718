/* SPDX-License-Identifier: MIT */
/*
 * cursor.h - a bounds-checked read cursor over untrusted bytes.
 *
 * Modelled on drgn's libdrgn/binary_buffer.h: every read checks that the
 * bytes are there before touching them; a failed read does not advance the
 * cursor and returns an Error naming the structure, the field and the
 * absolute offset of the value that could not be read.  Values are read
 * little-endian with memcpy, so unaligned data is fine.
 *
 * A Cursor does not own its bytes: the span must outlive it.
 * Thread-safety: a Cursor is a small value; do not share one between threads
 * without locking.  Reading the same bytes through several cursors is fine.
 */
#ifndef CORE_TIMELINE_READER_CURSOR_H
#define CORE_TIMELINE_READER_CURSOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

/** "0x" followed by lower-case hex digits of `v`. */
std::string hex(std::uint64_t v);

class Cursor {
 public:
  /**
   * @data: the bytes to read.
   * @base: the offset of data[0] in whatever the messages should name (a
   *        file offset or a virtual address), added to the position in
   *        error messages.
   * @what: the structure being read ("NT_FILE note", "ring header"), used
   *        as the first word of error messages.  Must outlive the cursor.
   */
  Cursor(std::span<const std::uint8_t> data, std::uint64_t base, std::string_view what) noexcept
      : data_(data), base_(base), what_(what) {}

  std::size_t pos() const noexcept { return pos_; }
  std::size_t size() const noexcept { return data_.size(); }
  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  /** base + pos: the absolute offset of the next byte. */
  std::uint64_t offset() const noexcept { return base_ + pos_; }

  /** Moves to absolute position `pos` within the span (0 <= pos <= size). */
  Result<void> seek(std::size_t pos, std::string_view field);
  /** Skips `n` bytes. */
  Result<void> skip(std::size_t n, std::string_view field);
  /** Skips to the next multiple of `alignment` (a power of two), measured
   *  from the start of the span. */
  Result<void> align(std::size_t alignment, std::string_view field);

  Result<std::uint8_t> u8(std::string_view field) { return read<std::uint8_t>(field); }
  Result<std::uint16_t> u16(std::string_view field) { return read<std::uint16_t>(field); }
  Result<std::uint32_t> u32(std::string_view field) { return read<std::uint32_t>(field); }
  Result<std::uint64_t> u64(std::string_view field) { return read<std::uint64_t>(field); }
  Result<std::int32_t> i32(std::string_view field) { return read<std::int32_t>(field); }

  /** The next `n` bytes, as a view into the underlying span. */
  Result<std::span<const std::uint8_t>> bytes(std::size_t n, std::string_view field);

  /** A NUL-terminated string starting here, without the NUL; consumes the
   *  NUL.  Fails if no NUL occurs within the remaining bytes. */
  Result<std::string_view> cstring(std::string_view field);

  /** An Error of code `code` for `field` at the current offset. */
  Error error(Errc code, std::string_view field, std::string_view detail) const;
  /** The same for a field at position `pos` of the span (base + pos is
   *  named), read earlier or judged later than the cursor stands. */
  Error error_at(std::size_t pos, Errc code, std::string_view field, std::string_view detail) const;

 private:
  template <class T>
  Result<T> read(std::string_view field) {
    if (remaining() < sizeof(T)) return short_read(field, sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  Error short_read(std::string_view field, std::size_t need) const;

  std::span<const std::uint8_t> data_;
  std::uint64_t base_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

/** Reads a little-endian T at `off` of `data` if it fits; no error text, for
 *  hot loops whose bounds were checked once.  Returns false if it does not
 *  fit. */
template <class T>
inline bool load_at(std::span<const std::uint8_t> data, std::uint64_t off, T &out) noexcept {
  if (off > data.size() || data.size() - off < sizeof(T)) return false;
  std::memcpy(&out, data.data() + off, sizeof(T));
  return true;
}

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_CURSOR_H
