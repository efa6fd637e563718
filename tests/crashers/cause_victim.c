/* SPDX-License-Identifier: MIT */
/*
 * cause_victim - crashes of the kinds docs/cause.md names, one per mode,
 * for cause_test (run under libtimeline-alloc.so and libtimeline-io.so):
 *
 *   uaf           frees a struct, then calls through the function pointer
 *                 in it: the allocator's free-list pointer (glibc's tcache
 *                 "next", safe-linked) now lies where the pointer was, so
 *                 the call jumps to a bad address (SIGSEGV)
 *   uaf_realloc   the same through a pointer realloc() moved away from
 *   uaf_old       the same, but the free lies before the allocation window:
 *                 many allocations after it overwrite its lane (TL_SLOTS)
 *   double_free   frees a block twice: glibc aborts ("free(): double free
 *                 detected in tcache 2")
 *   invalid_free  frees a pointer into the middle of a block: glibc aborts
 *                 ("free(): invalid pointer")
 *   assert        a failed assert(): glibc's message quotes it
 *   overflow      writes past the end of a heap block until it faults where
 *                 the heap ends
 *   closed_fd     writes to an fd it closed (EBADF), then abort()s
 *   double_close  closes an fd twice, then assert()s the second close
 *
 * Each mode's heap calls are made as written (-fno-builtin; the pointers
 * pass through a volatile global so the compiler keeps every call).
 */
#undef NDEBUG /* assert() is what one mode tests */
#include <assert.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VICTIM_FN __attribute__((noinline, noipa))

struct handler {
  void (*fn)(struct handler *);
  char name[16];
};

static void *volatile g_keep;
static struct handler *volatile g_stale;

VICTIM_FN static void greet(struct handler *h) { g_keep = h->name; }

VICTIM_FN static struct handler *make_handler(void) {
  struct handler *h = malloc(sizeof *h);
  h->fn = greet;
  strcpy(h->name, "greeter");
  return h;
}

VICTIM_FN static void release(void *p) { free(p); }

VICTIM_FN static void call_handler(struct handler *h) { h->fn(h); }

VICTIM_FN static int uaf(void) {
  struct handler *h = make_handler();
  call_handler(h);
  release(h);
  call_handler(h); /* the first 8 bytes are tcache's next pointer now */
  return 0;
}

VICTIM_FN static int uaf_realloc(void) {
  struct handler *h = make_handler();
  g_keep = malloc(sizeof *h); /* a fence: realloc cannot grow h in place */
  g_stale = h;
  g_keep = realloc(h, 4096);  /* moves h, and frees its old block */
  call_handler(g_stale);
  return 0;
}

VICTIM_FN static int uaf_old(void) {
  struct handler *h = make_handler();
  release(h);
  /* Far more allocation events than a lane of TL_SLOTS holds, of another
   * size, so that h's chunk stays in its tcache bin. */
  for (int i = 0; i < 20000; ++i) {
    g_keep = malloc(200);
    release(g_keep);
  }
  call_handler(h);
  return 0;
}

VICTIM_FN static int double_free(void) {
  char *p = malloc(40);
  g_keep = p;
  release(p);
  release(g_keep);
  return 0;
}

VICTIM_FN static int invalid_free(void) {
  char *p = malloc(64);
  g_keep = p + 16;
  release(g_keep);
  return 0;
}

VICTIM_FN static int failed_assert(int queued) {
  assert(queued > 0 && "the queue must not be empty");
  return queued;
}

VICTIM_FN static int overflow(void) {
  /* From the heap's top chunk, not an mmap of its own. */
  mallopt(M_MMAP_THRESHOLD, 1 << 24);
  volatile char *p = malloc(100000);
  for (size_t i = 0;; ++i) p[i] = 'x';
  return 0;
}

VICTIM_FN static int closed_fd(void) {
  int fd = open("/dev/null", O_WRONLY);
  close(fd);
  if (write(fd, "lost", 4) < 0) abort();
  return 0;
}

VICTIM_FN static int double_close(void) {
  int fd = open("/dev/null", O_RDONLY);
  close(fd);
  int second = close(fd);
  assert(second == 0);
  return second;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cause_victim MODE\n");
    return 64;
  }
  const char *m = argv[1];
  if (strcmp(m, "uaf") == 0) return uaf();
  if (strcmp(m, "uaf_realloc") == 0) return uaf_realloc();
  if (strcmp(m, "uaf_old") == 0) return uaf_old();
  if (strcmp(m, "double_free") == 0) return double_free();
  if (strcmp(m, "invalid_free") == 0) return invalid_free();
  if (strcmp(m, "assert") == 0) return failed_assert(argc - 2);
  if (strcmp(m, "overflow") == 0) return overflow();
  if (strcmp(m, "closed_fd") == 0) return closed_fd();
  if (strcmp(m, "double_close") == 0) return double_close();
  fprintf(stderr, "cause_victim: unknown mode %s\n", m);
  return 64;
}
