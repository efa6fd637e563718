// SPDX-License-Identifier: MIT
// preload_stress - heap and I/O calls from many threads at once, under the
// preload wrappers, to catch deadlocks, recursion and frees handed to the
// wrong allocator.  The test that runs it kills it if it outlives its
// timeout (a hang is a failure).
//
//   preload_stress [--expect-alloc] [--expect-io]
//
// 1. Thread churn: 24 rounds of 8 short-lived threads (192 threads, more
//    than the ring's 64 lanes), each allocating as it starts and exits.
// 2. kWorkers threads run a mix of malloc, calloc, realloc, posix_memalign,
//    aligned_alloc, new[] and free over blocks they fill and check, plus
//    write/read on a pipe, while the main thread forks children that
//    allocate and exit.
// 3. With --expect-alloc / --expect-io: every worker's MALLOC / READ events
//    are in the ring (tests/lib/ring_view.h).
// Exit 0 if every check held; a broken heap usually aborts instead.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;

constexpr int kWorkers = 4;
constexpr int kIterations = 300000;
constexpr int kLive = 64;
constexpr int kChurnRounds = 24;
constexpr int kChurnThreads = 8;
constexpr int kForks = 20;

std::atomic<int> g_failures{0};

void failed(const char *what) {
  fprintf(stderr, "FAIL %s\n", what);
  g_failures.fetch_add(1);
}

struct Block {
  unsigned char *p = nullptr;
  size_t size = 0;
  bool array_new = false;
  unsigned char tag = 0;
};

uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

void fill(Block *b) {
  memset(b->p, b->tag, b->size);
}

bool intact(const Block &b) {
  return b.size == 0 || (b.p[0] == b.tag && b.p[b.size / 2] == b.tag && b.p[b.size - 1] == b.tag);
}

/* new[] and delete[] out of line: GCC's -Wmismatched-dealloc cannot tell
 * that a block released with delete[] never went through realloc. */
__attribute__((noinline)) void *new_array(size_t size) { return new unsigned char[size]; }
__attribute__((noinline)) void array_delete(void *p) { delete[] static_cast<unsigned char *>(p); }

void release(Block *b) {
  if (b->array_new)
    array_delete(b->p);
  else
    free(b->p);
  *b = Block{};
}

/* Allocate a block of a random size with a random function of the family. */
void allocate(Block *b, uint64_t *rng) {
  uint64_t r = next_random(rng);
  size_t size = 1 + (r >> 8) % ((r & 15) == 0 ? 300000 : 2000); /* some above the mmap threshold */
  void *p = nullptr;
  bool array_new = false;
  switch (r % 6) {
    case 0: p = malloc(size); break;
    case 1: p = calloc(1, size); break;
    case 2: p = realloc(nullptr, size); break;
    case 3:
      if (posix_memalign(&p, 64, size) != 0) p = nullptr;
      break;
    case 4: p = aligned_alloc(128, (size + 127) & ~size_t(127)); break;
    case 5:
      p = new_array(size);
      array_new = true;
      break;
  }
  if (p == nullptr) {
    failed("allocation returned NULL");
    return;
  }
  b->p = static_cast<unsigned char *>(p);
  b->size = size;
  b->array_new = array_new;
  b->tag = static_cast<unsigned char>(r >> 32) | 1;
  fill(b);
}

void heap_work(int iterations, uint64_t seed, int io_fd_read, int io_fd_write) {
  Block live[kLive];
  uint64_t rng = seed | 1;
  for (int i = 0; i < iterations; ++i) {
    Block &b = live[next_random(&rng) % kLive];
    if (b.p == nullptr) {
      allocate(&b, &rng);
    } else if (!intact(b)) {
      failed("a live block was overwritten");
      return;
    } else if (!b.array_new && (rng & 3) == 0) {
      size_t size = 1 + next_random(&rng) % 5000;
      auto *p = static_cast<unsigned char *>(realloc(b.p, size));
      if (p == nullptr) {
        failed("realloc returned NULL");
        return;
      }
      b.p = p;
      b.size = size;
      fill(&b);
    } else {
      release(&b);
    }
    if (io_fd_write >= 0 && (i & 1023) == 0) {
      uint64_t v = static_cast<uint64_t>(i);
      if (write(io_fd_write, &v, sizeof v) != sizeof v || read(io_fd_read, &v, sizeof v) != sizeof v ||
          v != static_cast<uint64_t>(i))
        failed("pipe round trip");
    }
  }
  for (Block &b : live)
    if (b.p != nullptr) release(&b);
}

void churn() {
  for (int round = 0; round < kChurnRounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kChurnThreads; ++t)
      threads.emplace_back([round, t] { heap_work(200, 0x9E3779B97F4A7C15ull * (round * 8 + t + 1), -1, -1); });
    for (auto &t : threads) t.join();
  }
  printf("ok %d short-lived threads\n", kChurnRounds * kChurnThreads);
}

/* A child of fork() while the workers allocate: its heap must be usable. */
void fork_while_busy() {
  for (int i = 0; i < kForks; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      failed("fork");
      return;
    }
    if (pid == 0) {
      heap_work(2000, 0xF0F0F0F0ull + i, -1, -1);
      _exit(g_failures.load() == 0 ? 0 : 1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed("a forked child did not allocate and exit cleanly");
    usleep(1000);  // pacing: the workers allocate between two forks (not a wait for anything)
  }
  printf("ok %d children forked while threads allocate\n", kForks);
}

}  // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  bool expect_alloc = false, expect_io = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--expect-alloc") == 0)
      expect_alloc = true;
    else if (strcmp(argv[i], "--expect-io") == 0)
      expect_io = true;
    else {
      fprintf(stderr, "usage: %s [--expect-alloc] [--expect-io]\n", argv[0]);
      return 64;
    }
  }

  churn();

  std::atomic<uint32_t> tids[kWorkers];
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([w, &tids] {
      tids[w] = static_cast<uint32_t>(syscall(SYS_gettid));
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) {
        failed("pipe2");
        return;
      }
      heap_work(kIterations, 0xA5A5A5A5ull * (w + 1), fds[0], fds[1]);
      /* One more round trip, so the lane's newest events hold one. */
      uint64_t v = 1;
      if (write(fds[1], &v, sizeof v) != sizeof v || read(fds[0], &v, sizeof v) != sizeof v)
        failed("pipe round trip");
      close(fds[0]);
      close(fds[1]);
    });
  }
  fork_while_busy();
  for (auto &t : workers) t.join();
  printf("ok %d workers x %d heap calls\n", kWorkers, kIterations);

  if (expect_alloc || expect_io) {
    auto ring = ct_test::own_ring();
    if (!ring) {
      failed("no valid /memfd:core-timeline mapping");
    } else {
      std::vector<ct_test::Event> events = ring->events();
      for (int w = 0; w < kWorkers; ++w) {
        int heap = 0, io = 0;
        for (const auto &e : events) {
          if (e.slot.tid != tids[w]) continue;
          heap += e.slot.kind == fmt::kKindMalloc || e.slot.kind == fmt::kKindFree;
          io += e.slot.kind == fmt::kKindRead || e.slot.kind == fmt::kKindWrite;
        }
        if (expect_alloc && heap == 0) failed("a worker's heap events are missing from the ring");
        if (expect_io && io == 0) failed("a worker's pipe I/O events are missing from the ring");
      }
      printf("ok %zu events in the ring\n", events.size());
    }
  }
  int failures = g_failures.load();
  printf("%s: %d failures\n", failures == 0 ? "ok" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
