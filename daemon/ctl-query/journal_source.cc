/* SPDX-License-Identifier: MIT */
#include "journal_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-messages.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/names.h"
#include "core_timeline/reader/number.h"
#include "sigbus.h"

namespace core_timeline::ctl_query {

namespace jf = core_timeline::document::journal;

namespace {

bool is_id128(std::string_view s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_journal_file_name(std::string_view n) { return n.ends_with(".journal") || n.ends_with(".journal~"); }

/* The journal files directly in `dir`, and its id128 subdirectories' when
 * `subdirs`. */
bool list_journal_files(const std::string &dir, bool subdirs, std::vector<std::string> *out) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) return false;
  bool any = false;
  std::vector<std::string> ids;
  while (struct dirent *de = ::readdir(d)) {
    std::string_view n = de->d_name;
    if (is_journal_file_name(n) && de->d_type != DT_DIR) {
      out->push_back(dir + "/" + std::string(n));
      any = true;
    } else if (subdirs && is_id128(n) && (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)) {
      ids.emplace_back(n);
    }
  }
  ::closedir(d);
  for (const auto &id : ids) any = list_journal_files(dir + "/" + id, false, out) || any;
  return any;
}

/* What sd-journal decompresses of a field while scanning: enough for every
 * summary field of an honest entry, little of the document. */
constexpr std::size_t kScanThreshold = 512;

Error journal_error(int r, const std::string &what) { return reader::system_error(-r, what); }

/* A journal file was truncated under the read (common/sigbus.h): what was
 * read past its new end was zeros, so nothing of this read is kept. */
Error cut_short(const std::string &during) {
  return reader::system_error(EIO, "a journal file was truncated while " + during +
                                       " (journald truncates a file when it archives it at rotation; what lay past "
                                       "its new end read as zeros): run the query again");
}

/* How many timeline entries scan() reads between two drop_journal_pages(). */
constexpr std::size_t kEntriesPerPageDrop = 4096;

/* Drops this process's page-table entries of the journal files sd-journal
 * has mapped: its read-only shared mappings (r--s in /proc/self/maps) of
 * files named *.journal or *.journal~ get madvise(2) MADV_DONTNEED, which
 * for a shared file mapping only unmaps the pages from this process (a
 * later read maps them again from the page cache; the mapping and every
 * pointer into it stay valid).  sd-journal keeps its mmap windows of the
 * files it reads (up to 64 of 8 MiB) and scanning 100,000 entries touches
 * most pages of the journal: without this they all count in the
 * process's resident size.  Nothing happens when /proc is not mounted. */
void drop_journal_pages() {
  FILE *maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return;
  char *line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&line, &cap, maps)) > 0) {
    unsigned long from = 0, to = 0;
    char perms[8] = {};
    int path_at = 0;
    /* "FROM-TO PERMS OFFSET DEV INODE   PATH" */
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &from, &to, perms, &path_at) < 3 || path_at == 0) continue;
    if (std::string_view(perms) != "r--s") continue;
    std::string_view path(line + path_at, static_cast<std::size_t>(n) - static_cast<std::size_t>(path_at));
    if (path.ends_with('\n')) path.remove_suffix(1);
    if (path.ends_with(" (deleted)")) path.remove_suffix(std::string_view(" (deleted)").size());
    if (to > from && is_journal_file_name(path))
      ::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
  }
  std::free(line);
  std::fclose(maps);
}

std::string_view field_value(const void *data, size_t len, std::string_view name) {
  std::string_view d(static_cast<const char *>(data), len);
  if (d.size() > name.size() && d.compare(0, name.size(), name) == 0 && d[name.size()] == '=')
    return d.substr(name.size() + 1);
  return {};
}

}  // namespace

std::string local_machine_id() {
  std::string id;
  if (FILE *f = std::fopen("/etc/machine-id", "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f)) id.assign(buf, std::strcspn(buf, "\n"));
    std::fclose(f);
  }
  return is_id128(id) ? id : std::string();
}

std::vector<std::string> unreadable_journal_files(const JournalSpec &spec) {
  std::vector<std::string> files;
  if (spec.kind == JournalSpec::Kind::kFiles) {
    files = spec.files;
  } else if (spec.kind == JournalSpec::Kind::kLocal) {
    const std::string id = local_machine_id();
    for (const char *root : {"/var/log/journal", "/run/log/journal"}) {
      const std::string dir = std::string(root) + "/" + id;
      if (!id.empty()) list_journal_files(dir, false, &files);
      else list_journal_files(root, true, &files);
    }
  }
  std::vector<std::string> unreadable;
  for (const auto &f : files)
    if (::access(f.c_str(), R_OK) < 0 && (errno == EACCES || errno == EPERM)) unreadable.push_back(f);
  std::sort(unreadable.begin(), unreadable.end());
  return unreadable;
}

bool journal_files_in(const std::string &dir, std::vector<std::string> *files) {
  std::vector<std::string> found;
  if (!list_journal_files(dir, true, &found)) return false;
  std::sort(found.begin(), found.end());
  files->insert(files->end(), found.begin(), found.end());
  return true;
}


const std::vector<std::string> kSummaryFields = {
    "COREDUMP_PID", "COREDUMP_UID", "COREDUMP_GID", "COREDUMP_SIGNAL", "COREDUMP_SIGNAL_NAME", "COREDUMP_EXE",
    "COREDUMP_COMM", "COREDUMP_TIMESTAMP", "COREDUMP_FILENAME", std::string(jf::kBootId), std::string(jf::kStatus),
    std::string(jf::kSignal), std::string(jf::kEvents), std::string(jf::kLastEvent), std::string(jf::kOpenSpans),
    std::string(jf::kEventNamesComplete), std::string(jf::kSchemaVersion), std::string(jf::kTimelinePath),
    std::string(jf::kDocumentCut), std::string(jf::kDocumentBytes), std::string(jf::kNamespacePid),
    /* The group signature (group_keys.h), for ctl-query group. */
    std::string(jf::kGroup), std::string(jf::kGroupStack), std::string(jf::kGroupHistory),
    std::string(jf::kGroupWords), std::string(jf::kGroupStackWords), std::string(jf::kGroupBasis),
    std::string(jf::kDocumentId),
    /* The notice core-timelined logged with this MESSAGE_ID before the
     * entry carried the document: its pid, executable and uid. */
    "CORE_TIMELINE_PID", "CORE_TIMELINE_EXE", "CORE_TIMELINE_UID", "CORE_TIMELINE_REASON",
    /* journald's, trusted: the sender and the host. */
    "_UID", "_TRANSPORT", "_COMM", "_HOSTNAME", "_BOOT_ID", "_SYSTEMD_CGROUP", "_MACHINE_ID", "_PID"};

namespace {

/* A field as journal_entry.h's Sender takes it: absent when empty. */
std::optional<std::string_view> present(const std::string &v) {
  if (v.empty()) return std::nullopt;
  return std::string_view(v);
}

/* kSummaryFields by name: their index.  The scan looks up the name of
 * every field of every entry (some 50 of each of 100,000 entries in
 * bench_query), so this is an open-addressing table hashed on the name's
 * length and last bytes (the names share their prefixes), not a
 * std::unordered_map. */
class SummaryIndex {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  SummaryIndex() {
    slots_.fill(kNone);
    for (std::size_t i = 0; i < kSummaryFields.size(); ++i) {
      std::size_t h = hash(kSummaryFields[i]);
      while (slots_[h] != kNone) h = (h + 1) % kSlots;
      slots_[h] = i;
    }
  }

  /* The index of `name` in kSummaryFields, or kNone. */
  std::size_t find(std::string_view name) const {
    for (std::size_t h = hash(name);; h = (h + 1) % kSlots) {
      const std::size_t i = slots_[h];
      if (i == kNone || kSummaryFields[i] == name) return i;
    }
  }

 private:
  static constexpr std::size_t kSlots = 256;  // a power of two, over 4 x the fields
  static std::size_t hash(std::string_view n) {
    std::uint64_t tail = 0;
    const std::size_t k = std::min<std::size_t>(n.size(), 8);
    std::memcpy(&tail, n.data() + n.size() - k, k);
    return static_cast<std::size_t>(((tail ^ n.size()) * 0x9E3779B97F4A7C15ULL) >> 56) % kSlots;
  }
  std::array<std::size_t, kSlots> slots_;
};

const SummaryIndex &summary_index() {
  static const SummaryIndex index;
  return index;
}

/* Reads the summary fields of the entry sd-journal is at into an entry
 * (scan()), in one sd_journal_enumerate_data(3) pass at kScanThreshold. */
class SummaryReader {
 public:
  /* *e becomes the entry at j: its kSummaryFields (a field twice: its
   * first value) and has_document; the rest of *e empty. */
  void read(sd_journal *j, JournalEntry *e) {
    e->values.resize(kSummaryFields.size());
    for (auto &v : e->values) v.clear();
    e->cursor.clear();
    e->realtime_usec = 0;
    e->has_document = e->user_vouched = e->unverified = false;
    e->document_id.clear();
    e->sender_pid.clear();
    e->sender_boot_id.clear();
    e->sender_uid.clear();
    seen_.assign(kSummaryFields.size(), 0);
    const std::string_view doc_prefix = jf::kDocument;
    const SummaryIndex &index = summary_index();
    const void *data;
    size_t len;
    SD_JOURNAL_FOREACH_DATA(j, data, len) {
      std::string_view d(static_cast<const char *>(data), len);
      const auto eq = d.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view name = d.substr(0, eq);
      if (name == doc_prefix) {
        e->has_document = true;
        continue;
      }
      const std::size_t w = index.find(name);
      if (w == SummaryIndex::kNone || seen_[w]) continue;  // a field twice: its first value
      seen_[w] = 1;
      e->values[w].assign(d.substr(eq + 1));
      if (len >= kScanThreshold) cut_.push_back(w);
    }
    if (!cut_.empty()) read_whole(j, e);
  }

 private:
  /* The values the scan's threshold may have cut: again, whole (up to
   * kSummaryValueMax). */
  void read_whole(sd_journal *j, JournalEntry *e) {
    sd_journal_set_data_threshold(j, kSummaryValueMax);
    for (const std::size_t i : cut_) {
      const std::string &name = kSummaryFields[i];
      const void *whole;
      size_t whole_len;
      if (sd_journal_get_data(j, name.c_str(), &whole, &whole_len) >= 0)
        e->values[i] = std::string(field_value(whole, whole_len, name).substr(0, kSummaryValueMax));
    }
    sd_journal_set_data_threshold(j, kScanThreshold);
    cut_.clear();
  }

  std::vector<unsigned char> seen_;  // by index in kSummaryFields
  std::vector<std::size_t> cut_;
};

}  // namespace

std::size_t summary_field(std::string_view name) {
  const std::size_t i = summary_index().find(name);
  return i == SummaryIndex::kNone ? kSummaryFields.size() : i;
}

const std::string &JournalEntry::value(std::size_t field) const {
  static const std::string empty;
  return field >= values.size() ? empty : values[field];
}

const std::string &JournalEntry::get(std::string_view name) const { return value(summary_field(name)); }

void JournalEntry::keep_only(std::initializer_list<std::string_view> names) {
  std::vector<std::string> kept(values.size());
  for (auto n : names)
    if (const std::size_t i = summary_index().find(n); i < values.size()) kept[i] = std::move(values[i]);
  values = std::move(kept);
}

bool corroborated(const JournalEntry &e, const std::string &machine_id) {
  if (machine_id.empty() || e.get("_MACHINE_ID") != machine_id) return false;
  const std::string &path = e.get(jf::kTimelinePath);
  const auto slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash == std::string::npos) return false;
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash), base = path.substr(slash + 1);
  const auto name = core_timeline::document::parse_timeline_name(base);
  if (!name || std::to_string(name->uid) != e.get("COREDUMP_UID") || std::to_string(name->pid) != e.get("COREDUMP_PID") ||
      std::to_string(name->usec) != e.get("COREDUMP_TIMESTAMP") || name->boot_id != e.get(jf::kBootId))
    return false;
  const auto bytes = reader::parse_unsigned(e.get(jf::kDocumentBytes));
  if (!bytes) return false;
  const int d = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return false;
  struct stat ds {}, fs {};
  const bool ok = ::fstat(d, &ds) == 0 && ds.st_uid == 0 && (ds.st_mode & 022) == 0 &&
                  ::fstatat(d, base.c_str(), &fs, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == 0 &&
                  fs.st_nlink == 1 && static_cast<std::uint64_t>(fs.st_size) == *bytes;
  ::close(d);
  return ok;
}

Result<std::unique_ptr<Journal>> Journal::open(const JournalSpec &spec) {
  const sigbus::Scope truncated;
  sd_journal *j = nullptr;
  int r = 0;
  std::string what;
  switch (spec.kind) {
    case JournalSpec::Kind::kLocal:
      r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
      what = "cannot open the local journal";
      break;
    case JournalSpec::Kind::kFiles: {
      std::vector<const char *> paths;
      for (const auto &f : spec.files) paths.push_back(f.c_str());
      paths.push_back(nullptr);
      r = sd_journal_open_files(&j, paths.data(), 0);
      what = "cannot open the journal files";
      break;
    }
    case JournalSpec::Kind::kMachine: {
      /* As journalctl -M: systemd-machined opens the machine's root
       * directory (OpenMachineRootDirectory, org.freedesktop.machine1(5)),
       * whose journal is read as the OS tree's (SD_JOURNAL_OS_ROOT). */
      what = "cannot open the journal of machine \"" + spec.machine + "\"";
      sd_bus *bus = nullptr;
      sd_bus_error error = SD_BUS_ERROR_NULL;
      sd_bus_message *reply = nullptr;
      r = sd_bus_open_system(&bus);
      if (r < 0) {
        what += " (the system bus, for systemd-machined)";
      } else {
        r = sd_bus_call_method(bus, "org.freedesktop.machine1", "/org/freedesktop/machine1",
                               "org.freedesktop.machine1.Manager", "OpenMachineRootDirectory", &error, &reply, "s",
                               spec.machine.c_str());
        if (r < 0 && error.message) what += std::string(" (systemd-machined: ") + error.message + ")";
        int fd = -1;
        if (r >= 0) r = sd_bus_message_read(reply, "h", &fd);
        if (r >= 0) {
          const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
          r = own < 0 ? -errno : sd_journal_open_directory_fd(&j, own, SD_JOURNAL_OS_ROOT);
          if (r < 0 && own >= 0) ::close(own);
        }
      }
      sd_bus_error_free(&error);
      sd_bus_message_unref(reply);
      sd_bus_flush_close_unref(bus);
      break;
    }
  }
  if (r < 0) return journal_error(r, what);
  auto out = std::unique_ptr<Journal>(new Journal(j));
  if (spec.kind == JournalSpec::Kind::kFiles) out->files_ = spec.files;
  if (truncated.moved()) return cut_short("it was opened");
  return out;
}

Journal::~Journal() { sd_journal_close(j_); }

Result<std::vector<std::string>> Journal::boots() {
  const sigbus::Scope truncated;
  std::vector<std::string> ids;
  int r = sd_journal_query_unique(j_, "_BOOT_ID");
  if (r < 0) return journal_error(r, "reading the journal's boot ids");
  const void *data;
  size_t len;
  SD_JOURNAL_FOREACH_UNIQUE(j_, data, len) {
    auto v = field_value(data, len, "_BOOT_ID");
    if (is_id128(v)) ids.emplace_back(v);
  }
  std::vector<std::pair<std::uint64_t, std::string>> dated;
  for (const auto &id : ids) {
    sd_journal_flush_matches(j_);
    const std::string m = "_BOOT_ID=" + id;
    if ((r = sd_journal_add_match(j_, m.data(), m.size())) < 0) return journal_error(r, "matching a boot id");
    std::uint64_t t = 0;
    if (sd_journal_seek_head(j_) >= 0 && sd_journal_next(j_) > 0) sd_journal_get_realtime_usec(j_, &t);
    dated.emplace_back(t, id);
  }
  sd_journal_flush_matches(j_);
  if (truncated.moved()) return cut_short("its boot ids were read");
  std::sort(dated.begin(), dated.end());
  std::vector<std::string> out;
  for (auto &[t, id] : dated) out.push_back(std::move(id));
  return out;
}

namespace {

/* Of an entry SummaryReader read: who vouches for it (sender_trust()),
 * and unless nobody does, its user_vouched, unverified, document_id and
 * sender. */
jf::Trust vouch_for(JournalEntry *e, const std::string &machine_id) {
  /* The fields' indices, found once (this runs for every entry). */
  static const std::size_t uid = summary_field("_UID"), transport = summary_field("_TRANSPORT"),
                           coredump_uid = summary_field("COREDUMP_UID"), cgroup = summary_field("_SYSTEMD_CGROUP"),
                           document_id = summary_field(jf::kDocumentId), pid = summary_field("_PID"),
                           boot_id = summary_field("_BOOT_ID");
  const jf::Trust trust = jf::sender_trust({present(e->value(uid)), present(e->value(transport)),
                                            present(e->value(coredump_uid)), present(e->value(cgroup))});
  if (trust == jf::Trust::kNone) return trust;
  e->user_vouched = trust == jf::Trust::kUser;
  if (const std::string &id = e->value(document_id); jf::is_document_id(id)) {
    e->document_id = id;
    e->sender_pid = e->value(pid);
    e->sender_boot_id = e->value(boot_id);
    e->sender_uid = e->value(uid);
    e->has_document = true;
  }
  e->unverified = e->user_vouched && !corroborated(*e, machine_id);
  return trust;
}

}  // namespace

Result<std::size_t> Journal::scan(const std::vector<JournalTerm> &terms,
                                  const std::function<void(JournalEntry &&)> &fn) {
  const sigbus::Scope truncated;
  sd_journal_flush_matches(j_);
  const std::string mid = "MESSAGE_ID=" + std::string(jf::kTimelineMessageId);
  const std::vector<JournalTerm> all = terms.empty() ? std::vector<JournalTerm>{JournalTerm{}} : terms;
  int r = 0;
  for (std::size_t t = 0; t < all.size(); ++t) {
    if (t > 0 && (r = sd_journal_add_disjunction(j_)) < 0) return journal_error(r, "matching");
    if ((r = sd_journal_add_match(j_, mid.data(), mid.size())) < 0) return journal_error(r, "matching");
    for (const auto &[field, values] : all[t]) {
      for (const auto &v : values) {
        const std::string m = field + "=" + v;
        if ((r = sd_journal_add_match(j_, m.data(), m.size())) < 0)
          return journal_error(r, "matching " + field);
      }
      /* Next field: a new conjunction level (values of one field are
       * alternatives, different fields must all hold). */
    }
  }
  /* The document is the one big field of an entry: the scan decompresses
   * at most kScanThreshold bytes of any field. */
  sd_journal_set_data_threshold(j_, kScanThreshold);
  SummaryReader summary;
  std::size_t untrusted = 0, read = 0;
  const std::string machine_id = local_machine_id();
  if ((r = sd_journal_seek_head(j_)) < 0) return journal_error(r, "seeking the journal");
  /* One entry read into again and again: its strings keep their capacity
   * (fn may move them out). */
  JournalEntry e;
  for (;;) {
    r = sd_journal_next(j_);
    if (r < 0 && truncated.moved()) return cut_short("timeline entries were read");
    if (r < 0) return journal_error(r, "reading the journal");
    if (r == 0) break;
    if (++read % kEntriesPerPageDrop == 0) drop_journal_pages();
    summary.read(j_, &e);
    if (vouch_for(&e, machine_id) == jf::Trust::kNone) {
      ++untrusted;
      continue;
    }
    char *cursor = nullptr;
    if (sd_journal_get_cursor(j_, &cursor) >= 0 && cursor) {
      e.cursor = cursor;
      std::free(cursor);
    }
    sd_journal_get_realtime_usec(j_, &e.realtime_usec);
    if (truncated.moved()) return cut_short("timeline entries were read");  // e may be zeros
    fn(std::move(e));
  }
  drop_journal_pages();
  sd_journal_flush_matches(j_);
  /* An error or the end, read from zeros, says nothing either. */
  if (truncated.moved()) return cut_short("timeline entries were read");
  return untrusted;
}

Result<std::vector<Journal::Withheld>> Journal::withheld(std::uint64_t uid, const JournalTerm &term) {
  const sigbus::Scope truncated;
  sd_journal_flush_matches(j_);
  const std::string mid = "MESSAGE_ID=" SD_MESSAGE_COREDUMP_STR, who = "COREDUMP_UID=" + std::to_string(uid);
  int r = sd_journal_add_match(j_, mid.data(), mid.size());
  if (r >= 0) r = sd_journal_add_match(j_, who.data(), who.size());
  /* The index finds those not dumpable for their user: 0 or 2 (prctl(2)). */
  for (const char *d : {"COREDUMP_DUMPABLE=0", "COREDUMP_DUMPABLE=2"})
    if (r >= 0) r = sd_journal_add_match(j_, d, std::strlen(d));
  for (const auto &[field, values] : term)
    for (const auto &v : values) {
      const std::string m = field + "=" + v;
      if (r >= 0) r = sd_journal_add_match(j_, m.data(), m.size());
    }
  if (r < 0) return journal_error(r, "matching systemd-coredump's entries");
  sd_journal_set_data_threshold(j_, kSummaryValueMax);
  std::vector<Withheld> out;
  if ((r = sd_journal_seek_head(j_)) < 0) return journal_error(r, "seeking the journal");
  const auto get = [this](const char *name) {
    const void *data;
    size_t len;
    if (sd_journal_get_data(j_, name, &data, &len) < 0) return std::string();
    return std::string(field_value(data, len, name));
  };
  while ((r = sd_journal_next(j_)) > 0) {
    /* journald's _UID: the user's own or root's (systemd-coredump logs as
     * the crashed user, coredump.c change_uid_gid()). */
    const std::string sender = get("_UID"), dumpable = get("COREDUMP_DUMPABLE");
    if ((sender != "0" && sender != std::to_string(uid)) || get("COREDUMP_UID") != std::to_string(uid)) continue;
    if (dumpable.empty() || dumpable == "1") continue;
    Withheld w{get("COREDUMP_PID"), get("COREDUMP_EXE"), get("COREDUMP_COMM"), dumpable, 0};
    if (auto t = reader::parse_unsigned(get("COREDUMP_TIMESTAMP"))) w.time_usec = *t;
    else sd_journal_get_realtime_usec(j_, &w.time_usec);
    out.push_back(std::move(w));
  }
  sd_journal_flush_matches(j_);
  if (truncated.moved()) return cut_short("systemd-coredump's entries were read");
  if (r < 0) return journal_error(r, "reading the journal");
  return out;
}

Result<std::optional<std::string>> Journal::document(const JournalEntry &e, std::uint64_t max_bytes) {
  const sigbus::Scope truncated;
  auto out = e.document_id.empty() ? document_once(e.cursor, max_bytes) : document_entry(e, max_bytes);
  /* The copy was made from the mapping too: checked after it. */
  if (truncated.moved()) return cut_short("the document of entry " + e.cursor + " was read");
  return out;
}

namespace {

/* Moves `j` to the entry `cursor` names: sd_journal_seek_cursor(3), then
 * the entry after it, which must be that very entry
 * (sd_journal_test_cursor(3)).  1: there; 0: not found; < 0: an error. */
int seek_entry(sd_journal *j, const std::string &cursor) {
  int r = sd_journal_seek_cursor(j, cursor.c_str());
  if (r >= 0) r = sd_journal_next(j);
  if (r > 0) r = sd_journal_test_cursor(j, cursor.c_str());
  return r;
}

/* The CORE_TIMELINE_DOCUMENT of the entry `j` is at (Journal::document()). */
Result<std::optional<std::string>> document_here(sd_journal *j, const std::string &cursor, std::uint64_t max_bytes) {
  sd_journal_set_data_threshold(j, 0);
  const void *data;
  size_t len;
  const std::string name(jf::kDocument);
  const int r = sd_journal_get_data(j, name.c_str(), &data, &len);
  sd_journal_set_data_threshold(j, kSummaryValueMax);
  if (r == -ENOENT) return std::optional<std::string>();
  if (r < 0) return journal_error(r, "journal entry " + cursor + ": reading " + name);
  std::string_view v = field_value(data, len, name);
  if (v.size() > max_bytes)
    return Error{Errc::kInvalidArgument, "journal entry " + cursor + ": its document is too large (" +
                                             std::to_string(v.size()) + " bytes, the limit is " +
                                             std::to_string(max_bytes) + "; see --max-size)"};
  return std::optional<std::string>(std::string(v));
}

}  // namespace

Result<std::optional<std::string>> Journal::document_entry(const JournalEntry &e, std::uint64_t max_bytes) {
  sd_journal_flush_matches(j_);
  int r = 0;
  for (const std::string &m : {"MESSAGE_ID=" + std::string(jf::kDocumentMessageId),
                               std::string(jf::kDocumentId) + "=" + e.document_id, "_PID=" + e.sender_pid,
                               "_BOOT_ID=" + e.sender_boot_id})
    if (r >= 0) r = sd_journal_add_match(j_, m.data(), m.size());
  if (r >= 0) r = sd_journal_seek_head(j_);
  if (r < 0) return journal_error(r, "journal entry " + e.cursor + ": looking for its document entry");
  /* One pass over each entry found: sd-journal decompresses each
   * compressed field it visits, so the document is read once. */
  sd_journal_set_data_threshold(j_, 0);
  const std::string_view doc_name = jf::kDocument;
  std::optional<std::string> found;
  std::size_t too_large = 0;
  while (!found && (r = sd_journal_next(j_)) > 0) {
    std::map<std::string_view, std::string> who{
        {"_UID", {}}, {"_TRANSPORT", {}}, {"COREDUMP_UID", {}}, {"_SYSTEMD_CGROUP", {}}};
    std::optional<std::string> doc;
    std::size_t size = 0;
    const void *data;
    size_t len;
    SD_JOURNAL_FOREACH_DATA(j_, data, len) {
      const std::string_view d(static_cast<const char *>(data), len);
      const auto eq = d.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view name = d.substr(0, eq);
      if (name == doc_name && !doc && !size) {
        size = len - eq - 1;
        if (size <= max_bytes) doc.emplace(d.substr(eq + 1));
      } else if (const auto w = who.find(name); w != who.end() && w->second.empty()) {
        w->second.assign(d.substr(eq + 1));
      }
    }
    if (who["_UID"] != e.sender_uid ||
        jf::sender_trust({present(who["_UID"]), present(who["_TRANSPORT"]), present(who["COREDUMP_UID"]),
                          present(who["_SYSTEMD_CGROUP"])}) == jf::Trust::kNone)
      continue;
    if (size > max_bytes) too_large = size;
    else if (doc) found = std::move(doc);
  }
  sd_journal_set_data_threshold(j_, kSummaryValueMax);
  sd_journal_flush_matches(j_);
  if (r < 0) return journal_error(r, "journal entry " + e.cursor + ": looking for its document entry");
  if (found) return found;
  if (too_large)
    return Error{Errc::kInvalidArgument, "journal entry " + e.cursor + ": its document is too large (" +
                                             std::to_string(too_large) + " bytes, the limit is " +
                                             std::to_string(max_bytes) + "; see --max-size)"};
  return journal_error(-ENOENT, "journal entry " + e.cursor + ": its document entry (" + std::string(jf::kDocumentId) +
                                    "=" + e.document_id + ", from the same sender) is not in the journal");
}

Result<std::optional<std::string>> Journal::document_once(const std::string &cursor, std::uint64_t max_bytes) {
  std::optional<Result<std::optional<std::string>>> out;
  const int r = at_entry(cursor, [&](sd_journal *j) { out = document_here(j, cursor, max_bytes); });
  if (out) return std::move(*out);
  return journal_error(r < 0 ? r : -ENOENT, "journal entry " + cursor + ": cannot be found again");
}

Result<JournalEntry> Journal::entry_at(const std::string &cursor) {
  const sigbus::Scope truncated;
  JournalEntry e;
  std::optional<jf::Trust> trust;
  const int r = at_entry(cursor, [&](sd_journal *j) {
    sd_journal_set_data_threshold(j, kScanThreshold);
    SummaryReader().read(j, &e);
    sd_journal_get_realtime_usec(j, &e.realtime_usec);
    trust = vouch_for(&e, local_machine_id());
    sd_journal_set_data_threshold(j, kSummaryValueMax);
  });
  if (truncated.moved()) return cut_short("journal entry " + cursor + " was read again");
  if (!trust) return journal_error(r < 0 ? r : -ENOENT, "journal entry " + cursor + ": cannot be found again");
  if (*trust == jf::Trust::kNone)
    return Error{Errc::kBadData, "journal entry " + cursor + ": read again, it is not core-timelined's"};
  e.cursor = cursor;
  return e;
}

int Journal::at_entry(const std::string &cursor, const std::function<void(sd_journal *)> &fn) {
  sd_journal_flush_matches(j_);
  int r = seek_entry(j_, cursor);
  if (r > 0) {
    fn(j_);
    return 1;
  }
  /* Over several files (a central host's, -D A -D B), sd-journal's seek
   * interleaves the files by realtime when their seqnum ids and boots
   * differ, or by monotonic time when only the boot is the same: an entry
   * of another host with the same __REALTIME_TIMESTAMP can come first,
   * and the entry after the seek is not this one.  Each file alone holds
   * its entries in its own sequence, where the cursor's seqnum finds the
   * entry itself. */
  for (const std::string &file : files_) {
    sd_journal *one = nullptr;
    const char *paths[] = {file.c_str(), nullptr};
    if (sd_journal_open_files(&one, paths, 0) < 0) continue;
    if (seek_entry(one, cursor) > 0) {
      fn(one);
      sd_journal_close(one);
      return 1;
    }
    sd_journal_close(one);
  }
  return r < 0 ? r : 0;
}

}  // namespace core_timeline::ctl_query
