// SPDX-License-Identifier: MIT
//
// core_watch_test.cc (daemon_unit_test): CoreWatch: a new core makes the
// daemon read the journal eagerly (core_watch.h).

#include "daemon_unit_support.h"

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
