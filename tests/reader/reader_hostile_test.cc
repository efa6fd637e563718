// SPDX-License-Identifier: MIT
//
// Hostile cores: inputs crafted to make the reader crash, hang, allocate
// without bound or open files it should not.  A privileged daemon runs the
// reader on every crash, and any local user shapes the crashed process's
// memory, so each test names the attack and the bound that holds it.
// Cores are built in the test (core_builder.h); the program headers are
// patched afterwards where the builder lays bytes out the kernel's way.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core_builder.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"
#include "test_util.h"

namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;
using ct::testing::CoreBuilder;
using ct::testing::RingBuilder;
using Bytes = std::vector<std::uint8_t>;

namespace {

ctr::Analysis analyze_bytes(const Bytes &bytes) {
  auto core = ctr::CoreFile::from_bytes(bytes, "hostile-core");
  if (!core) return ctr::analysis_of_error("hostile-core", core.error());
  ctr::ReadOptions opts;
  opts.symbolize = false;
  return ctr::analyze(*core, opts);
}

RingBuilder three_events() {
  RingBuilder r;
  r.add(0, 1, fmtx::kKindUser, 0x1001, 41);
  r.add(0, 2, fmtx::kKindFree, 0, 0x7ffd00000100);
  r.add(0, 3, fmtx::kKindUser, 0x1003, 1001);
  return r;
}

/* Program header `i` of a core built by CoreBuilder (0 is its PT_NOTE, 1.. its
 * loads in order), to edit in place. */
Elf64_Phdr *phdr(Bytes &core, std::size_t i) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, core.data(), sizeof eh);
  return reinterpret_cast<Elf64_Phdr *>(core.data() + eh.e_phoff + i * sizeof(Elf64_Phdr));
}

}  // namespace

/* Attack: N program headers over the same file bytes.  One ring in the file
 * listed by two PT_LOADs was two rings (every event twice); N of them over
 * a 1 MiB ring made N copies (2 MB of core, 5 GB of memory).  Likewise one
 * PT_NOTE listed twice doubled every thread.  The kernel writes each
 * segment's bytes once, one after another: overlap means a crafted core. */
TEST(HostileCore, ProgramHeadersOverTheSameFileBytesAreRefused) {
  {
    RingBuilder r = three_events();
    CoreBuilder c = ct::testing::standard_core(r);
    c.map(ct::testing::kRingAddr + 0x100000, r.bytes());  // phdr 4: a second copy
    Bytes bytes = c.build();
    phdr(bytes, 4)->p_offset = phdr(bytes, 2)->p_offset;  // now over the first copy
    auto core = ctr::CoreFile::from_bytes(bytes, "two-loads-one-ring");
    ASSERT_FALSE(core) << "two PT_LOADs over one ring were accepted";
    EXPECT_EQ(core.error().code, ctr::Errc::kBadData);
    EXPECT_NE(core.error().message.find("overlap"), std::string::npos) << core.error().message;
    auto a = analyze_bytes(bytes);
    EXPECT_EQ(a.status, ctr::Status::kCoreUnreadable);
    EXPECT_TRUE(a.events.empty());
  }
  {
    RingBuilder r = three_events();
    CoreBuilder c = ct::testing::standard_core(r);
    c.map(0x7e0000000000, Bytes(64, 0));  // phdr 4, turned into a second PT_NOTE
    Bytes bytes = c.build();
    *phdr(bytes, 4) = *phdr(bytes, 0);
    auto core = ctr::CoreFile::from_bytes(bytes, "two-notes-one-blob");
    ASSERT_FALSE(core) << "the notes were read twice: " << (core ? core->notes().threads.size() : 0) << " threads";
    EXPECT_EQ(core.error().code, ctr::Errc::kBadData);
  }
  {
    /* Segments that merely touch, and excluded (p_filesz 0) segments at
     * offset 0, are what the kernel writes: still accepted. */
    RingBuilder r = three_events();
    CoreBuilder c = ct::testing::standard_core(r);
    c.map_excluded(0x7e0000000000, 0x10000, "/memfd:other (deleted)");
    auto a = analyze_bytes(c.build());
    EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
    EXPECT_EQ(a.events.size(), 3u);
  }
}
