/* SPDX-License-Identifier: MIT */
/*
 * decode.h - decoding a core in an isolated child process.
 *
 * Why a child, and why exec.  The reader library (ct::reader) and libdwfl
 * parse the core, which is untrusted: a core can make them crash, loop or
 * allocate without bound.  None of that may reach the daemon, so each core
 * is decoded in a child with a wall-clock limit (the daemon SIGKILLs the
 * child's process group when it passes) and RLIMIT_AS.  The child is the
 * daemon's own binary, exec'd again (/proc/self/exe --decode-child) rather
 * than a fork that calls the library directly:
 *  - a fork would inherit the daemon's address space - sd-journal maps
 *    journal files, tens to hundreds of MiB - so RLIMIT_AS would bound
 *    something unpredictable; after exec the limit means "the decoder's own
 *    memory";
 *  - nothing of the daemon's state (journal descriptors, spdlog, blocked
 *    signals) leaks into code that runs on hostile input;
 *  - one decode yields both outputs the document needs, the --json
 *    document and the text, from the same Analysis (running
 *    core-timeline-read twice would decode twice), and the daemon does not
 *    depend on finding another binary on disk.  /proc/self/exe still works
 *    while a package upgrade replaces the file.
 * The child also sets PR_SET_DUMPABLE 0 and RLIMIT_CORE 1, so a decoder that
 * crashes does not itself produce a core (and a journal entry, and a decode,
 * and a crash...), and PR_SET_PDEATHSIG SIGKILL, so it dies with the daemon.
 *
 * Protocol.  The child gets the core on fd 3 (read-only), writes to stdout
 *   "CTD1 <json bytes> <text bytes> <reader exit code> <VmHWM kB> <RssAnon kB>\n"
 *   <json> <text>
 * and exits 0.  <json> is render_json() of the Analysis and <text> is
 * render_text() - exactly what `core-timeline-read --json CORE` and
 * `core-timeline-read CORE` print - with the core's path shown as the
 * display name given (not /proc/self/fd/3).  Anything else is a failure.
 *
 * Thread-safety: run_decoder forks; call it from a single-threaded process
 * (the daemon is one).
 */
#ifndef CORE_TIMELINE_DAEMON_DECODE_H
#define CORE_TIMELINE_DAEMON_DECODE_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util.h"

namespace ctd {

struct DecodeLimits {
  std::uint64_t timeout_ms = 30000;     /**< wall clock, then SIGKILL */
  /** RLIMIT_AS of the child is this plus the core's size (the core is
   *  mapped whole by the reader). */
  std::uint64_t memory_limit = 1ull << 30;
};

struct DecodeRequest {
  int core_fd = -1;                     /**< the extracted core */
  std::uint64_t core_size = 0;
  std::string display_name;             /**< shown as the core's path */
  std::optional<std::string> tlmap;     /**< --tlmap for the reader */
  std::string self_exe = "/proc/self/exe";
};

struct DecodeResult {
  bool decoded = false;                 /**< document and text are valid */
  nlohmann::ordered_json document;      /**< the reader's --json document */
  std::string text;                     /**< the reader's text output */
  int exit_code = -1;                   /**< the reader's exit code 0..7 */
  std::string failure;                  /**< why not decoded (one line) */
  bool timed_out = false;
  bool out_of_memory = false;
  std::uint64_t max_rss_kb = 0;         /**< the decoder's peak RSS after exec
                                             (VmHWM); 0 if it failed.  It
                                             includes the pages of the mapped
                                             core the reader touched. */
  std::uint64_t anon_kb = 0;            /**< its anonymous RSS at the end
                                             (RssAnon): its own allocations */
  double duration_ms = 0;
  std::size_t output_bytes = 0;         /**< bytes the child wrote to stdout */
};

/**
 * Runs the decoder child on `req` within `limits`.  `keep_going` is called
 * at least once a second while waiting (watchdog pings; returning false
 * kills the child and returns an Error of err ECANCELED).  Errors are only
 * failures to start (pipe, fork) or cancellation; everything the child does
 * wrong is a DecodeResult with decoded == false.
 */
Result<DecodeResult> run_decoder(const DecodeRequest &req, const DecodeLimits &limits,
                                 const std::function<bool()> &keep_going);

/** main() of `core-timelined --decode-child NAME [TLMAP]` (see above). */
int decoder_child_main(int argc, char **argv);

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_DECODE_H
