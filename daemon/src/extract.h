/* SPDX-License-Identifier: MIT */
/*
 * extract.h - getting a stored core into a file the decoder can map,
 * without following links and without memory that grows with the core.
 *
 * open_core_file() opens a core inside the coredump directory the only
 * safe way: openat(2) relative to a descriptor of that directory, with
 * O_NOFOLLOW (a symlink fails with ELOOP), then fstat(2) on the descriptor
 * (a FIFO, device or directory is refused; O_NONBLOCK keeps a FIFO from
 * blocking the open).
 *
 * extract_*() stream the core through a decompressor (zstd, lz4 frame, xz;
 * or none) in fixed-size buffers and hand the decompressed bytes, in order,
 * to a CoreSink, which writes them at their own offsets into `out_fd` (an
 * unlinked temporary file).  systemd-coredump writes one zstd frame, so the
 * core cannot be seeked; it is read once from the start.
 *
 * An uncompressed core of at most `keep_whole_below` bytes is not copied
 * at all (Extractor::as_stored()): the decoder maps the stored file.
 *
 * What the sink keeps.  A core of at most `keep_whole_below` bytes is
 * written whole: the decoder then sees exactly what core-timeline-read
 * would.  A larger core is written SPARSE: the file gets the core's full
 * size, but only these byte ranges are written (the rest are holes, read
 * as zeros and costing no disk):
 *   - the ELF header, the program headers and every PT_NOTE segment;
 *   - the first page of every PT_LOAD segment (ELF headers and build-ids of
 *     mapped files, a ring magic at a segment start);
 *   - every PT_LOAD segment that overlaps an NT_FILE "/memfd:" mapping (the
 *     rings libtimeline makes) and every segment of at most kSmallSegment
 *     bytes (data and dynamic sections, ld.so's small allocations holding
 *     the link_map: libdwfl needs them to symbolize);
 *   - from every page-aligned "CTLN" in a PT_LOAD segment, the ring's
 *     region_size bytes (ring_format.h), the reader's magic scan;
 *   - the stacks the unwinder walks: in the segment holding each thread's
 *     stack pointer (NT_PRSTATUS), from a page below it up to kStackKeep
 *     bytes above it (a stack grows down: the live frames are above); and
 *     the top kStackKeep bytes of the segment holding AT_RANDOM's address
 *     (auxv; the kernel puts those bytes near the top of the main thread's
 *     stack), where the interrupted frames are when the fatal signal was
 *     taken on an alternate stack;
 * up to `max_kept` bytes in all.  Other anonymous memory (heap, big mmaps),
 * where a core's size usually is, is dropped, so disk and memory use follow
 * the rings, not the core.  What the decoder then cannot see: bytes of
 * dropped segments: a link_map in the heap (libdwfl falls back to
 * NT_FILE), a heap block a probable cause would read, and the frames of a
 * thread that took its fatal signal on an alternate stack other than the
 * main thread.
 *
 * Errors: Result errors are I/O errors on `out_fd` or a cancelled run;
 * problems of the input (corrupt or truncated compressed data) are not
 * errors: the bytes decompressed so far are kept and ExtractStats says
 * what happened.
 *
 * Thread-safety: none needed; each call works on its own descriptors.
 */
#ifndef CORE_TIMELINE_DAEMON_EXTRACT_H
#define CORE_TIMELINE_DAEMON_EXTRACT_H

#include <elf.h>
#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core_timeline/document/stored.h"
#include "util.h"

namespace core_timeline::reader {
struct CoreNotes;
}  // namespace core_timeline::reader

namespace core_timeline::daemon {

inline constexpr std::uint64_t kPage = 4096;
inline constexpr std::uint64_t kSmallSegment = 1 << 20;
/** Bytes of a stack kept above a stack pointer (a sparse core): 1 MiB,
 *  thousands of frames, while a server of a hundred threads adds at most
 *  100 MiB to what the budget (`max_kept`) must hold besides its rings. */
inline constexpr std::uint64_t kStackKeep = 1 << 20;

struct ExtractOptions {
  std::uint64_t keep_whole_below = 64ull << 20;
  std::uint64_t max_kept = 1ull << 30;
  /** Called between chunks (at least every 256 KiB of input): pings the
   *  watchdog, checks for SIGTERM.  Returning false cancels the run with
   *  an Error of err ECANCELED. */
  std::function<bool()> keep_going;
};

/** How a stored core was made readable (the document's daemon.extraction). */
using ExtractStats = core_timeline::document::Extraction;

/** Opens directory `dir` (O_DIRECTORY|O_PATH-free read-only descriptor). */
Result<Fd> open_directory(const std::string &dir);

/**
 * openat(dirfd, name, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC)
 * and fstat: a regular file or an Error (err: ENOENT if it is not there,
 * ELOOP for a symlink, EACCES, or EINVAL for "not a regular file").  `name`
 * must be a single path component.  *st receives the fstat result.
 */
Result<Fd> open_core_file(int dirfd, const std::string &name, struct stat *st);

/** An unlinked temporary file in `dir` (O_TMPFILE, else mkostemp+unlink),
 *  mode 0600, for a decompressed core. */
Result<Fd> make_temp_file(const std::string &dir);

/** Decompresses the stored core on `in_fd` (compression from the file
 *  name's suffix: .zst, .lz4, .xz, else none) into `out_fd`. */
Result<ExtractStats> extract_file(int in_fd, std::string_view name, int out_fd, const ExtractOptions &opts);

/** Writes an uncompressed core held in memory (the COREDUMP= field) into
 *  `out_fd` through the same sink. */
Result<ExtractStats> extract_bytes(std::span<const std::uint8_t> core, int out_fd, const ExtractOptions &opts);

/**
 * Getting a stored core into a file the decoder can map: one of the four
 * parts of the daemon (parts.h).  from_file() is extract_file() and
 * from_bytes() extract_bytes(), with the sizes the part was made with;
 * `keep_going` is ExtractOptions::keep_going (false cancels: ECANCELED).
 * Errors: as those functions'.  Thread-safety: one thread.
 */
class Extractor {
 public:
  virtual ~Extractor() = default;
  /** The stored core `name` (fstat `st`) as the decoder may map it with no
   *  copy: an uncompressed core (no .zst, .lz4 or .xz suffix) of 1 to
   *  keep_whole_below bytes, which it would see whole anyway, so nothing
   *  is written to the temporary directory; its stats (compression
   *  "none", every byte kept).  nullopt for any other core: extract it. */
  virtual std::optional<ExtractStats> as_stored(std::string_view name, const struct stat &st) const = 0;
  virtual Result<ExtractStats> from_file(int in_fd, std::string_view name, int out_fd,
                                         const std::function<bool()> &keep_going) = 0;
  virtual Result<ExtractStats> from_bytes(std::span<const std::uint8_t> core, int out_fd,
                                          const std::function<bool()> &keep_going) = 0;
};

/** core-timelined's Extractor: the decompressors and the sparse sink
 *  below, keeping cores of at most `keep_whole_below` bytes whole and at
 *  most `max_kept` bytes of a larger one (ExtractOptions). */
class StreamExtractor final : public Extractor {
 public:
  StreamExtractor(std::uint64_t keep_whole_below, std::uint64_t max_kept) noexcept;
  std::optional<ExtractStats> as_stored(std::string_view name, const struct stat &st) const override;
  Result<ExtractStats> from_file(int in_fd, std::string_view name, int out_fd,
                                 const std::function<bool()> &keep_going) override;
  Result<ExtractStats> from_bytes(std::span<const std::uint8_t> core, int out_fd,
                                  const std::function<bool()> &keep_going) override;

 private:
  ExtractOptions with(const std::function<bool()> &keep_going) const;
  std::uint64_t keep_whole_below_, max_kept_;
};

/**
 * The sink: decompressed bytes in, sparse file out (rules above).  Exposed
 * for tests.
 */
class CoreSink {
 public:
  CoreSink(int out_fd, const ExtractOptions &opts);
  /** The next `data.size()` bytes of the core. */
  Result<void> feed(std::span<const std::uint8_t> data);
  /** Writes what is pending and sets the file's size to the bytes fed. */
  Result<void> finish();
  void fill(ExtractStats &stats) const;

 private:
  struct Range {
    std::uint64_t begin, end;
  };
  Result<void> feed_head(std::span<const std::uint8_t> &data);
  Result<void> plan(std::uint16_t machine, const std::vector<Elf64_Phdr> &phdrs);
  void keep_stacks(const core_timeline::reader::CoreNotes &notes, const std::vector<Elf64_Phdr> &loads);
  Result<void> page_done(std::uint64_t offset, const std::uint8_t *bytes, std::size_t len);
  Result<void> emit(std::uint64_t offset, const std::uint8_t *bytes, std::size_t len);
  Result<void> flush();
  bool in_ranges(const std::vector<Range> &r, std::size_t &idx, std::uint64_t off) const;

  int fd_;
  ExtractOptions opts_;
  std::uint64_t pos_ = 0;
  bool head_done_ = false;
  std::vector<std::uint8_t> head_;
  bool keep_all_ = false;
  bool sparse_ = false;
  bool budget_hit_ = false;
  std::vector<Range> keep_;       /* sorted, disjoint */
  std::vector<Range> loads_;      /* PT_LOAD file ranges, sorted */
  std::size_t keep_idx_ = 0, load_idx_ = 0;
  std::uint64_t magic_until_ = 0;
  std::uint8_t page_[kPage];
  std::size_t page_fill_ = 0;
  std::vector<std::uint8_t> out_;
  std::uint64_t out_off_ = 0;
  std::uint64_t kept_ = 0;
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_EXTRACT_H
