// SPDX-License-Identifier: MIT
//
// files_test.cc (daemon_unit_test): owned, durable files, the cursor file and
// the state directory (files.h).

#include "daemon_unit_support.h"

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
