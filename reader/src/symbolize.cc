/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/symbolize.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <signal.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/reader/cursor.h"
#include "core_unwind.h"

namespace core_timeline::reader {

namespace {

struct DwflDeleter {
  void operator()(Dwfl *d) const { dwfl_end(d); }
};

/* ---- what libdwfl is given ----
 *
 * The core names files: NT_FILE paths, and the l_name strings of the
 * dynamic linker's list in the dead process's memory.  dwfl_core_file_report
 * opens both with a plain open(2) (elfutils 0.188: dwfl_segment_report_module
 * and link_map.c), and dwfl_standard_find_debuginfo opens debuglink names
 * next to them.  Run by a privileged daemon, that meant blocking on a FIFO
 * until the timeout, opening devices, and reading (and showing the symbols
 * of) files the crashed user could not read.  So libdwfl is not given the
 * core: the modules that hold a queried address are reported from NT_FILE
 * (their mapping at file offset 0, the build-id the core attests), and
 *  - find_elf hands libdwfl EXECUTABLE (for the executable's module),
 *    /usr/lib/debug/.build-id/xx/yyyy (dwfl_build_id_find_elf, which also
 *    asks debuginfod when DEBUGINFOD_URLS is set), or the
 *    module's NT_FILE path if it is a regular file on a real file system
 *    that the crashed user could read (world-readable, or theirs by
 *    NT_PRPSINFO), opened without following it into a FIFO or a device
 *    (O_PATH first), and carrying the build-id the core attests (any, or
 *    none, with `unverified`);
 *  - find_debuginfo looks up by build-id only (/usr/lib/debug/.build-id,
 *    then debuginfod), never by a path derived from the module's.
 * debuginfod is asked by this file itself (DebuginfodSession below), not
 * through libdwfl's callbacks, which keep what went wrong to themselves:
 * a server that is down must be reported as such, and bounded. */

constexpr std::size_t kMaxModules = 256;  /* modules given to libdwfl per core */

std::int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

/* Whether libdwfl may ask debuginfod (debuginfod_find_debuginfo(3):
 * DEBUGINFOD_URLS names the servers).  libdebuginfod loads libcurl and a
 * TLS stack when it is loaded: about 3 ms of dynamic linking, more than
 * the rest of a whole read (bench_reader).  So without a server, nothing
 * here loads it or asks. */
bool debuginfod_configured() {
  const char *urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && *urls != '\0';
}

/* libdebuginfod's client calls, from libdebuginfod.so.1 dlopen'ed on the
 * first question (as libdwfl itself does): linking it would load libcurl
 * into every reader. */
struct DebuginfodApi {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_find_executable) find_executable = nullptr;
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_get_url) get_url = nullptr;
  std::string failure; /* why it could not be loaded, or "" */
};

const DebuginfodApi &debuginfod_api() {
  static const DebuginfodApi api = [] {
    DebuginfodApi a;
    void *h = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char *e = dlerror();
      a.failure = fmt::format("debuginfod not asked: {} could not be loaded ({})", DEBUGINFOD_SONAME,
                              e != nullptr ? e : "dlopen failed");
      return a;
    }
    const auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (fn == nullptr && a.failure.empty())
        a.failure = fmt::format("debuginfod not asked: {} has no {}", DEBUGINFOD_SONAME, name);
    };
    sym(a.begin, "debuginfod_begin");
    sym(a.end, "debuginfod_end");
    sym(a.find_debuginfo, "debuginfod_find_debuginfo");
    sym(a.find_executable, "debuginfod_find_executable");
    sym(a.set_progressfn, "debuginfod_set_progressfn");
    sym(a.get_url, "debuginfod_get_url");
    return a;
  }();
  return api;
}

/* The debuginfod questions of one symbolize call: one client, one budget
 * (SymbolizeOptions::debuginfod_timeout_ms, from the first question), and
 * after the first failure that is not "not found", no more questions. */
class DebuginfodSession {
 public:
  explicit DebuginfodSession(int budget_ms) : budget_ms_(budget_ms) {}
  ~DebuginfodSession() {
    if (client_ != nullptr) debuginfod_api().end(client_);
    if (t_current == this) t_current = nullptr;
  }
  DebuginfodSession(const DebuginfodSession &) = delete;
  DebuginfodSession &operator=(const DebuginfodSession &) = delete;

  /* A descriptor of the module file (`executable`) or debug info with
   * build-id `id` from the servers, its name in the cache in `path`; or -1,
   * with `failure` set when the servers could not answer (left alone when
   * they said they do not have it). */
  int find(bool executable, const std::vector<std::uint8_t> &id, std::string &path, std::string &failure) {
    if (failure_.empty() && client_ == nullptr) start();
    if (failure_.empty() && budget_ms_ > 0 && now_ms() >= deadline_ms_) failure_ = over_budget();
    if (!failure_.empty()) {
      failure = failure_;
      return -1;
    }
    const DebuginfodApi &api = debuginfod_api();
    t_current = this;
    char *p = nullptr;
    const int n = static_cast<int>(id.size());
    const int rc = executable ? api.find_executable(client_, id.data(), n, &p) : api.find_debuginfo(client_, id.data(), n, &p);
    t_current = nullptr;
    if (rc >= 0) {
      path = p != nullptr ? p : "debuginfod";
      free(p);
      return rc;
    }
    free(p);
    if (rc == -ENOENT && !expired_) return -1; /* the servers do not have it */
    const char *u = api.get_url(client_);
    const std::string where = u != nullptr && *u != '\0' ? u : std::getenv("DEBUGINFOD_URLS");
    if (expired_) failure_ = over_budget();
    else if (rc == -ETIME || rc == -ETIMEDOUT)
      failure_ = fmt::format("debuginfod did not answer ({}: {}; DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME)", where,
                             std::strerror(-rc));
    else
      failure_ = fmt::format("debuginfod could not be reached ({}: {})", where, std::strerror(-rc));
    failure = failure_;
    return -1;
  }

 private:
  void start() {
    const DebuginfodApi &api = debuginfod_api();
    if (!api.failure.empty()) {
      failure_ = api.failure;
      return;
    }
    client_ = api.begin();
    if (client_ == nullptr) {
      failure_ = "debuginfod not asked: debuginfod_begin failed";
      return;
    }
    api.set_progressfn(client_, &DebuginfodSession::progress);
    deadline_ms_ = now_ms() + budget_ms_;
  }
  std::string over_budget() const {
    return fmt::format("debuginfod did not answer within {} ms, the time one read gives it (--debuginfod-timeout; "
                       "DEBUGINFOD_URLS={})", budget_ms_, std::getenv("DEBUGINFOD_URLS"));
  }
  /* debuginfod_progressfn_t: nonzero aborts the download.  The library
   * calls it about once a second while it waits (0.188: each turn of its
   * curl_multi_wait loop, 1 s at most). */
  static int progress(debuginfod_client *, long, long) {
    DebuginfodSession *s = t_current;
    if (s == nullptr || s->budget_ms_ <= 0 || now_ms() < s->deadline_ms_) return 0;
    s->expired_ = true;
    return 1;
  }
  static thread_local DebuginfodSession *t_current;
  int budget_ms_ = 0;
  std::int64_t deadline_ms_ = 0;
  bool expired_ = false;
  debuginfod_client *client_ = nullptr;
  std::string failure_;
};
thread_local DebuginfodSession *DebuginfodSession::t_current = nullptr;

struct FileRules {
  const CoreFile *core = nullptr;
  bool unverified = false;            /* modules without a core build-id too */
  std::optional<std::uint32_t> uid;   /* the crashed process's, NT_PRPSINFO */
  const Module *exe = nullptr;        /* the core's executable */
  const std::string *executable = nullptr;  /* EXECUTABLE, vetted by the caller */
  DebuginfodSession *debuginfod = nullptr;  /* with DEBUGINFOD_URLS */
  /* Why debuginfod gave nothing for a module (Symbol::debuginfod_failure). */
  std::unordered_map<const Module *, std::string> debuginfod_failures;
  /* A module's NT_FILE file refused for its build-id: its path and its
   * build-id (Symbol::refused_file). */
  std::unordered_map<const Module *, std::pair<std::string, std::vector<std::uint8_t>>> refused;
};
thread_local FileRules *t_rules = nullptr;

bool pseudo_fs(const struct statfs &fs) {
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case EFIVARFS_MAGIC:
    case BPF_FS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

/* A read-only descriptor of `path` if it is a regular ELF-sized file on a
 * real file system that `uid` could read; else -1.  The path is resolved
 * once, with O_PATH (which opens no FIFO or device), and the very file
 * checked is then reopened through /proc/self/fd. */
int open_module_file(const std::string &path, std::optional<std::uint32_t> uid) {
  const int p = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (p < 0) return -1;
  struct stat st;
  struct statfs fs;
  int fd = -1;
  if (fstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr)) &&
      ((st.st_mode & S_IROTH) != 0 || (uid && st.st_uid == *uid)) && fstatfs(p, &fs) == 0 && !pseudo_fs(fs)) {
    fd = open(fmt::format("/proc/self/fd/{}", p).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat again;
    if (fd >= 0 && (fstat(fd, &again) != 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino)) {
      close(fd);
      fd = -1;
    }
  }
  close(p);
  return fd;
}

/* Gives libdwfl `fd` (and an Elf of it) if it is an ELF file with the
 * build-id `want` (any, if `want` is empty); else closes it.  An ELF file
 * refused for its build-id is recorded in `refused` (when not null): its
 * name and its build-id (empty: none). */
int hand_over(int fd, const std::string &name, const std::vector<std::uint8_t> &want, char **file_name,
              Elf **elfp, std::pair<std::string, std::vector<std::uint8_t>> *refused = nullptr) {
  if (fd < 0) return -1;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  bool ok = elf != nullptr && elf_kind(elf) == ELF_K_ELF;
  if (ok && !want.empty()) {
    const void *id = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    const auto *p = static_cast<const std::uint8_t *>(id);
    ok = n > 0 && std::equal(want.begin(), want.end(), p, p + n);
    if (!ok && refused != nullptr) {
      refused->first = name;
      if (n > 0 && n <= 64) refused->second.assign(p, p + n);
      else refused->second.clear();
    }
  }
  char *copy = ok ? strdup(name.c_str()) : nullptr;
  if (copy == nullptr) {
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return -1;
  }
  free(*file_name);
  *file_name = copy;
  *elfp = elf;
  return fd;
}

/* The module of the core that libdwfl's `mod` was reported for. */
const Module *core_module(Dwfl_Module *mod) {
  Dwarf_Addr start = 0;
  dwfl_module_info(mod, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
  return t_rules->core->module_for(start);
}

/* Asks debuginfod for `m`'s file or debug info; records a failure. */
int ask_debuginfod(const Module *m, bool executable, std::string &path) {
  if (t_rules->debuginfod == nullptr || m->build_id.empty()) return -1;
  std::string failure;
  const int fd = t_rules->debuginfod->find(executable, m->build_id, path, failure);
  if (fd < 0 && !failure.empty()) t_rules->debuginfod_failures[m] = failure;
  return fd;
}

int find_elf(Dwfl_Module *mod, void ** /*userdata*/, const char * /*modname*/, Dwarf_Addr /*base*/,
             char **file_name, Elf **elfp) {
  *elfp = nullptr;
  if (t_rules == nullptr) return -1;
  const Module *m = core_module(mod);
  if (m == nullptr) return -1;
  if (m == t_rules->exe && t_rules->executable != nullptr) {
    const int fd = open(t_rules->executable->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    return hand_over(fd, *t_rules->executable, m->build_id, file_name, elfp);
  }
  if (m->build_id.empty() && !t_rules->unverified) return -1;
  if (!m->build_id.empty()) {
    /* The file dwfl_build_id_find_elf looks for before it asks debuginfod
     * (elfutils libdwfl/dwfl_build_id_find_elf.c), vetted as any module. */
    const std::string id = hex_bytes(m->build_id);
    const std::string path = fmt::format("/usr/lib/debug/.build-id/{}/{}", id.substr(0, 2), id.substr(2));
    const int fd = hand_over(open_module_file(path, t_rules->uid), path, m->build_id, file_name, elfp);
    if (fd >= 0) return fd;
  }
  std::pair<std::string, std::vector<std::uint8_t>> refused;
  const int fd =
      hand_over(open_module_file(m->name, t_rules->uid), m->name, m->build_id, file_name, elfp, &refused);
  if (fd >= 0) return fd;
  if (!refused.first.empty()) t_rules->refused[m] = std::move(refused);
  /* Last, the servers: the file that ran, by the build-id the core attests
   * (checked again on what they send). */
  std::string path;
  return hand_over(ask_debuginfod(m, true, path), path, m->build_id, file_name, elfp);
}

/* `fd` if its ELF file carries build-id `want`; else closes it, -1. */
int with_build_id(int fd, const std::vector<std::uint8_t> &want) {
  if (fd < 0) return -1;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  const void *id = nullptr;
  const ssize_t n = elf != nullptr && elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &id) : -1;
  const auto *p = static_cast<const std::uint8_t *>(id);
  const bool ok = n > 0 && std::equal(want.begin(), want.end(), p, p + n);
  if (elf != nullptr) elf_end(elf);
  if (!ok) close(fd);
  return ok ? fd : -1;
}

int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                   const char * /*file_name*/, const char * /*debuglink_file*/, GElf_Word /*debuglink_crc*/,
                   char **debuginfo_file_name) {
  /* Without a file or debuglink name, the build-id callback looks the
   * module up by build-id only (/usr/lib/debug/.build-id), and never asks
   * debuginfod; then the servers, asked here (DebuginfodSession). */
  const int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, nullptr, nullptr, 0, debuginfo_file_name);
  if (fd >= 0 || t_rules == nullptr) return fd;
  const Module *m = core_module(mod);
  if (m == nullptr) return -1;
  std::string path;
  const int dfd = with_build_id(ask_debuginfod(m, false, path), m->build_id);
  if (dfd < 0) return -1;
  char *copy = strdup(path.c_str());
  if (copy == nullptr) {
    close(dfd);
    return -1;
  }
  free(*debuginfo_file_name);
  *debuginfo_file_name = copy;
  return dfd;
}

struct ElfDeleter {
  void operator()(Elf *e) const { elf_end(e); }
};

/* A symbol by name: which modules to search (find_symbol). */
struct NameQuery {
  std::string_view name;
  std::string_view module_prefix;
};

bool module_matches(const Module &m, std::string_view prefix) {
  const std::size_t slash = m.name.rfind('/');
  return std::string_view(m.name).substr(slash == std::string::npos ? 0 : slash + 1).starts_with(prefix);
}

/* The first reported module (in `order`) whose symbol table defines
 * `name` as an object or function. */
std::optional<NamedSymbol> find_named(Dwfl *dwfl, const std::vector<const Module *> &order, std::string_view name) {
  for (const Module *m : order) {
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, m->base);
    if (mod == nullptr) continue;
    const int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr addr = 0;
      const char *sname = dwfl_module_getsym_info(mod, i, &sym, &addr, nullptr, nullptr, nullptr);
      if (sname == nullptr || name != sname || sym.st_shndx == SHN_UNDEF) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_OBJECT && type != STT_FUNC) continue;
      NamedSymbol out;
      out.address = addr;
      out.size = sym.st_size;
      out.module = m->name;
      const char *mainfile = nullptr;
      dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, &mainfile, nullptr);
      if (mainfile != nullptr) out.module_file = mainfile;
      GElf_Addr bias = 0;
      if (Elf *melf = dwfl_module_getelf(mod, &bias)) {
        const void *bid = nullptr;
        const ssize_t len = dwelf_elf_gnu_build_id(melf, &bid);
        if (len > 0 && len <= 64)
          out.file_build_id.assign(static_cast<const std::uint8_t *>(bid), static_cast<const std::uint8_t *>(bid) + len);
      }
      return out;
    }
  }
  return std::nullopt;
}

Result<SymbolizeResult> symbolize_here(const CoreFile &core, std::span<const SymbolQuery> queries,
                                       const SymbolizeOptions &options, const UnwindRequest *unwind,
                                       const NameQuery *named = nullptr) {
  static char *debuginfo_path = nullptr; /* libdwfl default: ":.debug:/usr/lib/debug" */
  static const Dwfl_Callbacks callbacks = {
      .find_elf = find_elf,
      .find_debuginfo = find_debuginfo,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = &debuginfo_path,
  };
  elf_version(EV_CURRENT);
  FileRules rules;
  rules.core = &core;
  rules.unverified = options.unverified;
  if (core.notes().process) rules.uid = core.notes().process->uid;
  rules.exe = core.executable();
  if (options.executable) rules.executable = &*options.executable;
  std::optional<DebuginfodSession> debuginfod;
  if (debuginfod_configured()) rules.debuginfod = &debuginfod.emplace(options.debuginfod_timeout_ms);
  struct Scope {
    explicit Scope(FileRules *r) { t_rules = r; }
    ~Scope() { t_rules = nullptr; }
  } scope(&rules);
  /* The core's Elf for the unwinder: freed after the Dwfl that reads it. */
  std::unique_ptr<Elf, ElfDeleter> core_elf;
  std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&callbacks));
  if (!dwfl) return Error{Errc::kInternal, fmt::format("dwfl_begin: {}", dwfl_errmsg(-1))};
  /* The modules holding a queried address, each at its mapping at file
   * offset 0 (where the ELF header, and so p_vaddr 0 of a PIE, is); to
   * unwind, every module of the core (the unwinder needs each frame's
   * CFI before the frame's address is known). */
  std::vector<const Module *> wanted;
  std::unordered_set<const Module *> seen;
  const auto want = [&](const Module *m) {
    if (m == nullptr || wanted.size() >= kMaxModules || !seen.insert(m).second) return;
    const FileMapping *head = core.file_for(m->base);
    if (head != nullptr && head->file_offset == 0 && head->path == m->path) wanted.push_back(m);
  };
  for (const auto &q : queries) want(core.module_for(q.is_return_address && q.address != 0 ? q.address - 1 : q.address));
  if (unwind != nullptr)
    for (const Module &m : core.modules()) want(&m);
  std::vector<const Module *> named_order;  /* the executable first */
  if (named != nullptr) {
    for (const Module &m : core.modules())
      if (module_matches(m, named->module_prefix) && (named->module_prefix.empty() ? &m == rules.exe : true))
        named_order.push_back(&m);
    if (named->module_prefix.empty())
      for (const Module &m : core.modules())
        if (&m != rules.exe) named_order.push_back(&m);
    for (const Module *m : named_order) want(m);
  }
  dwfl_report_begin(dwfl.get());
  for (const Module *m : wanted) {
    Dwfl_Module *mod = dwfl_report_module(dwfl.get(), m->name.c_str(), m->base, m->end);
    if (mod != nullptr && !m->build_id.empty())
      (void)dwfl_module_report_build_id(mod, m->build_id.data(), m->build_id.size(), 0);
  }
  if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0)
    return Error{Errc::kBadData, fmt::format("dwfl_report_end: {}", dwfl_errmsg(-1))};

  SymbolizeResult result;
  if (unwind != nullptr) {
    Elf *e = nullptr;
    result.unwind_error = detail::unwind_core_threads(dwfl.get(), core, *unwind, result.threads, &e);
    core_elf.reset(e);
  }
  const auto lookup = [&](const SymbolQuery &q) -> std::optional<Symbol> {
    if (q.is_return_address && q.address == 0) return std::nullopt;
    const Dwarf_Addr look = q.is_return_address ? q.address - 1 : q.address;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl.get(), look);
    if (mod == nullptr) return std::nullopt;
    Symbol s;
    const Module *cm = core_module(mod);
    const auto failed = cm != nullptr ? rules.debuginfod_failures.find(cm) : rules.debuginfod_failures.end();
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, look, &off, &sym, nullptr, nullptr, nullptr);
    if (name != nullptr) {
      s.function = name;
      s.function_offset = off + (q.is_return_address ? 1 : 0);
    }
    GElf_Addr bias = 0;
    if (Elf *melf = dwfl_module_getelf(mod, &bias)) {
      const void *bid = nullptr;
      ssize_t n = dwelf_elf_gnu_build_id(melf, &bid);
      if (n > 0 && n <= 64) {
        const auto *p = static_cast<const std::uint8_t *>(bid);
        s.file_build_id.assign(p, p + n);
      }
    }
    const char *mainfile = nullptr, *debugfile = nullptr;
    dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, &mainfile, &debugfile);
    if (mainfile != nullptr) s.module_file = mainfile;
    if (Dwfl_Line *line = dwfl_module_getsrc(mod, look)) {
      int lineno = 0;
      if (const char *src = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        s.source_file = src;
        s.line = lineno;
      }
    }
    /* Only what debuginfod would have given: no line info, or no file. */
    if (failed != rules.debuginfod_failures.end() && s.source_file.empty()) s.debuginfod_failure = failed->second;
    if (s.module_file.empty() && cm != nullptr)
      if (const auto r = rules.refused.find(cm); r != rules.refused.end()) {
        s.refused_file = r->second.first;
        s.refused_build_id = r->second.second;
      }
    if (s.function.empty() && s.module_file.empty() && s.debuginfod_failure.empty() && s.refused_file.empty())
      return std::nullopt;
    return s;
  };
  result.symbols.reserve(queries.size());
  for (const auto &q : queries) result.symbols.push_back(lookup(q));
  for (auto &t : result.threads)
    for (auto &f : t.frames) f.symbol = lookup({f.pc, !f.activation});
  if (named != nullptr) result.named = find_named(dwfl.get(), named_order, named->name);
  return result;
}

/* ---- a tiny length-prefixed encoding for the child's answer ---- */

void put_u64(std::string &b, std::uint64_t v) { b.append(reinterpret_cast<const char *>(&v), 8); }
void put_str(std::string &b, std::string_view s) {
  put_u64(b, s.size());
  b.append(s);
}

void put_symbol(std::string &b, const std::optional<Symbol> &s) {
  b.push_back(s ? '1' : '0');
  if (!s) return;
  put_str(b, s->function);
  put_u64(b, s->function_offset);
  put_str(b, s->source_file);
  put_u64(b, static_cast<std::uint64_t>(static_cast<std::int64_t>(s->line)));
  put_str(b, s->module_file);
  put_str(b, std::string_view(reinterpret_cast<const char *>(s->file_build_id.data()), s->file_build_id.size()));
  put_str(b, s->debuginfod_failure);
  put_str(b, s->refused_file);
  put_str(b, std::string_view(reinterpret_cast<const char *>(s->refused_build_id.data()), s->refused_build_id.size()));
}

std::string encode(const Result<SymbolizeResult> &r) {
  std::string b;
  if (!r) {
    b.push_back('E');
    put_u64(b, static_cast<std::uint64_t>(r.error().code));
    put_str(b, r.error().message);
    return b;
  }
  b.push_back('R');
  put_u64(b, r->symbols.size());
  for (const auto &s : r->symbols) put_symbol(b, s);
  put_str(b, r->unwind_error);
  put_u64(b, r->threads.size());
  for (const auto &t : r->threads) {
    put_u64(b, t.tid);
    put_str(b, t.end);
    put_u64(b, t.frames.size());
    for (const auto &f : t.frames) {
      put_u64(b, f.pc);
      b.push_back(static_cast<char>((f.activation ? 1 : 0) | (f.sp ? 2 : 0)));
      put_u64(b, f.sp.value_or(0));
      put_symbol(b, f.symbol);
    }
  }
  b.push_back(r->named ? '1' : '0');
  if (r->named) {
    put_u64(b, r->named->address);
    put_u64(b, r->named->size);
    put_str(b, r->named->module);
    put_str(b, r->named->module_file);
    put_str(b, std::string_view(reinterpret_cast<const char *>(r->named->file_build_id.data()),
                                r->named->file_build_id.size()));
  }
  return b;
}

Result<std::string> get_str(Cursor &c) {
  CT_TRY(n, c.u64("length"));
  CT_TRY(b, c.bytes(n, "string"));
  return std::string(reinterpret_cast<const char *>(b.data()), b.size());
}

Result<void> get_symbol(Cursor &c, std::optional<Symbol> &o) {
  CT_TRY(present, c.u8("present"));
  if (present != '1') return {};
  {
    Symbol s;
    CT_TRY(fn, get_str(c));
    CT_TRY(off, c.u64("offset"));
    CT_TRY(src, get_str(c));
    CT_TRY(line, c.u64("line"));
    CT_TRY(modf, get_str(c));
    CT_TRY(bid, get_str(c));
    CT_TRY(dfail, get_str(c));
    CT_TRY(rfile, get_str(c));
    CT_TRY(rbid, get_str(c));
    s.function = std::move(fn);
    s.function_offset = off;
    s.source_file = std::move(src);
    s.line = static_cast<int>(static_cast<std::int64_t>(line));
    s.module_file = std::move(modf);
    s.file_build_id.assign(bid.begin(), bid.end());
    s.debuginfod_failure = std::move(dfail);
    s.refused_file = std::move(rfile);
    s.refused_build_id.assign(rbid.begin(), rbid.end());
    o = std::move(s);
  }
  return {};
}

Result<SymbolizeResult> decode(std::span<const std::uint8_t> data, std::size_t expected) {
  Cursor c(data, 0, "symbolizer answer");
  CT_TRY(tag, c.u8("tag"));
  if (tag == 'E') {
    CT_TRY(code, c.u64("code"));
    CT_TRY(msg, get_str(c));
    return Error{static_cast<Errc>(code), msg};
  }
  CT_TRY(n, c.u64("count"));
  if (tag != 'R' || n != expected) return Error{Errc::kInternal, "symbolizer answer is malformed"};
  SymbolizeResult out;
  out.symbols.resize(n);
  for (auto &o : out.symbols) CT_TRY_VOID(get_symbol(c, o));
  CT_TRY(uerr, get_str(c));
  out.unwind_error = std::move(uerr);
  CT_TRY(nt, c.u64("threads"));
  if (nt > c.remaining()) return Error{Errc::kInternal, "symbolizer answer is malformed"};
  for (std::uint64_t i = 0; i < nt; ++i) {
    UnwoundThread t;
    CT_TRY(tid, c.u64("tid"));
    CT_TRY(end, get_str(c));
    CT_TRY(nf, c.u64("frames"));
    if (nf > c.remaining()) return Error{Errc::kInternal, "symbolizer answer is malformed"};
    t.tid = static_cast<std::uint32_t>(tid);
    t.end = std::move(end);
    for (std::uint64_t j = 0; j < nf; ++j) {
      UnwoundFrame f;
      CT_TRY(pc, c.u64("pc"));
      CT_TRY(flags, c.u8("flags"));
      CT_TRY(sp, c.u64("sp"));
      f.pc = pc;
      f.activation = (flags & 1) != 0;
      if ((flags & 2) != 0) f.sp = sp;
      CT_TRY_VOID(get_symbol(c, f.symbol));
      t.frames.push_back(std::move(f));
    }
    out.threads.push_back(std::move(t));
  }
  CT_TRY(has_named, c.u8("named"));
  if (has_named == '1') {
    NamedSymbol named;
    CT_TRY(addr, c.u64("address"));
    CT_TRY(size, c.u64("size"));
    CT_TRY(module, get_str(c));
    CT_TRY(file, get_str(c));
    CT_TRY(bid, get_str(c));
    named.address = addr;
    named.size = size;
    named.module = std::move(module);
    named.module_file = std::move(file);
    named.file_build_id.assign(bid.begin(), bid.end());
    out.named = std::move(named);
  }
  return out;
}

bool write_all(int fd, const char *p, std::size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

Result<SymbolizeResult> run_symbolizer(const CoreFile &core, std::span<const SymbolQuery> queries,
                                       const SymbolizeOptions &options, const UnwindRequest *unwind,
                                       const NameQuery *named);

}  // namespace

Result<std::vector<std::optional<Symbol>>> symbolize(const CoreFile &core, std::span<const SymbolQuery> queries,
                                                     const SymbolizeOptions &options) {
  CT_TRY(r, symbolize_and_unwind(core, queries, options, nullptr));
  return std::move(r.symbols);
}

Result<SymbolizeResult> symbolize_and_unwind(const CoreFile &core, std::span<const SymbolQuery> queries,
                                             const SymbolizeOptions &options, const UnwindRequest *unwind) {
  return run_symbolizer(core, queries, options, unwind, nullptr);
}

Result<std::optional<NamedSymbol>> find_symbol(const CoreFile &core, std::string_view name,
                                               std::string_view module_prefix, const SymbolizeOptions &options) {
  const NameQuery q{name, module_prefix};
  CT_TRY(r, run_symbolizer(core, {}, options, nullptr, &q));
  return std::move(r.named);
}

namespace {

Result<SymbolizeResult> run_symbolizer(const CoreFile &core, std::span<const SymbolQuery> queries,
                                       const SymbolizeOptions &options, const UnwindRequest *unwind,
                                       const NameQuery *named) {
  if (!options.isolate) return symbolize_here(core, queries, options, unwind, named);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Error{Errc::kIo, fmt::format("symbolizer: pipe: {}", std::strerror(errno))};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Error{Errc::kIo, fmt::format("symbolizer: fork: {}", std::strerror(errno))};
  }
  if (pid == 0) {
    close(fds[0]);
    /* A crash of libdwfl in here must not leave a core of its own behind
     * (prctl(2): not dumpable means no core, also to a core_pattern pipe). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* Test hook: proves that a dying symbolizer costs only the symbols
     * (tests/reader, SymbolizerCrashCostsOnlySymbols). */
    if (const char *t = getenv("CT_READER_TEST_KILL_SYMBOLIZER"); t != nullptr && t[0] == '1')
      kill(getpid(), SIGKILL);
    std::string b;
    try {
      b = encode(symbolize_here(core, queries, options, unwind, named));
    } catch (...) {
      _exit(3);
    }
    _exit(write_all(fds[1], b.data(), b.size()) ? 0 : 2);
  }
  close(fds[1]);
  std::string buf;
  const std::int64_t deadline = now_ms() + options.timeout_ms;
  bool timed_out = false;
  for (;;) {
    const std::int64_t left = deadline - now_ms();
    if (left <= 0) { timed_out = true; break; }
    pollfd p{fds[0], POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (pr == 0) continue;
    char tmp[65536];
    ssize_t n = read(fds[0], tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return Error{Errc::kInternal, fmt::format("libdwfl did not finish within {} ms", options.timeout_ms)};
  if (WIFSIGNALED(status))
    return Error{Errc::kInternal, fmt::format("libdwfl crashed on this core (signal {})", WTERMSIG(status))};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{Errc::kInternal, fmt::format("symbolizer child failed (exit status {})", WEXITSTATUS(status))};
  return decode({reinterpret_cast<const std::uint8_t *>(buf.data()), buf.size()}, queries.size());
}

}  // namespace

Result<std::vector<std::uint8_t>> file_build_id(const std::string &path) {
  elf_version(EV_CURRENT);
  /* O_NONBLOCK: a FIFO must not block the open; only a regular file is
   * read. */
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Error{Errc::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Error{Errc::kIo, fmt::format("{}: not a regular file", path)};
  }
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    return Error{Errc::kNotElf, fmt::format("{}: not an ELF file", path)};
  }
  const void *bid = nullptr;
  ssize_t n = dwelf_elf_gnu_build_id(elf, &bid);
  std::vector<std::uint8_t> id;
  if (n > 0) {
    const auto *p = static_cast<const std::uint8_t *>(bid);
    id.assign(p, p + n);
  }
  elf_end(elf);
  close(fd);
  if (id.empty()) return Error{Errc::kNotFound, fmt::format("{}: has no NT_GNU_BUILD_ID note", path)};
  return id;
}

}  // namespace core_timeline::reader
