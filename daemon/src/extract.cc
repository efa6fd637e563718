/* SPDX-License-Identifier: MIT */
/* extract.cc - see extract.h. */
#include "extract.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/elf_headers.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::daemon {

namespace {

constexpr std::uint64_t kMaxHead = 64ull << 20;     /* ELF header + phdrs + notes */
constexpr std::uint64_t kNotElfKeep = 1ull << 20;   /* of a file that is no ELF core */
constexpr std::size_t kInChunk = 128 << 10;
constexpr std::size_t kFlushAt = 1 << 20;
constexpr std::uint64_t kMaxRing = 4ull << 30;      /* reader.h: region_size <= 4 GiB */

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/* Reads up to `len` bytes; 0 at end of file. */
Result<std::size_t> read_some(int fd, std::uint8_t *buf, std::size_t len) {
  for (;;) {
    ssize_t n = ::read(fd, buf, len);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    return errno_error(errno, "cannot read the stored core");
  }
}

Error cancelled() { return error_of(ECANCELED, "extraction cancelled (stopping)"); }

}  // namespace

Result<Fd> open_directory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "cannot open directory " + dir);
  return Fd(fd);
}

Result<Fd> open_core_file(int dirfd, const std::string &name, struct stat *st) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return error_of(EINVAL, "'" + printable(name) + "' is not a single file name");
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) return error_of(ELOOP, "core file " + printable(name) + " is a symbolic link; not following it");
    return errno_error(e, "cannot open core file " + printable(name));
  }
  Fd out(fd);
  if (fstat(fd, st) < 0) return errno_error(errno, "cannot fstat core file " + printable(name));
  if (!S_ISREG(st->st_mode)) return error_of(EINVAL, "core file " + printable(name) + " is not a regular file");
  /* Reads should block normally from here on. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return out;
}

Result<Fd> make_temp_file(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return Fd(fd);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    return errno_error(errno, "cannot create a temporary file in " + dir);
  std::string tmpl = dir + "/.core-XXXXXX";
  fd = mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "cannot create a temporary file in " + dir);
  unlink(tmpl.c_str());
  return Fd(fd);
}

/* ---- CoreSink ---------------------------------------------------------- */

CoreSink::CoreSink(int out_fd, const ExtractOptions &opts) : fd_(out_fd), opts_(opts) {
  out_.reserve(kFlushAt);
}

Result<void> CoreSink::feed(std::span<const std::uint8_t> data) {
  if (!head_done_) {
    auto r = feed_head(data);
    if (!r) return r;
    if (!head_done_) return {};
  }
  while (!data.empty()) {
    /* The page holding pos_ ends at the next multiple of kPage. */
    const std::uint64_t page_end = (pos_ / kPage + 1) * kPage;
    const std::size_t want = static_cast<std::size_t>(page_end - pos_);
    const std::size_t take = std::min(want, data.size());
    std::memcpy(page_ + page_fill_, data.data(), take);
    page_fill_ += take;
    pos_ += take;
    data = data.subspan(take);
    if (pos_ == page_end) {
      auto r = page_done(pos_ - page_fill_, page_, page_fill_);
      page_fill_ = 0;
      if (!r) return r;
    }
  }
  return {};
}

namespace {

namespace ctr = core_timeline::reader;

/* What the first bytes of a core tell so far (CoreSink::feed_head). */
struct Head {
  enum Verdict {
    kMore,     /* `need` bytes are needed to tell */
    kReady,    /* the ELF header, the program headers and every PT_NOTE */
    kKeepAll,  /* its headers or notes cannot be planned for within kMaxHead */
    kNotCore,  /* not the start of a 64-bit little-endian ELF core */
  } verdict = kMore;
  std::uint64_t need = sizeof(Elf64_Ehdr);
  std::uint16_t machine = 0;
  std::vector<Elf64_Phdr> phdrs;  /* once the whole table is there */
};

Head judge_head(std::span<const std::uint8_t> head) {
  Head h;
  if (head.size() < h.need) return h;
  ctr::Cursor file(head, 0, "core");
  auto eh = ctr::read_elf64_ehdr(file);
  if (!eh || eh->e_type != ET_CORE) {
    h.verdict = Head::kNotCore;
    return h;
  }
  h.machine = eh->e_machine;
  /* No bound on the count here: kMaxHead bounds the table. */
  auto table = ctr::phdr_table(file, *eh, UINT64_MAX);
  if (!table && table.error().code == ctr::Errc::kBadData) { /* e_phentsize */
    h.verdict = Head::kNotCore;
    return h;
  }
  /* PN_XNUM: the count is in section header 0, at the end of the file;
   * kTruncated: e_phoff + the table runs past 2^64. */
  if (!table || eh->e_phnum == PN_XNUM || table->end() > kMaxHead) {
    h.verdict = Head::kKeepAll;
    return h;
  }
  h.need = table->end();
  auto entries = ctr::phdr_entries(file, *table);
  if (!entries) return h;
  h.phdrs.reserve(table->e_phnum);
  for (std::uint64_t i = 0; i < table->e_phnum; ++i) {
    auto ph = ctr::read_elf64_phdr(*entries);
    if (!ph) { /* cannot happen: phdr_entries() holds the whole table */
      h.verdict = Head::kKeepAll;
      return h;
    }
    h.phdrs.push_back(*ph);
    if (ph->p_type != PT_NOTE) continue;
    if (ph->p_offset > kMaxHead || ph->p_filesz > kMaxHead - ph->p_offset) {
      h.verdict = Head::kKeepAll;
      return h;
    }
    h.need = std::max<std::uint64_t>(h.need, ph->p_offset + ph->p_filesz);
  }
  if (head.size() >= h.need) h.verdict = Head::kReady;
  return h;
}

}  // namespace

Result<void> CoreSink::feed_head(std::span<const std::uint8_t> &data) {
  for (;;) {
    /* How many head bytes are needed before planning? */
    const Head h = judge_head(head_);
    if (h.verdict == Head::kNotCore || h.verdict == Head::kKeepAll) {
      /* Not something we can plan for: keep everything (budget permitting),
       * or for a non-core the first MiB, enough for the reader to say what
       * it is. */
      keep_all_ = h.verdict == Head::kKeepAll;
      if (h.verdict == Head::kNotCore) {
        keep_.push_back({0, kNotElfKeep});
        sparse_ = true;
      }
      head_done_ = true;
    } else if (h.verdict == Head::kReady) {
      auto r = plan(h.machine, h.phdrs);
      if (!r) return r;
      head_done_ = true;
    }
    if (head_done_) {
      /* The head is kept whole; the body continues after it. */
      pos_ = head_.size();
      auto r = emit(0, head_.data(), head_.size());
      head_.clear();
      head_.shrink_to_fit();
      return r;
    }
    if (data.empty()) return {};
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(h.need - head_.size(), data.size()));
    head_.insert(head_.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
    data = data.subspan(take);
  }
}

Result<void> CoreSink::plan(std::uint16_t machine, const std::vector<Elf64_Phdr> &phdrs) {
  std::vector<Elf64_Phdr> loads;
  core_timeline::reader::CoreNotes notes;
  std::uint64_t total = head_.size();
  for (const Elf64_Phdr &ph : phdrs) {
    if (ph.p_offset <= UINT64_MAX - ph.p_filesz) total = std::max<std::uint64_t>(total, ph.p_offset + ph.p_filesz);
    if (ph.p_type == PT_NOTE) {
      /* judge_head() waited for every PT_NOTE's bytes. */
      core_timeline::reader::parse_core_notes(
          std::span<const std::uint8_t>(head_).subspan(ph.p_offset, ph.p_filesz), ph.p_offset, machine, notes);
    } else if (ph.p_type == PT_LOAD && ph.p_filesz > 0 && ph.p_offset <= UINT64_MAX - ph.p_filesz) {
      loads.push_back(ph);
    }
  }
  if (total <= opts_.keep_whole_below) {
    keep_all_ = true;
    return {};
  }
  sparse_ = true;
  auto files = notes.files;
  std::sort(files.begin(), files.end(), [](const auto &a, const auto &b) { return a.start < b.start; });
  for (const auto &ph : loads) {
    const std::uint64_t begin = ph.p_offset, end = ph.p_offset + ph.p_filesz;
    loads_.push_back({begin, end});
    keep_.push_back({begin, std::min(end, begin + kPage)});
    /* File mappings overlapping [vaddr, vaddr + memsz). */
    const std::uint64_t vend = ph.p_vaddr + ph.p_memsz;
    auto it = std::upper_bound(files.begin(), files.end(), ph.p_vaddr,
                               [](std::uint64_t v, const auto &f) { return v < f.start; });
    if (it != files.begin()) --it;
    bool memfd = false;
    for (; it != files.end() && it->start < vend; ++it)
      if (it->end > ph.p_vaddr && it->name.rfind("/memfd:", 0) == 0) memfd = true;
    if (memfd || ph.p_filesz <= kSmallSegment) keep_.push_back({begin, end});
  }
  keep_stacks(notes, loads);
  std::sort(loads_.begin(), loads_.end(), [](const Range &a, const Range &b) { return a.begin < b.begin; });
  std::sort(keep_.begin(), keep_.end(), [](const Range &a, const Range &b) { return a.begin < b.begin; });
  std::vector<Range> merged;
  for (const auto &r : keep_) {
    if (!merged.empty() && r.begin <= merged.back().end) merged.back().end = std::max(merged.back().end, r.end);
    else merged.push_back(r);
  }
  keep_ = std::move(merged);
  return {};
}

/* The stacks the unwinder walks (extract.h): file ranges of the PT_LOAD
 * segments that hold each thread's stack pointer and AT_RANDOM. */
void CoreSink::keep_stacks(const core_timeline::reader::CoreNotes &notes, const std::vector<Elf64_Phdr> &loads) {
  const auto keep_around = [&](std::uint64_t address, std::uint64_t below, std::uint64_t above) {
    for (const Elf64_Phdr &ph : loads) {
      if (address < ph.p_vaddr || address - ph.p_vaddr >= ph.p_filesz) continue;
      const std::uint64_t at = address - ph.p_vaddr;
      /* Whole pages, as the sink writes them. */
      const std::uint64_t from = (at > below ? at - below : 0) / kPage * kPage;
      const std::uint64_t end = ph.p_filesz - at > above ? at + above : ph.p_filesz;
      const std::uint64_t to = std::min<std::uint64_t>(ph.p_filesz, (end + kPage - 1) / kPage * kPage);
      keep_.push_back({ph.p_offset + from, ph.p_offset + to});
      return;
    }
  };
  for (const auto &t : notes.threads)
    if (t.has_regs) keep_around(t.sp, kPage, kStackKeep);
  for (const auto &[type, value] : notes.auxv)
    if (type == AT_RANDOM) keep_around(value, kStackKeep, kStackKeep);
}

bool CoreSink::in_ranges(const std::vector<Range> &r, std::size_t &idx, std::uint64_t off) const {
  while (idx < r.size() && r[idx].end <= off) ++idx;
  return idx < r.size() && r[idx].begin <= off;
}

Result<void> CoreSink::page_done(std::uint64_t offset, const std::uint8_t *bytes, std::size_t len) {
  bool keep = keep_all_ || offset < magic_until_;
  if (!keep) {
    /* Does a keep range intersect [offset, offset + len)? */
    while (keep_idx_ < keep_.size() && keep_[keep_idx_].end <= offset) ++keep_idx_;
    keep = keep_idx_ < keep_.size() && keep_[keep_idx_].begin < offset + len;
  }
  namespace f = core_timeline::format;
  constexpr std::size_t kRegionEnd = offsetof(f::RingHeader, region_size) + sizeof(f::RingHeader::region_size);
  if (offset % kPage == 0 && len >= kRegionEnd && std::memcmp(bytes, f::kMagic, sizeof f::kMagic) == 0 &&
      (keep_all_ || in_ranges(loads_, load_idx_, offset))) {
    std::uint64_t region;
    std::memcpy(&region, bytes + offsetof(f::RingHeader, region_size), sizeof region);
    region = std::clamp<std::uint64_t>(region, kPage, kMaxRing);
    magic_until_ = std::max(magic_until_, offset + region);
    keep = true;
  }
  if (!keep) {
    sparse_ = true;
    return {};
  }
  return emit(offset, bytes, len);
}

Result<void> CoreSink::emit(std::uint64_t offset, const std::uint8_t *bytes, std::size_t len) {
  if (len == 0) return {};
  if (offset != 0 && kept_ + len > opts_.max_kept) {
    budget_hit_ = true;
    sparse_ = true;
    return {};
  }
  if (!out_.empty() && out_off_ + out_.size() != offset) {
    auto r = flush();
    if (!r) return r;
  }
  if (out_.empty()) out_off_ = offset;
  if (len >= kFlushAt) {
    /* The head, possibly large: written directly. */
    auto r = flush();
    if (!r) return r;
    std::size_t done = 0;
    while (done < len) {
      ssize_t n = pwrite(fd_, bytes + done, len - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_error(errno, "cannot write the decompressed core to the temporary file");
      done += static_cast<std::size_t>(n);
    }
    kept_ += len;
    return {};
  }
  out_.insert(out_.end(), bytes, bytes + len);
  kept_ += len;
  if (out_.size() >= kFlushAt) return flush();
  return {};
}

Result<void> CoreSink::flush() {
  std::size_t done = 0;
  while (done < out_.size()) {
    ssize_t n = pwrite(fd_, out_.data() + done, out_.size() - done, static_cast<off_t>(out_off_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot write the decompressed core to the temporary file");
    done += static_cast<std::size_t>(n);
  }
  out_off_ += out_.size();
  out_.clear();
  return {};
}

Result<void> CoreSink::finish() {
  if (!head_done_) {
    /* The stream ended inside the head: keep what there is. */
    pos_ = head_.size();
    auto r = emit(0, head_.data(), head_.size());
    if (!r) return r;
    head_.clear();
    head_done_ = true;
  }
  if (page_fill_ > 0) {
    auto r = page_done(pos_ - page_fill_, page_, page_fill_);
    page_fill_ = 0;
    if (!r) return r;
  }
  auto r = flush();
  if (!r) return r;
  if (ftruncate(fd_, static_cast<off_t>(pos_)) < 0)
    return errno_error(errno, "cannot set the size of the temporary core file");
  return {};
}

void CoreSink::fill(ExtractStats &stats) const {
  stats.core_bytes = pos_ + head_.size();
  stats.kept_bytes = kept_;
  stats.sparse = sparse_ && kept_ < stats.core_bytes;
  stats.budget_exhausted = budget_hit_;
}

/* ---- decompressors ----------------------------------------------------- */

namespace {

using Feed = std::function<Result<void>(std::span<const std::uint8_t>)>;

struct Reader {
  int fd;
  const ExtractOptions &opts;
  ExtractStats &stats;
  Result<std::size_t> read(std::uint8_t *buf, std::size_t len) {
    if (opts.keep_going && !opts.keep_going()) return cancelled();
    auto n = read_some(fd, buf, len);
    if (n) stats.input_bytes += *n;
    return n;
  }
};

Result<void> run_zstd(Reader &in, const Feed &feed) {
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!ds) return error_of(ENOMEM, "ZSTD_createDStream failed");
  ZSTD_initDStream(ds.get());
  /* Bound the window: systemd-coredump uses the default level; refuse
   * frames that would make us allocate more than 128 MiB of window. */
  ZSTD_DCtx_setParameter(ds.get(), ZSTD_d_windowLogMax, 27);
  std::vector<std::uint8_t> ibuf(kInChunk), obuf(ZSTD_DStreamOutSize());
  std::size_t last = 1; /* 0 when a frame has just ended */
  bool any = false;
  for (;;) {
    auto n = in.read(ibuf.data(), ibuf.size());
    if (!n) return std::move(n).error();
    if (*n == 0) break;
    any = true;
    ZSTD_inBuffer ib{ibuf.data(), *n, 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
      last = ZSTD_decompressStream(ds.get(), &ob, &ib);
      if (ZSTD_isError(last)) {
        in.stats.stream_truncated = true;
        in.stats.stream_error = std::string("zstd: ") + ZSTD_getErrorName(last) + " after " +
                                std::to_string(in.stats.input_bytes) + " compressed bytes";
        return feed({obuf.data(), ob.pos});
      }
      auto r = feed({obuf.data(), ob.pos});
      if (!r) return r;
    }
  }
  /* Drain what the decoder still holds. */
  while (last != 0) {
    ZSTD_inBuffer ib{nullptr, 0, 0};
    ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
    last = ZSTD_decompressStream(ds.get(), &ob, &ib);
    if (ZSTD_isError(last)) break;
    auto r = feed({obuf.data(), ob.pos});
    if (!r) return r;
    if (ob.pos == 0) break;
  }
  if (!any || last != 0) {
    in.stats.stream_truncated = true;
    if (in.stats.stream_error.empty())
      in.stats.stream_error = any ? "zstd: the last frame is incomplete (truncated file)" : "zstd: empty file";
  }
  return {};
}

Result<void> run_lz4(Reader &in, const Feed &feed) {
  LZ4F_dctx *raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION)))
    return error_of(ENOMEM, "LZ4F_createDecompressionContext failed");
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> dctx(raw, LZ4F_freeDecompressionContext);
  std::vector<std::uint8_t> ibuf(kInChunk), obuf(4 * kInChunk);
  std::size_t hint = 1;
  bool any = false;
  for (;;) {
    auto n = in.read(ibuf.data(), ibuf.size());
    if (!n) return std::move(n).error();
    if (*n == 0) break;
    any = true;
    std::size_t pos = 0;
    while (pos < *n) {
      std::size_t src = *n - pos, dst = obuf.size();
      hint = LZ4F_decompress(dctx.get(), obuf.data(), &dst, ibuf.data() + pos, &src, nullptr);
      if (LZ4F_isError(hint)) {
        in.stats.stream_truncated = true;
        in.stats.stream_error = std::string("lz4: ") + LZ4F_getErrorName(hint);
        return feed({obuf.data(), dst});
      }
      auto r = feed({obuf.data(), dst});
      if (!r) return r;
      pos += src;
    }
  }
  for (int guard = 0; hint != 0 && guard < 1 << 20; ++guard) {
    std::size_t src = 0, dst = obuf.size();
    hint = LZ4F_decompress(dctx.get(), obuf.data(), &dst, nullptr, &src, nullptr);
    if (LZ4F_isError(hint) || dst == 0) break;
    auto r = feed({obuf.data(), dst});
    if (!r) return r;
  }
  if (!any || hint != 0) {
    in.stats.stream_truncated = true;
    if (in.stats.stream_error.empty())
      in.stats.stream_error = any ? "lz4: the frame is incomplete (truncated file)" : "lz4: empty file";
  }
  return {};
}

Result<void> run_xz(Reader &in, const Feed &feed) {
  lzma_stream strm = LZMA_STREAM_INIT;
  /* 256 MiB of decoder memory at most. */
  if (lzma_stream_decoder(&strm, 256ull << 20, LZMA_CONCATENATED) != LZMA_OK)
    return error_of(ENOMEM, "lzma_stream_decoder failed");
  std::unique_ptr<lzma_stream, decltype(&lzma_end)> guard(&strm, lzma_end);
  std::vector<std::uint8_t> ibuf(kInChunk), obuf(kInChunk);
  lzma_action action = LZMA_RUN;
  for (;;) {
    if (strm.avail_in == 0 && action == LZMA_RUN) {
      auto n = in.read(ibuf.data(), ibuf.size());
      if (!n) return std::move(n).error();
      strm.next_in = ibuf.data();
      strm.avail_in = *n;
      if (*n == 0) action = LZMA_FINISH;
    }
    strm.next_out = obuf.data();
    strm.avail_out = obuf.size();
    lzma_ret ret = lzma_code(&strm, action);
    auto r = feed({obuf.data(), obuf.size() - strm.avail_out});
    if (!r) return r;
    if (ret == LZMA_STREAM_END) return {};
    if (ret != LZMA_OK) {
      in.stats.stream_truncated = true;
      in.stats.stream_error = "xz: error " + std::to_string(static_cast<int>(ret)) +
                              (ret == LZMA_BUF_ERROR ? " (truncated file)" : ret == LZMA_DATA_ERROR ? " (corrupt data)" : "");
      return {};
    }
  }
}

Result<void> run_plain(Reader &in, const Feed &feed) {
  std::vector<std::uint8_t> buf(kInChunk);
  for (;;) {
    auto n = in.read(buf.data(), buf.size());
    if (!n) return std::move(n).error();
    if (*n == 0) return {};
    auto r = feed({buf.data(), *n});
    if (!r) return r;
  }
}

}  // namespace

Result<ExtractStats> extract_file(int in_fd, std::string_view name, int out_fd, const ExtractOptions &opts) {
  ExtractStats stats;
  CoreSink sink(out_fd, opts);
  Feed feed = [&](std::span<const std::uint8_t> d) { return sink.feed(d); };
  Reader in{in_fd, opts, stats};
  Result<void> r;
  if (ends_with(name, ".zst")) {
    stats.compression = "zstd";
    r = run_zstd(in, feed);
  } else if (ends_with(name, ".lz4")) {
    stats.compression = "lz4";
    r = run_lz4(in, feed);
  } else if (ends_with(name, ".xz")) {
    stats.compression = "xz";
    r = run_xz(in, feed);
  } else {
    stats.compression = "none";
    r = run_plain(in, feed);
  }
  if (!r) return std::move(r).error();
  auto f = sink.finish();
  if (!f) return std::move(f).error();
  sink.fill(stats);
  return stats;
}

Result<ExtractStats> extract_bytes(std::span<const std::uint8_t> core, int out_fd, const ExtractOptions &opts) {
  ExtractStats stats;
  stats.compression = "none";
  CoreSink sink(out_fd, opts);
  std::size_t pos = 0;
  while (pos < core.size()) {
    if (opts.keep_going && !opts.keep_going()) return cancelled();
    const std::size_t n = std::min<std::size_t>(core.size() - pos, 4 * kInChunk);
    auto r = sink.feed(core.subspan(pos, n));
    if (!r) return std::move(r).error();
    pos += n;
  }
  stats.input_bytes = core.size();
  auto f = sink.finish();
  if (!f) return std::move(f).error();
  sink.fill(stats);
  return stats;
}

StreamExtractor::StreamExtractor(std::uint64_t keep_whole_below, std::uint64_t max_kept) noexcept
    : keep_whole_below_(keep_whole_below), max_kept_(max_kept) {}

std::optional<ExtractStats> StreamExtractor::as_stored(std::string_view name, const struct stat &st) const {
  if (ends_with(name, ".zst") || ends_with(name, ".lz4") || ends_with(name, ".xz")) return std::nullopt;
  if (!S_ISREG(st.st_mode) || st.st_size <= 0 || static_cast<std::uint64_t>(st.st_size) > keep_whole_below_)
    return std::nullopt;
  ExtractStats stats;
  stats.compression = "none";
  stats.input_bytes = stats.core_bytes = stats.kept_bytes = static_cast<std::uint64_t>(st.st_size);
  return stats;
}

ExtractOptions StreamExtractor::with(const std::function<bool()> &keep_going) const {
  ExtractOptions xo;
  xo.keep_whole_below = keep_whole_below_;
  xo.max_kept = max_kept_;
  xo.keep_going = keep_going;
  return xo;
}

Result<ExtractStats> StreamExtractor::from_file(int in_fd, std::string_view name, int out_fd,
                                                const std::function<bool()> &keep_going) {
  return extract_file(in_fd, name, out_fd, with(keep_going));
}

Result<ExtractStats> StreamExtractor::from_bytes(std::span<const std::uint8_t> core, int out_fd,
                                                 const std::function<bool()> &keep_going) {
  return extract_bytes(core, out_fd, with(keep_going));
}

}  // namespace core_timeline::daemon
