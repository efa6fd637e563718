// SPDX-License-Identifier: MIT
//
// daemon_unit_test - core-timelined's parts on real files, real compressors
// and its real decoder child, without the journal: which entries are
// trusted, the names of timelines, the sparse core sink, decompression,
// durable owned files, the cursor file, the status rules, and the
// decoder's isolation (timeout, memory limit).  The end-to-end behaviour on
// the real systemd-coredump pipeline is daemon_pipeline_test.
// Before <signal.h>, which defines si_pid as a macro (keys.h has a member of
// that name).
#include "core_timeline/document/keys.h"
#include "core_timeline/reader/compact.h"

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
#include "ids.h"
#include "options.h"
#include "prepared.h"
#include "rate_limit.h"
#include "sandbox.h"
#include "timeline_entry.h"
#include "core_timeline/document/journal_entry.h"

namespace fs = std::filesystem;
namespace ctdoc = core_timeline::document;

namespace {

constexpr const char kBoot[] = "feac8a91104c4813a37419e2b9ab4803";

// A directory removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ctd-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A systemd-coredump entry as systemd 252 writes it for a crash of uid 0
// (measured: `journalctl -o export MESSAGE_ID=fc2e...`).
ctd::RawEntry genuine_entry() {
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

ctd::TrustPolicy policy() {
  ctd::TrustPolicy p;
  p.coredump_user_uid = 995;
  return p;
}

void set(ctd::RawEntry &r, const std::string &name, const std::string &value) {
  for (auto &[k, v] : r.fields)
    if (k == name) {
      v = value;
      return;
    }
  r.fields.emplace_back(name, value);
}

void erase(ctd::RawEntry &r, const std::string &name) {
  std::erase_if(r.fields, [&](const auto &kv) { return kv.first == name; });
}

std::string rejection(const ctd::RawEntry &r) {
  auto e = ctd::validate_entry(r, policy());
  return e ? std::string() : e.error().message;
}

}  // namespace

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
// (issue 17 item 2; entry.h).  A user U can make an entry with _UID U about
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

ctd::CoredumpEntry valid(const ctd::RawEntry &r, const ctd::TrustPolicy &p = policy()) {
  auto e = ctd::validate_entry(r, p);
  EXPECT_TRUE(e) << e.error().message;
  return e ? *e : ctd::CoredumpEntry{};
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

// Guards against: the forged-entry attack of issue 17 (an entry about a
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

// Guards against: a flood of unverified entries (any user can send them)
// flooding the journal through the daemon, or the count of what was left
// out being lost.
TEST(TokenBucket, ABurstThenSoManyPerPeriodAndTheRestCounted) {
  constexpr std::uint64_t kMin = 60ull * 1000 * 1000;
  ctd::TokenBucket b(10, 10, kMin);
  std::uint64_t t = 5 * kMin;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b.take(t)) << i;
  for (int i = 0; i < 30; ++i) EXPECT_FALSE(b.take(t)) << i;
  EXPECT_EQ(b.suppressed(), 30u);
  EXPECT_FALSE(b.available(t + kMin / 10 - 1));
  EXPECT_TRUE(b.available(t + kMin / 10)) << "one token every 6 s";
  EXPECT_TRUE(b.take(t + kMin / 10));
  EXPECT_FALSE(b.take(t + kMin / 10));
  EXPECT_EQ(b.take_suppressed(), 31u);
  EXPECT_EQ(b.suppressed(), 0u);
  // An hour later: a full burst, never more.
  t += 60 * kMin;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b.take(t)) << i;
  EXPECT_FALSE(b.take(t));
  // A clock that goes back gives nothing.
  EXPECT_FALSE(b.take(t - kMin));
}

// ---- a synthetic core for the sink ---------------------------------------

namespace {

struct Seg {
  std::uint64_t vaddr;
  std::uint64_t size;
  std::string file;  // NT_FILE name, "" for anonymous
};

struct Core {
  std::vector<std::uint8_t> bytes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seg_ranges;  // file offset, size
  std::uint64_t head_end = 0;  // end of the ELF header, phdrs and notes
};

void put(std::vector<std::uint8_t> &b, std::size_t off, const void *p, std::size_t n) {
  if (b.size() < off + n) b.resize(off + n);
  std::memcpy(b.data() + off, p, n);
}

// ELF header, PT_NOTE with an NT_FILE note, one PT_LOAD per segment; each
// segment filled with a pattern that differs per page.
Core build_core(const std::vector<Seg> &segs) {
  std::vector<std::uint8_t> note;
  auto add = [&](const void *p, std::size_t n) {
    const auto *c = static_cast<const std::uint8_t *>(p);
    note.insert(note.end(), c, c + n);
  };
  std::vector<std::uint8_t> desc;
  auto dadd = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) desc.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  std::vector<const Seg *> files;
  for (const auto &s : segs)
    if (!s.file.empty()) files.push_back(&s);
  dadd(files.size());
  dadd(4096);
  for (const auto *s : files) {
    dadd(s->vaddr);
    dadd(s->vaddr + s->size);
    dadd(0);
  }
  for (const auto *s : files) desc.insert(desc.end(), s->file.begin(), s->file.end() + 1);
  while (desc.size() % 4) desc.push_back(0);
  Elf64_Nhdr nh{5, static_cast<Elf64_Word>(desc.size()), NT_FILE};
  add(&nh, sizeof nh);
  add("CORE\0\0\0", 8);
  note.insert(note.end(), desc.begin(), desc.end());

  Core c;
  const std::size_t phnum = 1 + segs.size();
  const std::size_t note_off = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  std::uint64_t off = (note_off + note.size() + 4095) / 4096 * 4096;
  const Elf64_Ehdr eh = ct::testing::core_ehdr(static_cast<Elf64_Half>(phnum));
  put(c.bytes, 0, &eh, sizeof eh);
  Elf64_Phdr np{};
  np.p_type = PT_NOTE;
  np.p_offset = note_off;
  np.p_filesz = note.size();
  put(c.bytes, eh.e_phoff, &np, sizeof np);
  put(c.bytes, note_off, note.data(), note.size());
  c.head_end = note_off + note.size();
  for (std::size_t i = 0; i < segs.size(); ++i) {
    Elf64_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_offset = off;
    ph.p_vaddr = segs[i].vaddr;
    ph.p_filesz = ph.p_memsz = segs[i].size;
    ph.p_flags = PF_R | PF_W;
    ph.p_align = 4096;
    put(c.bytes, eh.e_phoff + (i + 1) * sizeof(Elf64_Phdr), &ph, sizeof ph);
    c.bytes.resize(off + segs[i].size);
    for (std::uint64_t p = 0; p < segs[i].size; p += 4096)
      std::memset(c.bytes.data() + off + p, static_cast<int>(1 + (i * 7 + p / 4096) % 250), 4096);
    c.seg_ranges.emplace_back(off, segs[i].size);
    off += segs[i].size;
  }
  return c;
}

// Writes a "CTLN" ring header at `off` with region_size `region`.
void plant_ring(Core &c, std::uint64_t off, std::uint64_t region) {
  std::memcpy(c.bytes.data() + off, "CTLN", 4);
  std::memcpy(c.bytes.data() + off + 48, &region, 8);
}

std::vector<std::uint8_t> read_file(int fd) {
  struct stat st;
  fstat(fd, &st);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(st.st_size));
  EXPECT_EQ(pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  return out;
}

// Feeds `bytes` in random chunk sizes.
ctd::ExtractStats feed_random(const std::vector<std::uint8_t> &bytes, int fd, const ctd::ExtractOptions &o,
                              unsigned seed) {
  ctd::CoreSink sink(fd, o);
  std::mt19937 rng(seed);
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    std::size_t n = std::min<std::size_t>(bytes.size() - pos, 1 + rng() % 20000);
    auto r = sink.feed({bytes.data() + pos, n});
    EXPECT_TRUE(r) << r.error().message;
    pos += n;
  }
  auto r = sink.finish();
  EXPECT_TRUE(r) << r.error().message;
  ctd::ExtractStats s;
  sink.fill(s);
  return s;
}

}  // namespace

// ---- the sparse sink ---------------------------------------------------

TEST(CoreSink, BigCoreKeepsHeadersRingsSmallSegmentsAndMagicRegionsOnly) {
  const std::uint64_t MiB = 1 << 20;
  Core c = build_core({
      {0x10000000, 3 * 4096, "/memfd:core-timeline (deleted)"},  // ring: whole
      {0x20000000, 3 * MiB, ""},                                  // anon: first page + magic region
      {0x30000000, 8192, ""},                                     // small: whole
      {0x40000000, 2 * MiB, "/usr/lib/libfoo.so"},                // big file-backed: first page
  });
  const std::uint64_t anon = c.seg_ranges[1].first;
  plant_ring(c, anon + 100 * 4096, 2 * 4096);
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  ASSERT_TRUE(tmp) << tmp.error().message;
  ctd::ExtractOptions o;
  o.keep_whole_below = 1 * MiB;
  auto stats = feed_random(c.bytes, tmp->get(), o, 1);
  auto out = read_file(tmp->get());
  ASSERT_EQ(out.size(), c.bytes.size());
  EXPECT_TRUE(stats.sparse);

  std::vector<std::pair<std::uint64_t, std::uint64_t>> keep = {
      {0, c.head_end},                                              // head
      c.seg_ranges[0],                                              // ring
      {anon, 4096},                                                 // first page
      {anon + 100 * 4096, 2 * 4096},                                // magic region
      c.seg_ranges[2],                                              // small
      {c.seg_ranges[3].first, 4096},                                // first page
  };
  std::uint64_t expect_kept = 0;
  std::vector<bool> kept(c.bytes.size());
  for (auto [o2, n] : keep) {
    expect_kept += n;
    for (std::uint64_t i = o2; i < o2 + n; ++i) kept[i] = true;
  }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != (kept[i] ? c.bytes[i] : 0)) ++wrong;
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(stats.kept_bytes, expect_kept);
  EXPECT_EQ(stats.core_bytes, c.bytes.size());
  // Holes cost no disk.
  struct stat st;
  fstat(tmp->get(), &st);
  EXPECT_LT(static_cast<std::uint64_t>(st.st_blocks) * 512, c.bytes.size() / 2);
}

TEST(CoreSink, SmallCoreIsKeptWholeWhateverTheChunks) {
  Core c = build_core({{0x10000000, 64 * 1024, ""}, {0x20000000, 3 << 20, ""}});
  TempDir dir;
  for (unsigned seed : {1u, 2u, 3u}) {
    auto tmp = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(tmp);
    ctd::ExtractOptions o;
    o.keep_whole_below = 64 << 20;
    auto stats = feed_random(c.bytes, tmp->get(), o, seed);
    EXPECT_EQ(read_file(tmp->get()), c.bytes);
    EXPECT_FALSE(stats.sparse);
    EXPECT_EQ(stats.kept_bytes, c.bytes.size());
  }
}

TEST(CoreSink, BudgetBoundsWhatIsKept) {
  Core c = build_core({{0x10000000, 4 << 20, "/memfd:core-timeline"}});
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  ASSERT_TRUE(tmp);
  ctd::ExtractOptions o;
  o.keep_whole_below = 0;
  o.max_kept = 1 << 20;
  auto stats = feed_random(c.bytes, tmp->get(), o, 4);
  EXPECT_TRUE(stats.budget_exhausted);
  EXPECT_LE(stats.kept_bytes, o.max_kept);
  EXPECT_EQ(read_file(tmp->get()).size(), c.bytes.size());
}

TEST(CoreSink, NotAnElfCoreKeepsOnlyItsStart) {
  std::vector<std::uint8_t> junk(3 << 20, 'x');
  TempDir dir;
  auto tmp = ctd::make_temp_file(dir.path);
  ASSERT_TRUE(tmp);
  ctd::ExtractOptions o;
  o.keep_whole_below = 0;
  auto stats = feed_random(junk, tmp->get(), o, 5);
  EXPECT_EQ(stats.kept_bytes, 1u << 20);
  EXPECT_EQ(stats.core_bytes, junk.size());
}

// ---- decompression ----------------------------------------------------

namespace {

std::vector<std::uint8_t> zstd_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> lz4_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(LZ4F_compressFrameBound(in.size(), nullptr));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> xz_compress(const std::vector<std::uint8_t> &in) {
  std::vector<std::uint8_t> out(lzma_stream_buffer_bound(in.size()));
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, in.data(), in.size(), out.data(), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

std::string write_bytes(const std::string &path, const std::vector<std::uint8_t> &b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
  return path;
}

}  // namespace

TEST(Extract, EachCompressionSystemdUsesRoundTrips) {
  Core c = build_core({{0x10000000, 5 << 20, ""}, {0x20000000, 8192, "/memfd:core-timeline"}});
  TempDir dir;
  const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> cases = {
      {"core.x.zst", zstd_compress(c.bytes)},
      {"core.x.lz4", lz4_compress(c.bytes)},
      {"core.x.xz", xz_compress(c.bytes)},
      {"core.x", c.bytes},
  };
  for (const auto &[name, data] : cases) {
    write_bytes(dir.path + "/" + name, data);
    auto dfd = ctd::open_directory(dir.path);
    ASSERT_TRUE(dfd);
    struct stat st;
    auto in = ctd::open_core_file(dfd->get(), name, &st);
    ASSERT_TRUE(in) << in.error().message;
    auto out = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(out);
    ctd::ExtractOptions o;  // keep whole: 5 MiB < 64 MiB
    auto s = ctd::extract_file(in->get(), name, out->get(), o);
    ASSERT_TRUE(s) << name << ": " << s.error().message;
    EXPECT_FALSE(s->stream_truncated) << name << ": " << s->stream_error;
    EXPECT_EQ(s->input_bytes, data.size()) << name;
    EXPECT_EQ(read_file(out->get()), c.bytes) << name;
  }
}

TEST(Extract, TruncatedOrCorruptStreamKeepsWhatWasDecompressed) {
  Core c = build_core({{0x10000000, 2 << 20, ""}});
  TempDir dir;
  for (const auto &[name, data] : std::vector<std::pair<std::string, std::vector<std::uint8_t>>>{
           {"core.t.zst", zstd_compress(c.bytes)}, {"core.t.lz4", lz4_compress(c.bytes)},
           {"core.t.xz", xz_compress(c.bytes)}}) {
    auto cut = data;
    cut.resize(cut.size() * 2 / 3);
    write_bytes(dir.path + "/" + name, cut);
    auto dfd = ctd::open_directory(dir.path);
    struct stat st;
    auto in = ctd::open_core_file(dfd->get(), name, &st);
    ASSERT_TRUE(in);
    auto out = ctd::make_temp_file(dir.path);
    ASSERT_TRUE(out);
    auto s = ctd::extract_file(in->get(), name, out->get(), ctd::ExtractOptions{});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(s->stream_truncated) << name;
    EXPECT_FALSE(s->stream_error.empty()) << name;
    auto got = read_file(out->get());
    EXPECT_LT(got.size(), c.bytes.size()) << name;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), c.bytes.begin())) << name << ": the prefix differs";
  }
}

TEST(Extract, OpenRefusesLinksAndNonRegularFiles) {
  TempDir dir;
  write_bytes(dir.path + "/real", {1, 2, 3});
  ASSERT_EQ(symlink((dir.path + "/real").c_str(), (dir.path + "/link").c_str()), 0);
  ASSERT_EQ(mkfifo((dir.path + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(mkdir((dir.path + "/dir").c_str(), 0700), 0);
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  struct stat st;
  auto r = ctd::open_core_file(dfd->get(), "link", &st);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ELOOP);
  r = ctd::open_core_file(dfd->get(), "fifo", &st);  // must not block
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EINVAL);
  r = ctd::open_core_file(dfd->get(), "dir", &st);
  ASSERT_FALSE(r);
  r = ctd::open_core_file(dfd->get(), "missing", &st);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ENOENT);
  r = ctd::open_core_file(dfd->get(), "../etc", &st);
  ASSERT_FALSE(r);
  EXPECT_TRUE(ctd::open_core_file(dfd->get(), "real", &st));
}

// ---- files ----------------------------------------------------------------

TEST(Files, AclMatchesWhatSystemdCoredumpSetsOnAUsersCore) {
  // getxattr system.posix_acl_access of a core of uid 1234, measured on
  // Debian 12 (systemd 252): user::rw- user:1234:r-- group::r-- mask::r--
  // other::---
  const std::string measured =
      "0200000001000600ffffffff02000400d204000004000400ffffffff10000400ffffffff20000000ffffffff";
  std::string hex;
  for (unsigned char ch : ctd::acl_user_read(1234)) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", ch);
    hex += b;
  }
  EXPECT_EQ(hex, measured);
  EXPECT_TRUE(ctd::owner_for_uid(0).acl.empty());
  EXPECT_TRUE(ctd::owner_for_uid(999).acl.empty());
  EXPECT_TRUE(ctd::owner_for_uid(65534).acl.empty());
  EXPECT_FALSE(ctd::owner_for_uid(1000).acl.empty());
}

TEST(Files, NewFileIsCompleteOwnedAndNeverReplaced) {
  TempDir dir;
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  ctd::FileOwner owner;
  owner.uid = 1234;
  owner.gid = 4321;
  owner.mode = 0640;
  owner.acl = ctd::acl_user_read(1234);
  std::string warn;
  auto w = ctd::write_new_file(dfd->get(), dir.path, "t.json", "{}\n", owner, &warn);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(*w, ctd::WriteOutcome::kWritten);
  struct stat st;
  ASSERT_EQ(stat((dir.path + "/t.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  if (warn.empty()) {
    char buf[256];
    ssize_t n = getxattr((dir.path + "/t.json").c_str(), "system.posix_acl_access", buf, sizeof buf);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), owner.acl);
  }
  w = ctd::write_new_file(dfd->get(), dir.path, "t.json", "other\n", owner, &warn);
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, ctd::WriteOutcome::kExists);
  std::ifstream f(dir.path + "/t.json");
  std::string content((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(content, "{}\n");
  // Nothing else was left in the directory.
  std::size_t n = 0;
  for (auto &e : fs::directory_iterator(dir.path)) n += e.path().filename() != "t.json";
  EXPECT_EQ(n, 0u);
}

// Linked before it is synced (the daemon's way, files.h): the name holds the
// whole content at once, and the open file is handed back to be fsynced.
TEST(Files, UnsyncedNewFileIsLinkedAtOnceAndHandedBack) {
  TempDir dir;
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  std::string warn;
  ctd::Fd unsynced;
  auto w = ctd::write_new_file(dfd->get(), dir.path, "t.json", "{\"a\": 1}\n", ctd::owner_for_uid(0), &warn,
                               /*sync_directory=*/false, &unsynced);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(*w, ctd::WriteOutcome::kWritten);
  ASSERT_TRUE(unsynced.valid());
  struct stat by_fd, by_name;
  ASSERT_EQ(fstat(unsynced.get(), &by_fd), 0);
  ASSERT_EQ(stat((dir.path + "/t.json").c_str(), &by_name), 0);
  EXPECT_EQ(by_fd.st_ino, by_name.st_ino);
  EXPECT_EQ(fsync(unsynced.get()), 0);
  std::ifstream f(dir.path + "/t.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "{\"a\": 1}\n");
  // An existing name: nothing written, nothing handed back.
  ctd::Fd again;
  w = ctd::write_new_file(dfd->get(), dir.path, "t.json", "{}", ctd::owner_for_uid(0), &warn, false, &again);
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, ctd::WriteOutcome::kExists);
  EXPECT_FALSE(again.valid());
}

// What a power cut can leave of a timeline linked before it was synced
// (empty, cut short) is told apart from a whole document; anything that is
// not a regular file is not judged, and nothing blocks.
TEST(Files, ExistingDocumentTellsWholeFromCutShort) {
  TempDir dir;
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  auto put = [&](const std::string &name, const std::string &text) {
    std::ofstream(dir.path + "/" + name, std::ios::binary) << text;
  };
  const std::string whole = "{\"status\": \"ok\", \"events\": [1, 2, 3]}\n";
  put("whole.json", whole);
  put("empty.json", "");
  put("short.json", whole.substr(0, whole.size() / 2));
  put("zeros.json", std::string(4096, '\0'));           // blocks allocated, data never written
  put("two.json", whole + whole);                      // not one document
  ASSERT_EQ(mkdir((dir.path + "/dir.json").c_str(), 0755), 0);
  ASSERT_EQ(mkfifo((dir.path + "/fifo.json").c_str(), 0600), 0);
  ASSERT_EQ(symlink("whole.json", (dir.path + "/link.json").c_str()), 0);
  auto at = [&](const std::string &name, ctd::Fd *fd = nullptr) {
    auto x = ctd::existing_document(dfd->get(), name, fd);
    EXPECT_TRUE(x) << name << ": " << x.error().message;
    return x ? *x : ctd::Existing::kAbsent;
  };
  ctd::Fd fd;
  EXPECT_EQ(at("whole.json", &fd), ctd::Existing::kWhole);
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(fsync(fd.get()), 0);
  EXPECT_EQ(at("absent.json"), ctd::Existing::kAbsent);
  EXPECT_EQ(at("empty.json"), ctd::Existing::kPartial);
  EXPECT_EQ(at("short.json"), ctd::Existing::kPartial);
  EXPECT_EQ(at("zeros.json"), ctd::Existing::kPartial);
  EXPECT_EQ(at("two.json"), ctd::Existing::kPartial);
  EXPECT_EQ(at("dir.json"), ctd::Existing::kOther);
  EXPECT_EQ(at("fifo.json"), ctd::Existing::kOther);
  EXPECT_EQ(at("link.json"), ctd::Existing::kOther);
}

TEST(Files, CursorIsSavedAndLoaded) {
  TempDir dir;
  auto s = ctd::StateDir::open(dir.path + "/state");
  ASSERT_TRUE(s) << s.error().message;
  auto c = s->load_cursor();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->has_value());
  ASSERT_TRUE(s->save_cursor("s=abc;i=1"));
  ASSERT_TRUE(s->save_cursor("s=abc;i=2"));
  c = s->load_cursor();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->value(), "s=abc;i=2");
  EXPECT_TRUE(fs::is_directory(dir.path + "/state/timelines"));
  EXPECT_EQ(fs::status(dir.path + "/state/tmp").permissions(), fs::perms::owner_all);
  { std::ofstream(dir.path + "/state/cursor", std::ios::trunc); }
  c = s->load_cursor();
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("empty"), std::string::npos);
}

TEST(Files, StateDirectoryModesHoldUnderAStrictUmask) {
  // core-timeline.service runs with UMask=0077; users must still reach
  // their timelines in STATE/timelines.
  TempDir dir;
  const mode_t old = umask(077);
  auto s = ctd::StateDir::open(dir.path + "/new-state");
  umask(old);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(fs::status(dir.path + "/new-state").permissions(), static_cast<fs::perms>(0755));
  EXPECT_EQ(fs::status(dir.path + "/new-state/timelines").permissions(), static_cast<fs::perms>(0755));
  EXPECT_EQ(fs::status(dir.path + "/new-state/tmp").permissions(), static_cast<fs::perms>(0700));
  EXPECT_EQ(s->warning(), "");
  // An existing state directory closed to others is left alone, and said.
  ASSERT_EQ(mkdir((dir.path + "/closed").c_str(), 0700), 0);
  auto c = ctd::StateDir::open(dir.path + "/closed");
  ASSERT_TRUE(c);
  EXPECT_EQ(fs::status(dir.path + "/closed").permissions(), static_cast<fs::perms>(0700));
  EXPECT_NE(c->warning().find("users cannot reach their timelines"), std::string::npos) << c->warning();
}

// ---- statuses ------------------------------------------------------------

namespace {

// The reader's document `j`, through the parser the daemon uses.
ctdoc::ReaderDocument reader_document(const nlohmann::ordered_json &j) {
  auto d = ctdoc::parse_reader_document(j.dump());
  EXPECT_TRUE(d) << d.error().message;
  return d ? std::move(*d) : ctdoc::ReaderDocument{};
}

}  // namespace

TEST(Verdict, StatusRules) {
  using ctd::Status;
  auto e = ctd::validate_entry(genuine_entry(), policy());
  ASSERT_TRUE(e);
  ctd::DecodeResult d;
  d.decoded = false;
  d.failure = "the decoder was killed by SIGSEGV";
  EXPECT_EQ(ctd::judge(*e, d, std::nullopt).status, Status::kUndecodable);

  d.decoded = true;
  nlohmann::ordered_json j = {
      {"status", "mapping_absent"}, {"exit_code", 2}, {"reason", "excluded"}, {"core", {{"truncated", false}}}};
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, std::nullopt).status, Status::kMappingAbsent);
  // The same reader status in a truncated core: the truncation is the cause.
  j["core"]["truncated"] = true;
  d.document = reader_document(j);
  auto v = ctd::judge(*e, d, std::nullopt);
  EXPECT_EQ(v.status, Status::kCoreTruncated);
  EXPECT_EQ(v.reader_status, Status::kMappingAbsent);
  ctd::ExtractStats x;
  x.stream_truncated = true;
  x.stream_error = "zstd: truncated";
  j["core"]["truncated"] = false;
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, x).status, Status::kCoreTruncated);
  // A timeline recovered from a truncated core is still ok.
  j["status"] = "ok";
  j["exit_code"] = 0;
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, x).status, Status::kOk);
  // "usage" is the reader's command line, never a core's: a decoder that
  // says it (one taken over) has not decoded.
  j["status"] = "usage";
  j["exit_code"] = 7;
  d.document = reader_document(j);
  v = ctd::judge(*e, d, std::nullopt);
  EXPECT_EQ(v.status, Status::kUndecodable);
  EXPECT_EQ(v.reader_status, std::nullopt);
  EXPECT_NE(v.reason.find("a status the daemon does not store: usage"), std::string::npos) << v.reason;
}

TEST(ReaderDocument, RefusesWhatIsNotAReaderDocument) {
  EXPECT_FALSE(ctdoc::parse_reader_document("[]"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok"})"));                      // no exit_code
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"core_missing","exit_code":3})"));  // not the reader's
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":9})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"core":{"truncated":1}})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"events":{}})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0)"));
  // 64 levels parse; 65 do not, and the message says why.
  auto nested = [](int levels) {
    return R"({"status":"ok","exit_code":0,"x":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_TRUE(ctdoc::parse_reader_document(nested(64)));
  auto deep = ctdoc::parse_reader_document(nested(65));
  ASSERT_FALSE(deep);
  EXPECT_NE(deep.error().message.find("deeper than 64 levels"), std::string::npos) << deep.error().message;
  auto ok = ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"events":[{},{}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->summary.event_count, 2u);
  EXPECT_EQ(ok->summary.status, ctdoc::Status::kOk);
}

// Guards against: a status whose name drifts from the documented one
// (docs/core-timelined.md, "Statuses"), or a name that does not read back.
TEST(Verdict, EachStatusHasItsDocumentedNameAndReadsBack) {
  const std::pair<ctd::Status, const char *> names[] = {
      {ctd::Status::kOk, "ok"},
      {ctd::Status::kNoRing, "no_ring"},
      {ctd::Status::kMappingAbsent, "mapping_absent"},
      {ctd::Status::kCoreUnreadable, "core_unreadable"},
      {ctd::Status::kRingInvalid, "ring_invalid"},
      {ctd::Status::kExecutableRefused, "executable_refused"},
      {ctd::Status::kSidecarMismatch, "sidecar_mismatch"},
      {ctd::Status::kCoreMissing, "core_missing"},
      {ctd::Status::kCoreTruncated, "core_truncated"},
      {ctd::Status::kUndecodable, "undecodable"},
  };
  for (const auto &[status, name] : names) {
    EXPECT_EQ(ctd::status_name(status), name);
    EXPECT_EQ(ctd::parse_status(name), status) << name;
  }
  EXPECT_EQ(ctd::parse_status("usage"), ctd::Status::kUsage);  // the reader's command line; never stored
  EXPECT_EQ(ctd::parse_status("OK"), std::nullopt);
  EXPECT_EQ(ctd::parse_status(""), std::nullopt);
}

TEST(Document, HasTheContractKeysEvenWithoutDecoding) {
  auto e = ctd::validate_entry(genuine_entry(), policy());
  ASSERT_TRUE(e);
  ctd::DocumentParts p;
  p.entry = &*e;
  p.verdict = {ctd::Status::kCoreMissing, "the core file is gone", std::nullopt};
  p.decoded_usec = 1796020112000000;
  auto doc = ctd::build_document(p);
  EXPECT_EQ(doc["status"], "core_missing");
  EXPECT_EQ(doc["coredump"]["journal_cursor"], "s=1;i=2;b=3");
  EXPECT_EQ(doc["coredump"]["boot_id"], kBoot);
  EXPECT_EQ(doc["coredump"]["realtime_usec"], 1796020111752952u);
  EXPECT_EQ(doc["coredump"]["storage"], "external");
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], "12654");
  EXPECT_FALSE(doc["coredump"]["fields"].contains("COREDUMP"));
  EXPECT_EQ(doc["daemon"]["version"], ctd::version());
  EXPECT_EQ(doc["daemon"]["decoded_usec"], 1796020112000000u);
  EXPECT_TRUE(doc["daemon"]["duration_ms"].is_number());
  // The compact document (schema_version 7) stores no text: readers say
  // "core-timeline: STATUS: REASON" from status and reason.
  EXPECT_EQ(doc["schema_version"], 7);
  EXPECT_FALSE(doc.contains("text"));
  // Invalid UTF-8 from a journal field does not break the file.
  e->fields["COREDUMP_CMDLINE"] = std::string("\xff\xfe", 2);
  EXPECT_NO_THROW(ctd::serialize(ctd::build_document(p)));
}

// ---- the decoder's sandbox --------------------------------------------------

namespace {

// errno of a TCP connect to 127.0.0.1:1 (nothing listens there), or 0.
int tcp_connect_errno(std::uint16_t port = 1) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int r = connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 ? 0 : errno;
  close(s);
  return r;
}

// Runs `body` in a child after `before` and confine_decoder(); returns the
// ABI and the values `body` pushed (errnos, 0 for success).
std::vector<int> confined_child(const std::function<void(std::vector<int> &)> &body,
                                const std::function<void()> &before = [] {}) {
  int out[2];
  if (pipe(out) < 0) return {};
  const pid_t p = fork();
  if (p == 0) {
    close(out[0]);
    before();
    const ctd::Confinement c = ctd::confine_decoder();
    std::vector<int> r{c.abi};
    body(r);
    // The descriptors it was given stay usable.
    const ssize_t len = static_cast<ssize_t>(r.size() * sizeof(int));
    _exit(write(out[1], r.data(), r.size() * sizeof(int)) == len ? 0 : 2);
  }
  close(out[1]);
  std::vector<int> r(64);
  const ssize_t n = read(out[0], r.data(), r.size() * sizeof(int));
  close(out[0]);
  int st = 0;
  waitpid(p, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
  r.resize(n > 0 ? static_cast<std::size_t>(n) / sizeof(int) : 0);
  return r;
}

}  // namespace

// A confined process (sandbox.h) reads files and writes to what it was
// given, and can neither change, create, remove nor execute a file, nor
// connect over TCP, nor signal its parent.  Each attempt runs in a child of
// its own, confined.
TEST(Sandbox, ConfinedDecoderReadsButCannotWriteExecOrSignal) {
  TempDir dir;
  const std::string existing = dir.path + "/core.x.timeline.json";
  std::ofstream(existing) << "{}\n";
  const pid_t parent = getpid();
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child([&](std::vector<int> &seen) {
    auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
    int fd = open(existing.c_str(), O_RDONLY);
    char b[2];
    attempt(fd >= 0 && read(fd, b, 2) == 2);
    attempt(open(existing.c_str(), O_WRONLY) >= 0);
    attempt(open((dir.path + "/new").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0);
    attempt(truncate(existing.c_str(), 0) == 0);
    attempt(unlink(existing.c_str()) == 0);
    attempt(rename(existing.c_str(), (dir.path + "/moved").c_str()) == 0);
    attempt(mkdir((dir.path + "/d").c_str(), 0700) == 0);
    attempt(symlink("x", (dir.path + "/l").c_str()) == 0);
    char *argv[] = {const_cast<char *>("true"), nullptr};
    execv("/bin/true", argv);
    attempt(false);
    seen.push_back(tcp_connect_errno());
    attempt(kill(parent, 0) == 0);
  });
  ASSERT_EQ(r.size(), 12u);
  ASSERT_GE(r[0], 6) << "Landlock ABI " << r[0] << "; this machine kind's kernel has 7";
  EXPECT_EQ(r[1], 0) << "read: " << strerror(r[1]);
  const char *what[] = {"open for writing", "create", "truncate", "unlink", "rename", "mkdir", "symlink", "execve",
                        "TCP connect"};
  // EACCES from Landlock; EPERM from the seccomp filter where it refuses
  // first (truncate(2), socket(2): sandbox.cc).
  for (int i = 0; i < 9; ++i)
    EXPECT_TRUE(r[2 + i] == EACCES || r[2 + i] == EPERM) << what[i] << ": " << strerror(r[2 + i]);
  EXPECT_EQ(r[11], EPERM) << "kill(parent): " << strerror(r[11]);
  // Nothing changed on disk.
  std::ifstream f(existing);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "{}\n");
  EXPECT_FALSE(fs::exists(dir.path + "/new"));
}

// With DEBUGINFOD_URLS named, the symbolizer may download: TCP to the
// URLs' ports and writing beneath the debuginfod cache stay allowed, and
// nothing else (TCP to any other port neither).
TEST(Sandbox, DebuginfodKeepsItsCacheAndTcp) {
  TempDir dir;
  const std::string cache = dir.path + "/cache/debuginfod_client";
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        seen.push_back(open((cache + "/x").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0 ? 0 : errno);
        seen.push_back(mkdir((cache + "/build-id").c_str(), 0700) == 0 ? 0 : errno);
        seen.push_back(open((dir.path + "/y").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0 ? 0 : errno);
        seen.push_back(tcp_connect_errno());
        seen.push_back(tcp_connect_errno(2));
      },
      [&] {  // only in the child; confine_decoder() reads them
        setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
        setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
      });
  ASSERT_EQ(r.size(), 6u);
  ASSERT_GE(r[0], 6);
  EXPECT_EQ(r[1], 0) << "create in the cache: " << strerror(r[1]);
  EXPECT_EQ(r[2], 0) << "mkdir in the cache: " << strerror(r[2]);
  EXPECT_EQ(r[3], EACCES) << "create elsewhere: " << strerror(r[3]);
  EXPECT_EQ(r[4], ECONNREFUSED) << "TCP connect to the URL's port: " << strerror(r[4]);
  EXPECT_EQ(r[5], EACCES) << "TCP connect to another port: " << strerror(r[5]);
}

// The ports Landlock lets a decoder connect to: each URL's own, or its
// scheme's; nothing for what is not a URL of a known port.
TEST(Sandbox, DebuginfodPortsAreTheUrlsPorts) {
  using P = std::vector<std::uint16_t>;
  EXPECT_EQ(ctd::debuginfod_ports("http://127.0.0.1:8002"), P{8002});
  EXPECT_EQ(ctd::debuginfod_ports("https://debuginfod.debian.net http://a.example/x http://b.example:80/"),
            (P{443, 80}));
  EXPECT_EQ(ctd::debuginfod_ports("  http://[::1]:8080/path  https://user@host:8443?q  "), (P{8080, 8443}));
  EXPECT_EQ(ctd::debuginfod_ports("HTTPS://host"), P{443});
  EXPECT_EQ(ctd::debuginfod_ports("http://[::1]"), P{80});
  EXPECT_EQ(ctd::debuginfod_ports("ftp://host file:///srv host:99 http://h:0 http://h:70000 http://h:x"), P{});
  EXPECT_EQ(ctd::debuginfod_ports(nullptr), P{});
}

// The service runs the decoder as root without any capability: as the
// owner of every root-owned file it may still change their metadata, and
// as the same uid as the daemon, journald and PID 1 it may still lower their
// resource limits.  Landlock (ABI <= 7) covers none of that, nor connecting
// to a named AF_UNIX socket (/run/systemd/private, the D-Bus system bus,
// journald's socket), nor io_uring's own setxattr.  A confined decoder must
// be denied each of them.
TEST(Sandbox, ConfinedRootWithoutCapabilitiesCannotChangeMetadataLimitsOrReachSockets) {
  TempDir dir;
  const std::string core = dir.path + "/core.victim.1000.zst";  // another user's core: root:root 0640
  std::ofstream(core) << "core";
  ASSERT_EQ(chmod(core.c_str(), 0640), 0);
  ASSERT_EQ(setxattr(core.c_str(), "user.coredump.pid", "1234", 4, 0), 0);
  const std::string sock = dir.path + "/sock";
  const int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  // Stands for the daemon, journald or PID 1: another process of uid 0.
  const pid_t other = fork();
  if (other == 0) {
    pause();
    _exit(0);
  }
  rlimit before{};
  ASSERT_EQ(prlimit(other, RLIMIT_NOFILE, nullptr, &before), 0);
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
        attempt(chmod(core.c_str(), 0644) == 0);
        attempt(setxattr(core.c_str(), "user.coredump.pid", "9999", 4, 0) == 0);
        attempt(removexattr(core.c_str(), "user.coredump.pid") == 0);
        attempt(utimensat(AT_FDCWD, core.c_str(), nullptr, 0) == 0);
        rlimit tiny{16, 16};
        attempt(prlimit(other, RLIMIT_NOFILE, &tiny, nullptr) == 0);
        const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        attempt(s >= 0 && connect(s, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) == 0);
        attempt(syscall(SYS_io_uring_setup, 4, std::vector<char>(256, 0).data()) >= 0);
        // What a decoder does stays allowed: its own limits, signals to itself.
        rlimit mine{};
        attempt(getrlimit(RLIMIT_AS, &mine) == 0 && setrlimit(RLIMIT_AS, &mine) == 0);
        attempt(kill(getpid(), 0) == 0);
      },
      [] {  // as in core-timeline.service: root, no capability at all
        for (int c = 0; c <= CAP_LAST_CAP; ++c) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        if (syscall(SYS_capset, &h, d) < 0) _exit(3);
      });
  close(ls);
  ASSERT_EQ(r.size(), 10u);
  ASSERT_GE(r[0], 6);
  const char *what[] = {"chmod", "setxattr", "removexattr", "utimensat", "prlimit(other process)", "connect(AF_UNIX path)",
                        "io_uring_setup"};
  for (int i = 0; i < 7; ++i) EXPECT_NE(r[1 + i], 0) << what[i] << " was allowed";
  EXPECT_EQ(r[8], 0) << "setrlimit(self): " << strerror(r[8]);
  EXPECT_EQ(r[9], 0) << "kill(self, 0): " << strerror(r[9]);
  struct stat st {};
  ASSERT_EQ(stat(core.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  char v[16] = {};
  EXPECT_EQ(getxattr(core.c_str(), "user.coredump.pid", v, sizeof v), 4);
  EXPECT_STREQ(v, "1234");
  rlimit after{};
  EXPECT_EQ(prlimit(other, RLIMIT_NOFILE, nullptr, &after), 0);
  EXPECT_EQ(after.rlim_max, before.rlim_max) << "the decoder lowered another root process's RLIMIT_NOFILE";
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

// core-timeline.service gives the daemon CAP_SETUID and CAP_SETGID (for the
// child that sends a user's crash entry as that user); a decoder inherits
// them, and its seccomp filter must refuse every call that would use them.
TEST(Sandbox, ConfinedDecoderCannotUseTheServicesSetuidCapabilities) {
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
        attempt(setresuid(1000, 1000, 1000) == 0);
        attempt(setresgid(1000, 1000, 1000) == 0);
        attempt(setgroups(0, nullptr) == 0);
        attempt(setuid(1000) == 0);
        attempt(syscall(SYS_setfsuid, 1000) == 0 && syscall(SYS_setfsuid, 1000) == 1000);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        attempt(syscall(SYS_capset, &h, d) == 0);
        seen.push_back(static_cast<int>(getuid()));
      },
      [] {  // as in core-timeline.service: root with CAP_SETUID and CAP_SETGID only
        for (int c = 0; c <= CAP_LAST_CAP; ++c)
          if (c != CAP_SETUID && c != CAP_SETGID) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        d[0].effective = d[0].permitted = (1u << CAP_SETUID) | (1u << CAP_SETGID);
        if (syscall(SYS_capset, &h, d) < 0) _exit(3);
      });
  ASSERT_EQ(r.size(), 8u);
  ASSERT_GE(r[0], 6) << "Landlock ABI";
  const char *what[] = {"setresuid", "setresgid", "setgroups", "setuid", "setfsuid", "capset"};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[1 + i], EPERM) << what[i] << ": " << strerror(r[1 + i]);
  EXPECT_EQ(r[7], 0) << "the decoder changed its uid";
}

// The room RLIMIT_AS leaves for the core (memory limit + the core's size)
// cannot be spent on the decoder's own memory: a core of 8 GiB of zeros
// (kept sparse, the crashed user's choice) buys no heap.
TEST(DecoderLimits, CoreSizeBuysTheDecoderNoMemoryOfItsOwn) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space at start: an ASan build's decoders get no RLIMIT_AS "
                  "(daemon/src/decode.cc, kLimitAddressSpace), and this process none it could test";
#endif
  TempDir dir;
  const std::string core = dir.path + "/sparse-core";
  constexpr rlim_t kCore = 8ull << 30, kOwn = 256ull << 20;
  {
    const int fd = open(core.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kCore)), 0);
    close(fd);
  }
  const pid_t p = fork();
  ASSERT_GE(p, 0);
  if (p == 0) {
    const int fd = open(core.c_str(), O_RDONLY);
    if (fd < 0 || dup2(fd, 3) < 0) _exit(10);
    const rlimit as{kCore + kOwn, kCore + kOwn};
    if (setrlimit(RLIMIT_AS, &as) < 0) _exit(11);
    ctd::limit_own_memory();
    rlimit data{};
    if (getrlimit(RLIMIT_DATA, &data) < 0 || data.rlim_cur != kOwn) _exit(12);
    // The core still maps whole, read-only, as the reader maps it.
    if (mmap(nullptr, kCore, PROT_READ, MAP_PRIVATE, 3, 0) == MAP_FAILED) _exit(13);
    // Within the limit: fine.  Beyond it (though RLIMIT_AS would allow
    // it without the core's mapping): refused.
    void *small = malloc(kOwn / 4);
    if (!small) _exit(14);
    void *big = malloc(2 * kOwn);
    _exit(big ? 15 : 0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "10-11: setup, 12: RLIMIT_DATA not the memory limit, 13: the core did not map, "
                                   "14: the decoder's own memory refused, 15: more than its own memory allowed";
}

// ---- the isolated decoder ---------------------------------------------------

namespace {

ctd::DecodeRequest request_for(int fd, std::uint64_t size) {
  ctd::DecodeRequest r;
  r.core_fd = fd;
  r.core_size = size;
  r.display_name = "/var/lib/systemd/coredump/core.test";
  r.self_exe = CT_DAEMON_BIN;
  return r;
}

// A FIFO `name` in `dir` that a decoder, which runs as nobody here
// (request_for), may open for reading: the directory 0755, the FIFO 0644.
std::string reachable_fifo(const TempDir &dir, const std::string &name) {
  const std::string fifo = dir.path + "/" + name;
  EXPECT_EQ(chmod(dir.path.c_str(), 0755), 0);
  EXPECT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  return fifo;
}

// The children of this process (/proc/self/task/TID/children, proc(5)).
std::vector<pid_t> my_children() {
  std::vector<pid_t> out;
  std::ifstream f("/proc/self/task/" + std::to_string(gettid()) + "/children");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

}  // namespace

// Each decoder test runs twice: decoders started by fork and exec, and by
// the decoder server (decode.h), which must behave the same.
class Decoder : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
      ASSERT_TRUE(s) << s.error().message;
      server_ = std::move(*s);
    }
  }
  ctd::DecoderServer *server() { return GetParam() ? &server_ : nullptr; }
  // The decoders among this process's children (not the server).
  std::vector<pid_t> decoders() {
    std::vector<pid_t> out;
    for (pid_t p : my_children())
      if (p != server_.pid()) out.push_back(p);
    return out;
  }
  ctd::Result<ctd::DecodeResult> decode(const ctd::DecodeRequest &req, const ctd::DecodeLimits &limits,
                                   const std::function<bool()> &keep_going) {
    auto r = ctd::run_decoder(req, limits, keep_going, server());
    if (r) {
      EXPECT_EQ(r->server_failure, "");
    }
    return r;
  }
  ctd::DecoderServer server_;
};
INSTANTIATE_TEST_SUITE_P(ExecOrServer, Decoder, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &p) { return p.param ? "Server" : "ForkExec"; });

TEST_P(Decoder, NotACoreIsDecodedAsCoreUnreadableWithTheRealPathShown) {
  TempDir dir;
  write_bytes(dir.path + "/notacore", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/notacore").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = decode(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->document.tree["status"], "core_unreadable");
  EXPECT_EQ(r->document.summary.status, ctd::Status::kCoreUnreadable);
  EXPECT_EQ(r->document.tree["core"]["path"], "/var/lib/systemd/coredump/core.test");
  EXPECT_EQ(r->document.tree.dump().find("/proc/self/fd"), std::string::npos) << r->document.tree.dump();
  EXPECT_GT(r->max_rss_kb, 0u);
  // This machine kind's kernel has Landlock (ABI 7 measured): a decoder
  // that did not confine itself is a failure, not a skip.
  EXPECT_GE(r->landlock_abi, 1);
  EXPECT_TRUE(r->seccomp);
  EXPECT_TRUE(decoders().empty()) << "the decoder was not reaped";
}

// decode.h, "Whose rights": a decoder runs as the uid and gid it is given,
// with no groups, reads the core through fd 3 although that uid could not
// open the file (root's, in a 0700 directory), confirms its credentials,
// and refuses to decode as root.
TEST_P(Decoder, RunsAsTheUserItIsGivenReadsFd3AndNeverDecodesAsRoot) {
  TempDir dir;
  write_bytes(dir.path + "/notacore", std::vector<std::uint8_t>(100, 'x'));
  ASSERT_EQ(chmod((dir.path + "/notacore").c_str(), 0600), 0);
  int fd = open((dir.path + "/notacore").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto req = request_for(fd, 100);
  req.credentials = {47321, 47322, ctd::DecoderAs::kCrashedUser};
  auto r = decode(req, ctd::DecodeLimits{}, [] { return true; });
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->credentials, req.credentials);
  // It read the bytes (no ELF magic), it did not fail to open them.
  EXPECT_EQ(r->document.tree["status"], "core_unreadable");
  EXPECT_EQ(r->document.tree.dump().find("cannot open"), std::string::npos) << r->document.tree.dump();
  EXPECT_EQ(r->document.tree.dump().find("Permission denied"), std::string::npos) << r->document.tree.dump();

  req.credentials = {0, 0, ctd::DecoderAs::kCrashedUser};
  r = decode(req, ctd::DecodeLimits{}, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_NE(r->failure.find("refusing to decode as root"), std::string::npos) << r->failure;
  EXPECT_TRUE(decoders().empty()) << "the decoder was not reaped";
}

TEST(DecoderUsers, UsersDecodeAsThemselvesRootAndSystemUsersAsTheDedicatedUserNeverAsRoot) {
  using A = ctd::DecoderAs;
  using C = ctd::DecoderCredentials;
  const ctd::DecoderUsers with(std::make_pair(uid_t{990}, gid_t{991})), without(std::nullopt);
  EXPECT_EQ(with.for_crash(1000, 1000), (C{1000, 1000, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(47100, 100), (C{47100, 100, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(1000, 0), (C{1000, 0, A::kCrashedUser})) << "the process's own primary group";
  EXPECT_EQ(with.for_crash(1000, std::nullopt), (C{1000, 65534, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(1000, 0xffffffffull), (C{1000, 65534, A::kCrashedUser}));
  EXPECT_EQ(without.for_crash(1000, 1000), (C{1000, 1000, A::kCrashedUser}));
  for (std::uint64_t uid : {0ull, 1ull, 995ull, 999ull, 65534ull, 0xffffffffull, 1ull << 40}) {
    EXPECT_EQ(with.for_crash(uid, 5), (C{990, 991, A::kDedicatedUser})) << uid;
    EXPECT_EQ(without.for_crash(uid, 5), (C{65534, 65534, A::kFallbackUser})) << uid;
  }
  EXPECT_EQ(ctd::decoder_as_name(A::kCrashedUser), "crashed_user");
  EXPECT_EQ(ctd::decoder_as_name(A::kDedicatedUser), "dedicated_user");
  EXPECT_EQ(ctd::decoder_as_name(A::kFallbackUser), "fallback_user");
}

// decode.h, "debuginfod": each decoding uid gets a cache directory of its
// own, root's 0700 with an ACL for that uid, under a base any decoder may
// traverse and none may list.
TEST(DecoderCache, EachDecodingUidHasItsOwnCacheOnlyItMayUse) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path.c_str(), 0755), 0);
  const std::string base = dir.path + "/debuginfod_client";
  ASSERT_EQ(setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1), 0);
  ASSERT_EQ(setenv("DEBUGINFOD_CACHE_PATH", base.c_str(), 1), 0);
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto req = request_for(fd, 100);
  for (uid_t uid : {47331u, 47332u}) {
    req.credentials = {uid, uid, ctd::DecoderAs::kCrashedUser};
    auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, nullptr);
    ASSERT_TRUE(r && r->decoded) << (r ? r->failure : r.error().message);
  }
  close(fd);
  unsetenv("DEBUGINFOD_URLS");
  unsetenv("DEBUGINFOD_CACHE_PATH");
  struct stat st;
  ASSERT_EQ(stat(base.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  for (uid_t uid : {47331u, 47332u}) {
    const std::string own = ctd::debuginfod_cache_for(base, uid);
    EXPECT_EQ(own, base + "/" + std::to_string(uid));
    ASSERT_EQ(stat(own.c_str(), &st), 0) << own;
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 0007, 0u) << "others get nothing";
    char acl[128];
    const ssize_t n = getxattr(own.c_str(), "system.posix_acl_access", acl, sizeof acl);
    ASSERT_GT(n, 0) << own << " has no ACL";
    EXPECT_EQ(std::string(acl, static_cast<std::size_t>(n)), ctd::acl_user_dir(uid));
    // As that uid it may create a file there; as the other uid, not.
    for (uid_t as : {47331u, 47332u}) {
      const pid_t p = fork();
      if (p == 0) {
        if (setgroups(0, nullptr) < 0 || setresgid(as, as, as) < 0 || setresuid(as, as, as) < 0) _exit(3);
        const int f = open((own + "/probe").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        _exit(f >= 0 ? 0 : errno == EACCES ? 1 : 2);
      }
      int w = 0;
      ASSERT_EQ(waitpid(p, &w, 0), p);
      EXPECT_EQ(WEXITSTATUS(w), as == uid ? 0 : 1) << "uid " << as << " in " << own;
    }
  }
}

TEST_P(Decoder, HungDecoderIsKilledAtTheTimeout) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // A FIFO without a writer as the event names file: the decoder's open of
  // it never returns, a decoder that never finishes.  (The daemon itself
  // passes only regular files, Daemon::tlmap_for.)
  const std::string fifo = reachable_fifo(dir, "names.tlmap");
  auto req = request_for(fd, 100);
  req.tlmap = fifo;
  ctd::DecodeLimits limits;
  limits.timeout_ms = 300;
  auto r = decode(req, limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_TRUE(r->timed_out);
  EXPECT_NE(r->failure.find("did not finish within 300 ms"), std::string::npos) << r->failure;
  EXPECT_TRUE(decoders().empty()) << "the killed decoder was not reaped";
}

// A decoder that was taken over writes what it likes within the protocol:
// JSON nested 200000 deep is 400 KB, far below kMaxOutput, and parses
// (nlohmann's parser keeps its own stack), but copying or dumping it
// recurses once per level.  It must be refused as undecodable, not crash
// the daemon - which would then redo the same entry after every restart.
TEST(DecoderOutput, DeeplyNestedJsonIsUndecodableNotFatal) {
  TempDir dir;
  const int depth = 200000;
  const std::string json = "{\"status\":\"ok\",\"x\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  std::ofstream(dir.path + "/out", std::ios::binary)
      << "CTD1 " << json.size() << " 0 0 0 0 7 1 65534 65534\n" << json;
  const std::string fake = dir.path + "/fake-decoder";
  std::ofstream(fake) << "#!/bin/sh\nexec cat " << dir.path << "/out\n";
  ASSERT_EQ(chmod(fake.c_str(), 0755), 0);
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  auto decode_and_write = [&] {
        const rlimit no_core{1, 1};  // should it crash: no core into the shared pipeline (core(5))
        setrlimit(RLIMIT_CORE, &no_core);
        const int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
        auto req = request_for(fd, 100);
        req.self_exe = fake;
        auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, nullptr);
        if (!r) _exit(2);
        ctd::CoredumpEntry e;
        e.pid = 1;
        ctd::DocumentParts p;
        p.entry = &e;
        p.verdict = r->decoded ? ctd::judge(e, *r, std::nullopt) : ctd::Verdict{ctd::Status::kUndecodable, r->failure, std::nullopt};
        p.decoded = &*r;
        const std::string text = ctd::serialize(ctd::build_document(p));
        _exit(r->decoded ? 4 : 0);
  };
  EXPECT_EXIT(decode_and_write(), ::testing::ExitedWithCode(0), "");
}

TEST_P(Decoder, MemoryLimitTooSmallMakesItUndecodableNotFatal) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space at start: an ASan build's decoders get no RLIMIT_AS "
                  "(daemon/src/decode.cc, kLimitAddressSpace), and this process none it could test";
#endif
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ctd::DecodeLimits limits;
  limits.memory_limit = 4 << 20;  // the decoder's libraries alone need more
  auto r = decode(request_for(fd, 100), limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_FALSE(r->failure.empty());
  if (GetParam()) {
    EXPECT_NE(r->failure.find("below the decoder's own size"), std::string::npos) << r->failure;
    EXPECT_TRUE(r->out_of_memory) << r->failure;
  }
}

// A core with a full ring of `lanes` x `slots` events (full_ring), on a
// descriptor; its size in *size.
int big_ring_core(const TempDir &dir, std::uint32_t lanes, std::uint32_t slots, std::uint64_t *size) {
  ct::testing::RingBuilder ring = ct::testing::full_ring(lanes, slots);
  const std::vector<std::uint8_t> core = ct::testing::standard_core(ring).build();
  write_bytes(dir.path + "/big", core);
  *size = core.size();
  return open((dir.path + "/big").c_str(), O_RDONLY | O_CLOEXEC);
}

// Issue 13, item 5: the decoder decodes a big ring within its own memory
// (RLIMIT_DATA: the memory limit; decode.h), because the document and the
// text are written as they are made, never held whole.  These 65536 events
// make 72 MB of JSON and text; held whole, with the tree the JSON was
// dumped from, they took the decoder to a VmHWM of 520 MB, and under this
// test's 96 MiB it ran out of memory (status core_unreadable, "out of
// memory while reading the core"); now its VmHWM is 25 MB.
TEST_P(Decoder, BigRingDecodesWithinTheMemoryLimit) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a timeline of tens of MB takes an ASan decoder past the decode timeout on a loaded machine, and "
                  "its memory bound needs the RLIMIT_AS an ASan build does not set (decode.cc, kLimitAddressSpace)";
#endif
  TempDir dir;
  std::uint64_t size = 0;
  const int fd = big_ring_core(dir, 16, 4096, &size);
  ASSERT_GE(fd, 0);
  ctd::DecodeLimits limits;
  limits.memory_limit = 96 << 20;
  auto r = decode(request_for(fd, size), limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->document.summary.event_count, 16u * 4096u);
  /* The compact document: the text is not sent, but made from it. */
  EXPECT_TRUE(r->text.empty());
  auto a = core_timeline::reader::analysis_of_compact(r->document.tree);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const std::string text = core_timeline::reader::render_text(*a);
  EXPECT_NE(text.find("core-timeline: core-only, pid 4242 (victim), 65536 events"), std::string::npos)
      << text.substr(0, 200);
  std::printf("decoder: %llu kB VmHWM, %llu kB RssAnon, %zu bytes of output\n",
              static_cast<unsigned long long>(r->max_rss_kb), static_cast<unsigned long long>(r->anon_kb),
              r->output_bytes);
}

// A timeline of 327680 events, which as the full document (some 1.2 KiB
// an event) was larger than the daemon reads from a decoder (kMaxOutput,
// 256 MiB) and was not written, is written as the compact document (some
// 40 bytes an event), within ctl-query's default --max-size (64 MiB).
TEST(DecoderOutput, TimelineOfARingOfMoreThan220000EventsIsWritten) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a timeline of tens of MB takes an ASan decoder past the decode timeout on a loaded machine, and "
                  "its memory bound needs the RLIMIT_AS an ASan build does not set (decode.cc, kLimitAddressSpace)";
#endif
  TempDir dir;
  std::uint64_t size = 0;
  const int fd = big_ring_core(dir, 20, 16384, &size);
  ASSERT_GE(fd, 0);
  auto r = ctd::run_decoder(request_for(fd, size), ctd::DecodeLimits{}, [] { return true; }, nullptr);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->decoded) << r->failure;
  EXPECT_FALSE(r->out_of_memory) << r->failure;
  EXPECT_FALSE(r->timed_out) << r->failure;
  EXPECT_EQ(r->document.summary.event_count, 327680u);
  EXPECT_LT(r->output_bytes, 64u << 20) << "within ctl-query's default --max-size";
  std::printf("327680 events: %zu bytes of output\n", r->output_bytes);
}

TEST_P(Decoder, CancelKillsTheChild) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = decode(request_for(fd, 100), ctd::DecodeLimits{}, [this] {
    for (pid_t p : decoders()) kill(p, SIGSTOP);
    return false;
  });
  close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ECANCELED);
  EXPECT_TRUE(decoders().empty());
}

// The server never holds a core: after decoders ran through it, it has its
// four descriptors (stdin, stdout, stderr on /dev/null or the log, and its
// socket) and nothing of the cores; each decoder starts from that state.
TEST(DecoderServer, HoldsNoCoreAndWhenGoneTheDecoderIsForkedAndExecd) {
  auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
  ASSERT_TRUE(s) << s.error().message;
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  for (int i = 0; i < 3; ++i) {
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r && r->decoded) << (r ? r->failure : r.error().message);
    EXPECT_EQ(r->server_failure, "");
  }
  std::set<int> fds;
  for (const auto &e : fs::directory_iterator("/proc/" + std::to_string(s->pid()) + "/fd"))
    fds.insert(std::stoi(e.path().filename().string()));
  EXPECT_EQ(fds, (std::set<int>{0, 1, 2, 3}));
  for (const auto &e : fs::directory_iterator("/proc/" + std::to_string(s->pid()) + "/fd"))
    EXPECT_EQ(fs::read_symlink(e.path()).string().find(dir.path), std::string::npos) << e.path();

  // Killed: the next decoder is forked and exec'd, and says why.
  const pid_t server_pid = s->pid();
  kill(server_pid, SIGKILL);
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->decoded) << r->failure;
  EXPECT_NE(r->server_failure, "");
  EXPECT_FALSE(s->running());
  EXPECT_EQ(kill(server_pid, 0), -1) << "the dead server was not reaped";
}

// Clones share the server's address space layout: it is replaced by a
// fresh exec every kRenewEvery decoders, and renew() replaces it at once
// (the daemon calls it when a decoder died by a signal, which
// died_by_signal tells apart from the daemon's own kill).
TEST(DecoderServer, RenewedEveryKRenewEveryDecodersAndOnDemand) {
  auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
  ASSERT_TRUE(s) << s.error().message;
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  std::set<pid_t> servers{s->pid()};
  for (unsigned i = 0; i <= ctd::DecoderServer::kRenewEvery; ++i) {
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r && r->decoded && r->via_server) << (r ? r->failure + r->server_failure : r.error().message);
    EXPECT_FALSE(r->died_by_signal);
    servers.insert(s->pid());
  }
  EXPECT_EQ(servers.size(), 2u) << "one renewal after " << ctd::DecoderServer::kRenewEvery << " decoders";

  // A decoder killed by a signal the daemon did not send.
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  auto req = request_for(fd, 100);
  const std::string fifo = reachable_fifo(dir, "names.tlmap");  // holds the decoder until killed
  req.tlmap = fifo;
  const pid_t server = s->pid();
#if defined(__SANITIZE_ADDRESS__)
  // ASan takes a SIGSEGV for its own report and exits 1; it leaves SIGILL
  // alone (handle_sigill=0).
  constexpr int kSignal = SIGILL;
  const char *const kSignalName = "SIGILL";
#else
  constexpr int kSignal = SIGSEGV;
  const char *const kSignalName = "SIGSEGV";
#endif
  auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [&] {
    for (pid_t p : my_children())
      if (p != server) kill(p, kSignal);
    return true;
  }, &*s);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_TRUE(r->died_by_signal);
  EXPECT_NE(r->failure.find(kSignalName), std::string::npos) << r->failure;
  ASSERT_TRUE(s->renew());
  EXPECT_NE(s->pid(), server);
  EXPECT_EQ(kill(server, 0), -1) << "the old server was not reaped";
}

// A server that cloned a decoder and never answered, or answered a pid
// that is not ours, or 0: the daemon decodes by fork and exec with pipes of
// its own (the server's decoder wrote garbage into the old ones), gives up
// on the server, and leaves no child behind.
TEST(DecoderServer, BrokenAnswersFallBackToForkAndExecAndLeaveNoChild) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  for (const char *mode : {"lost-answer", "wrong-pid", "zero"}) {
    SCOPED_TRACE(mode);
    setenv("CT_MISBEHAVE", mode, 1);
    auto s = ctd::DecoderServer::start(CT_MISBEHAVING_SERVER);
    unsetenv("CT_MISBEHAVE");
    ASSERT_TRUE(s) << s.error().message;
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto req = request_for(fd, 100);
    auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->via_server);
    EXPECT_NE(r->server_failure, "");
    ASSERT_TRUE(r->decoded) << r->failure;
    EXPECT_EQ(r->document.summary.status, ctd::Status::kCoreUnreadable);
    EXPECT_FALSE(s->running());
    EXPECT_TRUE(my_children().empty()) << "a child of the broken server's is left";
  }
}

// ---- options ----------------------------------------------------------------

TEST(Options, DefaultsSuitAStandardSystemAndConfigFileIsRead) {
  TempDir dir;
  std::vector<std::string> args{"core-timelined", "--config", dir.path + "/none.conf"};
  auto parse = [](std::vector<std::string> a) {
    std::vector<char *> argv;
    for (auto &s : a) argv.push_back(s.data());
    int exit_now = -1;
    return ctd::parse_options(static_cast<int>(argv.size()), argv.data(), &exit_now);
  };
  {
    std::ofstream f(dir.path + "/d.conf");
    f << "# core-timelined\nstate-dir = /tmp/x-state\noutput-dir = /tmp/x-out\ndecode-timeout = 2.5\n"
         "memory-limit = 512M\nfirst-start = new\n";
  }
  auto o = parse({"core-timelined", "--config", dir.path + "/d.conf"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->state_dir, "/tmp/x-state");
  EXPECT_EQ(o->output_dir, "/tmp/x-out");
  EXPECT_EQ(o->decode_timeout_ms, 2500u);
  EXPECT_EQ(o->memory_limit, 512ull << 20);
  EXPECT_EQ(o->first_start, ctd::FirstStart::kNew);
  // The command line wins over the file.
  o = parse({"core-timelined", "--config", dir.path + "/d.conf", "--state-dir", "/tmp/y"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->state_dir, "/tmp/y");
  // Defaults (no file at the default path on a test machine, or ignored).
  o = parse({"core-timelined", "--config", dir.path + "/d.conf", "--first-start", "boot"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->first_start, ctd::FirstStart::kBoot);
  EXPECT_FALSE(parse({"core-timelined", "--memory-limit", "lots"}));
  // Sizes as CLI11 reads them (powers of 1024), with their lower bounds.
  o = parse({"core-timelined", "--max-kept", "2G", "--keep-whole-below", "512K"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->max_kept, 2ull << 30);
  EXPECT_EQ(o->keep_whole_below, 512ull << 10);
  EXPECT_FALSE(parse({"core-timelined", "--max-kept", "512K"}));
  // --journal-document-max: 1M by default; 0 (no document) or 64K..64M.
  o = parse({"core-timelined"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->journal_document_max, 1ull << 20);
  EXPECT_EQ(o->journal_document_max, core_timeline::document::journal::kDefaultDocumentMax);
  for (const auto &[given, want] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"0", 0}, {"64K", 64ull << 10}, {"2M", 2ull << 20}, {"64M", 64ull << 20}}) {
    o = parse({"core-timelined", "--journal-document-max", given});
    ASSERT_TRUE(o) << given << ": " << o.error().message;
    EXPECT_EQ(o->journal_document_max, want) << given;
  }
  for (const char *bad : {"1K", "65M", "-1", "lots"})
    EXPECT_FALSE(parse({"core-timelined", "--journal-document-max", bad})) << bad;
  EXPECT_FALSE(parse({"core-timelined", "--memory-limit", "-1"}));
  EXPECT_FALSE(parse({"core-timelined", "--first-start", "yesterday"}));
  EXPECT_FALSE(parse({"core-timelined", "--state-dir", "relative"}));
  // debuginfod's budget per core: 5 s unless given; 0 is the library's own.
  o = parse({"core-timelined", "--first-start", "all"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->debuginfod_timeout_ms, 5000u);
  o = parse({"core-timelined", "--debuginfod-timeout", "0.5"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->debuginfod_timeout_ms, 500u);
  o = parse({"core-timelined", "--debuginfod-timeout", "0"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->debuginfod_timeout_ms, 0u);
  EXPECT_FALSE(parse({"core-timelined", "--debuginfod-timeout", "-1"}));
  EXPECT_FALSE(parse({"core-timelined", "--debuginfod-timeout", "soon"}));
  // Closed sets: each name gives its own value, and is the one documented.
  for (const auto t : {ctd::log::Target::kAuto, ctd::log::Target::kJournal, ctd::log::Target::kStderr,
                       ctd::log::Target::kBoth}) {
    o = parse({"core-timelined", "--log-target", std::string(ctd::log::target_name(t))});
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ(o->log_target, t) << ctd::log::target_name(t);
  }
  EXPECT_EQ(ctd::log::target_name(ctd::log::Target::kStderr), "stderr");
  EXPECT_FALSE(parse({"core-timelined", "--log-target", "syslog"}));
  o = parse({"core-timelined", "--first-start", "all"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->first_start, ctd::FirstStart::kAll);
  EXPECT_EQ(ctd::first_start_name(ctd::FirstStart::kAll), "all");
}

// ---- the journal catalog ---------------------------------------------------

TEST(Catalog, ParsesAndHasAnEntryForEveryMessageId) {
  // journalctl --root builds a catalog database from ROOT/usr/lib/systemd/
  // catalog/*.catalog without touching the machine's own.
  TempDir dir;
  fs::create_directories(dir.path + "/usr/lib/systemd/catalog");
  fs::copy_file(CT_CATALOG, dir.path + "/usr/lib/systemd/catalog/core-timeline.catalog");
  const std::string update = "journalctl --root=" + dir.path + " --update-catalog 2>&1";
  FILE *p = popen(update.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(pclose(p), 0) << out;
  p = popen(("journalctl --root=" + dir.path + " --list-catalog 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  out.clear();
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(pclose(p), 0) << out;
  for (std::string_view id :
       {ctd::kMsgMappingAbsent, ctd::kMsgEntryRejected, ctd::kMsgEntryUnverified, ctd::kMsgTimelineWritten,
        ctd::kMsgResourceGaveUp})
    EXPECT_NE(out.find(std::string(id) + " core-timeline: "), std::string::npos) << id << " missing in:\n" << out;
}

// ---- CoreWatch: a new core makes the daemon read the journal eagerly ------

TEST(CoreWatch, NewCoreIsExpectedUntilItsEntryIsHandledOrItsTimeIsUp) {
  char tmpl[] = "/tmp/ctd-watch-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ctd::CoreWatch w(dir);
  ASSERT_GE(w.fd(), 0);
  EXPECT_EQ(w.timeout_ms(1000), -1);
  // As systemd-coredump does: a temporary name first (ignored), then the core.
  std::ofstream(dir + "/.#core.a.0.b.1.2.zst") << "x";
  std::filesystem::rename(dir + "/.#core.a.0.b.1.2.zst", dir + "/core.a.0.b.1.2.zst");
  std::ofstream(dir + "/core.c.0.b.3.4.zst") << "y";
  std::filesystem::create_directory(dir + "/subdir");
  w.read_events(1000);
  EXPECT_EQ(w.expected(), 2u);
  EXPECT_EQ(w.take_new(), (std::vector<std::string>{"core.a.0.b.1.2.zst", "core.c.0.b.3.4.zst"}));
  EXPECT_TRUE(w.take_new().empty());
  EXPECT_TRUE(w.is_expected("core.c.0.b.3.4.zst"));
  EXPECT_EQ(w.timeout_ms(1000), ctd::CoreWatch::kEagerPollMs);
  w.handled("core.a.0.b.1.2.zst");
  EXPECT_EQ(w.expected(), 1u);
  // The other never gets an entry: forgotten after kEagerMaxMs.
  EXPECT_EQ(w.timeout_ms(1000 + ctd::CoreWatch::kEagerMaxMs * 1000), ctd::CoreWatch::kEagerPollMs);
  EXPECT_EQ(w.timeout_ms(1001 + ctd::CoreWatch::kEagerMaxMs * 1000), -1);
  EXPECT_EQ(w.expected(), 0u);
  // The directory goes away and comes back: watched again on retry().
  std::filesystem::remove_all(dir);
  w.read_events(2000);
  EXPECT_LT(w.fd(), 0);
  w.retry();
  EXPECT_LT(w.fd(), 0);
  std::filesystem::create_directory(dir);
  w.retry();
  ASSERT_GE(w.fd(), 0);
  std::ofstream(dir + "/core.d.0.b.5.6.zst") << "z";
  w.read_events(3000);
  EXPECT_EQ(w.expected(), 1u);
  // Moved away and replaced: the new directory at the path is watched.
  std::filesystem::rename(dir, dir + ".old");
  std::filesystem::create_directory(dir);
  w.read_events(4000);
  EXPECT_LT(w.fd(), 0);
  w.retry();
  ASSERT_GE(w.fd(), 0);
  std::ofstream(dir + "/core.e.0.b.7.8.zst") << "e";
  std::ofstream(dir + ".old/core.f.0.b.9.10.zst") << "f";
  w.read_events(5000);
  EXPECT_EQ(w.expected(), 2u);  // d, and e; not f in the old directory
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + ".old");
}

/* The daemon writes each timeline next to its core, by default into the
 * watched directory (O_TMPFILE + linkat: IN_CREATE "core....timeline.json").
 * That name never gets an entry, so it was expected for kEagerMaxMs and the
 * journal read every kEagerPollMs for 5 s after every crash.  Only
 * systemd-coredump's "core.*" names, other than timelines, are expected. */
TEST(CoreWatch, TheDaemonsOwnTimelinesAreNotExpected) {
  TempDir dir;
  ctd::CoreWatch w(dir.path);
  ASSERT_GE(w.fd(), 0);
  auto dfd = ctd::open_directory(dir.path);
  ASSERT_TRUE(dfd);
  ctd::FileOwner owner;
  owner.uid = getuid();
  owner.gid = getgid();
  std::string warn;
  auto wr = ctd::write_new_file(dfd->get(), dir.path, "core.a.0.b.1.2.timeline.json", "{}\n", owner, &warn);
  ASSERT_TRUE(wr) << wr.error().message;
  std::ofstream(dir.path + "/.core.a.0.b.3.4.timeline.json.x1y2.tmp") << "{}";  // the fallback temporary
  std::ofstream(dir.path + "/README") << "not a core";
  w.read_events(1000);
  EXPECT_EQ(w.expected(), 0u);
  EXPECT_EQ(w.timeout_ms(1000), -1) << "the journal would be read every 5 ms for a timeline's sake";
  std::ofstream(dir.path + "/core.a.0.b.1.2.zst") << "x";
  w.read_events(2000);
  EXPECT_EQ(w.expected(), 1u);
}

// ---- cores prepared before their entry (prepared.h) ---------------------------

namespace {

ctd::CoreWork work_with_output(std::size_t bytes, const std::string &text = "") {
  ctd::CoreWork w;
  w.decoded.emplace();
  w.decoded->decoded = true;
  w.decoded->output_bytes = bytes;
  w.decoded->text = text;
  return w;
}

ctd::CoreIdentity identity_of(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return ctd::CoreIdentity::of(st);
}

}  // namespace

TEST(PreparedCores, UsedOnlyForTheSameUnchangedFileAndTheSameEventNames) {
  TempDir dir;
  const std::string core = dir.path + "/core.a.0.b.1.2.zst";
  std::ofstream(core) << "the core";
  const auto id = identity_of(core);
  const std::optional<std::string> tlmap = "/usr/share/core-timeline/a.tlmap";
  ctd::PreparedCores p;
  std::string why;

  p.put("core.a.0.b.1.2.zst", id, tlmap, work_with_output(10, "prepared"), 1000);
  ASSERT_TRUE(p.contains("core.a.0.b.1.2.zst"));
  auto w = p.take("core.a.0.b.1.2.zst", identity_of(core), tlmap, &why);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->decoded->text, "prepared");
  EXPECT_EQ(why, "");
  EXPECT_FALSE(p.contains("core.a.0.b.1.2.zst")) << "taken once";
  EXPECT_FALSE(p.take("core.a.0.b.1.2.zst", id, tlmap, &why));
  EXPECT_EQ(why, "") << "nothing was prepared: nothing to explain";

  // Another executable's event names (COREDUMP_EXE disagrees with the xattr).
  p.put("core.a.0.b.1.2.zst", id, tlmap, work_with_output(10), 1000);
  EXPECT_FALSE(p.take("core.a.0.b.1.2.zst", id, std::nullopt, &why));
  EXPECT_NE(why.find("event names"), std::string::npos) << why;
  EXPECT_FALSE(p.contains("core.a.0.b.1.2.zst")) << "a preparation that does not fit is dropped";

  // Written to after the preparation: same inode, other size or mtime.
  p.put("core.a.0.b.1.2.zst", id, tlmap, work_with_output(10), 1000);
  std::ofstream(core, std::ios::app) << " and more";
  EXPECT_FALSE(p.take("core.a.0.b.1.2.zst", identity_of(core), tlmap, &why));
  EXPECT_NE(why.find("size"), std::string::npos) << why;

  // Metadata changed (chmod): ctime.
  const auto id2 = identity_of(core);
  p.put("core.a.0.b.1.2.zst", id2, tlmap, work_with_output(10), 1000);
  // The kernel stamps ctime from the coarse clock (current_time()): let it
  // pass the last stamp, or chmod could leave ctime as it was.
  for (struct timespec now{}; clock_gettime(CLOCK_REALTIME_COARSE, &now) == 0 &&
                              std::tie(now.tv_sec, now.tv_nsec) <= std::tie(id2.ctime.tv_sec, id2.ctime.tv_nsec);)
    usleep(1000);  // a wait on the clock itself
  ASSERT_EQ(chmod(core.c_str(), 0600), 0);
  EXPECT_FALSE(p.take("core.a.0.b.1.2.zst", identity_of(core), tlmap, &why));
  EXPECT_NE(why.find("ctime"), std::string::npos) << why;

  // Another file renamed over the name: another inode.
  const auto id3 = identity_of(core);
  p.put("core.a.0.b.1.2.zst", id3, tlmap, work_with_output(10), 1000);
  std::ofstream(dir.path + "/other") << "the core";
  fs::rename(dir.path + "/other", core);
  EXPECT_FALSE(p.take("core.a.0.b.1.2.zst", identity_of(core), tlmap, &why));
  EXPECT_NE(why.find("inode"), std::string::npos) << why;
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.bytes(), 0u);
}

TEST(PreparedCores, BoundedInCountBytesAndAgeOldestFirst) {
  ctd::PreparedCores p;
  ctd::CoreIdentity id;
  for (std::size_t i = 0; i < ctd::PreparedCores::kMaxCores + 3; ++i)
    p.put("core." + std::to_string(i), id, std::nullopt, work_with_output(1), 1000 + i);
  EXPECT_EQ(p.size(), ctd::PreparedCores::kMaxCores);
  EXPECT_FALSE(p.contains("core.0"));
  EXPECT_FALSE(p.contains("core.2"));
  EXPECT_TRUE(p.contains("core.3"));
  EXPECT_EQ(p.bytes(), ctd::PreparedCores::kMaxCores);

  ctd::PreparedCores q;
  const std::size_t half = ctd::PreparedCores::kMaxBytes / 2;
  q.put("core.a", id, std::nullopt, work_with_output(half), 1);
  q.put("core.b", id, std::nullopt, work_with_output(half), 2);
  q.put("core.c", id, std::nullopt, work_with_output(half), 3);
  EXPECT_FALSE(q.contains("core.a"));
  EXPECT_TRUE(q.contains("core.b") && q.contains("core.c"));
  EXPECT_EQ(q.bytes(), 2 * half);
  q.put("core.huge", id, std::nullopt, work_with_output(ctd::PreparedCores::kMaxBytes + 1), 4);
  EXPECT_FALSE(q.contains("core.huge")) << "bigger than the whole budget: not kept, nothing dropped for it";
  EXPECT_EQ(q.size(), 2u);

  q.expire(2 + ctd::PreparedCores::kMaxAgeMs * 1000);
  EXPECT_TRUE(q.contains("core.b"));
  q.expire(3 + ctd::PreparedCores::kMaxAgeMs * 1000);
  EXPECT_FALSE(q.contains("core.b"));
  EXPECT_TRUE(q.contains("core.c"));
  q.discard("core.c");
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.bytes(), 0u);
}

// ---- the timeline entry in the journal (document::journal) -----------------

namespace {

namespace jn = core_timeline::document::journal;
namespace dkey = core_timeline::document::key;
using ctdoc::Json;

// A stored document shaped as the daemon's: `n` events named E<i % names>
// (the last one CRASH), two spans (one open), a text line per event, and a
// big coredump field.
Json synthetic_document(std::size_t n, std::size_t names) {
  Json d;
  d[dkey::schema_version] = ctdoc::kSchemaVersion;
  d[dkey::status] = "ok";
  d[dkey::exit_code] = 0;
  d[dkey::reason] = nullptr;
  d[dkey::crash] = {{dkey::signal, 11}, {dkey::signal_name, "SIGSEGV"}};
  Json events = Json::array();
  std::string text = "core-timeline: header line\n";
  for (std::size_t i = 0; i < n; ++i) {
    const bool crash = i + 1 == n;
    events.push_back({{dkey::ring, 0},
                      {dkey::lane, 0},
                      {dkey::seq, i + 1},
                      {dkey::kind, crash ? "CRASH" : "USER"},
                      {dkey::name, crash ? std::string("CRASH") : "E" + std::to_string(i % names)},
                      {dkey::args, {i, 2 * i}}});
    text += "  -0.001ms tid 1 main E" + std::to_string(i % names) + " arg=" + std::to_string(i) + "\n";
  }
  d[dkey::events] = std::move(events);
  d[dkey::spans] = Json::array({{{dkey::name, "REQUEST"}, {dkey::state, "open"}},
                                {{dkey::name, "RELOAD"}, {dkey::state, "closed"}}});
  d[dkey::coredump] = {{dkey::boot_id, kBoot},
                       {dkey::fields,
                        {{"COREDUMP_PID", "4242"},
                         {"COREDUMP_PROC_MAPS", std::string(50000, 'm')},
                         {"COREDUMP_UID", "1000"}}}};
  d[dkey::daemon] = {{dkey::version, "test"}};
  d[dkey::text] = text;
  return d;
}

std::map<std::string, std::vector<std::string>> by_name(const jn::Fields &f) {
  std::map<std::string, std::vector<std::string>> m;
  for (const auto &[k, v] : f) m[k].push_back(v);
  return m;
}

}  // namespace

TEST(TimelineEntry, DocumentThatFitsIsTheFileItself) {
  const Json d = synthetic_document(10, 3);
  const std::string bytes = ctdoc::serialize(d);
  auto b = jn::bound_document(d, bytes, bytes.size());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->cut);
  EXPECT_EQ(b->bytes, bytes);
}

TEST(TimelineEntry, BigDocumentIsCutToTheBoundKeepingTheNewestEventsAndSaysSo) {
  const Json d = synthetic_document(20000, 50);
  const std::string bytes = ctdoc::serialize(d);
  ASSERT_GT(bytes.size(), 3u << 20);
  for (const std::uint64_t max : {jn::kMinDocumentMax, std::uint64_t{1} << 20}) {
    auto b = jn::bound_document(d, bytes, max);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_TRUE(b->cut);
    EXPECT_LE(b->bytes.size(), max);
    // Most of the bound is used: the estimate of each event's size is exact
    // enough that at most a few events' worth is left unused.
    EXPECT_GT(b->bytes.size(), max - 4096) << max;
    auto c = ctdoc::parse_stored_document(b->bytes);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(ctdoc::serialize(*c), b->bytes) << "a cut document is serialized as stored documents are";
    const Json &cut = (*c)[dkey::cut];
    EXPECT_EQ(cut[dkey::limit], max);
    EXPECT_EQ(cut[dkey::document_bytes], bytes.size());
    EXPECT_EQ(cut[dkey::events_total], 20000u);
    const std::size_t kept = cut[dkey::events_kept].get<std::size_t>();
    ASSERT_GT(kept, 0u);
    EXPECT_LT(kept, 20000u);
    ASSERT_EQ((*c)[dkey::events].size(), kept);
    // The newest: the last `kept`, in order, ending with the CRASH.
    EXPECT_EQ((*c)[dkey::events].back()[dkey::kind], "CRASH");
    EXPECT_EQ((*c)[dkey::events].front()[dkey::seq], 20000 - kept + 1);
    EXPECT_EQ(cut[dkey::fields_left_out], Json::array({"COREDUMP_PROC_MAPS"}));
    EXPECT_FALSE((*c)[dkey::coredump][dkey::fields].contains("COREDUMP_PROC_MAPS"));
    EXPECT_EQ((*c)[dkey::coredump][dkey::fields]["COREDUMP_PID"], "4242");
    const std::string &text = (*c)[dkey::text].get_ref<const std::string &>();
    EXPECT_LE(text.size(), max / 8 + 200);
    EXPECT_EQ(cut[dkey::text_kept_bytes], text.size());
    EXPECT_EQ(cut[dkey::text_bytes], d[dkey::text].get<std::string>().size());
    EXPECT_EQ(text.rfind("[cut: ", 0), 0u) << text.substr(0, 100);
    // Its last line is the original's.
    const std::string &orig = d[dkey::text].get_ref<const std::string &>();
    EXPECT_EQ(orig.substr(orig.size() - 40), text.substr(text.size() - 40));
    // Everything else is whole.
    EXPECT_EQ((*c)[dkey::spans], d[dkey::spans]);
    EXPECT_EQ((*c)[dkey::crash], d[dkey::crash]);
    EXPECT_NE(cut[dkey::kept].get<std::string>().find("newest " + std::to_string(kept) + " of 20000"),
              std::string::npos);
  }
}

// The cut copies the newest events' bytes from the document as serialize()
// lays it out; bytes laid out otherwise take the slow way, to the same cut.
TEST(TimelineEntry, CutOfBytesNotLaidOutAsStoredGivesTheSameDocument) {
  const Json d = synthetic_document(5000, 20);
  const std::string stored = ctdoc::serialize(d), compact = d.dump();
  auto fast = jn::bound_document(d, stored, 256 << 10);
  auto slow = jn::bound_document(d, compact, 256 << 10);
  ASSERT_TRUE(fast && slow);
  EXPECT_TRUE(fast->cut && slow->cut);
  EXPECT_LE(slow->bytes.size(), 256u << 10);
  auto a = ctdoc::parse_stored_document(fast->bytes), b = ctdoc::parse_stored_document(slow->bytes);
  ASSERT_TRUE(a && b);
  EXPECT_EQ((*a)[dkey::events], (*b)[dkey::events]);
  EXPECT_EQ((*b)[dkey::cut][dkey::document_bytes], compact.size());
  EXPECT_EQ(ctdoc::serialize(*b), slow->bytes);
}

TEST(TimelineEntry, DocumentThatCannotFitEvenWithoutEventsIsAnError) {
  Json d = synthetic_document(10, 3);
  d[dkey::process] = {{dkey::comm, std::string(100000, 'x')}};  // kept whole
  const std::string bytes = ctdoc::serialize(d);
  auto b = jn::bound_document(d, bytes, 64 << 10);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("bound of 65536"), std::string::npos) << b.error().message;
  // entry_fields then sends no document, says it is cut, and why.
  jn::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  in.document_max = 64 << 10;
  std::string note;
  const auto m = by_name(jn::entry_fields(in, &note));
  EXPECT_EQ(m.count(std::string(jn::kDocument)), 0u);
  EXPECT_EQ(m.at(std::string(jn::kDocumentCut)), std::vector<std::string>{"1"});
  EXPECT_NE(note.find("no document"), std::string::npos) << note;
}

TEST(TimelineEntry, FieldsCarryJoinKeysSummaryAndTheDocument) {
  const Json d = synthetic_document(30, 5);
  const std::string bytes = ctdoc::serialize(d);
  const std::map<std::string, std::string> cd{{"COREDUMP_PID", "4242"},           {"COREDUMP_UID", "1000"},
                                              {"COREDUMP_GID", "1000"},           {"COREDUMP_SIGNAL", "11"},
                                              {"COREDUMP_SIGNAL_NAME", "SIGSEGV"}, {"COREDUMP_EXE", "/bin/x"},
                                              {"COREDUMP_COMM", "x"},             {"COREDUMP_TIMESTAMP", "123"},
                                              {"COREDUMP_FILENAME", "/var/lib/systemd/coredump/core.x"},
                                              {"COREDUMP_PROC_MAPS", "not a join key"}};
  jn::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  in.coredump_fields = &cd;
  in.coredump_boot_id = kBoot;
  in.timeline_path = "/var/lib/systemd/coredump/core.x.timeline.json";
  const auto f = jn::entry_fields(in);
  const auto m = by_name(f);
  for (const std::string_view k : jn::kJoinKeys) EXPECT_EQ(m.at(std::string(k)), std::vector{cd.at(std::string(k))}) << k;
  EXPECT_EQ(m.count("COREDUMP_PROC_MAPS"), 0u);
  const auto one = [&](std::string_view k) { return m.at(std::string(k)).at(0); };
  EXPECT_EQ(one(jn::kBootId), kBoot);
  EXPECT_EQ(one(jn::kStatus), "ok");
  EXPECT_EQ(one(jn::kSignal), "SIGSEGV");
  EXPECT_EQ(one(jn::kEvents), "30");
  EXPECT_EQ(one(jn::kLastEvent), "E3") << "the last event that is not the CRASH (event 28: E28 % 5)";
  EXPECT_EQ(one(jn::kOpenSpans), "1");
  EXPECT_EQ(m.at(std::string(jn::kOpenSpan)), std::vector<std::string>{"REQUEST"});
  EXPECT_EQ(m.at(std::string(jn::kEventName)), (std::vector<std::string>{"E0", "E1", "E2", "E3", "E4", "CRASH"}));
  EXPECT_EQ(one(jn::kEventNamesComplete), "1");
  EXPECT_EQ(one(jn::kSchemaVersion), std::to_string(ctdoc::kSchemaVersion));
  EXPECT_EQ(one(jn::kTimelinePath), in.timeline_path);
  EXPECT_EQ(one(jn::kDocument), bytes) << "the document is the file's bytes";
  EXPECT_EQ(one(jn::kDocumentBytes), std::to_string(bytes.size()));
  EXPECT_EQ(m.count(std::string(jn::kDocumentCut)), 0u);
  // Names are valid journal field names (A-Z, 0-9, _; not starting with _ or a digit; at most 64).
  for (const auto &[k, v] : f) {
    ASSERT_FALSE(k.empty());
    EXPECT_TRUE(k.size() <= 64 && k[0] != '_' && !(k[0] >= '0' && k[0] <= '9')) << k;
    for (char ch : k) EXPECT_TRUE((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') << k;
  }
  // 0: no document, still the summary.
  in.document_max = 0;
  const auto m0 = by_name(jn::entry_fields(in));
  EXPECT_EQ(m0.count(std::string(jn::kDocument)), 0u);
  EXPECT_EQ(m0.count(std::string(jn::kDocumentCut)), 0u);
  EXPECT_EQ(m0.at(std::string(jn::kEvents)).at(0), "30");
}

TEST(TimelineEntry, EventNamesStopAtTheirMaximumAndSaySo) {
  const Json d = synthetic_document(jn::kMaxEventNames + 100, jn::kMaxEventNames + 50);
  const std::string bytes = ctdoc::serialize(d);
  jn::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  in.document_max = 0;
  const auto f = jn::entry_fields(in);
  const auto m = by_name(f);
  EXPECT_EQ(m.at(std::string(jn::kEventName)).size(), jn::kMaxEventNames);
  EXPECT_EQ(m.at(std::string(jn::kEventNamesComplete)).at(0), "0");
  // Few enough fields for sd_journal_sendv (two iovecs each; sendmsg takes
  // at most 1024) with the sender's own ten or so.
  EXPECT_LT(f.size() + jn::kMaxOpenSpanNames + 12, 500u);
  // A document without events: no names, complete.
  Json e = synthetic_document(0, 1);
  in.document = &e;
  const auto me = by_name(jn::entry_fields(in));
  EXPECT_EQ(me.count(std::string(jn::kEventName)), 0u);
  EXPECT_EQ(me.count(std::string(jn::kLastEvent)), 0u);
  EXPECT_EQ(me.at(std::string(jn::kEventNamesComplete)).at(0), "1");
  EXPECT_EQ(me.at(std::string(jn::kEvents)).at(0), "0");
}

TEST(TimelineEntry, SenderTrustIsRootOrTheDaemonsCgroupOrTheCrashedUserToCorroborate) {
  using T = jn::Trust;
  const auto t = [](std::optional<std::string_view> uid, std::optional<std::string_view> transport,
                    std::optional<std::string_view> cuid, std::optional<std::string_view> cgroup = std::nullopt) {
    jn::Sender s;
    s.uid = uid;
    s.transport = transport;
    s.coredump_uid = cuid;
    s.cgroup = cgroup;
    return jn::sender_trust(s);
  };
  const std::string_view daemon = jn::kDaemonCgroup;
  EXPECT_EQ(t("0", "journal", "1000"), T::kDaemon);
  EXPECT_EQ(t("0", "journal", std::nullopt), T::kDaemon);
  EXPECT_EQ(t("1000", "journal", "1000", daemon), T::kDaemon) << "the daemon's child at the crashed uid";
  EXPECT_EQ(t("1000", "journal", "1000"), T::kUser) << "no cgroup: the user's own word";
  EXPECT_EQ(t("1000", "journal", "1000", "/user.slice/user-1000.slice/session-1.scope"), T::kUser);
  EXPECT_EQ(t("1000", "journal", "1000", "/system.slice/core-timeline.service/x"), T::kUser)
      << "a sub-cgroup is not the daemon's own";
  EXPECT_EQ(t("70000", "journal", "70000"), T::kUser);
  EXPECT_EQ(t("1000", "journal", "1001", daemon), T::kNone) << "a user speaking of another's crash";
  EXPECT_EQ(t("999", "journal", "999", daemon), T::kNone) << "system users' crashes are sent by root";
  EXPECT_EQ(t("65534", "journal", "65534"), T::kNone);
  EXPECT_EQ(t("01000", "journal", "01000"), T::kNone);
  EXPECT_EQ(t("0", "stdout", "1000"), T::kNone) << "a line printed to a journal stream";
  EXPECT_EQ(t("0", "syslog", "1000"), T::kNone);
  EXPECT_EQ(t(std::nullopt, "journal", "1000"), T::kNone);
  EXPECT_EQ(t("0", std::nullopt, "1000"), T::kNone);
  EXPECT_EQ(t("1000", "journal", std::nullopt), T::kNone);
}

TEST(TimelineEntry, SentAsTheCrashedUserOnlyWhenTheTimelineIsReadableByThem) {
  ctd::CoredumpEntry e;
  e.uid = 1000;
  e.fields["COREDUMP_GID"] = "1001";
  // systemd-coredump's core: root:root 0640 plus user:1000:r--.
  const ctd::FileOwner core = ctd::owner_for_uid(1000);
  EXPECT_TRUE(ctd::grants_read(core, 1000));
  EXPECT_FALSE(ctd::grants_read(core, 1001));
  auto as = ctd::send_as(e, core);
  ASSERT_TRUE(as);
  EXPECT_EQ(as->uid, 1000u);
  EXPECT_EQ(as->gid, 1001u);
  // No ACL (a file system without them): the user cannot read; root sends.
  ctd::FileOwner plain;
  EXPECT_FALSE(ctd::grants_read(plain, 1000));
  EXPECT_FALSE(ctd::send_as(e, plain));
  // A mask without read hides the user's entry.
  ctd::FileOwner masked = core;
  masked.acl[4 + 3 * 8 + 2] = 0;  // ACL_MASK's perm: ---
  EXPECT_FALSE(ctd::grants_read(masked, 1000));
  // Owner and other bits.
  ctd::FileOwner own{1000, 1000, 0600, "", {}};
  EXPECT_TRUE(ctd::grants_read(own, 1000));
  ctd::FileOwner world{0, 0, 0644, "", {}};
  EXPECT_TRUE(ctd::grants_read(world, 1234));
  // A system user's crash: root sends, whatever the file says.
  e.uid = 995;
  EXPECT_FALSE(ctd::send_as(e, ctd::FileOwner{995, 995, 0600, "", {}}));
  e.uid = 65534;
  EXPECT_FALSE(ctd::send_as(e, world));
  // A malformed ACL grants nothing.
  ctd::FileOwner bad = core;
  bad.acl.resize(bad.acl.size() - 3);
  EXPECT_FALSE(ctd::grants_read(bad, 1000));
}

// send_entry() as a user, for real, without journald: in a mount namespace
// of its own, a child puts its own datagram socket where sd_journal_sendv
// sends (/run/systemd/journal/socket, on a private tmpfs), and reads what
// arrives with the sender's credentials (SO_PASSCRED), as journald does.
TEST(TimelineEntry, SentAsAUserTheDatagramCarriesThatUsersCredentials) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t p = fork();
  ASSERT_GE(p, 0);
  if (p == 0) {
    close(out[0]);
    auto report = [&](const std::string &s) {
      (void)!write(out[1], s.data(), s.size());
      _exit(0);
    };
    if (unshare(CLONE_NEWNS) < 0) report("unshare: " + std::string(strerror(errno)));
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) report("mount private");
    mkdir("/run/systemd", 0755);
    mkdir("/run/systemd/journal", 0755);
    if (mount("tmpfs", "/run/systemd/journal", "tmpfs", 0, "mode=0755") < 0) report("mount tmpfs");
    const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, "/run/systemd/journal/socket");
    const int one = 1;
    if (bind(s, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0 || chmod(sa.sun_path, 0666) < 0 ||
        setsockopt(s, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
      report("socket: " + std::string(strerror(errno)));
    const ctd::log::Fields f{{"MESSAGE", "probe"}, {"CORE_TIMELINE_PROBE", "1"}};
    auto r = ctd::send_entry(f, ctd::SendAs{47099, 47098});
    if (!r) report("send_entry: " + r.error().message);
    char buf[4096];
    char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(s, &mh, MSG_DONTWAIT);
    if (n < 0) report("recvmsg: " + std::string(strerror(errno)));
    const cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (!c || c->cmsg_type != SCM_CREDENTIALS) report("no credentials");
    ucred cr{};
    std::memcpy(&cr, CMSG_DATA(c), sizeof cr);
    report("uid=" + std::to_string(cr.uid) + " gid=" + std::to_string(cr.gid) + " self=" +
           std::to_string(cr.pid == getpid()) + " getuid=" + std::to_string(getuid()) + " data=" +
           std::string(buf, static_cast<std::size_t>(n)));
  }
  close(out[1]);
  std::string got;
  char b[4096];
  ssize_t n;
  while ((n = read(out[0], b, sizeof b)) > 0) got.append(b, static_cast<std::size_t>(n));
  close(out[0]);
  int st = 0;
  waitpid(p, &st, 0);
  EXPECT_EQ(got.rfind("uid=47099 gid=47098 self=0 getuid=0 data=", 0), 0u)
      << "the entry came from a child at the crashed uid and gid, and the daemon kept its own: " << got;
  EXPECT_NE(got.find("MESSAGE=probe\n"), std::string::npos) << got;
  EXPECT_NE(got.find("CORE_TIMELINE_PROBE=1\n"), std::string::npos) << got;
}

namespace {

// A document whose I/O events carry inline bytes, as the reader writes
// them (inline_bytes hex, inline_text, inline_cut; the text line's
// ` data="..."`): a RECV and a SEND with payload, an OPEN with its path.
Json document_with_payload() {
  Json d = synthetic_document(3, 2);
  Json &ev = d[dkey::events];
  ev.push_back({{dkey::kind, "OPEN"}, {dkey::name, "OPEN"}, {dkey::inline_bytes, "2f6574632f686f73746e616d65"},
                {dkey::inline_text, "/etc/hostname"}, {dkey::inline_cut, false}});
  ev.push_back({{dkey::kind, "RECV"}, {dkey::name, "RECV"}, {dkey::inline_bytes, "41555448207365637265740a"},
                {dkey::inline_text, "AUTH secret\\n"}, {dkey::inline_cut, false}});
  ev.push_back({{dkey::kind, "SEND"}, {dkey::name, "SEND"}, {dkey::inline_bytes, "00ff"}});
  d[dkey::text] = d[dkey::text].get<std::string>() +
                  "  -1.0s tid 7 main OPEN result=3 path=\"/etc/hostname\"\n"
                  "  -0.5s tid 7 main RECV fd=3 result=12 count=100 data=\"AUTH secret\\n\"...\n"
                  "  -0.1s tid 7 main SEND fd=3 result=2 count=2 data-bytes=[00 ff]\n";
  return d;
}

}  // namespace

// Guards against: the payload bytes of READ/WRITE/RECV/SEND (TL_IO_BYTES)
// reaching the journal copy, which travels further than the timeline file
// (journal-upload, the crashed user's journal), without being asked for.
TEST(TimelineEntry, PayloadBytesAreLeftOutOfTheEntryUnlessKeptAndTheEntrySaysSo) {
  const Json d = document_with_payload();
  const std::string bytes = ctdoc::serialize(d);
  jn::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  const auto m = by_name(jn::entry_fields(in));
  EXPECT_EQ(m.at(std::string(jn::kPayload)), std::vector<std::string>{"omitted"});
  EXPECT_EQ(m.at(std::string(jn::kPayloadOmitted)), std::vector<std::string>{"2"});
  EXPECT_EQ(m.at(std::string(jn::kDocumentBytes)).at(0), std::to_string(bytes.size())) << "the file's size";
  const std::string sent = m.at(std::string(jn::kDocument)).at(0);
  EXPECT_EQ(sent.find("secret"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("41555448"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("00 ff"), std::string::npos) << sent;
  const Json j = Json::parse(sent);
  const Json &ev = j[dkey::events];
  const Json &open = ev[ev.size() - 3], &recv = ev[ev.size() - 2], &send = ev[ev.size() - 1];
  EXPECT_EQ(open[dkey::inline_text], "/etc/hostname") << "a path is not payload";
  EXPECT_TRUE(recv[dkey::inline_bytes].is_null());
  EXPECT_FALSE(recv.contains(dkey::inline_text));
  EXPECT_FALSE(recv.contains(dkey::inline_cut));
  EXPECT_TRUE(send[dkey::inline_bytes].is_null());
  const std::string text = j[dkey::text];
  EXPECT_EQ(text.rfind("[payload: the bytes of 2 I/O events", 0), 0u) << text;
  EXPECT_NE(text.find("count=100 data=(omitted)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("count=2 data=(omitted)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("path=\"/etc/hostname\""), std::string::npos) << text;
  // The tree given is not touched (the daemon's file is written from it).
  EXPECT_EQ(ctdoc::serialize(d), bytes);

  // Told to keep them: the file's bytes, and the entry says so.
  in.keep_payload = true;
  const auto k = by_name(jn::entry_fields(in));
  EXPECT_EQ(k.at(std::string(jn::kPayload)), std::vector<std::string>{"kept"});
  EXPECT_EQ(k.count(std::string(jn::kPayloadOmitted)), 0u);
  EXPECT_EQ(k.at(std::string(jn::kDocument)).at(0), bytes);

  // Without payload bytes the document is the file itself, and says none were left out.
  const Json plain = synthetic_document(3, 2);
  const std::string pb = ctdoc::serialize(plain);
  in.document = &plain;
  in.document_bytes = pb;
  in.keep_payload = false;
  const auto p = by_name(jn::entry_fields(in));
  EXPECT_EQ(p.at(std::string(jn::kPayloadOmitted)), std::vector<std::string>{"0"});
  EXPECT_EQ(p.at(std::string(jn::kDocument)).at(0), pb);
}

TEST(Options, JournalPayloadIsNoUnlessSaidYesOnTheCommandLineOrInTheConfigFile) {
  TempDir dir;
  const auto parse = [](std::vector<std::string> args) {
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    int exit_now = -1;
    return ctd::parse_options(static_cast<int>(argv.size()), argv.data(), &exit_now);
  };
  const std::string none = dir.path + "/none.conf", conf = dir.path + "/p.conf";
  std::ofstream(none) << "# nothing set\n";
  auto o = parse({"core-timelined", "--config", none});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_FALSE(o->journal_payload);
  o = parse({"core-timelined", "--config", none, "--journal-payload=yes"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->journal_payload);
  EXPECT_FALSE(parse({"core-timelined", "--config", none, "--journal-payload=maybe"}));
  std::ofstream(conf) << "journal-payload = yes\n";
  o = parse({"core-timelined", "--config", conf});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->journal_payload);
}
