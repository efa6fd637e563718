/* SPDX-License-Identifier: MIT */
/*
 * cli.h - ctl-query's command line (CLI11), docs/ctl-query.md:
 *
 *   ctl-query [OPTIONS] [list|show|events|export] [MATCH...]
 *   ctl-query [OPTIONS] diff A B
 *
 * Thread-safety: ctl_query_main() reads the environment (TZ) and the
 * current directory; call it from one thread.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_CLI_H
#define CORE_TIMELINE_CTL_QUERY_CLI_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "expected.h"
#include "query.h"

namespace core_timeline::ctl_query {

/** Parses an unsigned number in decimal or 0x-hexadecimal ("1001",
 *  "0x3e9"), as --arg, --id and --tid take it. */
Result<std::uint64_t> parse_u64(const std::string &text);

/** The whole program: parses argv (argv[0] is the program name), runs the
 *  command, writes to out/err and returns the exit code (query.h ExitCode;
 *  --help and --version return 0).  `now_usec` is "now" for relative
 *  times.  Never throws. */
int ctl_query_main(const std::vector<std::string> &argv, std::ostream &out, std::ostream &err,
                   std::int64_t now_usec) noexcept;

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_CLI_H
