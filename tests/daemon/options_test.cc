// SPDX-License-Identifier: MIT
//
// options_test.cc (daemon_unit_test): options and the configuration file
// (options.h).

#include "daemon_unit_support.h"

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
