// SPDX-License-Identifier: MIT
//
// decoder_probe.cc - the decoder probe of core-timelined-test-hooks, a test
// build of the daemon (CT_TEST_HOOKS; daemon/src/decode.h
// set_decoder_probe()).  Each decoder calls it after it dropped to its
// user and confined itself, before it reads the core: it tries to open
// each path of CT_TEST_DECODER_PROBE (colon-separated) for reading, as a
// decoder taken over by a hostile core would, and says what came of it
// and whose credentials it had.  The lines become warnings of the
// timeline, where daemon_pipeline_test reads them:
//   "decoder probe: uid U gid G groups N"
//   "decoder probe: open PATH: ok" | "decoder probe: open PATH: ENAME"
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

std::vector<std::string> ct_test_decoder_probe() {
  const char *paths = std::getenv("CT_TEST_DECODER_PROBE");
  if (paths == nullptr || *paths == '\0') return {};
  std::vector<std::string> out;
  out.push_back("decoder probe: uid " + std::to_string(getuid()) + " gid " + std::to_string(getgid()) + " groups " +
                std::to_string(getgroups(0, nullptr)));
  std::string_view rest(paths);
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string path(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (path.empty()) continue;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    const int err = errno;
    if (fd >= 0) close(fd);
    const char *name = fd >= 0 ? nullptr : strerrorname_np(err);
    out.push_back("decoder probe: open " + path + ": " + (fd >= 0 ? "ok" : name ? name : std::to_string(err)));
  }
  return out;
}
