/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/elf_core.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "core_timeline/reader/cursor.h"
#include "core_timeline/reader/elf_headers.h"
#include "core_timeline/reader/fd.h"

namespace core_timeline::reader {

namespace {

/* Bounds that keep a hostile core from making us loop or allocate without
 * limit.  Real cores stay far below them. */
constexpr std::uint64_t kMaxPhdrs = 1u << 22;        /* 4M mappings */
constexpr std::uint64_t kMaxFileEntries = 1u << 22;
constexpr std::size_t kMaxEmbeddedPhdrs = 256;        /* in a module's header */
/* Note bytes looked through for a module's build-id, over all its PT_NOTEs:
 * real images hold a few hundred (build-id, ABI tag, properties, package
 * metadata); 256 PT_NOTEs over 64 KiB of empty notes would be 1M notes. */
constexpr std::uint64_t kMaxEmbeddedNoteBytes = 8192;
constexpr std::uint64_t kMaxBuildId = 64;
/* Warnings kept about the notes; the rest are counted.  Each costs more
 * than the note that earns it, and a core can hold millions of notes. */
constexpr std::size_t kMaxNoteWarnings = 16;

/* Offsets in struct elf_prstatus (include/uapi/linux/elfcore.h, 64-bit):
 * pr_info {si_signo, si_code, si_errno} at 0, pr_cursig at 12, pr_pid at 32,
 * pr_reg at 112. */
constexpr std::size_t kPrstatusPid = 32;
constexpr std::size_t kPrstatusReg = 112;
/* struct elf_prpsinfo, 64-bit: pr_sname 1, pr_uid 16, pr_gid 20, pr_pid 24,
 * pr_ppid 28, pr_fname 40 [16], pr_psargs 56 [80]; 136 bytes. */
constexpr std::size_t kPrpsinfoSize = 136;

/* Adds the warning `text()` makes, or counts it once kMaxNoteWarnings are
 * kept (the text is then never made). */
template <class Fn>
void note_warning(CoreNotes &out, Fn &&text) {
  if (out.warnings.size() < kMaxNoteWarnings) out.warnings.push_back(text());
  else out.warnings_omitted++;
}

std::string bounded_cstr(std::span<const std::uint8_t> b) {
  std::size_t n = 0;
  while (n < b.size() && b[n] != 0) ++n;
  return std::string(reinterpret_cast<const char *>(b.data()), n);
}

void parse_prstatus(std::span<const std::uint8_t> d, std::uint16_t machine, CoreNotes &out) {
  if (d.size() < kPrstatusPid + 4) {
    note_warning(out, [&] { return fmt::format("NT_PRSTATUS of {} bytes is too short, ignoring", d.size()); });
    return;
  }
  ThreadStatus t;
  load_at(d, 0, t.signo);
  load_at(d, 4, t.code);
  load_at(d, 12, t.cursig);
  load_at(d, kPrstatusPid, t.tid);
  std::size_t pc_idx = 0, sp_idx = 0, nregs = 0;
  if (machine == EM_X86_64) {
    pc_idx = 16; sp_idx = 19; nregs = 27;   /* user_regs_struct: rip, rsp */
  } else if (machine == EM_AARCH64) {
    pc_idx = 32; sp_idx = 31; nregs = 34;   /* user_pt_regs: pc, sp */
  }
  if (nregs != 0 && d.size() >= kPrstatusReg + nregs * 8) {
    load_at(d, kPrstatusReg + pc_idx * 8, t.pc);
    load_at(d, kPrstatusReg + sp_idx * 8, t.sp);
    t.regs.resize(nregs);
    for (std::size_t i = 0; i < nregs; ++i) load_at(d, kPrstatusReg + i * 8, t.regs[i]);
    t.has_regs = true;
  }
  out.threads.push_back(t);
}

void parse_prpsinfo(std::span<const std::uint8_t> d, CoreNotes &out) {
  if (d.size() < kPrpsinfoSize) {
    note_warning(out, [&] {
      return fmt::format("NT_PRPSINFO of {} bytes is shorter than {}, ignoring", d.size(), kPrpsinfoSize);
    });
    return;
  }
  ProcessInfo p;
  p.state = static_cast<char>(d[1]);
  load_at(d, 16, p.uid);
  load_at(d, 20, p.gid);
  load_at(d, 24, p.pid);
  load_at(d, 28, p.ppid);
  p.fname = bounded_cstr(d.subspan(40, 16));
  p.psargs = bounded_cstr(d.subspan(56, 80));
  out.process = std::move(p);
}

void parse_siginfo(std::span<const std::uint8_t> d, CoreNotes &out) {
  if (d.size() < 24) {
    note_warning(out, [&] { return fmt::format("NT_SIGINFO of {} bytes is too short, ignoring", d.size()); });
    return;
  }
  SignalInfo s;
  load_at(d, 0, s.signo);
  load_at(d, 4, s.err);
  load_at(d, 8, s.code);
  load_at(d, 16, s.addr);       /* _sigfault.si_addr */
  load_at(d, 16, s.sender_pid); /* _kill.si_pid (same union) */
  load_at(d, 20, s.sender_uid);
  out.signal = s;
}

void parse_auxv(std::span<const std::uint8_t> d, CoreNotes &out) {
  for (std::size_t off = 0; off + 16 <= d.size(); off += 16) {
    std::uint64_t type = 0, val = 0;
    load_at(d, off, type);
    load_at(d, off + 8, val);
    if (type == AT_NULL) break;
    out.auxv.emplace_back(type, val);
  }
}

Result<void> parse_file_note(std::span<const std::uint8_t> d, std::uint64_t base, CoreNotes &out) {
  Cursor c(d, base, "NT_FILE note");
  CT_TRY(count, c.u64("count"));
  CT_TRY(page_size, c.u64("page_size"));
  if (page_size == 0 || (page_size & (page_size - 1)) != 0 || page_size > (1u << 30))
    return c.error(Errc::kBadData, "page_size", fmt::format("{:#x} is not a sane page size", page_size));
  if (count > kMaxFileEntries || count > c.remaining() / 24)
    return c.error(Errc::kBadData, "count",
                   fmt::format("{} entries do not fit in the {} bytes left", count, c.remaining()));
  std::vector<FileMapping> files(count);
  for (auto &f : files) {
    CT_TRY(start, c.u64("start"));
    CT_TRY(end, c.u64("end"));
    CT_TRY(pgoff, c.u64("file_ofs"));
    if (end < start)
      return c.error(Errc::kBadData, "end", fmt::format("end {:#x} < start {:#x}", end, start));
    if (pgoff > UINT64_MAX / page_size)
      return c.error(Errc::kBadData, "file_ofs", "page offset overflows");
    f.start = start;
    f.end = end;
    f.file_offset = pgoff * page_size;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto s = c.cstring("filename");
    if (!s) {
      note_warning(out, [&] {
        return fmt::format("NT_FILE: only {} of {} file names present, ignoring the rest", i, files.size());
      });
      files.resize(i);
      break;
    }
    files[i].path = std::string(*s);
    constexpr std::string_view kDeleted = " (deleted)";
    files[i].name = files[i].path;
    if (files[i].name.size() >= kDeleted.size() &&
        files[i].name.compare(files[i].name.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
      files[i].deleted = true;
      files[i].name.resize(files[i].name.size() - kDeleted.size());
    }
  }
  out.has_file_note = true;
  out.file_note_page_size = page_size;
  out.files = std::move(files);
  return {};
}

/* Parses the ELF notes in `d`, calling fn(name, type, desc, desc_offset). */
template <class Fn>
Result<void> for_each_note(std::span<const std::uint8_t> d, std::uint64_t base, std::size_t align,
                           std::string_view what, Fn &&fn) {
  Cursor c(d, base, what);
  while (c.remaining() >= 12) {
    CT_TRY(namesz, c.u32("n_namesz"));
    CT_TRY(descsz, c.u32("n_descsz"));
    CT_TRY(type, c.u32("n_type"));
    CT_TRY(name, c.bytes(namesz, "name"));
    if (c.remaining() > 0) CT_TRY_VOID(c.align(align, "name padding"));
    std::uint64_t desc_off = c.offset();
    CT_TRY(desc, c.bytes(descsz, "desc"));
    if (c.remaining() > 0) CT_TRY_VOID(c.align(align, "desc padding"));
    std::string_view n(reinterpret_cast<const char *>(name.data()), name.size());
    while (!n.empty() && n.back() == '\0') n.remove_suffix(1);
    fn(n, type, desc, desc_off);
  }
  return {};
}

}  // namespace

void parse_core_notes(std::span<const std::uint8_t> data, std::uint64_t base, std::uint16_t machine,
                      CoreNotes &out) {
  auto r = for_each_note(data, base, 4, "PT_NOTE",
                         [&](std::string_view name, std::uint32_t type,
                             std::span<const std::uint8_t> desc, std::uint64_t desc_off) {
    if (name == kLiveNoteName && type == kNtLiveSnapshot) {
      if (out.live) {
        note_warning(out, [&] { return fmt::format("second CORE-TIMELINE note at offset {:#x}, ignoring", desc_off); });
      } else if (desc.size() < sizeof(LiveSnapshotNote)) {
        note_warning(out, [&] {
          return fmt::format("CORE-TIMELINE note of {} bytes is shorter than {}, ignoring", desc.size(),
                             sizeof(LiveSnapshotNote));
        });
      } else {
        LiveSnapshotNote l;
        std::memcpy(&l, desc.data(), sizeof l);
        if (l.version != kLiveNoteVersion)
          note_warning(out, [&] { return fmt::format("CORE-TIMELINE note version {} is not {}, ignoring", l.version, kLiveNoteVersion); });
        else
          out.live = l;
      }
      return;
    }
    if (name != "CORE") return;
    switch (type) {
      case NT_PRSTATUS: parse_prstatus(desc, machine, out); break;
      case NT_PRPSINFO:
        if (out.process)
          note_warning(out, [&] { return fmt::format("second NT_PRPSINFO at offset {:#x}, ignoring", desc_off); });
        else
          parse_prpsinfo(desc, out);
        break;
      case NT_SIGINFO:
        if (!out.signal) parse_siginfo(desc, out);
        break;
      case NT_AUXV:
        if (out.auxv.empty()) parse_auxv(desc, out);
        break;
      case NT_FILE:
        if (out.has_file_note) {
          note_warning(out, [&] { return fmt::format("second NT_FILE at offset {:#x}, ignoring", desc_off); });
        } else if (auto fr = parse_file_note(desc, desc_off, out); !fr) {
          note_warning(out, [&] { return fr.error().message + ", ignoring NT_FILE"; });
        }
        break;
      default: break;
    }
  });
  if (!r) note_warning(out, [&] { return r.error().message + ", ignoring the rest of this PT_NOTE"; });
  /* A live snapshot's NT_PRSTATUS carries no registers (live.h). */
  if (out.live)
    for (auto &t : out.threads) {
      t.has_regs = false;
      t.regs.clear();
    }
}

std::string hex_bytes(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

/* ------------------------------------------------------------------ Impl */

struct CoreFile::Impl {
  std::string path;
  Fd fd;
  void *map = nullptr;
  std::size_t map_len = 0;
  std::vector<std::uint8_t> owned;
  std::span<const std::uint8_t> data;
  std::uint16_t machine = 0;
  std::vector<Segment> loads;
  std::vector<Segment> notes_segs;
  std::vector<std::size_t> by_vaddr;  /* indexes into loads, sorted by vaddr */
  /* Per load: the end of the run of vaddr-contiguous loads starting with it
   * (mapped_extent), computed once: walking the run on every call made the
   * magic scan quadratic in the segment count. */
  std::vector<std::uint64_t> run_end;
  std::vector<std::size_t> files_by_start;
  CoreNotes notes;
  std::vector<Module> modules;
  std::vector<std::size_t> module_of_file;  /* per notes.files entry: its module */
  bool truncated = false;

  ~Impl() {
    if (map != nullptr) munmap(map, map_len);
  }

  Result<void> parse();
  void build_modules();
  const Segment *segment_for(std::uint64_t addr) const noexcept;
};

Result<void> CoreFile::Impl::parse() {
  const auto &d = data;
  if (d.empty()) return Error{Errc::kNotElf, fmt::format("{}: empty file (0 bytes), not an ELF core", path)};
  /* e_machine before anything is refused, so that the report of a core this
   * reader does not support still names its machine. */
  if (d.size() >= 20 && d[EI_DATA] == ELFDATA2LSB) machine = static_cast<std::uint16_t>(d[18] | d[19] << 8);
  if (d.size() >= 20 && d[EI_DATA] == ELFDATA2MSB) machine = static_cast<std::uint16_t>(d[18] << 8 | d[19]);
  Cursor file(d, 0, path);
  CT_TRY(eh, read_elf64_ehdr(file));
  if (eh.e_type != ET_CORE)
    return file.error_at(offsetof(Elf64_Ehdr, e_type), Errc::kUnsupported, "e_type",
                         fmt::format("ELF type {} is not ET_CORE ({}): not a core dump", eh.e_type, ET_CORE));
  CT_TRY(table, phdr_table(file, eh, kMaxPhdrs));
  CT_TRY(entries, phdr_entries(file, table));
  for (std::uint64_t i = 0; i < table.e_phnum; ++i) {
    CT_TRY(ph, read_elf64_phdr(entries));
    if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE) continue;
    Segment s;
    s.index = static_cast<std::uint32_t>(i);
    s.vaddr = ph.p_vaddr;
    s.memsz = ph.p_memsz;
    s.offset = ph.p_offset;
    s.filesz = ph.p_filesz;
    s.flags = ph.p_flags;
    if (s.memsz > UINT64_MAX - s.vaddr) s.memsz = UINT64_MAX - s.vaddr; /* wrap: clamp */
    if (s.offset >= d.size()) s.present = 0;
    else s.present = std::min<std::uint64_t>(s.filesz, d.size() - s.offset);
    if (s.present < s.filesz) truncated = true;
    if (ph.p_type == PT_LOAD) loads.push_back(s);
    else notes_segs.push_back(s);
  }
  /* The kernel writes each segment's bytes once, one segment after the
   * other (fs/binfmt_elf.c).  Program headers whose bytes overlap in the
   * file are crafted: N of them over one ring would make N rings, over one
   * PT_NOTE N copies of every thread.  Refuse, naming both. */
  {
    std::vector<const Segment *> by_offset;
    for (const auto *v : {&loads, &notes_segs})
      for (const auto &s : *v)
        if (s.present > 0) by_offset.push_back(&s);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Segment *a, const Segment *b) { return a->offset < b->offset; });
    const Segment *reach = nullptr; /* the segment whose bytes end last so far */
    for (const Segment *s : by_offset) {
      if (reach != nullptr && s->offset < reach->offset + reach->present)
        return Error{Errc::kBadData,
                     fmt::format("{}: the bytes of program header {} (file offset {:#x}, {:#x} bytes) overlap those "
                                 "of program header {} (file offset {:#x}, {:#x} bytes): not a core the kernel "
                                 "wrote", path, s->index, s->offset, s->present, reach->index, reach->offset,
                                 reach->present)};
      if (reach == nullptr || s->offset + s->present > reach->offset + reach->present) reach = s;
    }
  }
  by_vaddr.resize(loads.size());
  for (std::size_t i = 0; i < loads.size(); ++i) by_vaddr[i] = i;
  std::stable_sort(by_vaddr.begin(), by_vaddr.end(),
                   [&](std::size_t a, std::size_t b) { return loads[a].vaddr < loads[b].vaddr; });
  /* Highest vaddr first: a load's successor in its run starts at its end,
   * above it, so its run end is already known. */
  run_end.resize(loads.size());
  for (auto it = by_vaddr.rbegin(); it != by_vaddr.rend(); ++it) {
    const Segment &s = loads[*it];
    run_end[*it] = s.end();
    const Segment *next = s.memsz == 0 ? nullptr : segment_for(s.end());
    if (next != nullptr && next->vaddr == s.end() && next->memsz != 0)
      run_end[*it] = run_end[static_cast<std::size_t>(next - loads.data())];
  }

  for (const auto &ns : notes_segs) {
    if (ns.present < ns.filesz)
      note_warning(notes, [&] {
        return fmt::format("PT_NOTE at offset {:#x} is cut off at {} of {} bytes (truncated core)", ns.offset,
                           ns.present, ns.filesz);
      });
    if (ns.present == 0) continue;
    parse_core_notes(d.subspan(ns.offset, ns.present), ns.offset, machine, notes);
  }
  if (notes.warnings_omitted > 0)
    notes.warnings.push_back(fmt::format("{} more warnings about the notes like the ones above, not listed",
                                         notes.warnings_omitted));
  files_by_start.resize(notes.files.size());
  for (std::size_t i = 0; i < files_by_start.size(); ++i) files_by_start[i] = i;
  std::stable_sort(files_by_start.begin(), files_by_start.end(), [&](std::size_t a, std::size_t b) {
    return notes.files[a].start < notes.files[b].start;
  });
  return {};
}

CoreFile::CoreFile(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
CoreFile::CoreFile(CoreFile &&) noexcept = default;
CoreFile &CoreFile::operator=(CoreFile &&) noexcept = default;
CoreFile::~CoreFile() = default;

Result<CoreFile> CoreFile::open(const std::string &path, FileFacts *refused) noexcept try {
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
   * writer, before the regular-file check in from_fd() could refuse it.
   * It does not change reads of a regular file. */
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return Error{Errc::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  return from_fd(std::move(fd), path, refused);
} catch (const std::bad_alloc &) {
  return Error{Errc::kNoMemory, "out of memory"};
}

Result<CoreFile> CoreFile::from_fd(Fd fd, std::string name, FileFacts *refused) noexcept try {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(name);
  const std::string &path = impl->path;
  impl->fd = std::move(fd);
  if (!impl->fd.valid()) return Error{Errc::kIo, fmt::format("{}: no descriptor", path)};
  struct stat st;
  if (fstat(impl->fd.get(), &st) != 0)
    return Error{Errc::kIo, fmt::format("{}: cannot stat: {}", path, std::strerror(errno))};
  if (!S_ISREG(st.st_mode))
    return Error{Errc::kIo, fmt::format("{}: not a regular file", path)};
  if (st.st_size > 0) {
    impl->map_len = static_cast<std::size_t>(st.st_size);
    impl->map = mmap(nullptr, impl->map_len, PROT_READ, MAP_PRIVATE, impl->fd.get(), 0);
    if (impl->map == MAP_FAILED) {
      impl->map = nullptr;
      return Error{Errc::kIo, fmt::format("{}: cannot mmap {} bytes: {}", path, impl->map_len,
                                          std::strerror(errno))};
    }
    impl->data = {static_cast<const std::uint8_t *>(impl->map), impl->map_len};
  }
  if (auto r = impl->parse(); !r) {
    if (refused != nullptr) *refused = {impl->data.size(), impl->machine};
    return std::move(r).error();
  }
  impl->build_modules();
  CoreFile core(std::move(impl));
  core.fill_build_ids();
  return core;
} catch (const std::bad_alloc &) {
  return Error{Errc::kNoMemory, "out of memory"};
}

Result<CoreFile> CoreFile::from_bytes(std::vector<std::uint8_t> bytes, std::string name,
                                      FileFacts *refused) noexcept try {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(name);
  impl->owned = std::move(bytes);
  impl->data = impl->owned;
  if (auto r = impl->parse(); !r) {
    if (refused != nullptr) *refused = {impl->data.size(), impl->machine};
    return std::move(r).error();
  }
  impl->build_modules();
  CoreFile core(std::move(impl));
  core.fill_build_ids();
  return core;
} catch (const std::bad_alloc &) {
  return Error{Errc::kNoMemory, "out of memory"};
}

std::span<const std::uint8_t> CoreFile::bytes() const noexcept { return impl_->data; }
const std::string &CoreFile::path() const noexcept { return impl_->path; }
int CoreFile::fd() const noexcept { return impl_->fd.get(); }
std::uint16_t CoreFile::machine() const noexcept { return impl_->machine; }
const std::vector<Segment> &CoreFile::segments() const noexcept { return impl_->loads; }
const std::vector<Segment> &CoreFile::note_segments() const noexcept { return impl_->notes_segs; }
const CoreNotes &CoreFile::notes() const noexcept { return impl_->notes; }
const std::vector<Module> &CoreFile::modules() const noexcept { return impl_->modules; }
bool CoreFile::truncated() const noexcept { return impl_->truncated; }

const Segment *CoreFile::Impl::segment_for(std::uint64_t addr) const noexcept {
  const auto &idx = by_vaddr;
  /* Last segment with vaddr <= addr. */
  auto it = std::upper_bound(idx.begin(), idx.end(), addr,
                             [&](std::uint64_t a, std::size_t i) { return a < loads[i].vaddr; });
  /* Kernel cores have no overlapping segments, so the last segment starting
   * at or below addr is the one; a crafted core may overlap them, so look
   * back a few more (bounded: never a scan of every segment). */
  for (int back = 0; back < 4 && it != idx.begin(); ++back) {
    --it;
    const Segment &s = loads[*it];
    if (addr - s.vaddr < s.memsz) return &s;
  }
  return nullptr;
}

const Segment *CoreFile::segment_for(std::uint64_t addr) const noexcept { return impl_->segment_for(addr); }

const FileMapping *CoreFile::file_for(std::uint64_t addr) const noexcept {
  const auto &idx = impl_->files_by_start;
  const auto &files = impl_->notes.files;
  auto it = std::upper_bound(idx.begin(), idx.end(), addr,
                             [&](std::uint64_t a, std::size_t i) { return a < files[i].start; });
  if (it == idx.begin()) return nullptr;
  --it;
  const FileMapping &f = files[*it];
  return addr < f.end ? &f : nullptr;
}

const Module *CoreFile::module_for(std::uint64_t addr) const noexcept {
  const FileMapping *f = file_for(addr);
  if (f == nullptr) return nullptr;
  return &impl_->modules[impl_->module_of_file[static_cast<std::size_t>(f - impl_->notes.files.data())]];
}

const Module *CoreFile::executable(std::string *how) const noexcept {
  const auto &n = impl_->notes;
  for (std::uint64_t at : {std::uint64_t{AT_PHDR}, std::uint64_t{AT_ENTRY}}) {
    for (const auto &[type, val] : n.auxv) {
      if (type != at) continue;
      if (const Module *m = module_for(val)) {
        if (how) *how = at == AT_PHDR ? "NT_FILE mapping holding AT_PHDR" : "NT_FILE mapping holding AT_ENTRY";
        return m;
      }
    }
  }
  if (!impl_->modules.empty()) {
    if (how) *how = "first NT_FILE entry (no usable NT_AUXV)";
    for (const auto &m : impl_->modules)
      if (!n.files.empty() && m.path == n.files.front().path) return &m;
  }
  return nullptr;
}

std::span<const std::uint8_t> CoreFile::read_memory(std::uint64_t addr, std::uint64_t len) const noexcept {
  const Segment *s = segment_for(addr);
  if (s == nullptr) return {};
  std::uint64_t in = addr - s->vaddr;
  if (in >= s->present) return {};
  std::uint64_t n = std::min(len, s->present - in);
  return impl_->data.subspan(s->offset + in, n);
}

std::vector<std::uint8_t> CoreFile::copy_memory(std::uint64_t addr, std::uint64_t len) const {
  std::vector<std::uint8_t> out;
  while (len > 0) {
    auto part = read_memory(addr, len);
    if (part.empty()) break;
    out.insert(out.end(), part.begin(), part.end());
    len -= part.size();
    if (part.size() > UINT64_MAX - addr) break;
    addr += part.size();
    /* Continue only into the next segment if this one was fully present. */
    const Segment *s = segment_for(addr - 1);
    if (s == nullptr || addr != s->end()) break;
  }
  return out;
}

std::uint64_t CoreFile::mapped_extent(std::uint64_t addr) const noexcept {
  const Segment *s = segment_for(addr);
  if (s == nullptr) return 0;
  return impl_->run_end[static_cast<std::size_t>(s - impl_->loads.data())] - addr;
}

Result<std::vector<std::uint8_t>> CoreFile::build_id_at(std::uint64_t base) const {
  auto page = read_memory(base, 1u << 16);
  if (page.empty())
    return Error{Errc::kNotFound, fmt::format("the ELF header at {:#x} is not in the core", base)};
  Cursor image(page, base, "module ELF header");
  auto eh = read_elf64_ehdr(image);
  if (!eh && eh.error().code == Errc::kUnsupported)
    return Error{Errc::kNotFound, fmt::format("ELF header at {:#x} is not 64-bit little-endian", base)};
  if (!eh) return Error{Errc::kNotFound, fmt::format("no ELF header at {:#x} in the core", base)};
  auto table = phdr_table(image, *eh, kMaxEmbeddedPhdrs);
  if (!table)
    return Error{Errc::kNotFound, fmt::format("program headers of the ELF image at {:#x} are not usable: {}", base,
                                              table.error().message)};
  auto entries = phdr_entries(image, *table);
  if (!entries)
    return Error{Errc::kNotFound, fmt::format("program headers of the ELF image at {:#x} are not in the dumped "
                                              "bytes: {}", base, entries.error().message)};
  bool saw_note = false;
  std::uint64_t budget = kMaxEmbeddedNoteBytes;
  for (std::uint64_t i = 0; i < table->e_phnum && budget > 0; ++i) {
    auto phr = read_elf64_phdr(*entries);
    if (!phr) break; /* cannot happen: phdr_entries() holds the whole table */
    const Elf64_Phdr &ph = *phr;
    if (ph.p_type != PT_NOTE) continue;
    saw_note = true;
    if (ph.p_offset > page.size() || page.size() - ph.p_offset < ph.p_filesz) continue;
    const std::uint64_t len = std::min(ph.p_filesz, budget);
    budget -= len;
    std::vector<std::uint8_t> id;
    auto r = for_each_note(page.subspan(ph.p_offset, len), base + ph.p_offset,
                           ph.p_align == 8 ? 8 : 4, "module note",
                           [&](std::string_view name, std::uint32_t type,
                               std::span<const std::uint8_t> desc, std::uint64_t) {
      if (name == "GNU" && type == NT_GNU_BUILD_ID && id.empty() && !desc.empty() &&
          desc.size() <= kMaxBuildId)
        id.assign(desc.begin(), desc.end());
    });
    (void)r; /* a malformed note ends the walk; an id found before it counts */
    if (!id.empty()) return id;
  }
  return Error{Errc::kNotFound, saw_note ? fmt::format("no NT_GNU_BUILD_ID note in the ELF image at {:#x}", base)
                                         : fmt::format("the ELF image at {:#x} has no PT_NOTE", base)};
}

void CoreFile::Impl::build_modules() {
  /* Every lookup of a module goes through module_of_file: comparing paths
   * with every module made a core mapping many files quadratic. */
  std::unordered_map<std::string_view, std::size_t> index;
  modules.reserve(std::min<std::size_t>(notes.files.size(), 4096));
  module_of_file.reserve(notes.files.size());
  for (const auto &f : notes.files) {
    auto [it, fresh] = index.try_emplace(f.path, modules.size());
    if (fresh) {
      Module m;
      m.path = f.path;
      m.name = f.name;
      m.base = UINT64_MAX;
      m.end = f.end;
      modules.push_back(std::move(m));
    }
    module_of_file.push_back(it->second);
    Module &m = modules[it->second];
    if (f.file_offset == 0 && f.start < m.base) m.base = f.start;
    m.end = std::max(m.end, f.end);
  }
}

void CoreFile::fill_build_ids() {
  auto &modules = impl_->modules;
  const auto &files = impl_->notes.files;
  std::vector<bool> no_header(modules.size());
  for (std::size_t k = 0; k < modules.size(); ++k) no_header[k] = modules[k].base == UINT64_MAX;
  /* A module without a mapping at file offset 0 is placed at its first
   * mapping. */
  for (std::size_t i = 0; i < files.size(); ++i) {
    Module &m = modules[impl_->module_of_file[i]];
    if (m.base == UINT64_MAX) m.base = files[i].start;
  }
  /* One search per address: NT_FILE may name one image under many paths. */
  std::unordered_map<std::uint64_t, std::size_t> done;  /* base -> module already searched */
  for (std::size_t k = 0; k < modules.size(); ++k) {
    Module &m = modules[k];
    if (no_header[k]) {
      m.build_id_note = "no mapping at file offset 0 (ELF header not mapped)";
      continue;
    }
    if (auto [it, fresh] = done.try_emplace(m.base, k); !fresh) {
      m.build_id = modules[it->second].build_id;
      m.build_id_note = modules[it->second].build_id_note;
      m.is_elf = modules[it->second].is_elf;
      continue;
    }
    auto id = build_id_at(m.base);
    auto head = read_memory(m.base, 4);
    m.is_elf = head.size() == 4 && std::memcmp(head.data(), ELFMAG, SELFMAG) == 0;
    if (id) m.build_id = std::move(*id);
    else m.build_id_note = id.error().message;
  }
}

}  // namespace core_timeline::reader
