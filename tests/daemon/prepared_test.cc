// SPDX-License-Identifier: MIT
//
// prepared_test.cc (daemon_unit_test): cores prepared before their entry
// (prepared.h).

#include "daemon_unit_support.h"

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
