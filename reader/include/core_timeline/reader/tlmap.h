/* SPDX-License-Identifier: MIT */
/*
 * tlmap.h - names for user event ids (.tlmap files).
 *
 * A .tlmap file has one "ID NAME [ARG0 [ARG1]]" line per id, as in
 * docs/design.md; the argument names are optional:
 *
 *     # comment
 *     0x1001 REQ_PARSE request_id bytes
 *     4098   CONFIG_RELOAD
 *
 * ID is decimal or 0x-hex and fits in 32 bits; NAME and the argument names
 * are 1-64 characters of [A-Za-z0-9_.:-], separated by blanks.  Blank lines and lines starting with '#' are skipped.  A
 * repeated id is an error (two names for one event would be a guess).
 *
 * Thread-safety: a TlMap is immutable after parsing.
 */
#ifndef CORE_TIMELINE_READER_TLMAP_H
#define CORE_TIMELINE_READER_TLMAP_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

class TlMap {
 public:
  /** Parses `text`; `origin` names it in errors ("FILE:LINE: ...").  An
   *  error quotes the bytes at fault, and the origin, escaped by
   *  printable() (printable.h): no byte of the file reaches a terminal raw,
   *  and a NUL does not end the message. */
  static Result<TlMap> parse(std::string_view text, std::string_view origin);
  /** Reads and parses the file at `path` (at most 16 MiB).  kIo, kBadData. */
  static Result<TlMap> load(const std::string &path);

  struct Entry {
    std::string name, arg0, arg1;  /**< arg names "" when not given */
  };
  /** The name of `id`, or nullptr. */
  const std::string *find(std::uint32_t id) const;
  /** The whole entry of `id`, or nullptr. */
  const Entry *entry(std::uint32_t id) const;
  std::size_t size() const { return names_.size(); }

 private:
  std::map<std::uint32_t, Entry> names_;
};

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_TLMAP_H
