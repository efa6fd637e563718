/* SPDX-License-Identifier: MIT */
/*
 * unwind.cc - the stack walk: SFrame where an object has it, frame
 * pointers otherwise.
 *
 * ASYNC-SIGNAL-SAFE FILE.  walk_stack() runs in tl_mark_stack, in the
 * wrappers' and span begins' events (TL_STACK_DEPTH) and in the crash
 * handler, on any thread, inside signal handlers.
 * Allowed: plain loads of the published object table (unwind_table.cc) and
 * of its .sframe copies, plain loads from the calling thread's stack
 * between the walk's start and the stack's top where that part of the
 * stack was probed readable, __atomic builtins, raw system calls
 * (sigaltstack, process_vm_readv, gettid, getpid).
 * Forbidden: malloc, locks, dl_iterate_phdr or dladdr (the loader's lock),
 * stdio, anything that formats, changing errno without restoring it, a
 * plain load of any other memory (code, .eh_frame, another stack).
 *
 * Every read is bounds-checked first: a table read against the copy's
 * size, a stack read against [walk start, stack top) of the stack the
 * frame is on (the thread's own stack, or its alternate signal stack), an
 * .eh_frame read against the object's PT_LOAD that holds it.  Reads that
 * could fault go through process_vm_readv(2) (read_own_memory), which
 * fails with EFAULT instead: .eh_frame (its object may have been unloaded
 * since the table was built), the stack outside the probed part, every
 * read of the crash handler's walk.  No code is read: a signal trampoline
 * is known by its address (ObjectTable.trampolines).  Anything unexpected
 * ends the walk with a reason (fmt::StackEnd); nothing is guessed, and
 * only the frame unwind information marks outermost ends it complete.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind.h"

/* The walk's own functions: inlined into walk_stack, and not instrumented
 * by AddressSanitizer (CT_SANITIZE builds): the walk reads its callers'
 * frames on the thread's stack by design, wherever a hostile chain points
 * inside its bounds, redzones of other frames included; its safety is its
 * own bounds and probes. */
#define TL_WALKER_OUTER __attribute__((no_sanitize_address))
#define TL_WALKER __attribute__((always_inline, no_sanitize_address))

namespace core_timeline::lib {

const ObjectTable *g_objects = nullptr;
uint32_t g_objects_generation = 0;
uint64_t g_main_stack_top = 0;
uint32_t g_stack_depth = 0;
uint32_t g_io_bytes = 0;

namespace {

/* The calling thread's stack as far as it has been checked: [checked_lo,
 * top) was readable, every page of it, when probed (readable_run), and is
 * the thread's live stack, so it stays so while the thread runs on it.
 * top: the main thread's is the end of /proc/self/maps' [stack] (read at
 * tl_init); any other thread's is its thread pointer, glibc placing the
 * thread descriptor and static TLS at the top of the thread's stack block
 * (nptl/allocatestack.c), also for a stack given with
 * pthread_attr_setstack.  Set on the thread's first walk or lane claim. */
struct ThreadBounds {
  uint64_t top;
  uint64_t checked_lo;
  bool known;
};
__thread ThreadBounds t_bounds TL_TLS;

/* A thread's stack is at most this big, or its bounds are not trusted. */
constexpr uint64_t kMaxStackBytes = 1ull << 30;
constexpr uint64_t kPage = 4096;

/* How to unwind one code address, once found: a per-thread direct-mapped
 * cache, so that a call site walked again costs two stack reads instead
 * of the table and .sframe searches.  Keyed by the frame's pc as the walk
 * has it (a return address, or with bit 63 set an exact pc: no user
 * address has it) and the table generation.
 * A signal handler on the same thread may rewrite an entry mid-read: the
 * key is cleared first and stored last, and a reader checks it again
 * after reading the rule. */
enum : uint8_t { kRuleSFrame = 1, kRuleFramePointer = 2, kRuleSigreturn = 3, kRuleCfi = 4, kRuleOutermost = 5 };
struct CachedRule {
  uint64_t key;
  uint32_t generation;
  uint8_t kind;
  uint8_t fp_base;
  uint8_t has_fp;
  uint8_t plain;     /* kRuleFramePointer in an object with no .sframe at
                        all: `object`, whose executable range it is */
  int32_t cfa;
  int16_t ra;
  int16_t fp;
  const CodeObject *object;
};
/* 32 bytes: an entry's address is one shift from its slot. */
static_assert(sizeof(CachedRule) == 32);
constexpr uint32_t kRuleCacheSize = 32;
__thread CachedRule t_rules[kRuleCacheSize] TL_TLS;

/* Two operations: the slot is on the fast loop's path from one frame's
 * return address to the next. */
constexpr uint64_t kExactKey = 1ull << 63;
inline uint32_t rule_slot(uint64_t key) { return static_cast<uint32_t>((key ^ key >> 6) % kRuleCacheSize); }

TL_WALKER inline bool rule_cached(uint64_t key, uint32_t generation, CachedRule *out) {
  const CachedRule &c = t_rules[rule_slot(key)];
  if (key == 0 || __atomic_load_n(&c.key, __ATOMIC_RELAXED) != key) return false; /* 0: an empty slot's */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  *out = c;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return __atomic_load_n(&c.key, __ATOMIC_RELAXED) == key && out->generation == generation;
}

void rule_store(uint64_t key, const CachedRule &r) {
  CachedRule &c = t_rules[rule_slot(key)];
  __atomic_store_n(&c.key, 0, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  c.generation = r.generation;
  c.kind = r.kind;
  c.fp_base = r.fp_base;
  c.has_fp = r.has_fp;
  c.plain = r.plain;
  c.object = r.object;
  c.cfa = r.cfa;
  c.ra = r.ra;
  c.fp = r.fp;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&c.key, key, __ATOMIC_RELAXED);
}

/* The stack a frame is on, [lo, hi); `safe`: a part of it is not known
 * readable, so its words are read with process_vm_readv(2). */
struct Bounds {
  uint64_t lo, hi;
  bool ok;
  bool safe;
};

uint64_t thread_pointer() {
#if defined(__x86_64__)
  uint64_t tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));
  return tp;
#else
  return reinterpret_cast<uint64_t>(__builtin_thread_pointer());
#endif
}

void bounds_init() {
  ThreadBounds &b = t_bounds;
  if (b.known) return;
  const bool main_thread = syscall(SYS_gettid) == syscall(SYS_getpid);
  b.top = main_thread ? g_main_stack_top : thread_pointer();
  /* The page holding the thread pointer was just read (%fs:0). */
  b.checked_lo = b.top & ~(kPage - 1);
  b.known = b.top != 0;
}

/* The lowest `lo2` in [lo, hi) (page-aligned) such that every page of
 * [lo2, hi) is readable now: one byte of each page read with
 * process_vm_readv(2), from the top down, which stops at the first page
 * that is not (mincore(2) would not do: it succeeds on a PROT_NONE page).
 * 64 pages a call (the iovecs stay on the stack, which may be a small
 * alternate signal stack).  Returns hi when hi - kPage is not readable. */
uint64_t readable_run(uint64_t lo, uint64_t hi) {
  constexpr uint32_t kBatch = 64;
  struct iovec remote[kBatch];
  uint8_t sink[kBatch];
  const int saved_errno = errno;
  uint64_t at = hi;
  while (at > lo) {
    uint32_t n = 0;
    for (uint64_t p = at; p > lo && n < kBatch; p -= kPage) remote[n++] = {reinterpret_cast<void *>(p - kPage), 1};
    struct iovec local = {sink, n};
    const long got = syscall(SYS_process_vm_readv, syscall(SYS_getpid), &local, 1, remote, n, 0);
    if (got > 0) at -= static_cast<uint64_t>(got) * kPage;
    if (got != static_cast<long>(n)) break;
  }
  errno = saved_errno;
  return at;
}

/* The stack `sp` is on: the thread's (probed readable down to sp the
 * first time the thread's walks go that deep), or the alternate signal
 * stack in use (probed each time: a walk from a handler on it is rare;
 * where a page of it is not readable, its words are read with
 * process_vm_readv(2)).  An sp below a page of the thread's stack that
 * was not readable (its guard page, a hole) is on no stack this thread
 * knows (another thread's, a coroutine's): not ok.  With `safe_reads`
 * nothing is probed and every word is read with process_vm_readv(2). */
__attribute__((noinline)) Bounds bounds_for(uint64_t sp, bool safe_reads) {
  ThreadBounds &t = t_bounds;
  if (!t.known) bounds_init();
  if (t.known && sp < t.top && t.top - sp <= kMaxStackBytes) {
    if (safe_reads) return {sp, t.top, true, true};
    const uint64_t page = sp & ~(kPage - 1);
    if (page < t.checked_lo) {
      /* Stops at the first page that is not readable: under a guard page
       * or a hole, one system call.  (It is not remembered: the main
       * thread's stack grows down.)  A signal handler on this thread may
       * probe in between: both only ever lower checked_lo to a page they
       * found readable. */
      const uint64_t lo = readable_run(page, t.checked_lo);
      if (lo < t.checked_lo) t.checked_lo = lo;
    }
    if (page >= t.checked_lo) return {sp, t.top, true, false};
  }
  stack_t ss;
  if (sigaltstack(nullptr, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
    const uint64_t lo = reinterpret_cast<uint64_t>(ss.ss_sp), hi = lo + ss.ss_size;
    if (sp >= lo && sp < hi && hi > lo) {
      const uint64_t page = sp & ~(kPage - 1), top = (hi - 1) & ~(kPage - 1);
      return {sp, hi, true, safe_reads || readable_run(page, top + kPage) > page};
    }
  }
  return {0, 0, false, false};
}

/* bounds_for's common case inline: a walk from this thread's stack, as
 * deep as it was probed already. */
TL_WALKER inline Bounds bounds_of(uint64_t sp, bool safe_reads) {
  const ThreadBounds &t = t_bounds;
  if (t.known && !safe_reads && sp < t.top && t.top - sp <= kMaxStackBytes && (sp & ~(kPage - 1)) >= t.checked_lo)
    return {sp, t.top, true, false};
  return bounds_for(sp, safe_reads);
}

TL_WALKER inline bool read_word(uint64_t addr, const Bounds &b, bool safe, uint64_t *out) {
  if (addr < b.lo || addr > b.hi - 8 || (addr & 7) != 0) return false;
  if (!safe && !b.safe) {
    *out = *reinterpret_cast<const volatile uint64_t *>(addr);
    return true;
  }
  return read_own_memory(out, reinterpret_cast<const void *>(addr), 8) == 8;
}

__attribute__((noinline)) const CodeObject *find_object(const ObjectTable *t, uint64_t pc) {
  if (t == nullptr) return nullptr;
  uint32_t lo = 0, hi = t->count < kMaxObjects ? t->count : kMaxObjects;
  while (lo < hi) { /* the first object whose text_lo > pc */
    const uint32_t mid = lo + (hi - lo) / 2;
    if (t->entries[mid].text_lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return nullptr;
  /* The entry's copy of the range, then the object's own: a table being
   * rewritten (two refreshes during one walk) can pair an entry's range
   * with another object, never with freed memory. */
  const ObjectEntry &e = t->entries[lo - 1];
  const CodeObject *o = e.object;
  return o != nullptr && pc < e.text_hi && pc >= o->text_lo && pc < o->text_hi ? o : nullptr;
}

/* Little-endian loads from a copy, bounds checked by the caller. */
template <typename T>
T load(const uint8_t *p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* One frame row entry's rules: CFA = (fp or sp) + cfa; RA at CFA + ra;
 * the caller's fp at CFA + fp when has_fp. */
struct Rule {
  bool fp_base;
  int32_t cfa;
  int32_t ra;
  bool has_fp;
  int32_t fp;
};

int32_t signed_offset(const uint8_t *p, uint32_t size) {
  return size == 1 ? load<int8_t>(p) : size == 2 ? load<int16_t>(p) : load<int32_t>(p);
}

/* The SFrame rule for `pc` in `o` (binutils include/sframe.h: FDEs sorted
 * by start address when SFRAME_F_FDE_SORTED; each FDE's FREs follow at
 * fre_off + sfde_func_start_fre_off, in ascending start order; an FRE
 * applies from its start to the next one's).  Returns false when no FDE
 * covers pc or the entry is malformed. */
bool find_rule(const CodeObject *o, uint64_t pc, Rule *rule) {
  const uint8_t *const s = o->sframe;
  const uint32_t fsz = o->fde_size;
  /* sfde_func_start_address: relative to the section's start (versions 1
   * and 2), or to the field itself with SFRAME_F_FDE_FUNC_START_PCREL (4). */
  const bool pcrel = (o->flags & 0x4) != 0;
  const auto fde_start = [&](uint32_t i) {
    const uint32_t at = o->fde_off + i * fsz;
    const int64_t rel = load<int32_t>(s + at);
    return o->sframe_addr + (pcrel ? at : 0) + static_cast<uint64_t>(rel);
  };
  uint32_t found = UINT32_MAX;
  if (o->flags & 0x1) {
    uint32_t lo = 0, hi = o->fde_count;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (fde_start(mid) <= pc) lo = mid + 1;
      else hi = mid;
    }
    if (lo != 0) found = lo - 1;
  } else {
    for (uint32_t i = 0; i < o->fde_count && found == UINT32_MAX; ++i) {
      const uint64_t start = fde_start(i);
      if (pc >= start && pc - start < load<uint32_t>(s + o->fde_off + i * fsz + 4)) found = i;
    }
  }
  if (found == UINT32_MAX) return false;
  const uint8_t *fde = s + o->fde_off + found * fsz;
  const uint64_t start = fde_start(found);
  const uint32_t size = load<uint32_t>(fde + 4);
  if (pc < start || pc - start >= size) return false;
  const uint32_t fre_first = load<uint32_t>(fde + 8);
  const uint32_t fre_count = load<uint32_t>(fde + 12);
  const uint8_t info = fde[16];
  const uint32_t fre_type = info & 0xF;
  const bool pcmask = (info >> 4 & 1) != 0;
  if (fre_type > 2) return false;
  const uint32_t addr_size = 1u << fre_type;
  uint64_t pc_off = pc - start;
  if (pcmask) {
    /* Version 2 gives the repeated block's size (sfde_func_rep_size);
     * version 1 has none: binutils 2.40 uses the mask form for .plt only,
     * whose entries are 16 bytes. */
    const uint32_t rep = o->version >= 2 ? fde[17] : 16;
    if (rep == 0) return false;
    pc_off %= rep;
  }
  if (fre_first > o->fre_len) return false;
  uint64_t at = uint64_t(o->fre_off) + fre_first;
  const uint64_t end = uint64_t(o->fre_off) + o->fre_len;
  bool have = false;
  for (uint32_t i = 0; i < fre_count; ++i) {
    if (at + addr_size + 1 > end) return false;
    const uint32_t fre_start = addr_size == 1 ? s[at] : addr_size == 2 ? load<uint16_t>(s + at) : load<uint32_t>(s + at);
    const uint8_t fi = s[at + addr_size];
    const uint32_t count = fi >> 1 & 0xF;
    const uint32_t osize_code = fi >> 5 & 0x3;
    if (osize_code > 2 || count == 0 || count > 3) return false;
    const uint32_t osize = 1u << osize_code;
    const uint64_t next = at + addr_size + 1 + uint64_t(count) * osize;
    if (next > end) return false;
    if (fre_start > pc_off) break; /* ascending: the previous one applies */
    const uint8_t *offs = s + at + addr_size + 1;
    rule->fp_base = (fi & 1) == 0; /* SFRAME_BASE_REG_FP 0, _SP 1 */
    rule->cfa = signed_offset(offs, osize);
    uint32_t idx = 1;
    if (o->ra_offset != 0) {
      rule->ra = o->ra_offset;
    } else if (count > idx) {
      rule->ra = signed_offset(offs + idx * osize, osize);
      ++idx;
    } else {
      return false;
    }
    if (o->fp_offset != 0) {
      rule->has_fp = true;
      rule->fp = o->fp_offset;
    } else if (count > idx) {
      rule->has_fp = true;
      rule->fp = signed_offset(offs + idx * osize, osize);
    } else {
      rule->has_fp = false;
    }
    have = true;
    at = next;
  }
  return have;
}

/* ---- DWARF call frame information: interrupted frames, the crash handler ----
 *
 * A signal's pc may be anywhere in its function: before the function has
 * set up its frame (its first instructions), or in a leaf that never does
 * (gcc omits a leaf's frame pointer even with -fno-omit-frame-pointer
 * unless -mno-omit-leaf-frame-pointer).  The frame-pointer rule would then
 * take the caller's frame for the interrupted one and skip the caller.
 * So a frame whose pc is exact, in an object with no .sframe entry for it,
 * takes its rule from the object's .eh_frame, as gdb's `bt` does.  The
 * crash handler's walk (cfi_every_frame) takes every frame's so, where
 * no .sframe entry covers it: it is made once, may cost microseconds, and
 * most code (Debian's libc, a -O2 program) has neither .sframe nor frame
 * pointers; .eh_frame's outermost frame (_start, a thread's start: the
 * return address undefined) ends it complete.  The rule comes from the
 * FDE that covers the pc, found by the binary search table of
 * .eh_frame_hdr, its CIE's initial instructions, then its own up to the
 * pc.  Formats: the LSB's "Exception Frames" (.eh_frame, .eh_frame_hdr,
 * DW_EH_PE_* pointer encodings) and DWARF 4, 6.4 (the call frame
 * instructions).  Only the CFA (rsp or rbp plus an offset), the return
 * address (register 16) and rbp (register 6) are followed; anything else
 * (a CFA or a rule given by an expression, 64-bit lengths, an encoding
 * not handled) gives no rule, and the frame-pointer rule applies as
 * before.  Every read stays inside the object's PT_LOAD that holds
 * .eh_frame_hdr and goes through process_vm_readv(2), 128 bytes at a
 * time, so even an object unmapped since the table was built cannot
 * fault (a rule found is cached: the reads are made once per call site). */
constexpr uint32_t kDwarfRbp = 6, kDwarfRsp = 7, kDwarfRa = 16; /* psABI x86-64, 3.6.2 */

struct EhReader {
  uint64_t lo, hi, at;
  bool ok;
  /* The bytes last read by process_vm_readv(2), [win_at, win_at +
   * win_len): most reads are of the next few bytes. */
  uint64_t win_at = 0;
  uint32_t win_len = 0;
  uint8_t win[128];

  bool copy(void *out, uint64_t n) {
    if (!ok || at < lo || at > hi || n > hi - at || n > sizeof win) return ok = false;
    if (at < win_at || at + n > win_at + win_len) {
      const uint64_t want = hi - at < sizeof win ? hi - at : sizeof win;
      const ssize_t got = read_own_memory(win, reinterpret_cast<const void *>(at), want);
      if (got < static_cast<ssize_t>(n)) return ok = false;
      win_at = at;
      win_len = static_cast<uint32_t>(got);
    }
    memcpy(out, win + (at - win_at), n);
    at += n;
    return true;
  }
  template <typename T>
  T get() {
    T v{};
    return copy(&v, sizeof v) ? v : T{};
  }
  /* An LEB128 number (DWARF 4, 7.6), unsigned or sign-extended. */
  uint64_t leb(bool is_signed) {
    uint64_t v = 0;
    for (uint32_t shift = 0; ok; shift += 7) {
      const uint8_t b = get<uint8_t>();
      if (shift >= 64) return ok = false, 0;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (is_signed && shift + 7 < 64 && (b & 0x40)) v |= ~uint64_t(0) << (shift + 7);
        return v;
      }
    }
    return 0;
  }
  uint64_t uleb() { return leb(false); }
  int64_t sleb() { return static_cast<int64_t>(leb(true)); }
  /* A pointer in DW_EH_PE encoding `enc`: its format (low four bits) and
   * how it applies (pcrel: to the field's own address; datarel: to
   * `datarel`; `value_only`: not at all, as an FDE's address range). */
  uint64_t pointer(uint8_t enc, uint64_t datarel, bool value_only = false) {
    const uint64_t field = at;
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: case 0x04: case 0x0c: v = get<uint64_t>(); break; /* absptr, udata8, sdata8 */
      case 0x01: v = uleb(); break;
      case 0x02: v = get<uint16_t>(); break;
      case 0x03: v = get<uint32_t>(); break;
      case 0x09: v = static_cast<uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<uint64_t>(int64_t{get<int16_t>()}); break;
      case 0x0b: v = static_cast<uint64_t>(int64_t{get<int32_t>()}); break;
      default: return ok = false, 0;
    }
    if (value_only) return v;
    if (enc & 0x80) return ok = false, 0; /* DW_EH_PE_indirect */
    switch (enc & 0x70) {
      case 0x00: return v;
      case 0x10: return v + field;   /* DW_EH_PE_pcrel */
      case 0x30: return v + datarel; /* DW_EH_PE_datarel */
      default: return ok = false, 0;
    }
  }
};

/* How one register is recovered: unchanged, at CFA + off, undefined (for
 * the return address: the outermost frame), or not followed (an
 * expression, another register, a value rule). */
enum : uint8_t { kRegSame = 0, kRegAtCfa = 1, kRegOther = 2, kRegUndefined = 3 };
struct CfiRow {
  uint32_t cfa_reg;
  int64_t cfa_off;
  bool cfa_expr;
  uint8_t ra_how, fp_how;
  int64_t ra_off, fp_off;
};

struct Cie {
  uint64_t code_align;
  int64_t data_align;
  uint8_t fde_enc;
  bool z;
  uint64_t insns, end;
};

bool parse_cie(EhReader r, uint64_t at, Cie *c) {
  r.at = at;
  const uint32_t len = r.get<uint32_t>();
  if (!r.ok || len == 0 || len == 0xffffffffu || len > r.hi - r.at) return false;
  c->end = r.at + len;
  if (r.get<uint32_t>() != 0) return false; /* a CIE's id */
  const uint8_t version = r.get<uint8_t>();
  if (version != 1 && version != 3) return false;
  char aug[8];
  uint32_t n = 0;
  for (;;) {
    const char ch = static_cast<char>(r.get<uint8_t>());
    if (!r.ok || n == sizeof aug) return false;
    aug[n++] = ch;
    if (ch == '\0') break;
  }
  c->code_align = r.uleb();
  c->data_align = r.sleb();
  const uint64_t ra = version == 1 ? r.get<uint8_t>() : r.uleb();
  if (!r.ok || ra != kDwarfRa) return false;
  c->fde_enc = 0;
  c->z = aug[0] == 'z';
  if (aug[0] != '\0' && !c->z) return false; /* "eh" and others: layout unknown */
  if (c->z) {
    const uint64_t aug_len = r.uleb();
    if (!r.ok || aug_len > c->end - r.at) return false;
    const uint64_t aug_end = r.at + aug_len;
    for (uint32_t i = 1; aug[i] != '\0'; ++i) {
      if (aug[i] == 'R') {
        c->fde_enc = r.get<uint8_t>();
      } else if (aug[i] == 'L') {
        (void)r.get<uint8_t>();
      } else if (aug[i] == 'P') {
        const uint8_t enc = r.get<uint8_t>();
        (void)r.pointer(static_cast<uint8_t>(enc & 0x0f), 0, true); /* the personality: skipped */
      } else if (aug[i] != 'S' && aug[i] != 'B') {
        return false; /* unknown: where its data ends (and R's is) is not known */
      }
    }
    r.at = aug_end;
  }
  c->insns = r.at;
  return r.ok && c->insns <= c->end;
}

/* A factored offset times the data alignment factor, wrapping as the
 * untrusted product may (an offset out of range is refused later). */
int64_t scaled(uint64_t factored, int64_t align) {
  return static_cast<int64_t>(factored * static_cast<uint64_t>(align));
}

/* Run call frame instructions [r.at, end) from `loc` while the location
 * stays at or below `pc`.  `initial`: the row after the CIE's
 * instructions, for DW_CFA_restore. */
bool run_cfa(EhReader &r, uint64_t end, const Cie &c, uint64_t loc, uint64_t pc, CfiRow *row, const CfiRow &initial) {
  CfiRow saved[4];
  uint32_t depth = 0;
  const auto set = [&](uint64_t reg, uint8_t how, int64_t off) {
    if (reg == kDwarfRa) row->ra_how = how, row->ra_off = off;
    else if (reg == kDwarfRbp) row->fp_how = how, row->fp_off = off;
  };
  const auto restore = [&](uint64_t reg) {
    if (reg == kDwarfRa) row->ra_how = initial.ra_how, row->ra_off = initial.ra_off;
    else if (reg == kDwarfRbp) row->fp_how = initial.fp_how, row->fp_off = initial.fp_off;
  };
  /* A block (a DWARF expression) is skipped; it must end by `end`, so
   * the walk only ever moves forwards. */
  const auto skip = [&](uint64_t n) {
    if (!r.ok || r.at > end || n > end - r.at) return false;
    r.at += n;
    return true;
  };
  const auto advance = [&](uint64_t delta) {
    loc += delta * c.code_align;
    return loc <= pc;
  };
  while (r.ok && r.at < end) {
    const uint8_t op = r.get<uint8_t>();
    const uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1: if (!advance(low)) return true; continue;                  /* DW_CFA_advance_loc */
      case 2: set(low, kRegAtCfa, scaled(r.uleb(), c.data_align)); continue; /* offset */
      case 3: restore(low); continue;                                     /* DW_CFA_restore */
      default: break;
    }
    switch (op) {
      case 0x00: break;                                                   /* nop */
      case 0x01: loc = r.pointer(c.fde_enc, 0); if (loc > pc) return r.ok; break; /* set_loc */
      case 0x02: if (!advance(r.get<uint8_t>())) return r.ok; break;
      case 0x03: if (!advance(r.get<uint16_t>())) return r.ok; break;
      case 0x04: if (!advance(r.get<uint32_t>())) return r.ok; break;
      case 0x05: { const uint64_t reg = r.uleb(); set(reg, kRegAtCfa, scaled(r.uleb(), c.data_align)); break; }
      case 0x06: restore(r.uleb()); break;
      case 0x07: set(r.uleb(), kRegUndefined, 0); break;                  /* undefined */
      case 0x08: set(r.uleb(), kRegSame, 0); break;                       /* same_value */
      case 0x09: { const uint64_t reg = r.uleb(); (void)r.uleb(); set(reg, kRegOther, 0); break; } /* register */
      case 0x0a: if (depth == 4) return false; saved[depth++] = *row; break; /* remember_state */
      case 0x0b: if (depth == 0) return false; *row = saved[--depth]; break; /* restore_state */
      case 0x0c: row->cfa_reg = static_cast<uint32_t>(r.uleb()); row->cfa_off = static_cast<int64_t>(r.uleb()); row->cfa_expr = false; break;
      case 0x0d: row->cfa_reg = static_cast<uint32_t>(r.uleb()); break;
      case 0x0e: row->cfa_off = static_cast<int64_t>(r.uleb()); break;
      case 0x0f: if (!skip(r.uleb())) return false; row->cfa_expr = true; break; /* def_cfa_expression */
      case 0x10: case 0x16: { const uint64_t reg = r.uleb(); if (!skip(r.uleb())) return false; set(reg, kRegOther, 0); break; }
      case 0x11: { const uint64_t reg = r.uleb(); set(reg, kRegAtCfa, scaled(static_cast<uint64_t>(r.sleb()), c.data_align)); break; }
      case 0x12: row->cfa_reg = static_cast<uint32_t>(r.uleb()); row->cfa_off = scaled(static_cast<uint64_t>(r.sleb()), c.data_align); row->cfa_expr = false; break;
      case 0x13: row->cfa_off = scaled(static_cast<uint64_t>(r.sleb()), c.data_align); break;
      case 0x14: { const uint64_t reg = r.uleb(); (void)r.uleb(); set(reg, kRegOther, 0); break; } /* val_offset */
      case 0x15: { const uint64_t reg = r.uleb(); (void)r.sleb(); set(reg, kRegOther, 0); break; }
      case 0x2e: (void)r.uleb(); break;                                   /* GNU_args_size */
      case 0x2f: { const uint64_t reg = r.uleb(); set(reg, kRegAtCfa, scaled(0 - r.uleb(), c.data_align)); break; }
      default: return false;
    }
  }
  return r.ok;
}

/* The .eh_frame rule for code address `pc` in `o`: kCfiRule (in *rule),
 * kCfiOutermost (the return address is undefined there: _start, a
 * thread's start function), or kCfiNone (no FDE, or none usable). */
enum : uint8_t { kCfiNone = 0, kCfiRule = 1, kCfiOutermost = 2 };
/* Out of line and cold: the walk's per-frame loop stays as small as it
 * was without it (tl_mark_stack's frames never come here). */
__attribute__((noinline, cold)) uint8_t find_cfi_rule(const CodeObject *o, uint64_t pc, Rule *rule) {
  EhReader r;
  r.lo = o->eh_lo;
  r.hi = o->eh_hi;
  r.at = o->eh_hdr;
  r.ok = true;
  const uint64_t hdr = o->eh_hdr;
  if (r.get<uint8_t>() != 1) return kCfiNone; /* version */
  const uint8_t ptr_enc = r.get<uint8_t>(), count_enc = r.get<uint8_t>(), table_enc = r.get<uint8_t>();
  (void)r.pointer(ptr_enc, hdr); /* eh_frame_ptr: not needed */
  const uint64_t count = r.pointer(count_enc, hdr);
  /* The table ld writes: pairs of (initial location, FDE), datarel sdata4. */
  if (!r.ok || table_enc != 0x3b || count == 0 || count > (r.hi - r.at) / 8) return kCfiNone;
  const uint64_t table = r.at;
  uint64_t lo = 0, hi = count;
  while (lo < hi) { /* the first entry whose initial location is above pc */
    const uint64_t mid = lo + (hi - lo) / 2;
    r.at = table + mid * 8;
    const uint64_t start = hdr + static_cast<uint64_t>(int64_t{r.get<int32_t>()});
    if (!r.ok) return kCfiNone;
    if (start <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return kCfiNone;
  r.at = table + (lo - 1) * 8 + 4;
  const uint64_t fde = hdr + static_cast<uint64_t>(int64_t{r.get<int32_t>()});
  r.at = fde;
  const uint32_t len = r.get<uint32_t>();
  if (!r.ok || len == 0 || len == 0xffffffffu || len > r.hi - r.at) return kCfiNone;
  const uint64_t end = r.at + len;
  const uint64_t cie_field = r.at;
  const uint32_t cie_off = r.get<uint32_t>();
  Cie c;
  if (!r.ok || cie_off == 0 || cie_off > cie_field || !parse_cie(r, cie_field - cie_off, &c)) return kCfiNone;
  const uint64_t begin = r.pointer(c.fde_enc, 0);
  const uint64_t range = r.pointer(c.fde_enc, 0, true);
  if (!r.ok || pc < begin || pc - begin >= range) return kCfiNone;
  if (c.z) {
    const uint64_t aug_len = r.uleb();
    if (!r.ok || r.at > end || aug_len > end - r.at) return kCfiNone;
    r.at += aug_len;
  }
  if (!r.ok || r.at > end) return kCfiNone;
  const uint64_t fde_insns = r.at;
  CfiRow row = {kDwarfRsp, 8, false, kRegSame, kRegSame, 0, 0};
  r.at = c.insns;
  if (!run_cfa(r, c.end, c, begin, UINT64_MAX, &row, row)) return kCfiNone;
  const CfiRow initial = row;
  r.at = fde_insns;
  if (!run_cfa(r, end, c, begin, pc, &row, initial)) return kCfiNone;
  if (row.ra_how == kRegUndefined) return kCfiOutermost;
  if (row.cfa_expr || (row.cfa_reg != kDwarfRsp && row.cfa_reg != kDwarfRbp) || row.ra_how != kRegAtCfa ||
      row.fp_how == kRegOther || row.cfa_off < INT32_MIN || row.cfa_off > INT32_MAX ||
      row.ra_off < INT16_MIN || row.ra_off > INT16_MAX || row.fp_off < INT16_MIN || row.fp_off > INT16_MAX)
    return kCfiNone;
  rule->fp_base = row.cfa_reg == kDwarfRbp;
  rule->cfa = static_cast<int32_t>(row.cfa_off);
  rule->ra = static_cast<int32_t>(row.ra_off);
  rule->has_fp = row.fp_how == kRegAtCfa;
  rule->fp = static_cast<int32_t>(row.fp_off);
  return kCfiRule;
}

#if defined(__x86_64__)
/* A return address that is a signal trampoline (the table's: glibc's
 * __restore_rt, found beside __sigaction, and every installed
 * handler's sa_restorer) is a signal frame: the interrupted registers are
 * in the ucontext the kernel put at the stack pointer
 * (arch/x86/kernel/signal_64.c, struct rt_sigframe after its pretcode). */
constexpr uint64_t kUcMcontext = 40;  /* uc_flags, uc_link, uc_stack */
constexpr uint64_t kRegRbp = 10, kRegRsp = 15, kRegRip = 16;  /* <sys/ucontext.h> REG_* */

TL_WALKER inline bool is_sigreturn(const ObjectTable *t, uint64_t pc) {
  const uint32_t n = t->trampoline_count < kMaxTrampolines ? t->trampoline_count : kMaxTrampolines;
  for (uint32_t i = 0; i < n; ++i)
    if (t->trampolines[i] == pc) return true;
  return false;
}

/* The walk's state between its two loops. */
struct WalkState {
  FrameRegs r;
  uint32_t depth;
  bool unchecked_fp;
};

/* The fast loop: frames whose rule the thread's cache holds (an SFrame,
 * CFI or frame-pointer rule of the current table), on a stack part known
 * readable, as long as nothing else comes.  It does what the general loop
 * does for those rules, with its few variables in registers; anything else
 * (a miss, a signal frame, a read out of bounds, a frame-pointer frame in
 * the last place whose return address the cache does not know as code)
 * is left to the general loop, which goes on from the same state.
 * Returns false when a return address of 0 ends the walk here (at
 * w.depth; no_unwind after a frame-pointer frame, else bad_frame). */
TL_WALKER inline bool walk_cached(WalkState &w, uint64_t *out, uint32_t max, uint32_t generation,
                                                      const Bounds &b) {
  FrameRegs r = w.r;
  uint32_t depth = w.depth;
  bool unchecked_fp = w.unchecked_fp;
  /* The cache's address once (the signal fences below would make the
   * compiler read the thread pointer again at every frame). */
  const CachedRule *const rules = t_rules;
  while (depth < max) {
    const uint64_t key = r.pc;
    const CachedRule &c = rules[rule_slot(key)];
    if (__atomic_load_n(&c.key, __ATOMIC_RELAXED) != key) break;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const uint8_t kind = c.kind, fp_base = c.fp_base, has_fp = c.has_fp;
    const uint32_t gen = c.generation;
    const int64_t cfa_off = c.cfa, ra_off = c.ra, fp_off = c.fp;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c.key, __ATOMIC_RELAXED) != key || gen != generation) break;
    uint64_t cfa, ra, fp = r.fp;
    if (kind == kRuleSFrame || kind == kRuleCfi) {
      const uint64_t base = fp_base ? r.fp : r.sp;
      cfa = base + static_cast<uint64_t>(cfa_off);
      /* (base + (cfa + ra): one add on the path to the next frame) */
      const uint64_t ra_at = base + static_cast<uint64_t>(cfa_off + ra_off), fp_at = cfa + static_cast<uint64_t>(fp_off);
      if (cfa <= r.sp || (cfa & 7) != 0 || ra_at < b.lo || ra_at > b.hi - 8 || (ra_at & 7) != 0) break;
      if (has_fp && (fp_at < b.lo || fp_at > b.hi - 8 || (fp_at & 7) != 0)) break;
      ra = *reinterpret_cast<const volatile uint64_t *>(ra_at);
      if (has_fp) fp = *reinterpret_cast<const volatile uint64_t *>(fp_at);
      unchecked_fp = false;
    } else if (kind == kRuleFramePointer) {
      if (r.fp < r.sp || r.fp > b.hi - 16 || (r.fp & 7) != 0) break;
      ra = reinterpret_cast<const volatile uint64_t *>(r.fp)[1];
      fp = reinterpret_cast<const volatile uint64_t *>(r.fp)[0];
      cfa = r.fp + 16;
      /* The last place, which no next round looks up: its return address
       * must be code, which a rule cached for it tells; else the general
       * loop checks it. */
      if (depth + 1 == max && ra != 0) {
        const CachedRule &n = rules[rule_slot(ra)];
        if (__atomic_load_n(&n.key, __ATOMIC_RELAXED) != ra || n.generation != generation) break;
      }
      unchecked_fp = true;
    } else {
      break;
    }
    if (ra == 0) {
      w.depth = depth;
      w.unchecked_fp = unchecked_fp;
      return false;
    }
    out[depth++] = ra;
    r = {ra, cfa, fp};
  }
  w.r = r;
  w.depth = depth;
  w.unchecked_fp = unchecked_fp;
  return true;
}
#endif

}  // namespace

TL_WALKER_OUTER WalkResult walk_stack(FrameRegs r, bool exact, uint64_t *out, uint32_t max, bool safe_reads, bool cfi_every_frame) {
#if defined(__x86_64__)
  const uint32_t generation = __atomic_load_n(&g_objects_generation, __ATOMIC_ACQUIRE);
  const ObjectTable *table = __atomic_load_n(&g_objects, __ATOMIC_ACQUIRE);
  Bounds b = bounds_of(r.sp, safe_reads);
  if (!b.ok) return {0, fmt::kStackBadFrame};
  uint32_t depth = 0;
  /* The last frame came from a frame pointer, not yet known to be code. */
  bool unchecked_fp = false;
  if (!exact && !safe_reads && !cfi_every_frame && !b.safe) {
    WalkState w = {r, 0, false};
    if (!walk_cached(w, out, max, generation, b))
      return {w.depth, static_cast<uint8_t>(w.unchecked_fp ? fmt::kStackNoUnwind : fmt::kStackBadFrame)};
    r = w.r;
    depth = w.depth;
    unchecked_fp = w.unchecked_fp;
  }
  /* The executable range of the last object met that has no .sframe:
   * every return address in it takes the frame-pointer rule (but for
   * glibc's signal trampoline), so frames of such code cost no lookup. */
  uint64_t plain_lo = 0, plain_hi = 0;
  /* A signal frame moved the walk to another stack (once only). */
  bool switched = false;
  while (depth < max) {
    /* The code of a frame is at pc, or for a return address just before it
     * (a call may be the function's last instruction). */
    const uint64_t at = exact ? r.pc : r.pc - 1;
    const uint64_t key = exact ? r.pc | kExactKey : r.pc;
    CachedRule rule;
    if (!exact && !cfi_every_frame && at >= plain_lo && at < plain_hi && !is_sigreturn(table, r.pc)) {
      rule.kind = kRuleFramePointer;
      rule.plain = 0;
      rule.has_fp = 0; /* (unread: gcc cannot tell) */
      rule.fp = 0;
    } else if (cfi_every_frame || !rule_cached(key, generation, &rule)) {
      const CodeObject *o = find_object(table, at);
      if (o == nullptr) {
        /* A return address read through rbp that is no code: rbp held no
         * frame, so that frame was never one (it is dropped). */
        if (unchecked_fp) return {depth - 1, fmt::kStackNoUnwind};
        return {depth, fmt::kStackBadFrame};
      }
      Rule sf = {false, 0, 0, false, 0};
      rule = {};
      rule.generation = generation;
      /* An SFrame entry; else, for an interrupted frame (whose function
       * may stand before or without its own frame) or in a walk that asks
       * for it (the crash handler's), the object's CFI. */
      uint8_t kind = 0;
      if (o->sframe != nullptr && find_rule(o, at, &sf)) {
        kind = kRuleSFrame;
      } else if ((exact || cfi_every_frame) && o->eh_hdr != 0) {
        const uint8_t cfi = find_cfi_rule(o, at, &sf);
        kind = cfi == kCfiRule ? kRuleCfi : cfi == kCfiOutermost ? kRuleOutermost : 0;
      }
      if (kind == kRuleOutermost) {
        rule.kind = kRuleOutermost;
      } else if (kind != 0 && sf.ra >= INT16_MIN && sf.ra <= INT16_MAX && sf.fp >= INT16_MIN && sf.fp <= INT16_MAX) {
        rule.kind = kind;
        rule.fp_base = sf.fp_base;
        rule.has_fp = sf.has_fp;
        rule.cfa = sf.cfa;
        rule.ra = static_cast<int16_t>(sf.ra);
        rule.fp = static_cast<int16_t>(sf.fp);
      } else {
        rule.kind = !exact && is_sigreturn(table, r.pc) ? kRuleSigreturn : kRuleFramePointer;
        if (rule.kind == kRuleFramePointer && o->sframe == nullptr) {
          rule.plain = 1;
          rule.object = o;
        }
      }
      /* A walk with CFI for every frame (once, in the crash handler)
       * leaves the cache to the walks that read it. */
      if (!cfi_every_frame) rule_store(key, rule);
    }
    /* The CFI's outermost frame: nothing called it. */
    if (rule.kind == kRuleOutermost) return {depth, fmt::kStackComplete};
    if (rule.plain) {
      plain_lo = rule.object->text_lo;
      plain_hi = rule.object->text_hi;
    }
    uint64_t cfa = 0, ra = 0, fp = r.fp;
    if (rule.kind == kRuleSFrame || rule.kind == kRuleCfi) {
      cfa = (rule.fp_base ? r.fp : r.sp) + static_cast<int64_t>(rule.cfa);
      if (cfa <= r.sp || (cfa & 7) != 0 || !read_word(cfa + rule.ra, b, safe_reads, &ra))
        return {depth, fmt::kStackBadFrame};
      if (rule.has_fp && !read_word(cfa + rule.fp, b, safe_reads, &fp)) return {depth, fmt::kStackBadFrame};
    } else if (rule.kind == kRuleSigreturn) {
      /* A signal frame: resume at the interrupted pc, which is exact. */
      const uint64_t mc = r.sp + kUcMcontext;
      uint64_t pc, sp;
      if (!read_word(mc + kRegRip * 8, b, safe_reads, &pc) || !read_word(mc + kRegRsp * 8, b, safe_reads, &sp) ||
          !read_word(mc + kRegRbp * 8, b, safe_reads, &fp))
        return {depth, fmt::kStackBadFrame};
      /* The interrupted code ran before the kernel put the signal frame
       * below its stack pointer: on the same stack, its sp is above the
       * frame.  Or it is on another stack (the handler ran on the
       * alternate one), which a walk leaves once: the interrupted
       * frames, then their callers, only ever move up, and no chain of
       * signal frames can cycle. */
      if (sp >= b.lo && sp < b.hi) {
        if (sp <= r.sp) return {depth, fmt::kStackBadFrame};
      } else {
        if (switched) return {depth, fmt::kStackBadFrame};
        switched = true;
        b = bounds_for(sp, safe_reads);
      }
      if (!b.ok || find_object(table, pc) == nullptr) return {depth, fmt::kStackBadFrame};
      /* Frames are read as return addresses (looked up at address - 1):
       * the trampoline's own address and the interrupted pc are exact, so
       * both are stored + 1 (ring_format.h, StackEnd). */
      if (depth > 0) out[depth - 1] += 1;
      if (depth == max) return {depth, fmt::kStackDepthLimit};
      out[depth++] = pc + 1;
      r = {pc, sp, fp};
      exact = true;
      unchecked_fp = false; /* the trampoline's address was looked up */
      continue;
    } else {
      /* No unwind information: a frame pointer, if rbp holds one (the
       * psABI frame: saved rbp at [rbp], return address at [rbp + 8]). */
      if (r.fp < r.sp || r.fp > b.hi - 16 || (r.fp & 7) != 0 || !read_word(r.fp + 8, b, safe_reads, &ra) ||
          !read_word(r.fp, b, safe_reads, &fp))
        return {depth, fmt::kStackNoUnwind};
      cfa = r.fp + 16;
      /* A return address must be code, else rbp held no frame.  The next
       * round's lookup of ra tells (unchecked_fp); only a frame that fills
       * the last place, which no next round looks up, is checked here. */
      CachedRule seen;
      if (ra != 0 && depth + 1 == max && !(ra - 1 >= plain_lo && ra - 1 < plain_hi) &&
          !rule_cached(ra, generation, &seen) && find_object(table, ra - 1) == nullptr)
        return {depth, fmt::kStackNoUnwind};
    }
    unchecked_fp = rule.kind == kRuleFramePointer;
    /* A return address of 0 is no code: the chain's end by convention
     * (a zeroed frame), which the stack's own bytes can fake, so not
     * complete; only the unwind information's outermost frame is. */
    if (ra == 0) return {depth, unchecked_fp ? fmt::kStackNoUnwind : fmt::kStackBadFrame};
    /* (The next round looks ra up: code no object has ends it there,
     * bad_frame, with this frame kept.) */
    out[depth++] = ra;
    r = {ra, cfa, fp};
    exact = false;
  }
  return {depth, fmt::kStackDepthLimit};
#else
  (void)r, (void)exact, (void)out, (void)max, (void)safe_reads;
  return {0, fmt::kStackNoUnwind};
#endif
}

/* Called when a thread's lane is set up (claim_lane), so the bounds are
 * known before a signal handler on that thread walks. */
void stack_bounds_note() { bounds_init(); }

}  // namespace core_timeline::lib
