/* SPDX-License-Identifier: MIT */
/* The analysis's first step: the rings in the core (find_rings), each
 * one's header validated and, unless only located, its events decoded. */
#include "analyzer.h"

namespace core_timeline::reader {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

constexpr std::string_view kRingMemfdPrefix = "/memfd:core-timeline";
constexpr std::size_t kMaxMagicMisses = 16;
/* Ring reports per core.  A process has one ring (one more per fork that
 * called tl_init again); without a bound, NT_FILE could list a million
 * ring mappings and each would cost a report, a warning and JSON. */
constexpr std::size_t kMaxRings = 64;

}  // namespace

/* Where analyze() puts a ring's events as decode_ring() accepts them:
 * straight into Analysis::events, each made into an Event (make_event), so
 * that a big ring's events are never held twice. */
class EventSink final : public RingEventSink {
 public:
  EventSink(Analyzer &an, std::uint32_t ring, const RingHeaderInfo &header, Origin source)
      : an_(an), ring_(ring), header_(header), source_(source) {}
  void reserve(std::uint64_t events, std::uint64_t inline_bytes) override {
    an_.a_.events.reserve(an_.a_.events.size() + events);
    an_.a_.inline_data.reserve(an_.a_.inline_data.size() + inline_bytes);
  }
  void event(const RingEvent &e) override { an_.a_.events.push_back(an_.make_event(ring_, header_, e, source_)); }

 private:
  Analyzer &an_;
  std::uint32_t ring_;
  const RingHeaderInfo &header_;
  Origin source_;
};

/* A sink that keeps nothing: a foreign ring's lanes are reported, its
 * events are not shown. */
class DiscardSink final : public RingEventSink {
 public:
  void reserve(std::uint64_t, std::uint64_t) override {}
  void event(const RingEvent &) override {}
};

void Analyzer::probe(RingReport &rep, std::uint64_t addr, std::uint64_t extent, bool ring_named) {
  auto view = core_.read_memory(addr, extent);
  std::vector<std::uint8_t> copy;
  auto hdr = validate_ring_header(view, extent);
  if (hdr) {
    /* One process has one ring per region.  Headers whose regions overlap
     * would decode the same slots once each (N headers over one slot area:
     * N copies of every event), so a region that overlaps a ring already
     * found is refused before it is decoded.  region_size <= extent, which
     * does not run past the end of the address space. */
    const std::uint64_t end = addr + hdr->region_size;
    auto next = rings_at_.lower_bound(addr);
    std::optional<std::uint64_t> other;
    if (next != rings_at_.end() && next->first < end) other = next->first;
    else if (next != rings_at_.begin() && std::prev(next)->second > addr) other = std::prev(next)->first;
    if (other) {
      rep.state = RingReport::State::kInvalid;
      rep.reason = fmt::format("its region [{:#x}, {:#x}) overlaps the ring at {:#x}; rings do not share memory, "
                               "so this header is not decoded", addr, end, *other);
      return;
    }
  }
  if (!hdr) return refuse(rep, addr, hdr.error(), ring_named);
  /* No two tl_init calls write the same immutable header: it holds the
   * clock anchor read at tl_init (ring_format.h).  A header byte-identical
   * to a ring's already found is that ring seen again - its memfd mapped
   * twice, or a copy at the start of a file mapping NT_FILE lists - and
   * decoding it would show every event twice. */
  std::string immutable;
  if (view.size() >= f::kCrcEnd) immutable.assign(reinterpret_cast<const char *>(view.data()), f::kCrcEnd);
  if (auto it = immutable_headers_.find(immutable); !immutable.empty() && it != immutable_headers_.end()) {
    rep.state = RingReport::State::kInvalid;
    rep.reason = fmt::format("its header is a byte-for-byte copy of the ring at {:#x} (the same ring mapped twice, "
                             "or a copy of it), so it is not decoded again", it->second);
    return;
  }
  if (hdr->no_ring) {
    rings_at_[addr] = addr + hdr->region_size;
    if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
    const int err = hdr->init_error;
    rep.ring.emplace();
    rep.ring->header = std::move(*hdr);
    check_identity(rep, rep.ring->header);
    if (rep.state == RingReport::State::kForeign) return;
    rep.state = RingReport::State::kNotMade;
    rep.reason = fmt::format("libtimeline was loaded but made no ring: {}{}{}",
                             err > 0 ? fmt::format("{} ({})", errno_name(err), std::strerror(err)) : "no errno",
                             rep.ring->header.init_error_text.empty() ? "" : ", ",
                             rep.ring->header.init_error_text);
    return;
  }
  if (headers_only_) {
    rep.state = RingReport::State::kValid;
    rings_at_[addr] = addr + hdr->region_size;
    if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
    return;
  }
  if (view.size() < hdr->region_size) {
    /* The region continues in the next PT_LOAD (a split mapping): copy the
     * contiguous dumped bytes, at most region_size (<= 4 GiB, and never more
     * than the file holds). */
    copy = core_.copy_memory(addr, hdr->region_size);
    if (copy.size() > view.size()) view = copy;
  }
  /* The identity is the header's: a foreign ring's lanes are decoded for
   * its report, its events are not kept.  A valid ring's events go
   * straight into the timeline, as the ring with the index this report
   * gets (find_rings pushes every valid report, next). */
  rep.state = RingReport::State::kValid;
  check_identity(rep, *hdr);
  rep.index = static_cast<std::uint32_t>(a_.rings.size());
  DiscardSink discard;
  EventSink keep(*this, rep.index, *hdr, Origin::kCore);
  RingEventSink &sink = rep.state == RingReport::State::kValid ? static_cast<RingEventSink &>(keep) : discard;
  DecodeOptions dopts;
  if (const auto &live = core_.notes().live) {
    dopts.live = true;
    /* The snapshot read the slot clock only if it is the ring's: the same
     * machine's TSC (x86-64) or CNTVCT (AArch64). */
    const bool tsc = (hdr->compat_flags & f::kCompatClockTsc) != 0 && core_.machine() == EM_X86_64;
    const bool cntvct = (hdr->compat_flags & f::kCompatClockCntvct) != 0 && core_.machine() == EM_AARCH64;
    if (live->ticks != 0 && live->monotonic_ns > 0 && live->realtime_ns > 0 && (tsc || cntvct))
      dopts.snapshot_anchor = DecodeOptions::Anchor{live->ticks, static_cast<std::uint64_t>(live->monotonic_ns),
                                                    static_cast<std::uint64_t>(live->realtime_ns), live->spread_ticks};
  }
  auto dec = decode_ring(view, extent, sink, dopts);
  if (!dec) return refuse(rep, addr, dec.error(), ring_named);
  rings_at_[addr] = addr + dec->header.region_size;
  if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
  rep.ring = std::move(*dec);
}

void Analyzer::refuse(RingReport &rep, std::uint64_t addr, const Error &error, bool ring_named) {
  rep.state = RingReport::State::kInvalid;
  rep.reason = error.message;
  if (error.code == Errc::kTruncated && core_.truncated()) {
    rep.state = RingReport::State::kAbsent;
    rep.reason = fmt::format("cut off by truncation: the core file ends ({} bytes) inside the ring at {:#x} "
                             "({}); systemd-coredump truncates cores over its size limit "
                             "(COREDUMP_TRUNCATED)", core_.file_size(), addr, error.message);
  } else if (error.code == Errc::kNotFound && ring_named) {
    rep.reason = fmt::format("the mapping at {:#x} is named like a ring but does not start with \"CTLN\"", addr);
  }
}

void Analyzer::find_rings() {
  const auto &n = core_.notes();
  std::set<std::uint64_t> seen;
  std::uint64_t skipped = 0; /* candidates not examined: kMaxRings reached */
  /* 1. NT_FILE: memfd mappings at file offset 0. */
  for (std::size_t i = 0; i < n.files.size(); ++i) {
    const FileMapping &fm = n.files[i];
    /* (fm.start & 4095): a mapping starts on a page; see step 2. */
    if (fm.file_offset != 0 || (fm.start & 4095) != 0 || !starts_with(fm.name, "/memfd:")) continue;
    if (seen.count(fm.start)) continue;
    const bool named = starts_with(fm.name, kRingMemfdPrefix);
    /* The mapping's extent: this entry plus entries of the same file that
     * continue it (a VMA split by mprotect/madvise). */
    std::uint64_t end = fm.end, next_off = fm.end - fm.start;
    std::size_t last = i;
    for (std::size_t j = i + 1; j < n.files.size(); ++j) {
      const FileMapping &g = n.files[j];
      if (g.path != fm.path || g.start != end || g.file_offset != next_off) break;
      end = g.end;
      next_off += g.end - g.start;
      last = j;
    }
    /* The entries that continue this mapping are not mappings of their
     * own: starting again from each of them made a chain of N entries cost
     * N^2/2 (fm still names entry i). */
    i = last;
    if (a_.rings.size() >= kMaxRings) {
      skipped++;
      continue;
    }
    std::uint64_t extent = end - fm.start;
    RingReport rep;
    rep.found_by = FoundBy::kNtFile;
    rep.address = fm.start;
    rep.mapping_size = extent;
    rep.mapping_name = fm.path;
    const Segment *seg = core_.segment_for(fm.start);
    if (seg != nullptr) extent = std::min(extent, core_.mapped_extent(fm.start));
    if (named && seg == nullptr) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format("NT_FILE lists {} at {:#x} but no PT_LOAD segment covers it", fm.path, fm.start);
    } else if (named && seg->filesz == 0) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format(
          "excluded from the core: NT_FILE lists {} at {:#x} but its PT_LOAD (program header {}) has p_filesz 0; "
          "the kernel left it out (coredump_filter bit 1, shared anonymous memory, is clear, or the mapping "
          "has MADV_DONTDUMP)", fm.path, fm.start, seg->index);
    } else if (named && fm.start - seg->vaddr >= seg->present && seg->present < seg->filesz) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format(
          "cut off by truncation: the ring's bytes start at file offset {:#x} but the core file ends at {:#x}; "
          "systemd-coredump truncates cores over its size limit (COREDUMP_TRUNCATED)",
          seg->offset + (fm.start - seg->vaddr), core_.file_size());
    } else if (seg == nullptr || fm.start - seg->vaddr >= seg->present) {
      continue; /* an unnamed memfd without bytes: not ours to judge */
    } else {
      probe(rep, fm.start, extent, named);
      if (!named && rep.state != RingReport::State::kValid && rep.state != RingReport::State::kForeign &&
          rep.state != RingReport::State::kNotMade) {
        /* A memfd of another name: only a validated header makes it a ring. */
        if (has_ring_magic(core_.read_memory(fm.start, 4))) {
          a_.magic_rejected_total++;
          if (a_.magic_rejected.size() < kMaxMagicMisses) a_.magic_rejected.push_back({fm.start, rep.reason});
        }
        seen.insert(fm.start);
        continue;
      }
      if (!named) rep.reason = fmt::format("found in a memfd named {}", fm.path);
    }
    seen.insert(fm.start);
    rep.index = static_cast<std::uint32_t>(a_.rings.size());
    a_.rings.push_back(std::move(rep));
  }
  /* 2. A "CTLN" whose header validates, at the start of a mapping of
   * shared memory other than a memfd (e.g. /dev/zero for
   * MAP_SHARED|MAP_ANONYMOUS).  With an NT_FILE note a ring is shared
   * memory the note lists, and starts its mapping: a valid header anywhere
   * else (the heap, an allocator's page-aligned block) is a copy of a ring
   * the process made, whose events would be shown twice or stand in for a
   * ring the core lost.  So only the starts of the listed mappings are
   * looked at, and finding rings costs O(mappings), not O(core size).
   * Without NT_FILE, every dumped page is looked at: O(core size). */
  auto examine = [&](std::uint64_t a) {
    if (seen.count(a) || !has_ring_magic(core_.read_memory(a, 4))) return;
    seen.insert(a);
    if (a_.rings.size() >= kMaxRings) {
      skipped++;
      return;
    }
    RingReport rep;
    rep.found_by = FoundBy::kMagicScan;
    rep.address = a;
    rep.mapping_size = core_.mapped_extent(a);
    if (const FileMapping *fm = core_.file_for(a)) rep.mapping_name = fm->path;
    probe(rep, a, rep.mapping_size, false);
    if (rep.state == RingReport::State::kValid || rep.state == RingReport::State::kForeign ||
        rep.state == RingReport::State::kNotMade) {
      rep.index = static_cast<std::uint32_t>(a_.rings.size());
      a_.rings.push_back(std::move(rep));
    } else {
      a_.magic_rejected_total++;
      if (a_.magic_rejected.size() < kMaxMagicMisses) a_.magic_rejected.push_back({a, rep.reason});
    }
  };
  if (n.has_file_note) {
    /* A mapping starts on a page: a listed start that does not is crafted,
     * and taking it would let 4 dumped bytes (and ~30 bytes of note) make a
     * candidate, where the page scan needs a page per candidate. */
    for (const FileMapping &fm : n.files)
      if ((fm.start & 4095) == 0) examine(fm.start);
  } else {
    for (const Segment &s : core_.segments()) {
      if (s.present < 4) continue;
      std::uint64_t a = (s.vaddr + 4095) & ~std::uint64_t{4095};
      if (a < s.vaddr) continue; /* wrapped */
      for (; a - s.vaddr <= s.present - 4; a += 4096) {
        examine(a);
        if (a > UINT64_MAX - 4096) break;
      }
    }
  }
  if (skipped > 0)
    a_.warnings.push_back(fmt::format("{} more ring candidates (memfd mappings in NT_FILE, \"CTLN\" pages) were not "
                                      "examined: a core holds at most {} rings, and this one lists more",
                                      skipped, kMaxRings));
}

}  // namespace core_timeline::reader
