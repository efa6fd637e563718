// SPDX-License-Identifier: MIT
//
// gen_fuzz_corpus DIR - writes the seed corpus of reader/fuzz/fuzz_reader
// (small cores and rings from core_builder.h).  Rerun after a format change:
//   build/bin/reader_gen_fuzz_corpus reader/fuzz/corpus
#include <cstdio>
#include <fstream>
#include <string>

#include "core_builder.h"

using ct::test::CoreBuilder;
using ct::test::RingBuilder;
namespace fmtx = core_timeline::format;

namespace {
void put(const std::string &dir, const std::string &name, std::uint8_t mode, const std::vector<std::uint8_t> &b) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
}
RingBuilder small_ring() {
  RingBuilder r(2, 8);
  r.add(0, 1, fmtx::kKindLaneClaim, 0, 0);
  r.add(0, 2, fmtx::kKindUser, 0x1001, 41);
  r.add(0, 3, fmtx::kKindFree, 0, 0x7ffd00000100);
  auto &c = r.add(0, 4, fmtx::kKindCrash, 11, 0, 0x7ffd0000f000, 4242, 0, 0x401100);
  c.inline_len = sizeof(fmtx::CrashInfo);
  c.inline_data[0] = 1;
  r.add(1, 1, fmtx::kKindUserPtr, 0x2000, 0x7ffd00000200, 16, 4243).inline_len = 16;
  return r;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  RingBuilder r = small_ring();
  put(dir, "ring-healthy", 1, r.bytes());
  RingBuilder t = small_ring();
  t.slot(0, 1).begin_seq |= fmtx::kSeqWriting;
  t.lane(0).write_index = 100;
  put(dir, "ring-torn-inflated", 1, t.bytes());
  put(dir, "core-healthy", 0, ct::test::standard_core(r).build());
  CoreBuilder n = ct::test::standard_core(r);
  n.with_file_note = false;
  put(dir, "core-no-nt-file", 0, n.build());
  CoreBuilder x;
  x.map(ct::test::kExeAddr, ct::test::fake_elf_page({1, 2}), "/usr/bin/victim", 0x2000, 5);
  x.map_excluded(ct::test::kRingAddr, r.bytes().size(), "/memfd:core-timeline (deleted)");
  put(dir, "core-excluded", 0, x.build());
  RingBuilder r2(2, 8, 4242);
  r2.add(0, 1, fmtx::kKindThreadName, 0, 0).inline_len = 6;
  CoreBuilder two = ct::test::standard_core(r);
  two.map(ct::test::kRingAddr + 0x100000, r2.bytes(), "/memfd:core-timeline (deleted)");
  put(dir, "core-two-rings", 0, two.build());
  /* Ring format 5: a CRASH whose 20-frame walk is a chain of 3 STACK slots. */
  ct::test::RingV3 chained = ct::test::ring_with_crash_chain(20, fmtx::kStackComplete);
  put(dir, "core-stack-chain", 0, ct::test::standard_core(chained).build());
  return 0;
}
