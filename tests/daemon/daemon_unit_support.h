// SPDX-License-Identifier: MIT
//
// daemon_unit_support.h - what the tests of daemon_unit_test share (one
// file of tests per daemon source, named after it: entry_test.cc for
// daemon/src/entry.cc, ...): a temporary directory, a genuine
// systemd-coredump entry and the trust policy it passes, and a file
// written from bytes.
#ifndef CORE_TIMELINE_TESTS_DAEMON_UNIT_SUPPORT_H
#define CORE_TIMELINE_TESTS_DAEMON_UNIT_SUPPORT_H

// Before <signal.h>, which defines si_pid as a macro (keys.h has a member of
// that name).
#include "core_timeline/document/keys.h"

#include <arpa/inet.h>
#include <elf.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <lz4frame.h>
#include <lzma.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <linux/capability.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core_builder.h"
#include "core_watch.h"
#include "decode.h"
#include "document.h"
#include "entry.h"
#include "extract.h"
#include "files.h"
#include "message_ids.h"
#include "options.h"
#include "prepared.h"
#include "rate_limit.h"
#include "sandbox.h"
#include "timeline_entry.h"
#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "test_files.h"

namespace fs = std::filesystem;
namespace ctdoc = core_timeline::document;
namespace ctd = core_timeline::daemon;

inline constexpr char kBoot[] = "feac8a91104c4813a37419e2b9ab4803";

// A directory removed at the end of the test.
struct TempDir : ct::test::TempDir {
  TempDir() : ct::test::TempDir("ctd-unit") {}
};

// A systemd-coredump entry as systemd 252 writes it for a crash of uid 0
// (measured: `journalctl -o export MESSAGE_ID=fc2e...`).
inline ctd::RawEntry genuine_entry() {
  ctd::RawEntry r;
  r.cursor = "s=1;i=2;b=3";
  r.realtime_usec = 1796020111752952;
  r.fields = {
      {"_BOOT_ID", kBoot},
      {"MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1"},
      {"PRIORITY", "2"},
      {"COREDUMP_UID", "0"},
      {"COREDUMP_PID", "12654"},
      {"COREDUMP_TIMESTAMP", "1796020111000000"},
      {"COREDUMP_COMM", "crash_demo"},
      {"COREDUMP_EXE", "/work/main/build/bin/crash_demo"},
      {"COREDUMP_SIGNAL", "11"},
      {"COREDUMP_FILENAME",
       std::string("/var/lib/systemd/coredump/core.crash_demo.0.") + kBoot + ".12654.1796020111000000.zst"},
      {"_TRANSPORT", "journal"},
      {"_UID", "995"},
      {"_COMM", "systemd-coredum"},
      {"_EXE", "/usr/lib/systemd/systemd-coredump"},
      {"_PID", "12657"},
  };
  return r;
}

inline ctd::TrustPolicy policy() {
  ctd::TrustPolicy p;
  p.coredump_user_uid = 995;
  return p;
}

inline void set(ctd::RawEntry &r, const std::string &name, const std::string &value) {
  for (auto &[k, v] : r.fields)
    if (k == name) {
      v = value;
      return;
    }
  r.fields.emplace_back(name, value);
}

inline void erase(ctd::RawEntry &r, const std::string &name) {
  std::erase_if(r.fields, [&](const auto &kv) { return kv.first == name; });
}

inline std::string rejection(const ctd::RawEntry &r) {
  auto e = ctd::validate_entry(r, policy());
  return e ? std::string() : e.error().message;
}

inline ctd::CoredumpEntry valid(const ctd::RawEntry &r, const ctd::TrustPolicy &p = policy()) {
  auto e = ctd::validate_entry(r, p);
  EXPECT_TRUE(e) << e.error().message;
  return e ? *e : ctd::CoredumpEntry{};
}

inline std::string write_bytes(const std::string &path, const std::vector<std::uint8_t> &b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
  return path;
}

#endif  // CORE_TIMELINE_TESTS_DAEMON_UNIT_SUPPORT_H
