/* SPDX-License-Identifier: MIT */
/* The Analyzer behind analyze() and locate_rings(): one core read in steps,
 * one file each (analyze_rings.cc, analyze_identity.cc, analyze_events.cc,
 * analyze_spans.cc, analyze_symbols.cc, analyze_status.cc).  Private to
 * reader/src. */
#pragma once

#include "core_timeline/reader/analyze.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core_timeline/reader/printable.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/symbolize.h"
#include "io_events.h"
#include "signal_frame.h"
#include "core_timeline/timeline.h"


namespace core_timeline::reader {

namespace f = core_timeline::format;

/* The signals whose si_addr is the faulting address (sigaction(2)). */
inline bool fault_signal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
}

const DecodedRing *ring_of(const Analysis &a, std::uint32_t index);

class Analyzer {
 public:
  Analyzer(const CoreFile &core, const ReadOptions &opts) : core_(core), opts_(opts) {}
  Analysis run();
  /* locate_rings(): the rings with their headers validated, not decoded. */
  std::vector<RingReport> locate();

 private:
  void core_facts();
  bool check_executable();
  void drop_timeline();
  void build_time_and_spans();
  void warn_of_losses();
  void warn_of_no_crash_event();
  void process_facts();
  void crash_facts();
  void find_rings();
  void refuse(RingReport &rep, std::uint64_t addr, const Error &error, bool ring_named);
  void probe(RingReport &rep, std::uint64_t addr, std::uint64_t extent, bool ring_named);
  void check_identity(RingReport &rep, const RingHeaderInfo &h);
  bool handle_sidecar();
  void build_events();
  void judge_handed();
  void collect_names();
  void place_in_time();
  void build_spans();
  void build_windows();
  void summarize_threads();
  bool snapshot_reference();
  Event make_event(std::uint32_t ring_index, const RingHeaderInfo &ring, const RingEvent &e, Origin source);
  void attach_stacks();
  void name_events();
  void sort_events();
  void name_threads();
  std::uint32_t intern(std::string s);
  std::uint32_t location_index(std::uint64_t addr, bool crash, bool mapping_changed);
  std::uint32_t mapping_index(std::uint64_t addr);
  void symbolize_all();
  void core_stacks(const SymbolizeResult &res, const std::function<void(Location &, const std::optional<Symbol> &)> &apply);
  Location locate(std::uint64_t addr) const;
  AddressMapping describe(std::uint64_t addr) const;
  void decide_status();
  std::string ring_may_be_cut_off() const;

  const CoreFile &core_;
  const ReadOptions &opts_;
  Analysis a_;
  std::set<std::uint32_t> core_tids_;  /* tids with an NT_PRSTATUS */
  std::vector<std::pair<std::uint64_t, std::uint32_t>> stacks_;  /* (sp, tid) of threads with registers, sorted */
  std::map<std::uint64_t, std::uint64_t> rings_at_;  /* [start, end) of each ring decoded from the core */
  std::map<std::string, std::uint64_t> immutable_headers_;  /* [0, kCrcEnd) of each ring found -> its address */
  bool exe_verified_ = false;      /* EXECUTABLE build-id equals the core's */
  bool use_executable_ = false;    /* hand EXECUTABLE to libdwfl */
  bool headers_only_ = false;      /* locate(): validate headers, decode nothing */
  /* The Analysis's tables (Event), looked up while they are filled. */
  std::unordered_map<std::string, std::uint32_t> string_at_;
  std::map<std::tuple<std::uint64_t, bool, bool>, std::uint32_t> location_at_;  /* (address, CRASH, changed) */
  std::vector<bool> location_is_crash_;  /* per location: of a CRASH event (its pc, not a return address) */
  std::map<std::tuple<const Segment *, const FileMapping *, bool>, std::uint32_t> mapping_at_;  /* (.., dumped) */

  friend class EventSink;
};

}  // namespace core_timeline::reader
