/* SPDX-License-Identifier: MIT */
/*
 * core-timelined - write the timeline of every crash that systemd-coredump
 * stores.  See docs/core-timelined.md and daemon.h.
 *
 *   core-timelined [--config FILE] [--coredump-dir DIR] [--output-dir DIR]
 *                  [--state-dir DIR] [--first-start boot|new|all]
 *                  [--decode-timeout SECONDS] [--debuginfod-timeout SECONDS]
 *                  [--memory-limit BYTES]
 *                  [--keep-whole-below BYTES] [--max-kept BYTES]
 *                  [--tlmap-dir DIR] [--once] [--log-target T] [--log-level L]
 *
 * Exit status: 0 after a clean stop (SIGTERM, SIGINT, or --once done),
 * 1 if it could not start or the journal failed, 2 for a bad option.
 * `core-timelined --decode-child ...` is the isolated decoder and
 * `core-timelined --decoder-server` its server (decode.h), both started by
 * the daemon itself.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "daemon.h"
#include "decode.h"
#include "log.h"
#include "options.h"
#include "parts.h"
#include "sigbus.h"

#ifdef CT_TEST_HOOKS
/* Only in core-timelined-test-hooks, a test build (tests/daemon/
 * decoder_probe.cc); never in core-timelined, which has no probe. */
std::vector<std::string> ct_test_decoder_probe();
#endif

int main(int argc, char **argv) {
#ifdef CT_TEST_HOOKS
  core_timeline::daemon::set_decoder_probe(&ct_test_decoder_probe);
#endif
  if (argc >= 2 && std::strcmp(argv[1], "--decode-child") == 0) return core_timeline::daemon::decoder_child_main(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--decoder-server") == 0) return core_timeline::daemon::decoder_server_main(argc, argv);
  int exit_now = -1;
  auto opts = core_timeline::daemon::parse_options(argc, argv, &exit_now);
  if (!opts) {
    std::fprintf(stderr, "core-timelined: %s\n", opts.error().message.c_str());
    return 2;
  }
  if (exit_now >= 0) return exit_now;
  const auto &o = *opts;
  core_timeline::daemon::log::setup(o.log_target, spdlog::level::from_str(o.log_level));
  /* Before the journal is opened: a journal file truncated under its
   * mapping reads as zeros, not SIGBUS (sigbus.h). */
  if (!core_timeline::sigbus::install()) spdlog::warn("cannot install the SIGBUS handler: {}", strerrordesc_np(errno));
  /* Before any decoder, and while single-threaded (setenv). */
  if (const std::string d = core_timeline::daemon::prepare_debuginfod(o.state_dir, o.debuginfod_timeout_ms, o.decode_timeout_ms);
      !d.empty())
    spdlog::info("{}", d);
  auto parts = core_timeline::daemon::make_parts(o);
  if (!parts) {
    spdlog::error("cannot start: {}", parts.error().message);
    return 1;
  }
  core_timeline::daemon::Daemon daemon(o, core_timeline::daemon::default_trust_policy(), std::move(*parts));
  return daemon.run();
}
