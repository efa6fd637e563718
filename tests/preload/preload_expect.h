// SPDX-License-Identifier: MIT
// preload_expect.h - the events preload_victim expects, and the checks that
// find them among a thread's events: in the victim's own memory
// (preload_victim), and in its core, decoded with the format header and by
// the reader (preload_core_test).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core_timeline/ring_format.h"

namespace ct_test {

namespace fmt = core_timeline::format;

// An event as the checks see it, whoever decoded it.
struct Seen {
  uint16_t kind;
  uint32_t id;
  uint64_t arg0;
  uint64_t arg1;
};

struct Expected {
  Seen event;
  const char *what;  // the call that should have recorded it (a literal:
                     // building one must not allocate while heap calls
                     // are being recorded)
};

inline bool is_alloc_kind(uint16_t k) { return k >= fmt::kKindMalloc && k <= fmt::kKindRealloc; }
inline bool is_io_kind(uint16_t k) { return k >= fmt::kKindIoFirst && k <= fmt::kKindIoLast; }

inline std::string describe(const Seen &e) {
  char buf[128];
  snprintf(buf, sizeof buf, "kind %u id %u arg0 %#" PRIx64 " arg1 %#" PRIx64, e.kind, e.id,
           e.arg0, e.arg1);
  return buf;
}

inline bool same(const Seen &a, const Seen &b) {
  return a.kind == b.kind && a.id == b.id && a.arg0 == b.arg0 && a.arg1 == b.arg1;
}

// `want`, exactly and in order, among the events of `seen` (one thread's,
// oldest first) whose kind is of the same family (`is_kind`): none missing,
// none recorded twice (a calloc that the next allocator implements with the
// public malloc, a __read_chk that calls the public read), none recorded in
// between.  Returns one line per problem; empty if all is well.
inline std::vector<std::string> check_exactly(const std::vector<Expected> &want,
                                              bool (*is_kind)(uint16_t),
                                              const std::vector<Seen> &seen) {
  std::vector<std::string> problems;
  if (want.empty()) return problems;
  std::vector<Seen> family;
  for (const Seen &s : seen)
    if (is_kind(s.kind)) family.push_back(s);
  size_t start = 0;
  while (start < family.size() && !same(want[0].event, family[start])) ++start;
  for (size_t i = 0; i < want.size(); ++i) {
    const Seen *got = start + i < family.size() ? &family[start + i] : nullptr;
    if (got != nullptr && same(want[i].event, *got)) continue;
    problems.push_back("missing " + std::string(want[i].what) + " (" + describe(want[i].event) + ")" +
                       (got ? "; in its place " + describe(*got) : ""));
  }
  return problems;
}

// No event of the family at all.
inline std::vector<std::string> check_absent(bool (*is_kind)(uint16_t), const char *family,
                                             const std::vector<Seen> &seen) {
  std::vector<std::string> problems;
  for (const Seen &s : seen)
    if (is_kind(s.kind))
      problems.push_back(std::string("unexpected ") + family + " event " + describe(s));
  return problems;
}

// The expectation file preload_victim --expect-out writes: "tid N", then one
// "expect KIND ID ARG0 ARG1" line (hex) per event.
inline bool write_expectations(const std::string &path, uint32_t tid,
                               const std::vector<Expected> &want) {
  FILE *f = fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  fprintf(f, "tid %u\n", tid);
  for (const Expected &e : want)
    fprintf(f, "expect %x %x %" PRIx64 " %" PRIx64 "\n", e.event.kind, e.event.id, e.event.arg0,
            e.event.arg1);
  return fclose(f) == 0;
}

inline bool read_expectations(const std::string &path, uint32_t *tid,
                              std::vector<Expected> *want) {
  std::ifstream in(path);
  std::string word;
  bool have_tid = false;
  while (in >> word) {
    if (word == "tid") {
      have_tid = static_cast<bool>(in >> *tid);
    } else if (word == "expect") {
      Expected e{};
      in >> std::hex >> e.event.kind >> e.event.id >> e.event.arg0 >> e.event.arg1 >> std::dec;
      if (!in) return false;
      e.what = "an event preload_victim recorded before it crashed";
      want->push_back(e);
    } else {
      return false;
    }
  }
  return have_tid;
}

}  // namespace ct_test
