/* SPDX-License-Identifier: MIT */
/*
 * unwind.cc - the stack walk: SFrame where an object has it, frame
 * pointers otherwise.
 *
 * ASYNC-SIGNAL-SAFE FILE.  walk_stack() runs in tl_mark_stack, in the
 * wrappers' and span begins' events (TL_STACK_DEPTH) and in the crash
 * handler, on any thread, inside signal handlers.
 * Allowed: plain loads of the published object table (unwind_table.cc) and
 * of its .sframe copies, loads from the calling thread's stack between the
 * walk's start and the stack's top, __atomic builtins, raw system calls
 * (mincore, sigaltstack, process_vm_readv, gettid, getpid).
 * Forbidden: malloc, locks, dl_iterate_phdr or dladdr (the loader's lock),
 * stdio, anything that formats, changing errno without restoring it.
 *
 * Every read is bounds-checked first: a table read against the copy's
 * size, a stack read against [walk start, stack top) of the stack the
 * frame is on (the thread's own stack, or its alternate signal stack), a
 * code read (the signal trampoline's bytes) against the object's
 * executable range.  Anything unexpected ends the walk with a reason
 * (fmt::StackEnd); nothing is guessed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind.h"

namespace core_timeline::lib {

const ObjectTable *g_objects = nullptr;
uint32_t g_objects_generation = 0;
uint64_t g_main_stack_top = 0;
uint32_t g_stack_depth = 0;

namespace {

/* The calling thread's stack as far as it has been checked: [checked_lo,
 * top) is mapped (mincore(2) said so) and is one stack.  top: the main
 * thread's is the end of /proc/self/maps' [stack] (read at tl_init); any
 * other thread's is its thread pointer, glibc placing the thread
 * descriptor and static TLS at the top of the thread's stack block
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
 * of the table and .sframe searches.  Keyed by the looked-up address
 * (with bit 0 of `key_exact` for an exact pc) and the table generation.
 * A signal handler on the same thread may rewrite an entry mid-read: the
 * key is cleared first and stored last, and a reader checks it again
 * after reading the rule. */
enum : uint8_t { kRuleSFrame = 1, kRuleFramePointer = 2, kRuleSigreturn = 3 };
struct CachedRule {
  uint64_t key;
  uint32_t generation;
  uint8_t kind;
  uint8_t fp_base;
  uint8_t has_fp;
  uint8_t plain;     /* kRuleFramePointer in an object with no .sframe at
                        all: [lo, hi) is its executable range */
  int32_t cfa;
  int16_t ra;
  int16_t fp;
  uint64_t lo, hi;
};
static_assert(sizeof(CachedRule) == 40);
constexpr uint32_t kRuleCacheSize = 32;
__thread CachedRule t_rules[kRuleCacheSize] TL_TLS;

inline uint32_t rule_slot(uint64_t key) { return static_cast<uint32_t>((key ^ key >> 7 ^ key >> 13) % kRuleCacheSize); }

__attribute__((always_inline)) inline bool rule_cached(uint64_t key, uint32_t generation, CachedRule *out) {
  const CachedRule &c = t_rules[rule_slot(key)];
  if (__atomic_load_n(&c.key, __ATOMIC_RELAXED) != key) return false;
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
  c.lo = r.lo;
  c.hi = r.hi;
  c.cfa = r.cfa;
  c.ra = r.ra;
  c.fp = r.fp;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&c.key, key, __ATOMIC_RELAXED);
}

struct Bounds {
  uint64_t lo, hi;
  bool ok;
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
  b.checked_lo = b.top;
  b.known = b.top != 0;
}

/* mincore(2) fails with ENOMEM where a page of [lo, hi) is not mapped. */
bool mapped(uint64_t lo, uint64_t hi) {
  unsigned char vec[256];
  for (uint64_t at = lo; at < hi;) {
    const uint64_t n = (hi - at) / kPage < sizeof vec ? hi - at : sizeof vec * kPage;
    if (syscall(SYS_mincore, at, n, vec) != 0) return false;
    at += n;
  }
  return true;
}

/* The stack `sp` is on: the thread's (checked down to sp with mincore the
 * first time it goes deeper), or the alternate signal stack in use.
 * With `safe_reads`, reads cannot fault, so no mincore. */
Bounds bounds_for(uint64_t sp, bool safe_reads) {
  ThreadBounds &t = t_bounds;
  if (!t.known) bounds_init();
  if (t.known && sp < t.top && t.top - sp <= kMaxStackBytes) {
    const uint64_t page = sp & ~(kPage - 1);
    if (!safe_reads && page < t.checked_lo) {
      if (!mapped(page, t.checked_lo)) return {0, 0, false};
      t.checked_lo = page;
    }
    return {sp, t.top, true};
  }
  stack_t ss;
  if (sigaltstack(nullptr, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
    const uint64_t lo = reinterpret_cast<uint64_t>(ss.ss_sp), hi = lo + ss.ss_size;
    if (sp >= lo && sp < hi) return {sp, hi, true};
  }
  return {0, 0, false};
}

__attribute__((always_inline)) inline bool read_word(uint64_t addr, const Bounds &b, bool safe, uint64_t *out) {
  if (addr < b.lo || addr > b.hi - 8 || (addr & 7) != 0) return false;
  if (!safe) {
    *out = *reinterpret_cast<const volatile uint64_t *>(addr);
    return true;
  }
  const int saved_errno = errno;
  struct iovec local = {out, 8};
  struct iovec remote = {reinterpret_cast<void *>(addr), 8};
  const ssize_t got = process_vm_readv(static_cast<pid_t>(syscall(SYS_getpid)), &local, 1, &remote, 1, 0);
  errno = saved_errno;
  return got == 8;
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

#if defined(__x86_64__)
/* glibc's x86-64 __restore_rt (sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c,
 * RESTORE): mov $__NR_rt_sigreturn, %rax; syscall.  A return address there
 * is a signal frame: the interrupted registers are in the ucontext the
 * kernel put at the stack pointer (arch/x86/kernel/signal.c, struct
 * rt_sigframe after its pretcode). */
constexpr uint8_t kRestoreRt[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
constexpr uint64_t kUcMcontext = 40;  /* uc_flags, uc_link, uc_stack */
constexpr uint64_t kRegRbp = 10, kRegRsp = 15, kRegRip = 16;  /* <sys/ucontext.h> REG_* */

/* `pc` is in an object's executable range, which ends at `text_hi`. */
bool is_sigreturn(uint64_t text_hi, uint64_t pc) {
  if (pc > text_hi - sizeof kRestoreRt) return false;
  return memcmp(reinterpret_cast<const void *>(pc), kRestoreRt, sizeof kRestoreRt) == 0;
}
#endif

}  // namespace

uint8_t walk_stack(FrameRegs r, bool exact, uint64_t *out, uint32_t max, bool safe_reads) {
#if defined(__x86_64__)
  const uint32_t generation = __atomic_load_n(&g_objects_generation, __ATOMIC_ACQUIRE);
  const ObjectTable *table = __atomic_load_n(&g_objects, __ATOMIC_ACQUIRE);
  Bounds b = bounds_for(r.sp, safe_reads);
  if (!b.ok) return fmt::make_stack(0, fmt::kStackBadFrame);
  uint32_t depth = 0;
  /* The last frame came from a frame pointer, not yet known to be code. */
  bool unchecked_fp = false;
  /* The executable range of the last object met that has no .sframe:
   * every return address in it takes the frame-pointer rule (but for
   * glibc's signal trampoline), so frames of such code cost no lookup. */
  uint64_t plain_lo = 0, plain_hi = 0;
  while (depth < max) {
    /* The code of a frame is at pc, or for a return address just before it
     * (a call may be the function's last instruction). */
    const uint64_t at = exact ? r.pc : r.pc - 1;
    const uint64_t key = at << 1 | (exact ? 1 : 0);
    CachedRule rule;
    if (!exact && at >= plain_lo && at < plain_hi && !is_sigreturn(plain_hi, r.pc)) {
      rule.kind = kRuleFramePointer;
      rule.plain = 0;
    } else if (!rule_cached(key, generation, &rule)) {
      const CodeObject *o = find_object(table, at);
      if (o == nullptr) {
        /* A return address read through rbp that is no code: rbp held no
         * frame, so that frame was never one (it is dropped). */
        if (unchecked_fp) return fmt::make_stack(depth - 1, fmt::kStackNoUnwind);
        return fmt::make_stack(depth, fmt::kStackBadFrame);
      }
      Rule sf = {false, 0, 0, false, 0};
      rule = {};
      rule.generation = generation;
      if (o->sframe != nullptr && find_rule(o, at, &sf) && sf.ra >= INT16_MIN && sf.ra <= INT16_MAX &&
          sf.fp >= INT16_MIN && sf.fp <= INT16_MAX) {
        rule.kind = kRuleSFrame;
        rule.fp_base = sf.fp_base;
        rule.has_fp = sf.has_fp;
        rule.cfa = sf.cfa;
        rule.ra = static_cast<int16_t>(sf.ra);
        rule.fp = static_cast<int16_t>(sf.fp);
      } else {
        rule.kind = !exact && is_sigreturn(o->text_hi, r.pc) ? kRuleSigreturn : kRuleFramePointer;
        if (rule.kind == kRuleFramePointer && o->sframe == nullptr) {
          rule.plain = 1;
          rule.lo = o->text_lo;
          rule.hi = o->text_hi;
        }
      }
      rule_store(key, rule);
    }
    if (rule.plain) {
      plain_lo = rule.lo;
      plain_hi = rule.hi;
    }
    uint64_t cfa = 0, ra = 0, fp = r.fp;
    if (rule.kind == kRuleSFrame) {
      cfa = (rule.fp_base ? r.fp : r.sp) + static_cast<int64_t>(rule.cfa);
      if (cfa <= r.sp || (cfa & 7) != 0 || !read_word(cfa + rule.ra, b, safe_reads, &ra))
        return fmt::make_stack(depth, fmt::kStackBadFrame);
      if (rule.has_fp && !read_word(cfa + rule.fp, b, safe_reads, &fp)) return fmt::make_stack(depth, fmt::kStackBadFrame);
    } else if (rule.kind == kRuleSigreturn) {
      /* A signal frame: resume at the interrupted pc, which is exact. */
      const uint64_t mc = r.sp + kUcMcontext;
      uint64_t pc, sp;
      if (!read_word(mc + kRegRip * 8, b, safe_reads, &pc) || !read_word(mc + kRegRsp * 8, b, safe_reads, &sp) ||
          !read_word(mc + kRegRbp * 8, b, safe_reads, &fp))
        return fmt::make_stack(depth, fmt::kStackBadFrame);
      if (pc == 0) return fmt::make_stack(depth, fmt::kStackComplete);
      /* The interrupted code may be on another stack (the handler ran on
       * the alternate one). */
      if (sp < b.lo || sp >= b.hi) b = bounds_for(sp, safe_reads);
      if (!b.ok || find_object(table, pc) == nullptr) return fmt::make_stack(depth, fmt::kStackBadFrame);
      /* Frames are read as return addresses (looked up at address - 1):
       * the trampoline's own address and the interrupted pc are exact, so
       * both are stored + 1 (ring_format.h, StackEnd). */
      if (depth > 0) out[depth - 1] += 1;
      if (depth == max) return fmt::make_stack(depth, fmt::kStackDepthLimit);
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
        return fmt::make_stack(depth, fmt::kStackNoUnwind);
      cfa = r.fp + 16;
      /* A return address must be code, else rbp held no frame.  The next
       * round's lookup of ra tells (unchecked_fp); only a frame that fills
       * the last place, which no next round looks up, is checked here. */
      CachedRule seen;
      if (ra != 0 && depth + 1 == max && !(ra - 1 >= plain_lo && ra - 1 < plain_hi) &&
          !rule_cached((ra - 1) << 1, generation, &seen) && find_object(table, ra - 1) == nullptr)
        return fmt::make_stack(depth, fmt::kStackNoUnwind);
    }
    unchecked_fp = rule.kind == kRuleFramePointer;
    if (ra == 0) return fmt::make_stack(depth, fmt::kStackComplete);
    /* (The next round looks ra up: code no object has ends it there,
     * bad_frame, with this frame kept.) */
    out[depth++] = ra;
    r = {ra, cfa, fp};
    exact = false;
  }
  return fmt::make_stack(depth, fmt::kStackDepthLimit);
#else
  (void)r, (void)exact, (void)out, (void)max, (void)safe_reads;
  return fmt::make_stack(0, fmt::kStackNoUnwind);
#endif
}

/* Called when a thread's lane is set up (claim_lane), so the bounds are
 * known before a signal handler on that thread walks. */
void stack_bounds_note() { bounds_init(); }

}  // namespace core_timeline::lib
