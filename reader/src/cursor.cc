/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/cursor.h"

#include <fmt/format.h>

namespace core_timeline::reader {

std::string hex(std::uint64_t v) { return fmt::format("{:#x}", v); }

Error Cursor::error(Errc code, std::string_view field, std::string_view detail) const {
  return error_at(pos_, code, field, detail);
}

Error Cursor::error_at(std::size_t pos, Errc code, std::string_view field, std::string_view detail) const {
  return Error{code, fmt::format("{}: {} at offset {:#x}: {}", what_, field, base_ + pos, detail)};
}

Error Cursor::short_read(std::string_view field, std::size_t need) const {
  return error(Errc::kTruncated, field,
               fmt::format("needs {} bytes, {} left", need, remaining()));
}

Result<void> Cursor::seek(std::size_t pos, std::string_view field) {
  if (pos > data_.size())
    return error(Errc::kTruncated, field,
                 fmt::format("position {:#x} is past the end ({:#x} bytes)", pos, data_.size()));
  pos_ = pos;
  return {};
}

Result<void> Cursor::skip(std::size_t n, std::string_view field) {
  if (remaining() < n) return short_read(field, n);
  pos_ += n;
  return {};
}

Result<void> Cursor::align(std::size_t alignment, std::string_view field) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return error(Errc::kInvalidArgument, field, "alignment is not a power of two");
  std::size_t pad = (alignment - (pos_ & (alignment - 1))) & (alignment - 1);
  if (remaining() < pad) {
    /* Padding at the very end of a note segment may be absent. */
    return short_read(field, pad);
  }
  pos_ += pad;
  return {};
}

Result<std::span<const std::uint8_t>> Cursor::bytes(std::size_t n, std::string_view field) {
  if (remaining() < n) return short_read(field, n);
  auto s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

Result<std::string_view> Cursor::cstring(std::string_view field) {
  const auto *start = data_.data() + pos_;
  const void *nul = std::memchr(start, 0, remaining());
  if (nul == nullptr)
    return error(Errc::kBadData, field, "string is not NUL-terminated within its bounds");
  std::size_t len = static_cast<const std::uint8_t *>(nul) - start;
  pos_ += len + 1;
  return std::string_view(reinterpret_cast<const char *>(start), len);
}

}  // namespace core_timeline::reader
