// SPDX-License-Identifier: MIT
//
// coredump_conf_test - core-timelined's reading of systemd-coredump's
// configuration (daemon/src/coredump_conf.h): sizes as systemd parses them,
// the main file and the drop-ins in systemd's order, in a directory tree of
// the test's own.  The daemon's start line that uses it, against the real
// /etc with a drop-in, is daemon_pipeline_test's
// AStateDirectorySmallerThanACoreStoresTheCrashAsFailedAndGoesOn.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "coredump_conf.h"

namespace ctd = core_timeline::daemon;

namespace fs = std::filesystem;

namespace {

struct Root {
  std::string path;
  Root() {
    char tmpl[] = "/tmp/ctd-coredump-conf-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Root() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string &rel, const std::string &text) const {
    fs::create_directories(fs::path(path + rel).parent_path());
    std::ofstream(path + rel) << text;
  }
};

}  // namespace

TEST(CoredumpConf, SizesAreReadAsSystemdReadsThem) {
  using ctd::parse_systemd_size;
  EXPECT_EQ(parse_systemd_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_systemd_size("767M"), 767ull << 20);
  EXPECT_EQ(parse_systemd_size(" 10 K "), 10ull << 10);
  EXPECT_EQ(parse_systemd_size("4096"), 4096u);
  EXPECT_EQ(parse_systemd_size("4096B"), 4096u);
  EXPECT_EQ(parse_systemd_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_systemd_size("1E"), 1ull << 60);
  EXPECT_FALSE(parse_systemd_size("16E"));  // past 2^64
  EXPECT_FALSE(parse_systemd_size("-1"));
  EXPECT_FALSE(parse_systemd_size("1g"));  // systemd's suffixes are capitals
  EXPECT_FALSE(parse_systemd_size("1Q"));
  EXPECT_FALSE(parse_systemd_size(""));
  EXPECT_FALSE(parse_systemd_size("G"));
  EXPECT_FALSE(parse_systemd_size("1."));
}

TEST(CoredumpConf, WithoutFilesTheDefaultsOfSystemd252) {
  Root r;
  const auto c = ctd::read_coredump_conf(r.path);
  EXPECT_TRUE(c.files.empty());
  EXPECT_EQ(c.largest_core(), 2ull << 30);
  EXPECT_EQ(c.describe(), "Storage=external, ProcessSizeMax=2G, ExternalSizeMax=2G");
}

// The main file, then the drop-ins by name whatever their directory; a name
// in /etc hides the same name in /usr/lib; an empty file or a link to
// /dev/null hides its name and says nothing; the last value read wins; only
// [Coredump] counts; a value systemd refuses leaves the key as it was.
TEST(CoredumpConf, DropInsAreReadInSystemdsOrderAndTheLastValueWins) {
  Root r;
  r.write("/etc/systemd/coredump.conf", "[Coredump]\n#ExternalSizeMax=9G\nExternalSizeMax=3G\nProcessSizeMax=1G\n");
  r.write("/usr/lib/systemd/coredump.conf.d/10-vendor.conf", "[Coredump]\nExternalSizeMax=5G\n");
  r.write("/run/systemd/coredump.conf.d/20-run.conf", "[Other]\nExternalSizeMax=7G\n[Coredump]\nProcessSizeMax=6G\n");
  r.write("/usr/lib/systemd/coredump.conf.d/30-hidden.conf", "[Coredump]\nExternalSizeMax=100G\n");
  r.write("/etc/systemd/coredump.conf.d/30-hidden.conf", "[Coredump]\nProcessSizeMax=4G\n");
  r.write("/usr/lib/systemd/coredump.conf.d/40-masked.conf", "[Coredump]\nExternalSizeMax=200G\n");
  fs::create_symlink("/dev/null", r.path + "/etc/systemd/coredump.conf.d/40-masked.conf");
  r.write("/etc/systemd/coredump.conf.d/50-bad.conf", "[Coredump]\nProcessSizeMax=lots\nStorage=both\n");
  r.write("/etc/systemd/coredump.conf.d/not-a-dropin.txt", "[Coredump]\nExternalSizeMax=300G\n");
  const auto c = ctd::read_coredump_conf(r.path);
  EXPECT_EQ(c.external_size_max, 5ull << 30);  // 10-vendor after the main file; 30 and 40 hidden
  EXPECT_EQ(c.process_size_max, 4ull << 30);   // 20-run, then /etc's 30-hidden
  EXPECT_EQ(c.storage, ctd::CoredumpConf::Storage::kExternal);
  EXPECT_EQ(c.largest_core(), 5ull << 30);
  EXPECT_EQ(c.describe(), "Storage=external, ProcessSizeMax=4G, ExternalSizeMax=5G");
  ASSERT_EQ(c.files.size(), 5u);
  EXPECT_EQ(c.files[0], r.path + "/etc/systemd/coredump.conf");
  EXPECT_EQ(c.files[3], r.path + "/etc/systemd/coredump.conf.d/30-hidden.conf");
  EXPECT_EQ(c.notes.size(), 2u);  // ProcessSizeMax=lots, Storage=both
}

TEST(CoredumpConf, StorageJournalAndNoneAndInfinity) {
  Root r;
  r.write("/etc/systemd/coredump.conf.d/a.conf", "[Coredump]\nStorage=journal\nJournalSizeMax=10M\n");
  EXPECT_EQ(ctd::read_coredump_conf(r.path).largest_core(), 10ull << 20);
  r.write("/etc/systemd/coredump.conf.d/b.conf", "[Coredump]\nStorage=external\nExternalSizeMax=infinity\n");
  EXPECT_EQ(ctd::read_coredump_conf(r.path).largest_core(), UINT64_MAX);
  EXPECT_EQ(ctd::read_coredump_conf(r.path).describe(), "Storage=external, ProcessSizeMax=2G, ExternalSizeMax=infinity");
  r.write("/etc/systemd/coredump.conf.d/c.conf", "[Coredump]\nStorage=none\n");
  EXPECT_EQ(ctd::read_coredump_conf(r.path).largest_core(), 0u);
}
