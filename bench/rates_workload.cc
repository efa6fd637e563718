// SPDX-License-Identifier: MIT
// rates_workload [THREADS [SECONDS [DIR]]] - a small multi-threaded C++
// program for bench/event_rates.sh: the "real program" whose event rates
// under the preload wrappers are measured (docs/performance.md, "Event
// rates of real programs").
//
// THREADS (default 8) workers each loop for SECONDS (default 1.0) doing
// ordinary library work: build a std::map<std::string, std::vector<int>>
// of a few dozen entries, render it into a std::string, sort a vector of
// strings, and every 64th round write the rendering to a small file of its
// own in DIR (default /tmp; open, write, close through the libc wrappers).
// The main thread meanwhile calls tl_mark about 1000 times a second
// (one every millisecond, sleeping until the next) until the workers are
// done.  With RATES_WORKLOAD_STOP=1 in its environment it stops itself
// (SIGSTOP) before it returns, so that bench/event_rates.sh can take its
// core with gdb while the ring is still mapped.
//
// Nothing here counts events: the ring and the reader do that.  It prints
// one line, "rates_workload: THREADS threads, ROUNDS rounds, MARKS marks,
// SECONDS s".
#include <core_timeline/timeline.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<unsigned long> g_rounds{0};

std::string render(const std::map<std::string, std::vector<int>> &m) {
  std::string out;
  for (const auto &[key, values] : m) {
    out += key;
    out += '=';
    for (int v : values) {
      out += std::to_string(v);
      out += ',';
    }
    out += '\n';
  }
  return out;
}

void worker(unsigned index, Clock::time_point until, const std::string &dir) {
  const std::string path = dir + "/rates_workload." + std::to_string(getpid()) + "." + std::to_string(index);
  unsigned long rounds = 0;
  unsigned seed = index * 2654435761u + 1;
  while (Clock::now() < until) {
    std::map<std::string, std::vector<int>> m;
    for (int i = 0; i < 48; ++i) {
      seed = seed * 1103515245u + 12345u;
      std::string key = "key-" + std::to_string(seed % 1000) + "-" + std::to_string(i);
      auto &values = m[key];
      for (int j = 0; j < 1 + static_cast<int>(seed % 7); ++j) values.push_back(static_cast<int>(seed >> j));
    }
    std::string text = render(m);
    std::vector<std::string> keys;
    for (const auto &kv : m) keys.push_back(kv.first + "/" + std::to_string(kv.second.size()));
    std::sort(keys.begin(), keys.end(), [](const std::string &a, const std::string &b) {
      return a.size() != b.size() ? a.size() < b.size() : a > b;
    });
    if (rounds % 64 == 0) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) {
        if (::write(fd, text.data(), text.size()) < 0) std::perror("rates_workload: write");
        ::close(fd);
      }
    }
    ++rounds;
  }
  ::unlink(path.c_str());
  g_rounds += rounds;
}

}  // namespace

int main(int argc, char **argv) {
  const unsigned threads = argc > 1 ? static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10)) : 8;
  const double seconds = argc > 2 ? std::strtod(argv[2], nullptr) : 1.0;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  if (threads == 0 || threads > 64 || !(seconds > 0 && seconds < 3600)) {
    std::fprintf(stderr, "usage: rates_workload [THREADS (1-64) [SECONDS [DIR]]]\n");
    return 64;
  }
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker, i, until, dir);
  unsigned long marks = 0;
  for (auto next = start; next < until; next += std::chrono::milliseconds(1)) {
    tl_mark(0x5101, marks++);
    std::this_thread::sleep_until(next + std::chrono::milliseconds(1));
  }
  for (auto &t : pool) t.join();
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("rates_workload: %u threads, %lu rounds, %lu marks, %.3f s\n", threads, g_rounds.load(), marks, took);
  std::fflush(stdout);
  const char *stop = std::getenv("RATES_WORKLOAD_STOP");
  if (stop != nullptr && std::string(stop) == "1") raise(SIGSTOP);
  return 0;
}
