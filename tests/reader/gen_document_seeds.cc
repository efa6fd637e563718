// SPDX-License-Identifier: MIT
//
// gen_document_seeds DIR - writes the seed corpus of reader/fuzz/fuzz_document
// (fuzz_document.cc says what each first byte selects).  The documents are
// real ones: the reader's analysis of a core from core_builder.h (two
// threads, a span, a CRASH), made into a stored document by the document
// module as core-timelined makes it, and one for a crash with no core.
// Rerun after a document format change, then minimize:
//   build/bin/reader_gen_document_seeds /tmp/seeds
//   mkdir M && fuzz_document -merge=1 M /tmp/seeds && replace reader/fuzz/corpus-document by M
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "core_builder.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"

using ct::test::RingBuilder;
using namespace std::string_literals;
namespace fmtx = core_timeline::format;
namespace doc = core_timeline::document;
namespace ctr = core_timeline::reader;

namespace {

void put(const std::string &dir, const std::string &name, std::string_view head, const std::string &body) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  out.write(body.data(), static_cast<std::streamsize>(body.size()));
}

doc::Coredump coredump(bool with_core) {
  doc::Coredump c;
  c.journal_cursor = "s=0f1e2d3c4b5a69788796a5b4c3d2e1f0;i=1a2b;b=6c8e7f2a9b1d4e3f8a7b6c5d4e3f2a1b;m=5f5e100;t=5f0e1d2c3b4a5;x=1";
  c.boot_id = "6c8e7f2a9b1d4e3f8a7b6c5d4e3f2a1b";
  c.realtime_usec = 1764800000123456;
  c.storage = with_core ? "external" : "none";
  if (with_core)
    c.core_file = "/var/lib/systemd/coredump/core.victim.1000.6c8e7f2a9b1d4e3f8a7b6c5d4e3f2a1b.4242.1764800000000000.zst";
  c.fields = {{"COREDUMP_PID", "4242"},
              {"COREDUMP_UID", "1000"},
              {"COREDUMP_GID", "1000"},
              {"COREDUMP_SIGNAL", "11"},
              {"COREDUMP_SIGNAL_NAME", "SIGSEGV"},
              {"COREDUMP_EXE", "/usr/bin/victim"},
              {"COREDUMP_COMM", "victim"},
              {"COREDUMP_TIMESTAMP", "1764800000000000"},
              {"COREDUMP_DUMPABLE", "1"},
              {"COREDUMP_PROC_STATUS", "Name:\tvictim\nTgid:\t4242\nPid:\t4242\nNStgid:\t4242\t7\nNSpid:\t4242\t7\n"},
              {"_BOOT_ID", c.boot_id}};
  return c;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  RingBuilder r(2, 16);
  r.add(0, 1, fmtx::kKindLaneClaim, 0, 0);
  r.add(0, 2, fmtx::kKindThreadName, 0, 0).inline_len = 6;
  r.add(0, 3, fmtx::kKindSpanBegin, 0x3001, 7);
  r.add(0, 4, fmtx::kKindUser, 0x1001, 41);
  r.add(1, 1, fmtx::kKindUserPtr, 0x2000, 0x7ffd00000200, 16, 4243).inline_len = 16;
  r.add(0, 5, fmtx::kKindFree, 0, 0x7ffd00000100);
  auto &c = r.add(0, 6, fmtx::kKindCrash, 11, 0, 0x7ffd0000f000, 4242, 0, 0x401100);
  c.inline_len = sizeof(fmtx::CrashInfo);
  c.inline_data[0] = 1;
  auto core = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "seed");
  if (!core) {
    std::fprintf(stderr, "gen_document_seeds: the built core does not read: %s\n", core.error().message.c_str());
    return 1;
  }
  ctr::ReadOptions opts;
  opts.symbolize = false;
  const ctr::Analysis a = ctr::analyze(*core, opts);
  const std::string reader_json = ctr::render_json(a);
  auto reader = doc::parse_reader_document(reader_json);
  if (!reader) {
    std::fprintf(stderr, "gen_document_seeds: %s\n", reader.error().message.c_str());
    return 1;
  }
  doc::StoredParts p;
  p.reader = &*reader;
  p.status = reader->summary.status;
  p.coredump = coredump(true);
  p.daemon.version = "seed";
  p.daemon.reader_status = reader->summary.status;
  p.text = ctr::render_text(a);
  const std::string stored = doc::serialize(doc::stored_document(p));
  /* The compact document (schema_version 7), stored as core-timelined
   * stores it now. */
  auto compact_reader = doc::parse_reader_document(ctr::render_compact(a));
  if (!compact_reader) {
    std::fprintf(stderr, "gen_document_seeds: %s\n", compact_reader.error().message.c_str());
    return 1;
  }
  p.reader = &*compact_reader;
  const std::string compact = doc::serialize(doc::stored_document(p));
  doc::StoredParts none;
  none.status = doc::Status::kCoreMissing;
  none.reason = "the core was not stored (Storage=none)";
  none.coredump = coredump(false);
  none.daemon.version = "seed";
  const std::string missing = doc::serialize(doc::stored_document(none));

  // 0: ctl-query's read, with no request options and with all of them.
  put(dir, "timeline-ok", "\x00"s, stored);
  put(dir, "timeline-ok-all-options", std::string(1, static_cast<char>(31 << 2)), stored);
  put(dir, "timeline-core-missing", "\x00"s, missing);
  put(dir, "timeline-compact", "\x00"s, compact);
  put(dir, "timeline-compact-text", std::string(1, static_cast<char>(1 << 2)), compact);
  // 1: the journal bound: one that keeps it whole, one that cuts events
  // and text, one too small for even the rest.
  put(dir, "bound-whole", "\x01\xff\xff"s, stored);
  put(dir, "bound-cut", "\x01\x2e\xdf"s, stored);  // 12,000 bytes
  put(dir, "bound-too-small", "\x01\x01\x00"s, stored);
  // 2: ids from COREDUMP_PID, COREDUMP_PROC_STATUS and the reader document.
  put(dir, "ids-namespaced", "\x02" "4242\0NStgid:\t4242\t7\n\0"s, reader_json);
  put(dir, "ids-host", "\x02" "4242\0NStgid:\t4242\n\0"s, reader_json);
  // 3: file names and sender fields.
  put(dir, "name-timeline", "\x03", "core.vic\\x2etim.1000.6c8e7f2a9b1d4e3f8a7b6c5d4e3f2a1b.4242.1764800000000000.timeline.json");
  put(dir, "name-core", "\x03", "core.victim.1000.6c8e7f2a9b1d4e3f8a7b6c5d4e3f2a1b.4242.1764800000000000.zst");
  put(dir, "sender-user", "\x03" "1000\0journal\0" "1000\0/system.slice/core-timeline.service\0"s, "");
  return 0;
}
