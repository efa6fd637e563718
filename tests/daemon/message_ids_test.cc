// SPDX-License-Identifier: MIT
//
// message_ids_test.cc (daemon_unit_test): the journal catalog of the
// MESSAGE_IDs (message_ids.h).

#include "daemon_unit_support.h"

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
        ctd::kMsgResourceGaveUp, core_timeline::document::journal::kDocumentMessageId})
    EXPECT_NE(out.find(std::string(id) + " core-timeline: "), std::string::npos) << id << " missing in:\n" << out;
}
