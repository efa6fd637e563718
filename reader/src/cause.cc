/* SPDX-License-Identifier: MIT */
/*
 * cause.cc - a probable cause of the crash from the evidence the core
 * holds (cause.h, find_causes.h; the rules and their limits are
 * docs/cause.md's).
 */
#include <elf.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "abort_message.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "find_causes.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

std::string_view cause_kind_name(CauseKind k) noexcept {
  switch (k) {
    case CauseKind::kUseAfterFree: return "use_after_free";
    case CauseKind::kDoubleFree: return "double_free";
    case CauseKind::kInvalidFree: return "invalid_free";
    case CauseKind::kOverflowHint: return "overflow_hint";
    case CauseKind::kAbortMessage: return "abort_message";
    case CauseKind::kBadFd: return "bad_fd";
  }
  return "?";
}

std::string_view register_name(std::uint16_t machine, std::size_t index) noexcept {
  static constexpr std::string_view kX86[] = {
      "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
      "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs"};
  static constexpr std::string_view kArm[] = {
      "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10", "x11",
      "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
      "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc",  "pstate"};
  if (machine == EM_X86_64 && index < std::size(kX86)) return kX86[index];
  if (machine == EM_AARCH64 && index < std::size(kArm)) return kArm[index];
  return {};
}

namespace detail {

namespace {

/* The general registers that may hold a data pointer, in the order a
 * person reads them (pr_reg indices). */
std::vector<std::size_t> pointer_registers(std::uint16_t machine) {
  if (machine == EM_X86_64) return {10, 5, 11, 12, 13, 14, 4, 9, 8, 7, 6, 3, 2, 1, 0};
  std::vector<std::size_t> r;
  if (machine == EM_AARCH64)
    for (std::size_t i = 0; i < 30; ++i) r.push_back(i);
  return r;
}

/* A write or read that ran off a block's end faults this far past it at
 * most, or where the mapping that holds the block's end ends. */
constexpr std::uint64_t kOverflowReach = 4096;
/* Values below this are small integers, not pointers. */
constexpr std::uint64_t kLowest = 4096;
/* Most bad_fd claims. */
constexpr std::size_t kMaxFdCauses = 2;

struct Block {
  std::uint64_t start = 0, size = 0;
  std::uint32_t alloc = kNoIndex;  /* the event that returned it */
  std::uint32_t free = kNoIndex;   /* the FREE or REALLOC that freed it */
  std::uint64_t end() const { return start + std::max<std::uint64_t>(size, 1); }
};

struct DoubleFree {
  Block block;                     /* with its first free */
  std::uint32_t second = kNoIndex;
};

/* One ring's (one process's) heap as its allocation events tell it. */
struct Heap {
  std::map<std::uint64_t, Block> live, freed;
  std::set<std::uint64_t> returned;  /* every pointer an allocation returned */
  std::vector<DoubleFree> doubles;
};

const Block *containing(const std::map<std::uint64_t, Block> &m, std::uint64_t v) {
  auto it = m.upper_bound(v);
  if (it == m.begin()) return nullptr;
  --it;
  return v < it->second.end() ? &it->second : nullptr;
}

class Finder {
 public:
  Finder(const CoreFile &core, const ReadOptions &opts, const Analysis &a) : core_(core), opts_(opts), a_(a) {
    for (const auto &w : a.windows) {
      if (w.source == f::kSourceAlloc) alloc_ = &w;
      if (w.source == f::kSourceIo) io_ = &w;
    }
    /* Slots the core does not hold (a core cut off inside a ring) may be
     * any source's, at any time: holes no window counts. */
    for (const auto &r : a.rings)
      if (r.state == RingReport::State::kValid && r.ring && (r.ring->truncated || r.ring->missing > 0)) cut_ = true;
  }
  CauseReport run();

 private:
  void replay();
  void allocated(Heap &h, std::uint64_t p, std::uint64_t size, std::uint32_t i);
  void freed(Heap &h, std::uint64_t p, std::uint32_t i);
  void gather_pointers();
  void abort_message();
  void use_after_free();
  void frees();
  void invalid_free(const Heap &h, std::uint32_t i);
  void overflow();
  void heap_unknown();
  void bad_fds();

  /* Whether claims that need the absence of `source`'s events may be made
   * about event `e`: the window is usable, has no hole, and e is inside
   * its complete part. */
  bool usable(const SourceWindow *w) const {
    return w != nullptr && w->events > 0 && w->enabled && w->recorder_loaded.value_or(true) &&
           (w->complete_since_init || w->complete_for_ns);
  }
  bool inside(const SourceWindow *w, const Event &e) const {
    if (!usable(w) || w->torn > 0 || cut_) return false;
    if (w->complete_since_init) return true;
    return e.age_ns && *e.age_ns <= 0 && -*e.age_ns <= *w->complete_for_ns;
  }
  /* The abort message without its final newline, for one line of text. */
  std::string abort_line() const {
    std::string m = abort_ && abort_->message ? *abort_->message : std::string();
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
  }
  std::string window_of(const SourceWindow *w) const {
    if (w == nullptr) return {};
    return absence_text(*w) + (cut_ ? "; but the core is cut off inside the ring: the slots it lacks may hold "
                                      "any event"
                                    : std::string());
  }
  /* "at main+0x1c (v.c:12) in v (tid 7, -1.234ms)" */
  std::string where(std::uint32_t i) const;
  std::string block_text(const Block &b) const {
    return fmt::format("a {}-byte block allocated {}", b.size, where(b.alloc));
  }
  bool memory_fault() const {
    return a_.crash && (a_.crash->signo == SIGSEGV || a_.crash->signo == SIGBUS || a_.crash->signo == SIGILL);
  }

  const CoreFile &core_;
  const ReadOptions &opts_;
  const Analysis &a_;
  const SourceWindow *alloc_ = nullptr, *io_ = nullptr;
  bool cut_ = false;  /* a valid ring lacks slots (truncated, missing) */
  std::map<std::uint32_t, Heap> heaps_;   /* by ring */
  std::vector<CausePointer> pointers_;    /* fault address, registers */
  std::optional<AbortMessage> abort_;
  std::set<std::uint64_t> explained_;     /* pointer values a claim used */
  CauseReport out_;
};

std::string Finder::where(std::uint32_t i) const {
  const Event &e = a_.events[i];
  std::string s;
  if (const Location *l = a_.location_of(e)) {
    if (!l->function.empty()) {
      s = fmt::format("at {}+{:#x}", l->function, l->function_offset);
      if (!l->source_file.empty()) {
        const std::size_t slash = l->source_file.rfind('/');
        s += fmt::format(" ({}:{})", l->source_file.substr(slash == std::string::npos ? 0 : slash + 1), l->line);
      }
    } else if (l->in_module) {
      const std::size_t slash = l->module.rfind('/');
      s = fmt::format("at {}+{:#x}", l->module.substr(slash == std::string::npos ? 0 : slash + 1), l->file_offset);
    } else {
      s = fmt::format("at {:#x}", l->address);
    }
  } else {
    s = "at an unknown place";
  }
  return s + fmt::format(" (tid {}, {})", e.tid, e.age_ns ? format_age(*e.age_ns) : std::string("age unknown"));
}

void Finder::allocated(Heap &h, std::uint64_t p, std::uint64_t size, std::uint32_t i) {
  Block b{p, size, i, kNoIndex};
  /* The new block ends every freed block it overlaps: those were
   * allocated again. */
  auto it = h.freed.lower_bound(p);
  if (it != h.freed.begin() && std::prev(it)->second.end() > p) --it;
  while (it != h.freed.end() && it->first < b.end()) it = h.freed.erase(it);
  h.live[p] = b;
  h.returned.insert(p);
}

void Finder::freed(Heap &h, std::uint64_t p, std::uint32_t i) {
  if (auto it = h.live.find(p); it != h.live.end()) {
    Block b = it->second;
    b.free = i;
    h.live.erase(it);
    h.freed[p] = b;
    return;
  }
  if (auto it = h.freed.find(p); it != h.freed.end()) {
    h.doubles.push_back({it->second, i});
    return;
  }
}

void Finder::replay() {
  for (std::size_t n = 0; n < a_.events.size() && n < kNoIndex; ++n) {
    const auto i = static_cast<std::uint32_t>(n);
    const Event &e = a_.events[i];
    if (f::source_of_kind(e.kind) != f::kSourceAlloc) continue;
    Heap &h = heaps_[e.ring];
    switch (e.kind) {
      case f::kKindMalloc:
      case f::kKindCalloc:
        if (e.arg0 != 0) allocated(h, e.arg0, e.arg1, i);
        break;
      case f::kKindFree:
        if (e.arg0 != 0) freed(h, e.arg0, i);
        break;
      case f::kKindRealloc: {
        std::uint64_t old = 0;
        const auto b = a_.inline_bytes_of(e);
        if (b.size() >= 8) std::memcpy(&old, b.data(), 8);
        if (e.arg0 != 0) {
          if (old != 0 && old != e.arg0) freed(h, old, i);
          if (old == e.arg0) h.live.erase(old);
          allocated(h, e.arg0, e.arg1, i);
        } else if (e.arg1 == 0 && old != 0) {
          freed(h, old, i); /* realloc(p, 0) frees p */
        }
        break;
      }
      default: break;
    }
  }
}

void Finder::gather_pointers() {
  const CrashFacts &c = *a_.crash;
  if (c.fault_address && *c.fault_address >= kLowest) pointers_.push_back({"fault_address", *c.fault_address});
  for (const auto &t : core_.notes().threads) {
    if (t.tid != c.tid || !t.has_regs) continue;
    for (std::size_t r : pointer_registers(core_.machine()))
      if (r < t.regs.size() && t.regs[r] >= kLowest)
        pointers_.push_back({std::string(register_name(core_.machine(), r)), t.regs[r]});
    break;
  }
}

void Finder::abort_message() {
  if (!opts_.symbolize) {
    out_.cannot_tell.push_back("the abort message was not looked for: symbols are off (--no-symbols), and "
                               "__abort_msg is found through libc's symbol table");
    return;
  }
  SymbolizeOptions so;
  so.isolate = opts_.isolate_symbolizer;
  so.unverified = opts_.unverified_symbols;
  so.debuginfod_timeout_ms = opts_.debuginfod_timeout_ms;
  abort_ = read_abort_message(core_, so);
  if (!abort_->message) {
    out_.cannot_tell.push_back("abort message: " + abort_->note);
    return;
  }
  Cause c;
  c.kind = CauseKind::kAbortMessage;
  c.message = *abort_->message;
  c.text = fmt::format("abort message: {}{}", abort_line(), abort_->cut ? " (cut)" : "");
  out_.causes.push_back(std::move(c));
}

void Finder::use_after_free() {
  /* One claim per freed block, naming every pointer into it. */
  std::map<std::pair<std::uint32_t, std::uint64_t>, Cause> by_block;
  std::set<std::pair<std::uint32_t, std::uint64_t>> order_seen;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> order;
  for (const auto &p : pointers_) {
    for (const auto &[ring, h] : heaps_) {
      const Block *b = containing(h.freed, p.value);
      if (b == nullptr) continue;
      const Event &fe = a_.events[b->free];
      const auto key = std::make_pair(ring, b->start);
      if (!inside(alloc_, fe)) {
        if (order_seen.insert(key).second)
          out_.cannot_tell.push_back(fmt::format(
              "{}={:#x} points into {} and freed {}, but whether it was allocated again since cannot be told: {}",
              p.name, p.value, block_text(*b), where(b->free), window_of(alloc_)));
        explained_.insert(p.value);
        continue;
      }
      explained_.insert(p.value);
      auto [it, fresh] = by_block.try_emplace(key);
      Cause &c = it->second;
      c.pointers.push_back(p);
      if (!fresh) continue;
      order.push_back(key);
      c.kind = CauseKind::kUseAfterFree;
      c.block = b->start;
      c.block_size = b->size;
      c.offset = static_cast<std::int64_t>(p.value - b->start);
      c.window = window_of(alloc_);
      c.events = {{b->alloc, "allocation"}, {b->free, "free"}};
      c.text = fmt::format("use after free: {}={:#x} is {} bytes into {} and freed {}, not allocated again since",
                           p.name, p.value, p.value - b->start, block_text(*b), where(b->free));
    }
  }
  for (const auto &key : order) {
    Cause &c = by_block[key];
    if (c.pointers.size() > 1) {
      std::string also;
      for (std::size_t i = 1; i < c.pointers.size(); ++i)
        also += fmt::format("{}{}", i == 1 ? "" : ", ", c.pointers[i].name);
      c.text += fmt::format(" (also {})", also);
    }
    out_.causes.push_back(std::move(c));
  }
}

void Finder::frees() {
  const bool aborted = a_.crash->signo == SIGABRT;
  /* The crashing thread's last allocation event: the call glibc aborted in. */
  std::optional<std::uint32_t> last;
  for (std::size_t n = 0; n < a_.events.size() && n < kNoIndex; ++n)
    if (a_.events[n].tid == a_.crash->tid && f::source_of_kind(a_.events[n].kind) == f::kSourceAlloc)
      last = static_cast<std::uint32_t>(n);
  const auto glibc_said = [&](std::uint32_t i) {
    return aborted && last == i && abort_ && abort_->message
               ? fmt::format("; glibc aborted in it: \"{}\"", abort_line())
               : std::string();
  };
  for (const auto &[ring, h] : heaps_) {
    for (auto it = h.doubles.rbegin(); it != h.doubles.rend(); ++it) {
      const DoubleFree &d = *it;
      if (!inside(alloc_, a_.events[d.block.free])) {
        out_.cannot_tell.push_back(fmt::format(
            "{:#x} was freed {} and freed again {}; whether it was allocated again between cannot be told: {}",
            d.block.start, where(d.block.free), where(d.second), window_of(alloc_)));
        break;
      }
      Cause c;
      c.kind = CauseKind::kDoubleFree;
      c.pointers = {{"pointer", d.block.start}};
      c.block = d.block.start;
      c.block_size = d.block.size;
      c.offset = 0;
      c.window = window_of(alloc_);
      c.events = {{d.block.alloc, "allocation"}, {d.block.free, "first_free"}, {d.second, "second_free"}};
      c.text = fmt::format("double free: {:#x}, {}, was freed {} and again {}, not allocated again between{}",
                           d.block.start, block_text(d.block), where(d.block.free), where(d.second),
                           glibc_said(d.second));
      out_.causes.push_back(std::move(c));
      break; /* the latest one */
    }
    if (aborted && last && a_.events[*last].ring == ring && a_.events[*last].kind == f::kKindFree) {
      const bool doubled = std::any_of(h.doubles.begin(), h.doubles.end(),
                                       [&](const DoubleFree &d) { return d.second == *last; });
      if (!doubled) invalid_free(h, *last);
    }
  }
}

void Finder::invalid_free(const Heap &h, std::uint32_t i) {
  const Event &e = a_.events[i];
  const std::uint64_t p = e.arg0;
  if (h.freed.contains(p) || h.live.contains(p)) return;
  Cause c;
  c.kind = CauseKind::kInvalidFree;
  c.pointers = {{"pointer", p}};
  c.window = window_of(alloc_);
  const std::string said =
      abort_ && abort_->message ? fmt::format("; glibc aborted in it: \"{}\"", abort_line()) : std::string();
  if (const Block *b = containing(h.live, p); b != nullptr && inside(alloc_, a_.events[b->alloc])) {
    c.block = b->start;
    c.block_size = b->size;
    c.offset = static_cast<std::int64_t>(p - b->start);
    c.events = {{b->alloc, "allocation"}, {i, "free"}};
    c.text = fmt::format("invalid free: free({:#x}) {} is {} bytes into {}, not its start{}", p, where(i),
                         p - b->start, block_text(*b), said);
  } else if (!h.returned.contains(p) && alloc_ != nullptr && alloc_->complete_since_init && inside(alloc_, e)) {
    c.events = {{i, "free"}};
    c.text = fmt::format("invalid free: free({:#x}) {}: no allocation since tl_init returned it (what was "
                         "allocated before tl_init is not recorded){}", p, where(i), said);
  } else {
    if (!h.returned.contains(p))
      out_.cannot_tell.push_back(fmt::format("free({:#x}) {} frees a pointer the allocation window does not know: {}",
                                             p, where(i), window_of(alloc_)));
    return;
  }
  out_.causes.push_back(std::move(c));
}

void Finder::overflow() {
  if (!a_.crash->fault_address) return;
  const std::uint64_t v = *a_.crash->fault_address;
  if (v < kLowest || explained_.contains(v)) return;
  const Segment *seg = core_.segment_for(v);
  if (seg != nullptr && (seg->flags & 6) != 0) return; /* readable or writable memory faults otherwise */
  for (const auto &[ring, h] : heaps_) {
    if (containing(h.live, v) != nullptr || containing(h.freed, v) != nullptr) return;
    auto it = h.live.upper_bound(v);
    if (it == h.live.begin()) continue;
    const Block &b = std::prev(it)->second;
    const std::uint64_t end = b.end();
    if (v < end) continue;
    const std::uint64_t extent = core_.mapped_extent(end - 1);
    const bool at_mapping_end = extent != 0 && end - 1 + extent == v;
    if (v - end >= kOverflowReach && !at_mapping_end) continue;
    if (!inside(alloc_, a_.events[b.alloc])) {
      out_.cannot_tell.push_back(fmt::format("the fault address {:#x} is {} bytes past the end of {}, but whether "
                                             "it was still live cannot be told: {}",
                                             v, v - end, block_text(b), window_of(alloc_)));
      return;
    }
    Cause c;
    c.kind = CauseKind::kOverflowHint;
    c.pointers = {{"fault_address", v}};
    c.block = b.start;
    c.block_size = b.size;
    c.offset = static_cast<std::int64_t>(v - b.start);
    c.window = window_of(alloc_);
    c.events = {{b.alloc, "allocation"}};
    c.text = fmt::format("overflow hint: the fault address {:#x} is {} bytes past the end of {}, live at the crash, "
                         "with no block the window knows in between{}",
                         v, v - end, block_text(b), at_mapping_end ? ", where its mapping ends" : "");
    explained_.insert(v);
    out_.causes.push_back(std::move(c));
    return;
  }
}

void Finder::heap_unknown() {
  if (alloc_ == nullptr || alloc_->events == 0 || alloc_->complete_since_init) return;
  /* Stacks are writable anonymous memory too: the segments holding a
   * thread's stack pointer are left out. */
  std::set<const Segment *> stacks;
  for (const auto &t : core_.notes().threads)
    if (t.has_regs) stacks.insert(core_.segment_for(t.sp));
  std::string which;
  for (const auto &p : pointers_) {
    if (explained_.contains(p.value)) continue;
    const Segment *seg = core_.segment_for(p.value);
    if (seg == nullptr || (seg->flags & 2) == 0 || core_.file_for(p.value) != nullptr || stacks.contains(seg))
      continue;
    bool known = false;
    for (const auto &[ring, h] : heaps_) known = known || containing(h.live, p.value) || containing(h.freed, p.value);
    if (!known) which += fmt::format("{}{}={:#x}", which.empty() ? "" : ", ", p.name, p.value);
  }
  if (which.empty()) return;
  out_.cannot_tell.push_back(fmt::format("{} point{} into writable anonymous memory (the heap, or other data) at no "
                                         "block the allocation window knows; {}: a block allocated or freed "
                                         "before that cannot be seen",
                                         which, which.find(',') == std::string::npos ? "s" : "", window_of(alloc_)));
}

void Finder::bad_fds() {
  /* The latest EBADF failures, the crashing thread's first. */
  std::vector<std::uint32_t> found;
  for (std::size_t n = a_.events.size(); n-- > 0;) {
    const Event &e = a_.events[n];
    if (f::source_of_kind(e.kind) != f::kSourceIo || !io_fd(e)) continue;
    if (result_errno(io_result(e)) == EBADF) found.push_back(static_cast<std::uint32_t>(n));
  }
  std::stable_partition(found.begin(), found.end(),
                        [&](std::uint32_t i) { return a_.crash && a_.events[i].tid == a_.crash->tid; });
  for (std::size_t k = 0; k < found.size() && k < kMaxFdCauses; ++k) {
    const std::uint32_t i = found[k];
    const Event &e = a_.events[i];
    const std::int32_t fd = *io_fd(e);
    Cause c;
    c.kind = CauseKind::kBadFd;
    c.fd = fd;
    c.window = window_of(io_);
    c.events = {{i, "use"}};
    std::string why;
    if (e.fd_state == FdOrigin::kClosed && e.fd_origin != kNoIndex) {
      c.events.push_back({e.fd_origin, "close"});
      why = inside(io_, a_.events[e.fd_origin])
                ? fmt::format("fd {} was closed {} and no recorded call opened it again", fd, where(e.fd_origin))
                : fmt::format("fd {} was closed {}; whether something opened it again before that cannot be told",
                              fd, where(e.fd_origin));
    } else if (e.fd_state == FdOrigin::kFound && e.fd_origin != kNoIndex) {
      c.events.push_back({e.fd_origin, "made"});
      why = fmt::format("fd {} was made {} and no recorded call closed it (fclose(), close_range() and the closes "
                        "inside libc are not recorded)", fd, where(e.fd_origin));
    } else {
      why = fmt::format("no event in the window made fd {}", fd);
    }
    c.text = fmt::format("bad fd: {} of fd {} {} failed with EBADF: {}", a_.kind_name_of(e), fd, where(i), why);
    out_.causes.push_back(std::move(c));
  }
}

CauseReport Finder::run() {
  replay();
  gather_pointers();
  if (a_.crash->signo == SIGABRT) abort_message();
  frees();
  if (memory_fault()) {
    use_after_free();
    overflow();
    heap_unknown();
  }
  bad_fds();
  return std::move(out_);
}

}  // namespace

void find_causes(const CoreFile &core, const ReadOptions &options, Analysis &a) {
  if (!a.crash || a.snapshot || a.crash->signo == 0) return;
  CauseReport r = Finder(core, options, a).run();
  if (!r.causes.empty() || !r.cannot_tell.empty()) a.cause = std::move(r);
}

}  // namespace detail

}  // namespace core_timeline::reader
