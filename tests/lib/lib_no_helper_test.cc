// SPDX-License-Identifier: MIT
// A program that refuses a helper thread: tl_init(no_helper_thread,
// sync_every = 4) starts no thread, and tl_mark itself brings the sidecar up
// to date every 4 events of a lane.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core_timeline/timeline.h"
#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;
std::string g_dir;


size_t user_events_in_sidecar() {
  auto ring = ct_test::own_ring();
  std::string name = g_dir + "/core-timeline." + std::to_string(getpid()) + "." +
                     std::to_string(ring->header.process_start_ticks) + ".ring";
  std::ifstream f(name, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto side = ct_test::RingView::from_bytes(bytes);
  if (!side) return SIZE_MAX;
  size_t n = 0;
  for (const auto &e : side->events()) n += e.slot.kind == fmt::kKindUser && e.slot.id == 0xF00;
  return n;
}

TEST(NoHelperThread, NoThreadIsStarted) {
  for (const auto &name : ct_test::thread_names()) EXPECT_NE(name, "tl-helper");
}

TEST(NoHelperThread, TheSidecarIsSyncedEveryNEventsOfALane) {
  // The lane's first event is its LANE_CLAIM (seq 1): seqs 2 and 3 are ours.
  tl_mark(0xF00, 1);
  tl_mark(0xF00, 2);
  EXPECT_EQ(user_events_in_sidecar(), 0u) << "synced before the 4th event";
  tl_mark(0xF00, 3);  // seq 4: sync
  EXPECT_EQ(user_events_in_sidecar(), 3u);
  EXPECT_EQ(tl_flush_async(), 0);  // without a helper: syncs now
  tl_mark(0xF00, 4);
  EXPECT_EQ(user_events_in_sidecar(), 3u);
  EXPECT_EQ(tl_flush_async(), 0);
  EXPECT_EQ(user_events_in_sidecar(), 4u);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  char tmpl[] = "/tmp/tl-nohelper-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  g_dir = tmpl;
  struct tl_options o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.no_helper_thread = 1;
  o.sync_every = 4;
  o.sidecar_dir = tmpl;
  if (tl_init(&o) != 0) return 2;
  int rc = RUN_ALL_TESTS();
  std::system(("rm -rf '" + g_dir + "'").c_str());
  return rc;
}
