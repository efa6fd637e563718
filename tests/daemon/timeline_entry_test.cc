// SPDX-License-Identifier: MIT
//
// timeline_entry_test.cc (daemon_unit_test): the timeline entry in the journal
// (timeline_entry.h, document::journal).

#include "daemon_unit_support.h"

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

// The document goes to an entry of its own, the timeline entry names it,
// and nothing else moves (document_entry.h).
TEST(TimelineEntry, SplitPutsTheDocumentInItsOwnEntryNamedByTheTimelineEntry) {
  const Json d = synthetic_document(30, 5);
  const std::string bytes = ctdoc::serialize(d);
  const std::map<std::string, std::string> cd{{"COREDUMP_PID", "4242"}, {"COREDUMP_UID", "1000"},
                                              {"COREDUMP_TIMESTAMP", "123"}, {"COREDUMP_EXE", "/bin/x"}};
  jn::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  in.coredump_fields = &cd;
  in.coredump_boot_id = kBoot;
  jn::Fields whole = jn::entry_fields(in);
  whole.insert(whole.begin(), {"MESSAGE", "pid 4242: timeline written"});
  const std::string id = "0123456789abcdef0123456789abcdef";
  const auto pair = jn::split_document(whole, id);
  ASSERT_TRUE(pair.document.has_value());
  const auto t = by_name(pair.timeline), doc = by_name(*pair.document);
  EXPECT_EQ(t.count(std::string(jn::kDocument)), 0u);
  EXPECT_EQ(t.at(std::string(jn::kDocumentId)), std::vector<std::string>{id});
  EXPECT_EQ(pair.timeline.size(), whole.size()) << "one field out (the document), one in (its id)";
  for (const auto &[k, v] : whole) {
    if (k == jn::kDocument) continue;
    EXPECT_EQ(t.count(k), 1u) << k;
  }
  EXPECT_EQ(pair.document->front(), (std::pair<std::string, std::string>{"MESSAGE_ID", std::string(jn::kDocumentMessageId)}));
  EXPECT_EQ(doc.at(std::string(jn::kDocumentId)), std::vector<std::string>{id});
  EXPECT_EQ(doc.at(std::string(jn::kDocument)), std::vector<std::string>{bytes});
  EXPECT_EQ(doc.at("COREDUMP_UID"), std::vector<std::string>{"1000"}) << "sender_trust() needs it";
  EXPECT_EQ(doc.at("COREDUMP_PID"), std::vector<std::string>{"4242"});
  EXPECT_EQ(doc.at(std::string(jn::kBootId)), std::vector<std::string>{kBoot});
  EXPECT_EQ(doc.count("COREDUMP_EXE"), 0u);
  // No field of the timeline entry is long enough for journald to
  // compress it (Compress= threshold: 512 bytes).
  for (const auto &[k, v] : pair.timeline) EXPECT_LT(k.size() + 1 + v.size(), 512u) << k;
  // Without a document, or with an id of another form: one entry, as it was.
  in.document_max = 0;
  const auto none = jn::split_document(jn::entry_fields(in), id);
  EXPECT_FALSE(none.document.has_value());
  EXPECT_EQ(by_name(none.timeline).count(std::string(jn::kDocumentId)), 0u);
  const auto bad = jn::split_document(whole, "not-an-id");
  EXPECT_FALSE(bad.document.has_value());
  EXPECT_EQ(bad.timeline, whole);
  EXPECT_TRUE(jn::is_document_id(id));
  EXPECT_FALSE(jn::is_document_id("0123456789ABCDEF0123456789abcdef"));
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
    // One datagram and its sender's credentials.
    auto receive = [&](ucred &cr) {
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
      std::memcpy(&cr, CMSG_DATA(c), sizeof cr);
      return std::string(buf, static_cast<std::size_t>(n));
    };
    // The two entries of a crash (send_entries()): both from one child, in order.
    const ctd::log::Fields doc{{"MESSAGE", "document"}}, timeline{{"MESSAGE", "timeline"}};
    if (auto r2 = ctd::send_entries({&doc, &timeline}, ctd::SendAs{47099, 47098}); !r2)
      report("send_entries: " + r2.error().message);
    ucred c1{}, c2{};
    const std::string d1 = receive(c1), d2 = receive(c2);
    const std::string pair = std::string(" pair=") + (c1.pid == c2.pid && c1.pid != getpid() ? "one-child" : "two") +
                             (c1.uid == 47099 && c2.uid == 47099 ? "" : "-wrong-uid") +
                             (d1.find("MESSAGE=document\n") != std::string::npos &&
                                      d2.find("MESSAGE=timeline\n") != std::string::npos
                                  ? "-in-order"
                                  : "-out-of-order");
    auto r = ctd::send_entry(f, ctd::SendAs{47099, 47098});
    if (!r) report("send_entry: " + r.error().message);
    ucred cr{};
    const std::string data = receive(cr);
    report("uid=" + std::to_string(cr.uid) + " gid=" + std::to_string(cr.gid) + " self=" +
           std::to_string(cr.pid == getpid()) + " getuid=" + std::to_string(getuid()) + pair + " data=" + data);
  }
  close(out[1]);
  std::string got;
  char b[4096];
  ssize_t n;
  while ((n = read(out[0], b, sizeof b)) > 0) got.append(b, static_cast<std::size_t>(n));
  close(out[0]);
  int st = 0;
  waitpid(p, &st, 0);
  EXPECT_EQ(got.rfind("uid=47099 gid=47098 self=0 getuid=0 pair=one-child-in-order data=", 0), 0u)
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
