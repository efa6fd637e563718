/* SPDX-License-Identifier: MIT */
/*
 * name_table.cc - tl_name: the ring's name table, and the names registered
 * before there is a ring.
 *
 * ASYNC-SIGNAL-SAFE FILE.  tl_name may run in a signal handler, in a
 * constructor before tl_init, or in any thread while tl_init runs; the
 * table copies run in tl_init and in a fork child (async-signal-safe calls
 * only).  Allowed: plain loads and stores, memcpy/memset, lock-free __atomic
 * builtins.  Forbidden: malloc, locks, stdio, system calls that block, and
 * changing errno.
 *
 * Each table, the ring's (at header.names_offset) and the pending one here,
 * is filled the same way (docs/ring-format.md, "Name table"): reserve entry
 * `claimed++` with a fetch-add, store its fields, then set its state to
 * kNameCommitted with release.  Entries are never rewritten, so a reader
 * (or a copy) that sees kNameCommitted with acquire sees the whole entry.
 *
 * Before the ring: registrations go to the pending table (kPendingNames
 * entries in .bss), and tl_init copies its committed entries into the ring
 * after making it.  A registration concurrent with tl_init is closed off
 * Dekker-style: tl_name commits its pending entry, then (seq_cst) looks for
 * the ring; tl_init publishes the ring (seq_cst), then looks at the pending
 * entries.  At least one of the two sees the other, so the name reaches the
 * ring once or twice (duplicates are harmless: the newest entry of an id
 * wins).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

namespace core_timeline::lib {

fmt::RingHeader *g_names_header = nullptr;

namespace {

/* Names registered before the ring existed. */
constexpr uint32_t kPendingNames = 256;
fmt::NameEntry g_pending[kPendingNames];
uint64_t g_pending_claimed = 0;

/* Parse "NAME [ARG0 [ARG1]]" into `e` (zeroed first).  False for NULL, an
 * empty field (leading, trailing or double space), a byte that is not
 * printable ASCII other than space, a NAME over 47 bytes or an ARG over 31,
 * or more than two ARGs. */
bool parse_spec(const char *spec, fmt::NameEntry *e) {
  memset(e, 0, sizeof *e);
  if (spec == nullptr) return false;
  char *const fields[3] = {e->name, e->arg0, e->arg1};
  const uint32_t longest[3] = {fmt::kNameBytes - 1, fmt::kArgNameBytes - 1, fmt::kArgNameBytes - 1};
  uint32_t field = 0, len = 0;
  for (const char *p = spec;; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '\0' || c == ' ') {
      if (len == 0) return false;
      if (c == '\0') break;
      if (++field == 3) return false;
      len = 0;
      continue;
    }
    if (c < 0x21 || c > 0x7e || len == longest[field]) return false;
    fields[field][len++] = static_cast<char>(c);
  }
  e->arg_count = field;
  return true;
}

/* Reserve the next entry of a table of `capacity` entries and store `e`
 * there.  Returns 0, or -ENOSPC when the table is full (the count still
 * grows: `claimed` above `capacity` says how many were refused). */
int put_entry(fmt::NameEntry *table, uint32_t capacity, uint64_t *claimed, const fmt::NameEntry &e) {
  const uint64_t i = __atomic_fetch_add(claimed, 1, __ATOMIC_RELAXED);
  if (i >= capacity) return -ENOSPC;
  fmt::NameEntry *d = &table[i];
  __atomic_store_n(&d->state, fmt::kNameWriting, __ATOMIC_RELAXED);
  d->id = e.id;
  d->arg_count = e.arg_count;
  d->reserved = 0;
  memcpy(d->name, e.name, sizeof d->name);
  memcpy(d->arg0, e.arg0, sizeof d->arg0);
  memcpy(d->arg1, e.arg1, sizeof d->arg1);
  __atomic_store_n(&d->state, fmt::kNameCommitted, __ATOMIC_RELEASE);
  return 0;
}

fmt::NameEntry *table_of(fmt::RingHeader *h) {
  return reinterpret_cast<fmt::NameEntry *>(reinterpret_cast<uint8_t *>(h) + h->names_offset);
}

int put_in_ring(fmt::RingHeader *h, const fmt::NameEntry &e) {
  return put_entry(table_of(h), h->names_capacity, &h->names_claimed, e);
}

/* Copy the committed entries among the first `claimed` of `from` (a table
 * of `capacity` entries) into the ring `to`, in index order, so the newest
 * entry of an id stays the newest. */
void copy_committed(const fmt::NameEntry *from, uint32_t capacity, const uint64_t *claimed,
                    fmt::RingHeader *to) {
  uint64_t n = __atomic_load_n(claimed, __ATOMIC_ACQUIRE);
  if (n > capacity) n = capacity;
  for (uint64_t i = 0; i < n; ++i) {
    if (__atomic_load_n(&from[i].state, __ATOMIC_ACQUIRE) != fmt::kNameCommitted) continue;
    fmt::NameEntry e;
    memcpy(&e, &from[i], sizeof e);
    (void)put_in_ring(to, e); /* a full table refuses the rest; names_claimed counts them */
  }
}

}  // namespace

void names_attach(fmt::RingHeader *h, const fmt::RingHeader *parent) {
  if (parent != nullptr && parent->names_capacity != 0) {
    const auto *from = reinterpret_cast<const fmt::NameEntry *>(
        reinterpret_cast<const uint8_t *>(parent) + parent->names_offset);
    copy_committed(from, parent->names_capacity, &parent->names_claimed, h);
  }
  /* Publish first, then look at the pending entries (see the top). */
  __atomic_store_n(&g_names_header, h, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (parent == nullptr) copy_committed(g_pending, kPendingNames, &g_pending_claimed, h);
}

void names_detach() { __atomic_store_n(&g_names_header, nullptr, __ATOMIC_SEQ_CST); }

}  // namespace core_timeline::lib

using namespace core_timeline::lib;

extern "C" TL_EXPORT int tl_name(uint32_t id, const char *spec) {
  fmt::NameEntry e;
  if (!parse_spec(spec, &e)) return -EINVAL;
  e.id = id;
  fmt::RingHeader *h = __atomic_load_n(&g_names_header, __ATOMIC_SEQ_CST);
  if (h != nullptr) return put_in_ring(h, e);
  const int pending = put_entry(g_pending, kPendingNames, &g_pending_claimed, e);
  /* Committed above; now look again for a ring tl_init may have published
   * meanwhile, whose copy of the pending table may have missed this entry. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  h = __atomic_load_n(&g_names_header, __ATOMIC_SEQ_CST);
  if (h != nullptr) return put_in_ring(h, e);
  return pending;
}
