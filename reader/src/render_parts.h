/* SPDX-License-Identifier: MIT */
/*
 * render_parts.h - the pieces of the full JSON document (render.cc) that
 * the compact document (compact_write.cc, compact_read.cc) shares: each
 * member is made by one function, whichever document it goes into.
 * Internal to ct::reader.
 *
 * Thread-safety: pure functions of the Analysis.
 */
#ifndef CORE_TIMELINE_READER_RENDER_PARTS_H
#define CORE_TIMELINE_READER_RENDER_PARTS_H

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/render.h"

namespace core_timeline::reader {

/* Output gathered into pieces of about 64 KiB before they go to `out`. */
class Buffered {
 public:
  explicit Buffered(const Output &out) : out_(out) { buf_.reserve(kPiece + 4096); }
  Buffered &operator+=(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kPiece) flush();
    return *this;
  }
  Buffered &operator+=(char c) {
    buf_.push_back(c);
    if (buf_.size() >= kPiece) flush();
    return *this;
  }
  /* False once `out` said stop. */
  bool flush() {
    if (ok_ && !buf_.empty()) ok_ = out_(buf_);
    buf_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  static constexpr std::size_t kPiece = 64 * 1024;
  const Output &out_;
  std::string buf_;
  bool ok_ = true;
};

}  // namespace core_timeline::reader

namespace core_timeline::reader::parts {

using json = nlohmann::ordered_json;

/** A location object (docs/timeline-json.md, "location"). */
json location(const Location &l);
/** A pointer's mapping object ("pointer"). */
json mapping(const AddressMapping &m);
/** "process". */
json process(const Analysis &a);
/** "snapshot" (null for a crash's core). */
json snapshot(const Analysis &a);
/** A ring's object, its "torn" list included. */
json ring(const RingReport &r);
/** One event as the full document writes it. */
json event(const Analysis &a, const Event &e);
/** "time" as the full document writes it (reference_event an object). */
json time(const Analysis &a);
/** One span as the full document writes it (begin and end objects). */
json span(const Analysis &a, const Span &sp);
/** One thread ("threads" element). */
json thread(const ThreadSummary &t);
/** "windows", "names", "magic_rejected", "sidecar". */
json windows(const Analysis &a);
json names(const Analysis &a);
json magic_rejected(const Analysis &a);
json sidecar(const Analysis &a);
/** "core". */
json core(const Analysis &a);

}  // namespace core_timeline::reader::parts

#endif  // CORE_TIMELINE_READER_RENDER_PARTS_H
