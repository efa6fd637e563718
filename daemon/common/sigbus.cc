/* SPDX-License-Identifier: MIT */
/*
 * sigbus.cc - see sigbus.h.
 *
 * ASYNC-SIGNAL-SAFE FILE (the handler).  on_sigbus() runs in a SIGBUS
 * handler on any thread.  Allowed: mmap(2) and sigaction(2) (system
 * calls), raise(3) (signal-safety(7)), lock-free atomics, errno saved and
 * restored.  Forbidden: malloc, locks, logging, stdio.
 */
#include "sigbus.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace core_timeline::sigbus {

namespace {

std::atomic<std::uint64_t> g_pages{0};
std::atomic<bool> g_installed{false};
std::uintptr_t g_page_size = 4096;
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

void die_of_it(int sig) {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);  /* a fault re-faults on return, under the default action */
}

void on_sigbus(int sig, siginfo_t *info, void *) {
  const int saved_errno = errno;
  /* BUS_ADRERR: "nonexistent physical address", what a read of a file
   * mapping past the file's end gets (mmap(2)); not the kernel's
   * memory-failure codes (BUS_MCEERR_*), nor a signal someone sent. */
  if (info != nullptr && info->si_code == BUS_ADRERR && info->si_addr != nullptr) {
    void *page = reinterpret_cast<void *>(reinterpret_cast<std::uintptr_t>(info->si_addr) & ~(g_page_size - 1));
    if (mmap(page, g_page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      g_pages.fetch_add(1, std::memory_order_relaxed);
      errno = saved_errno;
      return;
    }
  }
  die_of_it(sig);
  errno = saved_errno;
}

struct sigaction handler_action() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  return sa;
}

void read_page_size() {
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) g_page_size = static_cast<std::uintptr_t>(page);
}

}  // namespace

bool install() {
  if (g_installed.exchange(true)) return true;
  read_page_size();
  const struct sigaction sa = handler_action();
  if (sigaction(SIGBUS, &sa, nullptr) != 0) {
    g_installed = false;
    return false;
  }
  return true;
}

Scope::Scope() : start_(zeroed_pages()) {
  if (g_installed.load()) return;
  read_page_size();
  const struct sigaction sa = handler_action();
  restore_ = sigaction(SIGBUS, &sa, &old_) == 0;
}

Scope::~Scope() {
  if (restore_) sigaction(SIGBUS, &old_, nullptr);
}

std::uint64_t zeroed_pages() { return g_pages.load(std::memory_order_relaxed); }

}  // namespace core_timeline::sigbus
