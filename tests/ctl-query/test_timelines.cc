// SPDX-License-Identifier: MIT
#include "test_timelines.h"

#include "daemon_harness.h"

#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ct::test::ctlq {

namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

std::string field(const std::map<std::string, std::string> &f, const char *name) {
  auto it = f.find(name);
  return it == f.end() ? std::string() : it->second;
}

struct EntryTimes {
  std::string cursor;
  std::uint64_t realtime_usec = 0;
};

// The cursor and __REALTIME_TIMESTAMP of the crash's journal entry (the
// harness returns its fields, not these two): the entry of that pid with
// that COREDUMP_TIMESTAMP.
EntryTimes entry_times(const std::map<std::string, std::string> &fields) {
  const std::string pid = field(fields, "COREDUMP_PID"), ts = field(fields, "COREDUMP_TIMESTAMP");
  if (pid.empty() || ts.empty()) fail("journal fields lack COREDUMP_PID or COREDUMP_TIMESTAMP");
  sd_journal *j = nullptr;
  int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
  if (r < 0) fail(std::string("sd_journal_open: ") + strerror(-r));
  EntryTimes out;
  const std::string m1 = std::string("MESSAGE_ID=") + ct::test::kCoredumpMessageId, m2 = "COREDUMP_PID=" + pid,
                    m3 = "COREDUMP_TIMESTAMP=" + ts;
  if (sd_journal_add_match(j, m1.data(), m1.size()) < 0 || sd_journal_add_match(j, m2.data(), m2.size()) < 0 ||
      sd_journal_add_match(j, m3.data(), m3.size()) < 0 || sd_journal_seek_tail(j) < 0 ||
      sd_journal_previous(j) <= 0) {
    sd_journal_close(j);
    fail("no journal entry for COREDUMP_PID=" + pid + " COREDUMP_TIMESTAMP=" + ts);
  }
  char *cursor = nullptr;
  if (sd_journal_get_cursor(j, &cursor) >= 0 && cursor) {
    out.cursor = cursor;
    free(cursor);
  }
  if (sd_journal_get_realtime_usec(j, &out.realtime_usec) < 0) out.realtime_usec = 0;
  sd_journal_close(j);
  if (out.cursor.empty() || out.realtime_usec == 0) fail("cannot read the cursor of pid " + pid + "'s entry");
  return out;
}

std::string strip_compression(std::string name) {
  for (const char *s : {".zst", ".lz4", ".xz"}) {
    const std::size_t n = strlen(s);
    if (name.size() > n && name.compare(name.size() - n, n, s) == 0) return name.substr(0, name.size() - n);
  }
  return name;
}

}  // namespace

TestTimeline build_test_timeline(const ct::test::CrashRun &crash, const std::string &reader,
                                 const std::string &tlmap) {
  const auto started = std::chrono::steady_clock::now();
  const ct::test::Ran js = ct::test::run({reader, "--json", "--tlmap", tlmap, crash.core_path});
  const ct::test::Ran text = ct::test::run({reader, "--tlmap", tlmap, crash.core_path});
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  json doc = json::parse(js.out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    fail("core-timeline-read --json " + crash.core_path + " printed no JSON document (exit " +
         std::to_string(js.exit_code()) + "): " + js.err);
  if (text.exit_code() != js.exit_code())
    fail("core-timeline-read exited " + std::to_string(text.exit_code()) + " for text, " +
         std::to_string(js.exit_code()) + " for --json");

  const auto &f = crash.journal_fields;
  const EntryTimes times = entry_times(f);
  json fields = json::object();
  for (const auto &[k, v] : f)
    if (k.rfind("COREDUMP_", 0) == 0 || k == "_BOOT_ID") fields[k] = v;
  const std::string core_file = field(f, "COREDUMP_FILENAME");
  json coredump;
  coredump["journal_cursor"] = times.cursor;
  coredump["boot_id"] = field(f, "_BOOT_ID");
  coredump["realtime_usec"] = times.realtime_usec;
  coredump["core_file"] = core_file.empty() ? json(nullptr) : json(core_file);
  coredump["storage"] = core_file.empty() ? "journal" : "external";
  coredump["fields"] = std::move(fields);
  doc["coredump"] = std::move(coredump);
  doc["daemon"] = {{"version", "test-helper (tests/ctl-query)"}, {"decoded_usec", ct::test::now_usec()}, {"duration_ms", ms}};
  doc["text"] = text.out;
  // Journal fields are bytes (COREDUMP_PROC_AUXV is binary): as written to
  // the file, invalid UTF-8 becomes U+FFFD; keep the document in memory
  // equal to the file.
  doc = json::parse(doc.dump(-1, ' ', false, json::error_handler_t::replace));

  TestTimeline t;
  std::string base;
  if (!core_file.empty()) {
    base = strip_compression(std::filesystem::path(core_file).filename().string());
  } else {
    // Storage=journal: the name systemd-coredump would have given the file.
    base = "core." + field(f, "COREDUMP_COMM") + "." + field(f, "COREDUMP_UID") + "." + field(f, "_BOOT_ID") + "." +
           field(f, "COREDUMP_PID") + "." + field(f, "COREDUMP_TIMESTAMP");
  }
  t.file_name = base + ".timeline.json";
  t.document = std::move(doc);
  t.crash = crash;
  return t;
}

std::string write_test_timeline(const std::string &dir, const TestTimeline &t, mode_t mode) {
  const std::string path = dir + "/" + t.file_name;
  {
    std::ofstream o(path, std::ios::binary | std::ios::trunc);
    o << t.document.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    if (!o) fail("cannot write " + path);
  }
  if (chmod(path.c_str(), mode) < 0) fail("chmod " + path + ": " + strerror(errno));
  return path;
}

}  // namespace ct::test::ctlq
