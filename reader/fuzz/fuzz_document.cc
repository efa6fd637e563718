// SPDX-License-Identifier: MIT
//
// fuzz_document - libFuzzer target over what ctl-query and core-timelined
// parse besides cores: a stored timeline document (any user who can write
// a file that ctl-query reads, or log a journal entry, shapes one), a
// timeline's file name, a systemd-coredump entry's pid fields, and a
// journal entry's sender fields (docs/fuzzing.md, "fuzz_document").
//
// The first byte picks the path (bits 0-1) and its options (bits 2-7); the
// rest is the input:
//   0: ctl-query's parse_timeline() (daemon/ctl-query/document_reader.h), with
//      the request bits 2-6 choose.  Oracles: input that is not JSON is
//      never accepted; an accepted one has its "status" string and
//      "coredump.fields" object, on_event saw exactly event_count events,
//      and Timeline::lookup() of any path answers without crashing.
//   1: parse_stored_document(), then bound_document() of it to a bound the
//      next two bytes choose, as core-timelined does before it logs the
//      timeline entry (journal_entry.h).  Oracles: a bounded document fits
//      its bound and is itself a stored document; uncut, it is the whole
//      document byte for byte; cut, its "cut" counts the events it keeps,
//      and those are the whole document's newest, in order.
//   2: process_ids() (ids.h) of COREDUMP_PID, COREDUMP_PROC_STATUS and a
//      reader document, split at the first two NUL bytes.  Oracles (the
//      ids claim only what the evidence shows): "not namespaced" never
//      stands beside a host pid that differs from the core's pid, every
//      thread's host tid is its tid then, tids are ascending and distinct,
//      and a host tid is known only where ids.h says it can be told.
//   3: the file-name parsers (names.h) and sender_trust() (journal_entry.h).
//      Oracles: a parsed timeline name formats back to a name that parses
//      to the same facts; xescape_comm() is undone by unescape_x() and
//      leaves no byte systemd-coredump would escape; sender_trust() is
//      kDaemon for root only on the journal transport.
// A failed oracle aborts, so libFuzzer keeps the input.  Seeds:
// reader/fuzz/corpus-document, written by tests/reader/gen_document_seeds.cc
// (build/bin/reader_gen_document_seeds DIR) from a real reader document.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core_timeline/document/ids.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/names.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"
#include "document_reader.h"

namespace {

namespace doc = core_timeline::document;
namespace jn = core_timeline::document::journal;
namespace ctlq = core_timeline::ctl_query;
using Json = nlohmann::ordered_json;

[[noreturn]] void fail(const char *what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz oracle: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/* A compact document read from its bytes (read_compact_document(), what
 * show takes) and from its tree (parse_stored_document() then
 * analysis_of_compact()): one is accepted when the other is, with the
 * same text; only a document that repeats a top-level member may be
 * refused by the bytes alone (the tree keeps the last). */
void compact_agrees(std::string_view in) {
  namespace ctr = core_timeline::reader;
  const auto streamed = ctr::read_compact_document(in);
  std::optional<ctr::Analysis> from_tree;
  bool tree_ok = false;
  if (auto tree = doc::parse_stored_document(in); tree && ctr::is_compact(*tree)) {
    tree_ok = true;
    if (tree->contains("events")) {
      auto a = ctr::analysis_of_compact(*tree);
      tree_ok = a.ok();
      if (a) from_tree = std::move(*a);
    }
  }
  if (streamed.ok() != tree_ok) {
    const bool twice = !streamed.ok() && streamed.error().message.find("twice") != std::string::npos;
    if (!twice) fail("the compact document's bytes and tree disagree", streamed.ok() ? "bytes accept" : streamed.error().message);
    return;
  }
  if (!streamed.ok()) return;
  if (streamed->analysis.has_value() != from_tree.has_value()) fail("one read has events, the other none");
  if (from_tree && ctr::render_text(*streamed->analysis) != ctr::render_text(*from_tree))
    fail("the compact document's bytes and tree give different texts");
}

void timeline(std::uint8_t opts, std::string_view in) {
  if (core_timeline::reader::looks_compact(in)) compact_agrees(in);
  ctlq::ReadRequest r;
  r.want_text = (opts & 1) != 0;
  r.keep_raw = (opts & 2) != 0;
  r.all_fields = (opts & 4) != 0;
  if ((opts & 8) != 0) r.fields = {"COREDUMP_PROC_STATUS", "COREDUMP_CMDLINE"};
  // A path into "events" keeps every event; into coredump.fields, one field.
  if ((opts & 16) != 0) r.paths = {"events.0.kind", "coredump.fields.COREDUMP_UNIT", "process.exe", "crash"};
  std::size_t seen = 0;
  r.on_event = [&](const Json &e, std::size_t index) {
    if (index != seen || !e.is_object()) fail("on_event order or type");
    ++seen;
  };
  std::size_t processes = 0;
  r.on_process = [&](const Json &p) {
    if (!p.is_object()) fail("on_process given a non-object");
    ++processes;
  };
  const auto t = ctlq::parse_timeline(in, "/var/lib/systemd/coredump/core.x.1000.b.1.1.timeline.json", r);
  const bool is_json = nlohmann::json::accept(in);
  if (!t) {
    if (t.error().message.empty()) fail("a refusal without a message");
    return;
  }
  if (!is_json) fail("parse_timeline accepted what is not JSON", in.substr(0, 200));
  if (seen != t->event_count) fail("on_event calls and event_count differ");
  if (t->event_count > 0 && !t->has_events) fail("events counted without \"events\"");
  (void)t->status();
  for (const char *k : {"COREDUMP_PID", "COREDUMP_COMM", "COREDUMP_UNIT"}) (void)t->field(k);
  for (const char *p : {"status", "events.0.kind", "events.18446744073709551616", "coredump.fields.COREDUMP_UNIT",
                        "process.exe", "crash.signal_name.x", "", ".", "pids.threads.0.tid"})
    (void)t->lookup(p);
  if (r.keep_raw && t->raw != in) fail("keep_raw did not keep the bytes");
  (void)processes;
}

void bounded(std::string_view in) {
  if (in.size() < 2) return;
  const std::uint64_t max = 1 + (static_cast<std::uint64_t>(static_cast<std::uint8_t>(in[0])) << 8 |
                                 static_cast<std::uint8_t>(in[1])) % 40000;
  in.remove_prefix(2);
  auto d = doc::parse_stored_document(in);
  if (!d) return;
  const std::string whole = doc::serialize(*d);
  // What the whole document's events are once serialized (invalid UTF-8
  // replaced): the cut copies their bytes.
  auto again = doc::parse_stored_document(whole);
  if (!again) fail("a serialized stored document does not parse again", again.error().message);
  auto b = jn::bound_document(*d, whole, max);
  if (!b) return;
  if (b->bytes.size() > max)
    fail("bound_document exceeded its bound", std::to_string(b->bytes.size()) + " > " + std::to_string(max));
  if (!b->cut) {
    if (b->bytes != whole) fail("an uncut document is not the whole document");
    return;
  }
  auto cut = doc::parse_stored_document(b->bytes);
  if (!cut) fail("a cut document is not a stored document", cut.error().message);
  const Json &c = cut->at("cut");
  const std::uint64_t kept = c.at("events_kept").get<std::uint64_t>();
  const auto ev = again->find("events");
  const std::size_t total = ev != again->end() && ev->is_array() ? ev->size() : 0;
  if (c.at("events_total").get<std::uint64_t>() != total) fail("cut.events_total");
  const auto cev = cut->find("events");
  const std::size_t have = cev != cut->end() && cev->is_array() ? cev->size() : 0;
  if (have != kept || kept > total) fail("cut.events_kept", std::to_string(kept) + " kept, " + std::to_string(have) +
                                                                 " in the cut, " + std::to_string(total) + " in all");
  for (std::size_t i = 0; i < kept; ++i)
    if ((*cev)[i] != (*ev)[total - kept + i]) fail("a cut event is not the whole document's", std::to_string(i));
}

void ids(std::string_view in) {
  const auto z1 = in.find('\0');
  const auto z2 = z1 == std::string_view::npos ? std::string_view::npos : in.find('\0', z1 + 1);
  std::map<std::string, std::string> fields;
  if (z1 != std::string_view::npos) fields["COREDUMP_PID"] = std::string(in.substr(0, z1));
  if (z2 != std::string_view::npos) fields["COREDUMP_PROC_STATUS"] = std::string(in.substr(z1 + 1, z2 - z1 - 1));
  const std::string_view reader_bytes = z2 == std::string_view::npos ? in : in.substr(z2 + 1);
  const auto tree = doc::parse_stored_document(reader_bytes);  // bounded depth; needs only an object with "status"
  const doc::ProcessIds p = doc::process_ids(fields, tree ? &*tree : nullptr);
  if (p.namespaced == false && p.host_pid && p.pid && *p.host_pid != *p.pid)
    fail("not namespaced, yet the host pid differs from the core's");
  if (p.namespaced.has_value() == p.from.empty()) fail("namespaced and how it was told disagree");
  for (std::size_t i = 0; i < p.threads.size(); ++i) {
    const doc::ThreadIds &t = p.threads[i];
    if (i > 0 && p.threads[i - 1].tid >= t.tid) fail("tids not ascending and distinct");
    if (p.namespaced == false && t.host_tid != t.tid) fail("not namespaced, yet a host tid differs");
    if (p.namespaced != false && t.host_tid && !(p.pid && t.tid == *p.pid && t.host_tid == p.host_pid))
      fail("a namespaced thread's host tid told without evidence");
  }
  (void)doc::ids_json(p).dump();
  (void)doc::dumpable(fields);
  if (doc::namespace_pids(in).size() > 32) fail("more than 32 namespace pids");
}

void names(std::string_view in) {
  if (const auto n = doc::parse_timeline_name(in)) {
    if (!doc::is_timeline_file_name(in)) fail("parsed a name that is not a timeline file name");
    if (n->comm.size() <= 32) {
      const std::string again = doc::format_timeline_name(*n);
      const auto m = doc::parse_timeline_name(again);
      if (!m || m->comm != n->comm || m->uid != n->uid || m->boot_id != n->boot_id || m->pid != n->pid ||
          m->usec != n->usec)
        fail("a timeline name does not survive format and parse", again);
    }
  }
  if (const auto n = doc::parse_core_file_name(in)) {
    const std::string t = doc::timeline_name_for_core(in);
    const auto m = doc::parse_timeline_name(t);
    if (!m || m->pid != n->pid || m->comm != n->comm) fail("a core's timeline name does not parse as the core's", t);
  }
  const std::string e = doc::xescape_comm(in);
  for (const char c : e)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '.' || c == '/' ||
        c == ' ')
      fail("xescape_comm left a byte unescaped", e);
  if (doc::unescape_x(e) != in) fail("unescape_x does not undo xescape_comm");
  (void)doc::unescape_x(in);
  // Sender fields: four strings split at NUL; a missing one is absent.
  std::optional<std::string_view> f[4];
  std::string_view rest = in;
  for (auto &v : f) {
    const auto z = rest.find('\0');
    if (z == std::string_view::npos) break;
    v = rest.substr(0, z);
    rest.remove_prefix(z + 1);
  }
  const jn::Sender s{f[0], f[1], f[2], f[3]};
  const jn::Trust trust = jn::sender_trust(s);
  if (trust != jn::Trust::kNone && (!s.transport || *s.transport != "journal" || !s.uid))
    fail("trusted without the journal transport and a _UID");
  if (trust != jn::Trust::kNone && *s.uid != "0" && (!s.coredump_uid || *s.uid != *s.coredump_uid))
    fail("a user trusted for another user's crash");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] & 3) {
    case 0: timeline(static_cast<std::uint8_t>(data[0] >> 2), in); break;
    case 1: bounded(in); break;
    case 2: ids(in); break;
    default: names(in); break;
  }
  return 0;
}
