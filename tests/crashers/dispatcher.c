/* SPDX-License-Identifier: MIT */
/*
 * dispatcher - the grouping fixture (docs/grouping.md): three request
 * handlers, then the same crashing helper through the same call site, so
 * every crash has the same stack (crash_helper <- dispatch <- main).
 *
 *   dispatcher --kind=get    inside REQUEST: PARSE_HEADERS, LOOKUP
 *   dispatcher --kind=put    inside REQUEST: PARSE_BODY, STORE
 *   dispatcher --kind=admin  inside REQUEST > ADMIN: PARSE_BODY, STORE
 *                            (put's events, inside another span)
 *
 * --seed=N makes the noise that must not split a group: a random number
 * of allocations (MALLOC/FREE events) before and after the handler's
 * events, a random request id (the events' argument), a handler event
 * repeated a random number of times, and a random pause inside the span.
 *
 * Built three ways (tests/crashers/CMakeLists.txt): -O0; -O2; -O0 with
 * CT_EXTRA_FUNCTION, a function placed before the handlers that moves
 * every address after it.  The group ids must not change.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <core_timeline/timeline.h>

enum {
  REQUEST = 0x2001, /* span */
  ADMIN = 0x2002,   /* span */
  PARSE_HEADERS = 0x2003,
  PARSE_BODY = 0x2004,
  LOOKUP = 0x2005,
  STORE = 0x2006,
};
TL_NAME(REQUEST, "REQUEST request_id");
TL_NAME(ADMIN, "ADMIN request_id");
TL_NAME(PARSE_HEADERS, "PARSE_HEADERS request_id");
TL_NAME(PARSE_BODY, "PARSE_BODY request_id");
TL_NAME(LOOKUP, "LOOKUP request_id");
TL_NAME(STORE, "STORE request_id");

#define FIXTURE_FN __attribute__((noinline, noipa, used))

/* Where the helper writes: NULL, read through a volatile so that no
 * optimizer can see the fault coming (and make it a trap). */
static int *volatile target;
static unsigned long long rng;

static unsigned next_random(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rng >> 33);
}

#ifdef CT_EXTRA_FUNCTION
/* Only in one build: everything after it moves. */
FIXTURE_FN unsigned extra_function(unsigned x) {
  unsigned s = 0;
  for (unsigned i = 0; i < x; ++i) s += i * 2654435761u;
  return s;
}
#endif

FIXTURE_FN void allocation_noise(void) {
  const unsigned n = next_random() % 6;
  for (unsigned i = 0; i < n; ++i) {
    const size_t size = 16 + next_random() % 512;
    void *p = malloc(size);
    tl_record(TL_KIND_MALLOC, 0, (uintptr_t)p, size);
    if (next_random() % 2) {
      tl_record(TL_KIND_FREE, 0, (uintptr_t)p, 0);
      free(p);
    }
  }
}

FIXTURE_FN void handle_get(uintptr_t id) {
  tl_mark(PARSE_HEADERS, id);
  allocation_noise();
  tl_mark(LOOKUP, id);
}

FIXTURE_FN void handle_put(uintptr_t id) {
  const unsigned parses = 1 + next_random() % 3; /* event counts are noise */
  for (unsigned i = 0; i < parses; ++i) tl_mark(PARSE_BODY, id);
  allocation_noise();
  tl_mark(STORE, id);
}

FIXTURE_FN void handle_admin(uintptr_t id) {
  (void)tl_span_begin(ADMIN, id); /* never ended: the crash is inside it */
  handle_put(id);
}

/* The one crashing instruction every kind shares. */
FIXTURE_FN void crash_helper(void) { *target = 1; }

FIXTURE_FN int dispatch(char kind, uintptr_t id) {
  const uint64_t span = tl_span_begin(REQUEST, id);
  allocation_noise();
  if (kind == 'g')
    handle_get(id);
  else if (kind == 'p')
    handle_put(id);
  else
    handle_admin(id);
  allocation_noise();
  struct timespec pause = {0, (long)(next_random() % 3000) * 1000}; /* how long the span ran: noise */
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
  crash_helper(); /* the same call site for every kind */
  tl_span_end(span);
  return 0;
}

int main(int argc, char **argv) {
  char kind = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--kind=get") == 0)
      kind = 'g';
    else if (strcmp(argv[i], "--kind=put") == 0)
      kind = 'p';
    else if (strcmp(argv[i], "--kind=admin") == 0)
      kind = 'a';
    else if (strncmp(argv[i], "--seed=", 7) == 0)
      rng = strtoull(argv[i] + 7, NULL, 10);
    else
      kind = 0, i = argc;
  }
  if (kind == 0) {
    fprintf(stderr, "usage: dispatcher --kind=get|put|admin [--seed=N]\n");
    return 64;
  }
#ifdef CT_EXTRA_FUNCTION
  if (extra_function(3) == 1) return 1;
#endif
  struct tl_options opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  const int rc = tl_init(&opts);
  if (rc != 0 && rc != -EALREADY) {
    fprintf(stderr, "dispatcher: tl_init failed: %s\n", strerror(-rc));
    return 70;
  }
  /* The reader needs the tl_init and crash clock anchors 100 us apart
   * (crash_demo.c says why). */
  struct timespec pause = {0, 2 * 1000 * 1000};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
  return dispatch(kind, 1000 + next_random() % 100000);
}
