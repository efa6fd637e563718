// SPDX-License-Identifier: MIT
//
// extract_test.cc (daemon_unit_test): the sparse core sink and decompression
// (extract.h).

#include "daemon_unit_support.h"

// ---- a synthetic core for the sink ---------------------------------------

namespace {

struct Seg {
  std::uint64_t vaddr;
  std::uint64_t size;
  std::string file;  // NT_FILE name, "" for anonymous
};

struct Core {
  std::vector<std::uint8_t> bytes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seg_ranges;  // file offset, size
  std::uint64_t head_end = 0;  // end of the ELF header, phdrs and notes
};

void put(std::vector<std::uint8_t> &b, std::size_t off, const void *p, std::size_t n) {
  if (b.size() < off + n) b.resize(off + n);
  std::memcpy(b.data() + off, p, n);
}

// A note besides NT_FILE: its type and its descriptor.
struct ExtraNote {
  Elf64_Word type;
  std::vector<std::uint8_t> desc;
};

// ELF header, PT_NOTE with an NT_FILE note (and `extra` after it), one
// PT_LOAD per segment; each segment filled with a pattern that differs per
// page.
Core build_core(const std::vector<Seg> &segs, const std::vector<ExtraNote> &extra = {}) {
  std::vector<std::uint8_t> note;
  auto add = [&](const void *p, std::size_t n) {
    const auto *c = static_cast<const std::uint8_t *>(p);
    note.insert(note.end(), c, c + n);
  };
  std::vector<std::uint8_t> desc;
  auto dadd = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) desc.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  std::vector<const Seg *> files;
  for (const auto &s : segs)
    if (!s.file.empty()) files.push_back(&s);
  dadd(files.size());
  dadd(4096);
  for (const auto *s : files) {
    dadd(s->vaddr);
    dadd(s->vaddr + s->size);
    dadd(0);
  }
  for (const auto *s : files) desc.insert(desc.end(), s->file.begin(), s->file.end() + 1);
  while (desc.size() % 4) desc.push_back(0);
  Elf64_Nhdr nh{5, static_cast<Elf64_Word>(desc.size()), NT_FILE};
  add(&nh, sizeof nh);
  add("CORE\0\0\0", 8);
  note.insert(note.end(), desc.begin(), desc.end());
  for (const auto &x : extra) {
    Elf64_Nhdr xh{5, static_cast<Elf64_Word>(x.desc.size()), x.type};
    add(&xh, sizeof xh);
    add("CORE\0\0\0", 8);
    note.insert(note.end(), x.desc.begin(), x.desc.end());
    while (note.size() % 4) note.push_back(0);
  }

  Core c;
  const std::size_t phnum = 1 + segs.size();
  const std::size_t note_off = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  std::uint64_t off = (note_off + note.size() + 4095) / 4096 * 4096;
  const Elf64_Ehdr eh = ct::test::core_ehdr(static_cast<Elf64_Half>(phnum));
  put(c.bytes, 0, &eh, sizeof eh);
  Elf64_Phdr np{};
  np.p_type = PT_NOTE;
  np.p_offset = note_off;
  np.p_filesz = note.size();
  put(c.bytes, eh.e_phoff, &np, sizeof np);
  put(c.bytes, note_off, note.data(), note.size());
  c.head_end = note_off + note.size();
  for (std::size_t i = 0; i < segs.size(); ++i) {
    Elf64_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_offset = off;
    ph.p_vaddr = segs[i].vaddr;
    ph.p_filesz = ph.p_memsz = segs[i].size;
    ph.p_flags = PF_R | PF_W;
    ph.p_align = 4096;
    put(c.bytes, eh.e_phoff + (i + 1) * sizeof(Elf64_Phdr), &ph, sizeof ph);
    c.bytes.resize(off + segs[i].size);
    for (std::uint64_t p = 0; p < segs[i].size; p += 4096)
      std::memset(c.bytes.data() + off + p, static_cast<int>(1 + (i * 7 + p / 4096) % 250), 4096);
    c.seg_ranges.emplace_back(off, segs[i].size);
    off += segs[i].size;
  }
  return c;
}

// Writes a "CTLN" ring header at `off` with region_size `region`.
void plant_ring(Core &c, std::uint64_t off, std::uint64_t region) {
  std::memcpy(c.bytes.data() + off, "CTLN", 4);
  std::memcpy(c.bytes.data() + off + 48, &region, 8);
}

std::vector<std::uint8_t> read_file(int fd) {
  struct stat st;
  fstat(fd, &st);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(st.st_size));
  EXPECT_EQ(pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  return out;
}

// Feeds `bytes` in random chunk sizes.
ctd::ExtractStats feed_random(const std::vector<std::uint8_t> &bytes, int fd, const ctd::ExtractOptions &o,
                              unsigned seed) {
  ctd::CoreSink sink(fd, o);
  std::mt19937 rng(seed);
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    std::size_t n = std::min<std::size_t>(bytes.size() - pos, 1 + rng() % 20000);
    auto r = sink.feed({bytes.data() + pos, n});
    EXPECT_TRUE(r) << r.error().message;
    pos += n;
  }
  auto r = sink.finish();
  EXPECT_TRUE(r) << r.error().message;
  ctd::ExtractStats s;
  sink.fill(s);
  return s;
}

// A big core (keep_whole_below 1 MiB) through the sink in random chunks:
// what it wrote, and the disk that took.
struct SparseCopy {
  ctd::ExtractStats stats;
  std::vector<std::uint8_t> bytes;
  std::uint64_t disk_bytes = 0;
};

SparseCopy copy_sparse(const Core &c, unsigned seed) {
  SparseCopy copy;
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  EXPECT_TRUE(tmp) << tmp.error().message;
  if (!tmp) return copy;
  ctd::ExtractOptions o;
  o.keep_whole_below = 1 << 20;
  copy.stats = feed_random(c.bytes, tmp->get(), o, seed);
  copy.bytes = read_file(tmp->get());
  struct stat st;
  if (fstat(tmp->get(), &st) == 0) copy.disk_bytes = static_cast<std::uint64_t>(st.st_blocks) * 512;
  return copy;
}

// Checks that `out` holds the core's bytes in the (offset, size) ranges
// `keep` and zeros elsewhere; returns how many bytes the ranges cover.
std::uint64_t expect_only_kept(const Core &c, const std::vector<std::uint8_t> &out,
                               const std::vector<std::pair<std::uint64_t, std::uint64_t>> &keep) {
  std::vector<bool> kept(c.bytes.size());
  for (auto [at, n] : keep)
    for (std::uint64_t i = at; i < at + n; ++i) kept[i] = true;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != (kept[i] ? c.bytes[i] : 0)) ++wrong;
  EXPECT_EQ(wrong, 0u);
  return static_cast<std::uint64_t>(std::count(kept.begin(), kept.end(), true));
}

}  // namespace

// ---- the sparse sink ---------------------------------------------------

TEST(CoreSink, BigCoreKeepsHeadersRingsSmallSegmentsAndMagicRegionsOnly) {
  const std::uint64_t MiB = 1 << 20;
  Core c = build_core({
      {0x10000000, 3 * 4096, "/memfd:core-timeline (deleted)"},  // ring: whole
      {0x20000000, 3 * MiB, ""},                                  // anon: first page + magic region
      {0x30000000, 8192, ""},                                     // small: whole
      {0x40000000, 2 * MiB, "/usr/lib/libfoo.so"},                // big file-backed: first page
  });
  const std::uint64_t anon = c.seg_ranges[1].first;
  plant_ring(c, anon + 100 * 4096, 2 * 4096);
  const SparseCopy copy = copy_sparse(c, 1);
  const auto &stats = copy.stats;
  ASSERT_EQ(copy.bytes.size(), c.bytes.size());
  EXPECT_TRUE(stats.sparse);

  std::vector<std::pair<std::uint64_t, std::uint64_t>> keep = {
      {0, c.head_end},                                              // head
      c.seg_ranges[0],                                              // ring
      {anon, 4096},                                                 // first page
      {anon + 100 * 4096, 2 * 4096},                                // magic region
      c.seg_ranges[2],                                              // small
      {c.seg_ranges[3].first, 4096},                                // first page
  };
  std::uint64_t expect_kept = 0;
  for (auto [at, n] : keep) expect_kept += n;
  expect_only_kept(c, copy.bytes, keep);
  EXPECT_EQ(stats.kept_bytes, expect_kept);
  EXPECT_EQ(stats.core_bytes, c.bytes.size());
  // Holes cost no disk.
  EXPECT_LT(copy.disk_bytes, c.bytes.size() / 2);
}

// Guards against: a big core's sparse copy that drops the stacks, so the
// decoder's unwind stops at the crashing frame where core-timeline-read on
// the whole core walks the stack (and finds a program's handler that
// re-raised the fault).  Kept: a page below each thread's stack pointer
// (NT_PRSTATUS) and kStackKeep above it, and kStackKeep below AT_RANDOM's
// address (auxv), up to the end of its segment.
TEST(CoreSink, BigCoreKeepsTheStacksTheUnwinderWalks) {
  const std::uint64_t MiB = 1 << 20;
  const std::uint64_t thread_stack = 0x7f0000000000, main_stack = 0x7ffd00000000;
  const std::uint64_t sp = thread_stack + 2 * MiB + 0x100, at_random = main_stack + 3 * MiB - 0x200;
  std::vector<std::uint8_t> prstatus(336, 0);
  std::memcpy(prstatus.data() + 112 + 19 * 8, &sp, 8);  /* pr_reg: user_regs_struct's rsp */
  std::vector<std::uint8_t> auxv;
  for (const std::uint64_t v : {std::uint64_t{AT_RANDOM}, at_random, std::uint64_t{AT_NULL}, std::uint64_t{0}})
    for (int i = 0; i < 8; ++i) auxv.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  Core c = build_core({{0x10000000, 2 * 4096, "/memfd:core-timeline (deleted)"},
                       {thread_stack, 4 * MiB, ""},
                       {0x20000000, 3 * MiB, ""},  // heap: its first page only
                       {main_stack, 3 * MiB, ""}},
                      {{NT_PRSTATUS, prstatus}, {NT_AUXV, auxv}});
  const SparseCopy copy = copy_sparse(c, 3);
  ASSERT_EQ(copy.bytes.size(), c.bytes.size());
  const std::uint64_t ts = c.seg_ranges[1].first;
  const auto [ms, ms_size] = c.seg_ranges[3];
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> keep = {
      {0, c.head_end},
      c.seg_ranges[0],
      {ts, 4096},
      {ts + 2 * MiB - 4096, 4096 + ctd::kStackKeep + 4096},  // whole pages around the stack pointer
      {c.seg_ranges[2].first, 4096},
      {ms, 4096},
      {ms + 2 * MiB - 4096, ms_size - 2 * MiB + 4096},  // below AT_RANDOM, up to the segment's end
  };
  EXPECT_EQ(copy.stats.kept_bytes, expect_only_kept(c, copy.bytes, keep));
}

TEST(CoreSink, SmallCoreIsKeptWholeWhateverTheChunks) {
  Core c = build_core({{0x10000000, 64 * 1024, ""}, {0x20000000, 3 << 20, ""}});
  TempDir dir;
  for (unsigned seed : {1u, 2u, 3u}) {
    auto tmp = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(tmp);
    ctd::ExtractOptions o;
    o.keep_whole_below = 64 << 20;
    auto stats = feed_random(c.bytes, tmp->get(), o, seed);
    EXPECT_EQ(read_file(tmp->get()), c.bytes);
    EXPECT_FALSE(stats.sparse);
    EXPECT_EQ(stats.kept_bytes, c.bytes.size());
  }
}

TEST(CoreSink, BudgetBoundsWhatIsKept) {
  Core c = build_core({{0x10000000, 4 << 20, "/memfd:core-timeline"}});
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  ASSERT_TRUE(tmp);
  ctd::ExtractOptions o;
  o.keep_whole_below = 0;
  o.max_kept = 1 << 20;
  auto stats = feed_random(c.bytes, tmp->get(), o, 4);
  EXPECT_TRUE(stats.budget_exhausted);
  EXPECT_LE(stats.kept_bytes, o.max_kept);
  EXPECT_EQ(read_file(tmp->get()).size(), c.bytes.size());
}

TEST(CoreSink, NotAnElfCoreKeepsOnlyItsStart) {
  std::vector<std::uint8_t> junk(3 << 20, 'x');
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  ASSERT_TRUE(tmp);
  ctd::ExtractOptions o;
  o.keep_whole_below = 0;
  auto stats = feed_random(junk, tmp->get(), o, 5);
  EXPECT_EQ(stats.kept_bytes, 1u << 20);
  EXPECT_EQ(stats.core_bytes, junk.size());
}

// ---- decompression ----------------------------------------------------

namespace {

std::vector<std::uint8_t> zstd_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> lz4_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(LZ4F_compressFrameBound(in.size(), nullptr));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> xz_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(lzma_stream_buffer_bound(in.size()));
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, in.data(), in.size(), out.data(), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

}  // namespace

TEST(Extract, EachCompressionSystemdUsesRoundTrips) {
  Core c = build_core({{0x10000000, 5 << 20, ""}, {0x20000000, 8192, "/memfd:core-timeline"}});
  TempDir dir;
  const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> cases = {
      {"core.x.zst", zstd_compress(c.bytes)},
      {"core.x.lz4", lz4_compress(c.bytes)},
      {"core.x.xz", xz_compress(c.bytes)},
      {"core.x", c.bytes},
  };
  for (const auto &[name, data] : cases) {
    write_bytes(dir.path + "/" + name, data);
    auto dfd = ctd::open_directory(dir.path);
    ASSERT_TRUE(dfd);
    struct stat st;
    auto in = ctd::open_core_file(dfd->get(), name, &st);
    ASSERT_TRUE(in) << in.error().message;
    auto out = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(out);
    ctd::ExtractOptions o;  // keep whole: 5 MiB < 64 MiB
    auto s = ctd::extract_file(in->get(), name, out->get(), o);
    ASSERT_TRUE(s) << name << ": " << s.error().message;
    EXPECT_FALSE(s->stream_truncated) << name << ": " << s->stream_error;
    EXPECT_EQ(s->input_bytes, data.size()) << name;
    EXPECT_EQ(read_file(out->get()), c.bytes) << name;
  }
}

TEST(Extract, TruncatedOrCorruptStreamKeepsWhatWasDecompressed) {
  Core c = build_core({{0x10000000, 2 << 20, ""}});
  TempDir dir;
  for (const auto &[name, data] : std::vector<std::pair<std::string, std::vector<std::uint8_t>>>{
           {"core.t.zst", zstd_compress(c.bytes)}, {"core.t.lz4", lz4_compress(c.bytes)},
           {"core.t.xz", xz_compress(c.bytes)}}) {
    auto cut = data;
    cut.resize(cut.size() * 2 / 3);
    write_bytes(dir.path + "/" + name, cut);
    auto dfd = ctd::open_directory(dir.path);
    struct stat st;
    auto in = ctd::open_core_file(dfd->get(), name, &st);
    ASSERT_TRUE(in);
    auto out = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(out);
    auto s = ctd::extract_file(in->get(), name, out->get(), ctd::ExtractOptions{});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(s->stream_truncated) << name;
    EXPECT_FALSE(s->stream_error.empty()) << name;
    auto got = read_file(out->get());
    EXPECT_LT(got.size(), c.bytes.size()) << name;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), c.bytes.begin())) << name << ": the prefix differs";
  }
}

TEST(Extract, OpenRefusesLinksAndNonRegularFiles) {
  TempDir dir;
  write_bytes(dir.path + "/real", {1, 2, 3});
  ASSERT_EQ(symlink((dir.path + "/real").c_str(), (dir.path + "/link").c_str()), 0);
  ASSERT_EQ(mkfifo((dir.path + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(mkdir((dir.path + "/dir").c_str(), 0700), 0);
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  struct stat st;
  auto r = ctd::open_core_file(dfd->get(), "link", &st);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ELOOP);
  r = ctd::open_core_file(dfd->get(), "fifo", &st);  // must not block
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EINVAL);
  r = ctd::open_core_file(dfd->get(), "dir", &st);
  ASSERT_FALSE(r);
  r = ctd::open_core_file(dfd->get(), "missing", &st);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ENOENT);
  r = ctd::open_core_file(dfd->get(), "../etc", &st);
  ASSERT_FALSE(r);
  EXPECT_TRUE(ctd::open_core_file(dfd->get(), "real", &st));
}
