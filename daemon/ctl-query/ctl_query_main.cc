/* SPDX-License-Identifier: MIT */
/*
 * ctl-query - find the timelines core-timelined stored, the way coredumpctl
 * finds cores.  See cli.h and docs/ctl-query.md.
 */
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "time_spec.h"

int main(int argc, char **argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv, argv + argc);
  const int rc = core_timeline::ctl_query::ctl_query_main(args, std::cout, std::cerr,
                                                      core_timeline::ctl_query::realtime_now_usec());
  std::cout.flush();
  return rc;
}
