/* SPDX-License-Identifier: MIT */
/*
 * unwind_table.cc - the walker's table of loaded objects and their .sframe
 * sections.
 *
 * NOT ASYNC-SIGNAL-SAFE: runs in tl_init and in the helper thread, never in
 * a signal handler (dl_iterate_phdr(3) takes the loader's lock; mmap for
 * the copies; a mutex serialises two refreshes).  What it publishes is
 * read by unwind.cc, which is.
 *
 * Signal trampolines: glibc's __restore_rt (found once beside
 * __sigaction) and each installed handler's sa_restorer, queried with
 * rt_sigaction(2) at every call (each helper round): a new one rebuilds
 * the table, so the walker tells a signal frame by its return address
 * and never reads code.
 *
 * Publication: two tables, the one being built never the one published.
 * Each entry points to an immutable CodeObject; CodeObjects and their
 * .sframe copies are never unmapped (an object dlclose'd keeps its few
 * bytes, and its CodeObject is reused if the same object at the same
 * address comes back), so a walker still holding an older table reads
 * memory that stays valid.  The cost: one page for each CodeObject and one
 * .sframe copy per distinct object ever loaded.
 */
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind.h"

/* glibc's sigaction under its other exported name (GLIBC_2.2.5). */
extern "C" int __sigaction(int, const struct sigaction *, struct sigaction *);

#ifndef PT_GNU_EH_FRAME
#define PT_GNU_EH_FRAME 0x6474e550 /* <elf.h> */
#endif
#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554 /* binutils include/elf/common.h */
#endif

namespace core_timeline::lib {

namespace {

pthread_mutex_t g_refresh_lock = PTHREAD_MUTEX_INITIALIZER;
uint64_t g_refreshed_generation = UINT64_MAX;
ObjectTable g_tables[2];
/* Every CodeObject made, for reuse (and never freed). */
constexpr uint32_t kMaxKnown = 4 * kMaxObjects;
CodeObject *g_known[kMaxKnown];
uint32_t g_known_count = 0;

/* Anonymous memory, rounded up to pages; never unmapped. */
void *grab(size_t n) {
  void *p = mmap(nullptr, (n + 4095) & ~size_t(4095), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

template <typename T>
T load(const uint8_t *p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Check an SFrame section's header (binutils include/sframe.h): magic
 * 0xdee2, version 1 or 2, this ABI, and every sub-section inside the
 * section.  Fills the CodeObject's SFrame fields; false: not usable. */
bool parse_sframe(const uint8_t *s, uint64_t size, CodeObject *o) {
  if (size < 28 || size > UINT32_MAX) return false;
  if (load<uint16_t>(s) != 0xdee2) return false;
  const uint8_t version = s[2];
  if (version != 1 && version != 2) return false;
#if defined(__x86_64__)
  if (s[4] != 3) return false; /* SFRAME_ABI_AMD64_ENDIAN_LITTLE */
#else
  return false;
#endif
  const uint64_t header = 28 + uint64_t(s[7]); /* sfh_auxhdr_len */
  const uint32_t num_fdes = load<uint32_t>(s + 8);
  const uint32_t fre_len = load<uint32_t>(s + 16);
  const uint32_t fdeoff = load<uint32_t>(s + 20);
  const uint32_t freoff = load<uint32_t>(s + 24);
  const uint32_t fde_size = version == 1 ? 17 : 20;
  const uint64_t fde_at = header + fdeoff, fre_at = header + freoff;
  if (fde_at + uint64_t(num_fdes) * fde_size > size || fre_at + uint64_t(fre_len) > size) return false;
  o->version = version;
  o->flags = s[3];
  o->fp_offset = static_cast<int8_t>(s[5]);
  o->ra_offset = static_cast<int8_t>(s[6]);
  o->fde_off = static_cast<uint32_t>(fde_at);
  o->fde_count = num_fdes;
  o->fde_size = fde_size;
  o->fre_off = static_cast<uint32_t>(fre_at);
  o->fre_len = fre_len;
  o->sframe_size = static_cast<uint32_t>(size);
  return true;
}

#if defined(__x86_64__)
/* glibc's x86-64 __restore_rt (sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c,
 * RESTORE): mov $__NR_rt_sigreturn, %rax; syscall. */
constexpr uint8_t kRestoreRt[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* glibc's __restore_rt, where libc's own sigaction is: RESTORE defines it
 * in the file of __libc_sigaction, so it lies a few bytes from
 * __sigaction (64 after it in glibc 2.36).  __sigaction, not sigaction:
 * a program or a preload library may interpose sigaction, seldom
 * __sigaction.  The 8 KiB after it, then the 8 KiB before, are read with
 * process_vm_readv(2) (code mapped execute-only fails the read instead of
 * faulting) and searched for the sequence; found once, at the first
 * table, under g_refresh_lock.  0: not found (a handler's sa_restorer
 * still shows it, installed_restorers). */
uint64_t glibc_restore_rt() {
  static bool searched = false;
  static uint64_t found = 0;
  if (searched) return found;
  searched = true;
  const uint64_t at = reinterpret_cast<uint64_t>(&__sigaction);
  uint8_t buf[8192];
  const uint64_t froms[2] = {at, at - sizeof buf};
  for (const uint64_t from : froms) {
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {reinterpret_cast<void *>(from), sizeof buf};
    const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got < static_cast<ssize_t>(sizeof kRestoreRt)) continue;
    const void *m = memmem(buf, static_cast<size_t>(got), kRestoreRt, sizeof kRestoreRt);
    if (m != nullptr) return found = from + static_cast<uint64_t>(static_cast<const uint8_t *>(m) - buf);
  }
  return found;
}

/* The kernel's struct sigaction on x86-64 (arch/x86/include/uapi/asm/signal.h:
 * handler, flags, restorer, mask). */
struct KernelSigaction {
  uint64_t handler, flags, restorer, mask;
};
constexpr uint64_t kSaRestorer = 0x04000000;

/* The sa_restorer of each handler installed now, at most `max`, each
 * once: the trampoline each handler returns to (the kernel puts it in
 * the signal frame's pretcode, arch/x86/kernel/signal_64.c).  A handler
 * installed through any libc or by a raw rt_sigaction(2) shows here. */
uint32_t installed_restorers(uint64_t *out, uint32_t max) {
  uint32_t n = 0;
  for (int sig = 1; sig <= 64; ++sig) {
    KernelSigaction k;
    if (syscall(SYS_rt_sigaction, sig, nullptr, &k, 8) != 0) continue;
    if (k.handler <= 1 || !(k.flags & kSaRestorer) || k.restorer == 0) continue; /* SIG_DFL, SIG_IGN */
    bool seen = false;
    for (uint32_t i = 0; i < n && !seen; ++i) seen = out[i] == k.restorer;
    if (!seen && n < max) out[n++] = k.restorer;
  }
  return n;
}
#else
uint64_t glibc_restore_rt() { return 0; }
uint32_t installed_restorers(uint64_t *, uint32_t) { return 0; }
#endif

/* Adds `pc` to the table's trampolines, once. */
void add_trampoline(ObjectTable *t, uint64_t pc) {
  for (uint32_t i = 0; i < t->trampoline_count; ++i)
    if (t->trampolines[i] == pc) return;
  if (t->trampoline_count < kMaxTrampolines) t->trampolines[t->trampoline_count++] = pc;
}

struct Build {
  ObjectTable *table;
};

int add_object(struct dl_phdr_info *info, size_t, void *data) {
  Build *b = static_cast<Build *>(data);
  if (b->table->count >= kMaxObjects) return 0;
  uint64_t lo = UINT64_MAX, hi = 0, sf_addr = 0, sf_size = 0, eh_vaddr = 0;
  bool eh = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      lo = lo < info->dlpi_addr + ph.p_vaddr ? lo : info->dlpi_addr + ph.p_vaddr;
      const uint64_t end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
      hi = hi > end ? hi : end;
    } else if (ph.p_type == PT_GNU_SFRAME) {
      sf_addr = info->dlpi_addr + ph.p_vaddr;
      sf_size = ph.p_memsz;
    } else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_memsz != 0) {
      eh_vaddr = ph.p_vaddr;
      eh = true;
    }
  }
  if (hi <= lo) return 0;
  /* .eh_frame_hdr's readable PT_LOAD (ld puts .eh_frame in the same one). */
  uint64_t eh_lo = 0, eh_hi = 0;
  for (int i = 0; eh && i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R) && eh_vaddr >= ph.p_vaddr && eh_vaddr - ph.p_vaddr < ph.p_filesz) {
      eh_lo = info->dlpi_addr + ph.p_vaddr;
      eh_hi = eh_lo + ph.p_filesz;
    }
  }
  for (uint32_t i = 0; i < g_known_count; ++i) {
    CodeObject *k = g_known[i];
    if (k->bias == info->dlpi_addr && k->text_lo == lo && k->text_hi == hi &&
        (k->sframe != nullptr) == (sf_size != 0) && (sf_size == 0 || k->sframe_size == sf_size)) {
      b->table->entries[b->table->count++] = {lo, hi, k};
      return 0;
    }
  }
  if (g_known_count >= kMaxKnown) return 0;
  CodeObject *o = static_cast<CodeObject *>(grab(sizeof(CodeObject)));
  if (o == nullptr) return 0;
  memset(o, 0, sizeof *o);
  o->text_lo = lo;
  o->text_hi = hi;
  o->bias = info->dlpi_addr;
  if (eh_hi > eh_lo) {
    o->eh_hdr = info->dlpi_addr + eh_vaddr;
    o->eh_lo = eh_lo;
    o->eh_hi = eh_hi;
  }
  CodeObject parsed = *o;
  if (sf_size != 0 && parse_sframe(reinterpret_cast<const uint8_t *>(sf_addr), sf_size, &parsed)) {
    uint8_t *copy = static_cast<uint8_t *>(grab(sf_size));
    if (copy != nullptr) {
      memcpy(copy, reinterpret_cast<const void *>(sf_addr), sf_size);
      mprotect(copy, (sf_size + 4095) & ~uint64_t(4095), PROT_READ);
      *o = parsed;
      o->sframe = copy;
      o->sframe_addr = sf_addr;
    }
  }
  mprotect(o, 4096, PROT_READ);
  g_known[g_known_count++] = o;
  b->table->entries[b->table->count++] = {lo, hi, o};
  return 0;
}

/* The end of the mapping named [stack] in /proc/self/maps (proc(5)). */
uint64_t main_stack_top() {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  char line[512];
  size_t len = 0;
  uint64_t top = 0;
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        if (len < sizeof line - 1) line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      const size_t l = strlen(line);
      if (l < 7 || strcmp(line + l - 7, "[stack]") != 0) continue;
      const char *p = strchr(line, '-');
      if (p == nullptr) continue;
      uint64_t v = 0;
      for (++p; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); ++p)
        v = v * 16 + static_cast<uint64_t>(*p <= '9' ? *p - '0' : *p - 'a' + 10);
      top = v;
    }
  }
  close(fd);
  return top;
}

/* Whether every restorer in `r` is among the published table's
 * trampolines. */
bool restorers_known(const uint64_t *r, uint32_t n) {
  const ObjectTable *t = __atomic_load_n(&g_objects, __ATOMIC_ACQUIRE);
  if (t == nullptr) return n == 0;
  if (t->trampoline_count >= kMaxTrampolines) return true; /* no room for more */
  for (uint32_t i = 0; i < n; ++i) {
    bool known = false;
    for (uint32_t j = 0; j < t->trampoline_count && !known; ++j) known = t->trampolines[j] == r[i];
    if (!known) return false;
  }
  return true;
}

}  // namespace

void unwind_refresh(uint64_t generation) {
  /* A handler installed since the last table, with a trampoline of its
   * own (a raw rt_sigaction, another libc): a new table that knows it. */
  uint64_t restorers[kMaxTrampolines];
  const uint32_t nrestorers = installed_restorers(restorers, kMaxTrampolines);
  if (__atomic_load_n(&g_refreshed_generation, __ATOMIC_RELAXED) == generation &&
      restorers_known(restorers, nrestorers))
    return;
  pthread_mutex_lock(&g_refresh_lock);
  if (g_main_stack_top == 0) g_main_stack_top = main_stack_top();
  if (g_refreshed_generation != generation || !restorers_known(restorers, nrestorers)) {
    const ObjectTable *current = __atomic_load_n(&g_objects, __ATOMIC_ACQUIRE);
    ObjectTable *t = current == &g_tables[0] ? &g_tables[1] : &g_tables[0];
    t->count = 0;
    t->trampoline_count = 0;
    Build b = {t};
    dl_iterate_phdr(add_object, &b);
    if (const uint64_t rt = glibc_restore_rt(); rt != 0) add_trampoline(t, rt);
    for (uint32_t i = 0; i < nrestorers; ++i) add_trampoline(t, restorers[i]);
    /* Sorted by text_lo (insertion sort: a few hundred at most). */
    for (uint32_t i = 1; i < t->count; ++i)
      for (uint32_t j = i; j > 0 && t->entries[j - 1].text_lo > t->entries[j].text_lo; --j) {
        const ObjectEntry x = t->entries[j];
        t->entries[j] = t->entries[j - 1];
        t->entries[j - 1] = x;
      }
    __atomic_add_fetch(&g_objects_generation, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g_objects, t, __ATOMIC_RELEASE);
    __atomic_store_n(&g_refreshed_generation, generation, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&g_refresh_lock);
}

}  // namespace core_timeline::lib
