// SPDX-License-Identifier: MIT
//
// entry_test.cc (daemon_unit_test): which coredump entries are trusted
// (entry.h), and corroboration of an entry only the crashed user vouches for.

#include "daemon_unit_support.h"

// ---- which entries are trusted ---------------------------------------------

TEST(Entry, GenuineEntryIsAcceptedAndParsed) {
  auto e = ctd::validate_entry(genuine_entry(), policy());
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->pid, 12654u);
  EXPECT_EQ(e->uid, 0u);
  EXPECT_EQ(e->timestamp, 1796020111000000u);
  EXPECT_EQ(e->boot_id, kBoot);
  EXPECT_EQ(e->storage, ctd::Storage::kExternal);
  EXPECT_EQ(e->core_name, std::string("core.crash_demo.0.") + kBoot + ".12654.1796020111000000.zst");
  EXPECT_EQ(e->core_timeline_name(),
            std::string("core.crash_demo.0.") + kBoot + ".12654.1796020111000000.timeline.json");
  EXPECT_EQ(e->state_timeline_name(),
            std::string("core.crash_demo.0.") + kBoot + ".12654.1796020111000000.timeline.json");
  EXPECT_EQ(e->key(), std::string(kBoot) + ".12654.1796020111000000");
}

TEST(Entry, SenderThatExitedBeforeJournaldLookedHasNoExeOrComm) {
  // Measured: genuine entries lack _EXE (and sometimes _COMM) when
  // systemd-coredump exits before journald reads /proc/PID.
  auto r = genuine_entry();
  erase(r, "_EXE");
  erase(r, "_COMM");
  EXPECT_EQ(rejection(r), "");
}

TEST(Entry, CopyMadeBySystemdCoredumpBacktraceModeIsRejected) {
  // `systemd-coredump --backtrace` run by any user adds its own MESSAGE_ID
  // next to the one copied from stdin.
  auto r = genuine_entry();
  r.fields.emplace_back("MESSAGE_ID", "1f4e0a44a88649939aaea34fc6da8c95");
  EXPECT_NE(rejection(r).find("MESSAGE_ID occurs 2 times"), std::string::npos) << rejection(r);
}

TEST(Entry, OtherSendersAreRejected) {
  auto r = genuine_entry();
  set(r, "_EXE", "/usr/bin/python3");
  EXPECT_NE(rejection(r).find("_EXE=/usr/bin/python3"), std::string::npos);
  r = genuine_entry();
  set(r, "_COMM", "evil");
  EXPECT_NE(rejection(r).find("_COMM=evil"), std::string::npos);
  r = genuine_entry();
  set(r, "_TRANSPORT", "syslog");
  EXPECT_NE(rejection(r).find("_TRANSPORT"), std::string::npos);
  r = genuine_entry();
  set(r, "MESSAGE_ID", "00000000000000000000000000000000");
  EXPECT_NE(rejection(r), "");
}

TEST(Entry, UserMayOnlySpeakAboutTheirOwnCrashes) {
  auto r = genuine_entry();
  set(r, "_UID", "1234");  // a user, about a crash of root
  EXPECT_NE(rejection(r).find("_UID=1234"), std::string::npos);
  // systemd-coredump logs a user's crash as that user.
  set(r, "COREDUMP_UID", "1234");
  set(r, "COREDUMP_FILENAME", std::string("/var/lib/systemd/coredump/core.crash_demo.1234.") + kBoot +
                                  ".12654.1796020111000000.zst");
  EXPECT_EQ(rejection(r), "");
  // ... but never as a system user.
  set(r, "_UID", "33");
  set(r, "COREDUMP_UID", "33");
  set(r, "COREDUMP_FILENAME", std::string("/var/lib/systemd/coredump/core.crash_demo.33.") + kBoot +
                                  ".12654.1796020111000000.zst");
  EXPECT_NE(rejection(r).find("_UID=33"), std::string::npos);
}

TEST(Entry, FileNamesOutsideTheCoredumpDirectoryOrNotSystemdsAreRejected) {
  for (const std::string &bad : std::vector<std::string>{
           std::string("/etc/shadow"),
           std::string("/var/lib/systemd/coredump/../../../etc/shadow"),
           std::string("/var/lib/systemd/coredump/sub/core.crash_demo.0.") + kBoot + ".12654.1796020111000000",
           std::string("/var/lib/systemd/coredump/"),
           std::string("/var/lib/systemd/coredumpX/core.crash_demo.0.") + kBoot + ".12654.1796020111000000",
           // another crash's core (pid, uid, timestamp or boot differ)
           std::string("/var/lib/systemd/coredump/core.crash_demo.0.") + kBoot + ".999.1796020111000000.zst",
           std::string("/var/lib/systemd/coredump/core.crash_demo.1000.") + kBoot + ".12654.1796020111000000",
           std::string("/var/lib/systemd/coredump/core.crash_demo.0.") + kBoot + ".12654.1796020112000000",
           std::string("/var/lib/systemd/coredump/core.crash_demo.0.00000000000000000000000000000000.12654."
                       "1796020111000000"),
           std::string("/var/lib/systemd/coredump/shadow"),
       }) {
    auto r = genuine_entry();
    set(r, "COREDUMP_FILENAME", bad);
    EXPECT_NE(rejection(r), "") << bad;
  }
}

TEST(Entry, RepeatedOrMalformedKeyFieldsAreRejected) {
  auto r = genuine_entry();
  r.fields.emplace_back("COREDUMP_PID", "1");
  EXPECT_NE(rejection(r).find("COREDUMP_PID occurs 2 times"), std::string::npos);
  r = genuine_entry();
  r.fields.emplace_back("COREDUMP_FILENAME", "/var/lib/systemd/coredump/x");
  EXPECT_NE(rejection(r), "");
  r = genuine_entry();
  set(r, "COREDUMP_PID", "12a");
  EXPECT_NE(rejection(r).find("not a decimal"), std::string::npos);
  r = genuine_entry();
  erase(r, "COREDUMP_TIMESTAMP");
  EXPECT_NE(rejection(r).find("COREDUMP_TIMESTAMP occurs 0 times"), std::string::npos);
  r = genuine_entry();
  set(r, "_BOOT_ID", "not-a-boot-id");
  EXPECT_NE(rejection(r), "");
}

TEST(Entry, StorageFollowsTheFields) {
  auto r = genuine_entry();
  erase(r, "COREDUMP_FILENAME");
  r.has_core_field = true;
  auto e = ctd::validate_entry(r, policy());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->storage, ctd::Storage::kJournal);
  EXPECT_EQ(e->core_timeline_name(), "");
  r.has_core_field = false;
  e = ctd::validate_entry(r, policy());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->storage, ctd::Storage::kNone);
}

TEST(Entry, CommIsEscapedAsSystemdDoes) {
  // Measured: COREDUMP_COMM "a.b c\\d" was stored by systemd-coredump as
  // core.a\x2eb\x20c\x5c\x5cd.0.<boot>.<pid>.<ts>.zst
  EXPECT_EQ(ctd::xescape_comm("a.b c\\\\d"), "a\\x2eb\\x20c\\x5c\\x5cd");
  EXPECT_EQ(ctd::xescape_comm("../x"), "\\x2e\\x2e\\x2fx");
  EXPECT_EQ(ctd::strip_compression_suffix("core.x.zst"), "core.x");
  EXPECT_EQ(ctd::strip_compression_suffix("core.x.lz4"), "core.x");
  EXPECT_EQ(ctd::strip_compression_suffix("core.x.xz"), "core.x");
  EXPECT_EQ(ctd::strip_compression_suffix("core.x"), "core.x");
  auto r = genuine_entry();
  set(r, "COREDUMP_COMM", "a/b");
  auto e = ctd::validate_entry(r, policy());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->state_timeline_name().find('/'), std::string::npos);
}

// ---- corroboration of an entry only the crashed user vouches for -------------
// (entry.h).  A user U can make an entry with _UID U about
// a crash of U pass every rule above (a sender that execs systemd-coredump
// wins journald's _EXE race), so such an entry needs a witness U cannot
// make: the root-owned core with systemd-coredump's xattrs, or journald's
// cgroup of the sender.

namespace {

constexpr const char kUserCgroup[] =
    "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@0-3251-0.service";

// The genuine entry as systemd-coredump sends it for a crash of uid 1234:
// having dropped to that user (coredump.c change_uid_gid()).
ctd::RawEntry user_entry() {
  auto r = genuine_entry();
  set(r, "COREDUMP_UID", "1234");
  set(r, "_UID", "1234");
  set(r, "COREDUMP_FILENAME",
      std::string("/var/lib/systemd/coredump/core.crash_demo.1234.") + kBoot + ".12654.1796020111000000.zst");
  return r;
}

// A file standing for a stored core: created by root (this test) with the
// xattrs systemd-coredump's fix_xattr() sets, as given.
struct StoredCore {
  TempDir dir;
  std::string path = dir.path + "/core";
  ctd::Fd fd;
  struct stat st {};
  explicit StoredCore(const std::vector<std::pair<std::string, std::string>> &xattrs) {
    fd = ctd::Fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640));
    EXPECT_TRUE(fd.valid()) << path;
    for (const auto &[k, v] : xattrs)
      EXPECT_EQ(fsetxattr(fd.get(), k.c_str(), v.data(), v.size(), 0), 0) << k << ": " << std::strerror(errno);
    restat();
  }
  void restat() { EXPECT_EQ(fstat(fd.get(), &st), 0); }
};

const std::vector<std::pair<std::string, std::string>> kUserCoreXattrs = {
    {"user.coredump.pid", "12654"},      {"user.coredump.uid", "1234"},     {"user.coredump.gid", "1234"},
    {"user.coredump.signal", "11"},      {"user.coredump.timestamp", "1796020111000000"},
    {"user.coredump.comm", "crash_demo"}, {"user.coredump.exe", "/work/main/build/bin/crash_demo"},
};

}  // namespace

// Guards against: treating root's or systemd-coredump's word like the
// crashed user's (their entries keep the old rules), or the reverse.
TEST(Corroboration, OnlyAnEntryTheCrashedUserAloneVouchesForNeedsIt) {
  EXPECT_FALSE(valid(genuine_entry()).vouched_by_crashed_user) << "sent as systemd-coredump (995)";
  auto root = genuine_entry();
  set(root, "_UID", "0");
  EXPECT_FALSE(valid(root).vouched_by_crashed_user);
  auto user_by_root = user_entry();
  set(user_by_root, "_UID", "0");  // systemd-coredump that could not drop privileges
  EXPECT_FALSE(valid(user_by_root).vouched_by_crashed_user);
  const auto user = valid(user_entry());
  EXPECT_TRUE(user.vouched_by_crashed_user);
  EXPECT_EQ(user.storage, ctd::Storage::kExternal);
  EXPECT_FALSE(user.sender_cgroup.has_value()) << "journald recorded none";
  auto with_cgroup = user_entry();
  set(with_cgroup, "_SYSTEMD_CGROUP", kUserCgroup);
  EXPECT_EQ(valid(with_cgroup).sender_cgroup.value_or(""), kUserCgroup);
}

// Guards against: a forged entry (an entry about a
// core that does not exist, or one the user made) planting a record: only
// a root-owned core whose user.coredump.pid, .uid and .timestamp are there
// and agree corroborates; and against refusing the genuine case.
TEST(Corroboration, RootOwnedCoreWithAgreeingXattrsCorroboratesAndNothingLessDoes) {
  ASSERT_EQ(geteuid(), 0u) << "needs root (a root-owned file, chown)";
  const auto e = valid(user_entry());
  {
    StoredCore c(kUserCoreXattrs);
    EXPECT_EQ(ctd::core_uncorroborated(c.fd.get(), c.st, e), "");
  }
  for (const char *missing : {"user.coredump.pid", "user.coredump.uid", "user.coredump.timestamp"}) {
    SCOPED_TRACE(missing);
    auto x = kUserCoreXattrs;
    std::erase_if(x, [&](const auto &kv) { return kv.first == missing; });
    StoredCore c(x);
    EXPECT_NE(ctd::core_uncorroborated(c.fd.get(), c.st, e).find(std::string("has no ") + missing), std::string::npos)
        << ctd::core_uncorroborated(c.fd.get(), c.st, e);
  }
  {
    StoredCore c(std::vector<std::pair<std::string, std::string>>{});
    EXPECT_NE(ctd::core_uncorroborated(c.fd.get(), c.st, e), "") << "a file without any xattrs";
  }
  for (const auto &[name, wrong] : std::vector<std::pair<std::string, std::string>>{
           {"user.coredump.pid", "1"}, {"user.coredump.uid", "1235"}, {"user.coredump.timestamp", "1796020112000000"}}) {
    SCOPED_TRACE(name);
    auto x = kUserCoreXattrs;
    for (auto &kv : x)
      if (kv.first == name) kv.second = wrong;
    StoredCore c(x);
    const std::string why = ctd::core_uncorroborated(c.fd.get(), c.st, e);
    EXPECT_NE(why.find(name + "='" + wrong + "'"), std::string::npos) << why;
  }
  {
    // Everything right, but the user's own file.
    StoredCore c(kUserCoreXattrs);
    ASSERT_EQ(fchown(c.fd.get(), 1234, 1234), 0);
    c.restat();
    EXPECT_NE(ctd::core_uncorroborated(c.fd.get(), c.st, e).find("owned by uid 1234, not root"), std::string::npos);
  }
}

// Guards against: the premise of the rule failing on this kernel - a user
// who could set user.* xattrs on root's 0640 core (readable to them by
// ACL, as systemd-coredump's fix_acl() makes it) could forge the witness.
TEST(Corroboration, TheCrashedUserCannotSetXattrsOnRootsCore) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  StoredCore c(std::vector<std::pair<std::string, std::string>>{{"user.coredump.pid", "12654"}});
  ASSERT_EQ(chmod(c.dir.path.c_str(), 0755), 0);
  const pid_t p = fork();
  if (p == 0) {
    if (setgroups(0, nullptr) < 0 || setresgid(1234, 1234, 1234) < 0 || setresuid(1234, 1234, 1234) < 0) _exit(3);
    const char v[] = "1";
    if (setxattr(c.path.c_str(), "user.coredump.pid", v, 1, 0) == 0) _exit(1);
    if (setxattr(c.path.c_str(), "user.coredump.uid", v, 1, 0) == 0) _exit(1);
    _exit(errno == EACCES || errno == EPERM ? 0 : 2);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "uid 1234 could set an xattr on root's 0640 file (1) or failed otherwise (2, 3)";
  EXPECT_EQ(ctd::file_xattr(c.fd.get(), "user.coredump.pid").value_or(""), "12654");
}

// Guards against: a cgroup a user can make (a delegated subtree under
// /user.slice, a look-alike path, an instance's child cgroup) or a machine
// whose PID 1 is not systemd (where no slice means anything) vouching for
// an entry without a core file (Storage=journal, Storage=none).
TEST(Corroboration, OnlyASystemdCoredumpInstancesCgroupUnderASystemdPid1Corroborates) {
  auto p = policy();
  p.systemd_pid1 = true;
  auto with = [&](std::optional<std::string> cg, const ctd::TrustPolicy &pol) {
    auto r = user_entry();
    erase(r, "COREDUMP_FILENAME");
    if (cg) set(r, "_SYSTEMD_CGROUP", *cg);
    const auto e = valid(r, pol);
    EXPECT_EQ(e.storage, ctd::Storage::kNone);
    return ctd::cgroup_uncorroborated(e, pol);
  };
  EXPECT_EQ(with(kUserCgroup, p), "");
  EXPECT_NE(with(kUserCgroup, policy()).find("PID 1 is not systemd"), std::string::npos);
  EXPECT_NE(with(std::nullopt, p).find("no _SYSTEMD_CGROUP"), std::string::npos);
  for (const std::string bad : {
           "/user.slice/user-1234.slice/user@1234.service/app.slice/forge.scope",
           "/user.slice/user-1234.slice/user@1234.service/system.slice/system-systemd\\x2dcoredump.slice/"
           "systemd-coredump@0-1-0.service",
           "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@0-3251-0.service/child",
           "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@.service",
           "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@0-3251-0.scope",
           "/system.slice/systemd-coredump.service",
           "/",
           "",
       }) {
    SCOPED_TRACE(bad);
    EXPECT_NE(with(bad, p).find("not a systemd-coredump@.service instance"), std::string::npos) << with(bad, p);
  }
}
