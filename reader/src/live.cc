/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/live.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <new>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/document/ids.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/ring.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

namespace {

constexpr std::uint64_t kPage = 4096;
/* Lane copies taken again when the lane moved or its writer wrapped it
 * during the copy (docs/ring-format.md, "Reading a live ring"), with a
 * pause before each that doubles from 20 us to 5 ms: a writer that runs
 * without pause is preempted now and then, and a copy made while it is
 * settles. */
constexpr int kLaneAttempts = 24;

void pause_before(int attempt) {
  if (attempt == 0) return;
  const long us = std::min(5000L, 20L << std::min(attempt - 1, 16));
  timespec ts{0, us * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

std::int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::uint64_t slot_clock_now() {
#if defined(__x86_64__)
  std::uint32_t lo = 0, hi = 0;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return std::uint64_t{hi} << 32 | lo;
#elif defined(__aarch64__)
  std::uint64_t v = 0;
  __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

/* A small /proc file, whole; nullopt with errno set when it cannot be read. */
std::optional<std::string> read_small(const std::string &path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string s;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    s.append(buf, static_cast<std::size_t>(n));
    if (s.size() > (64u << 20)) break; /* a maps file of a million mappings is enough */
  }
  return s;
}

struct Mapping {
  std::uint64_t start = 0, end = 0, offset = 0, inode = 0;
  std::string perms;
  std::string path;
};

/* /proc/PID/maps (proc(5)): "start-end perms offset dev inode   path". */
std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    Mapping m;
    char perms[8] = {}, dev[32] = {};
    int path_at = -1;
    const std::string l(line);
    if (std::sscanf(l.c_str(), "%lx-%lx %7s %lx %31s %lu %n", &m.start, &m.end, perms, &m.offset, dev, &m.inode,
                    &path_at) < 6 || m.end <= m.start)
      continue;
    m.perms = perms;
    if (path_at > 0 && static_cast<std::size_t>(path_at) < l.size()) m.path = l.substr(static_cast<std::size_t>(path_at));
    out.push_back(std::move(m));
  }
  return out;
}

bool is_ring_mapping(const Mapping &m) {
  return m.offset == 0 && m.path.rfind("/memfd:core-timeline", 0) == 0;
}

/* A file mapping, as the kernel's NT_FILE lists it (vma->vm_file): a path
 * that is one (not "[heap]", "[stack]", "[vdso]"...). */
bool is_file_mapping(const Mapping &m) { return !m.path.empty() && m.path[0] == '/'; }

class Target {
 public:
  explicit Target(pid_t pid) : pid_(pid) {}
  /* Reads [addr, addr + len) of the target into `out`.  Errors name the
   * address; ESRCH (the process is gone) is kNotFound. */
  Result<void> read(std::uint64_t addr, void *out, std::size_t len) const {
    auto *p = static_cast<std::uint8_t *>(out);
    while (len > 0) {
      const std::size_t chunk = std::min<std::size_t>(len, std::size_t{1} << 30);
      iovec local{p, chunk};
      iovec remote{reinterpret_cast<void *>(addr), chunk};
      const ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        return error(err, addr, len);
      }
      if (n == 0) return error(EFAULT, addr, len);
      p += n;
      addr += static_cast<std::uint64_t>(n);
      len -= static_cast<std::size_t>(n);
    }
    return {};
  }
  pid_t pid() const { return pid_; }

 private:
  Error error(int err, std::uint64_t addr, std::size_t len) const {
    if (err == ESRCH)
      return Error{Errc::kNotFound, fmt::format("pid {} exited during the snapshot (reading its memory: {})", pid_,
                                                ::strerrordesc_np(err)), err};
    if (err == EPERM || err == EACCES) return Error{Errc::kIo, access_refusal(pid_, err), err};
    return system_error(err, fmt::format("pid {}: reading {} bytes at {:#x} with process_vm_readv", pid_, len, addr));
  }
  pid_t pid_;
};

/* ------------------------------------------------------------- the ring */

struct RingCopy {
  std::vector<std::uint8_t> bytes;  /* the mapping's size; zero where not copied */
  std::uint32_t retried = 0;
  std::vector<std::string> warnings;
};

std::uint64_t lane_slack(bool shared, std::uint64_t n) {
  return shared ? std::min<std::uint64_t>(kSharedLaneSlack, n) : kPrivateLaneSlack;
}

/* The slots of the sequences that may be mid-write at the first
 * descriptor read (write_index w1): the lane's last `slack`, read again
 * once the lane is copied and before the second descriptor read, so that
 * only writes the second read bounds can show in them. */
struct Reread {
  std::uint64_t seq = 0;
  std::uint8_t bytes[f::kSlotSize] = {};
};

/* `slots_at`: the address of the slot area (lanes_offset); `extent` the
 * lane's (LaneDesc.extent, or its first slots' for versions 1 and 2) of
 * n slots. */
Result<std::vector<Reread>> reread_hot(const Target &t, std::uint64_t slots_at, std::uint64_t extent, std::uint64_t n,
                                       std::uint64_t w1, bool shared) {
  const std::uint64_t slack = lane_slack(shared, n);
  std::vector<Reread> out;
  for (std::uint64_t seq = w1 > slack ? w1 - slack + 1 : 1; seq <= w1; ++seq) {
    Reread r;
    r.seq = seq;
    CT_TRY_VOID(t.read(slots_at + f::extent_slot(extent, (seq - 1) % n) * f::kSlotSize, r.bytes, sizeof r.bytes));
    out.push_back(r);
  }
  return out;
}

/* The slots of one lane as copied, made to show the lane at its first
 * descriptor read (write_index w1) although its writer kept writing until
 * the second (w2): docs/ring-format.md, "Reading a live ring".  `slots`
 * is the slot area (lanes_offset) in the copy and `extent` the lane's (n
 * slots); `again` its last reserved slots read again before the second
 * descriptor read. */
void settle_lane(std::uint8_t *slots, std::uint64_t extent, std::uint64_t n, std::uint64_t w1, std::uint64_t w2,
                 bool shared, const std::vector<Reread> &again) {
  const std::uint64_t slack = lane_slack(shared, n);
  if (w2 < w1) w2 = w1; /* a counter that went back: the reader judges it */
  /* Sequences up to `gone` had their slot reused by a sequence the lane
   * had reserved by the second read: overwritten, maybe during the copy. */
  const std::uint64_t gone = w2 > n ? w2 - n : 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint8_t *s = slots + f::extent_slot(extent, i) * f::kSlotSize;
    std::uint64_t b = 0, e = 0;
    std::memcpy(&b, s + offsetof(f::Slot, begin_seq), 8);
    std::memcpy(&e, s + offsetof(f::Slot, end_seq), 8);
    if (b == 0 && e == 0) continue;
    const std::uint64_t seq = b & ~f::kSeqWriting;
    if (seq == 0 || (seq - 1) % n != i) continue; /* not this slot's: the reader calls it invalid */
    if ((seq > w1 && seq <= w2 + slack) || seq <= gone) std::memset(s, 0, f::kSlotSize);
  }
  /* A last reserved slot that changed between the copy and its second
   * read was being written (in flight), whatever the copy shows. */
  for (const Reread &r : again) {
    if (r.seq <= gone) continue;
    std::uint8_t *s = slots + f::extent_slot(extent, (r.seq - 1) % n) * f::kSlotSize;
    std::uint64_t b = 0;
    std::memcpy(&b, s, 8);
    if (b == r.seq && std::memcmp(r.bytes, s, f::kSlotSize) != 0) {
      const std::uint64_t writing = r.seq | f::kSeqWriting;
      std::memcpy(s + offsetof(f::Slot, begin_seq), &writing, 8);
    }
  }
}

Result<RingCopy> copy_ring(const Target &t, const Mapping &m) {
  RingCopy rc;
  const std::uint64_t size = m.end - m.start;
  if (size > f::kMaxRegionSize + kPage) {
    /* No ring is that big (ring_format.h): copy its first page, as the
     * reader would look at it. */
    rc.bytes.assign(kPage, 0);
    CT_TRY_VOID(t.read(m.start, rc.bytes.data(), kPage));
    rc.warnings.push_back(fmt::format("the mapping {} at {:#x} is {} bytes, more than a ring can be: only its first "
                                      "page was copied", m.path, m.start, size));
    return rc;
  }
  rc.bytes.assign(size, 0);
  auto &b = rc.bytes;
  const std::uint64_t first = std::min<std::uint64_t>(size, f::kHeaderSizeV3);
  CT_TRY_VOID(t.read(m.start, b.data(), first));
  f::RingHeader h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(&h, b.data(), first);
  const std::uint64_t table_end = std::uint64_t{h.lane_table_offset} + std::uint64_t{h.lane_count} * f::kLaneDescSize;
  auto whole = [&]() -> Result<RingCopy> {
    /* Not a ring this reader can copy lane by lane (no magic, a ring-less
     * header, a header that does not validate): its bytes as they are,
     * for the reader to judge as it judges a core's. */
    CT_TRY_VOID(t.read(m.start, b.data(), size));
    return std::move(rc);
  };
  if (!has_ring_magic(b) || (h.incompat_flags & f::kIncompatNoRing) != 0 || table_end > size ||
      h.lane_count > f::kMaxLanes)
    return whole();
  CT_TRY_VOID(t.read(m.start, b.data(), std::max<std::uint64_t>(first, table_end)));
  auto hv = validate_ring_header({b.data(), static_cast<std::size_t>(std::max<std::uint64_t>(first, table_end))}, size);
  if (!hv) return whole();
  const RingHeaderInfo &hd = *hv;
  /* The header and lane table as read; then the name table (entries are
   * committed with a state word, so a copy is as good as a core's). */
  if (hd.names_offset != 0 && hd.names_capacity != 0)
    CT_TRY_VOID(t.read(m.start + hd.names_offset, b.data() + hd.names_offset,
                       std::uint64_t{hd.names_capacity} * f::kNameEntrySize));
  const std::uint64_t S = hd.slots_per_lane;
  const std::uint64_t slot_area = (hd.region_size - hd.lanes_offset) / f::kSlotSize;
  for (std::uint32_t lane = 0; lane < hd.lane_count; ++lane) {
    const std::uint64_t desc_off = hd.lane_table_offset + std::uint64_t{lane} * f::kLaneDescSize;
    f::LaneDesc d1{}, d2{};
    std::uint64_t x_extent = 0, x_slots = 0;
    std::vector<Reread> again;
    bool settled = false;
    /* The lane's segments (one, or two for a split lane): copy or clear. */
    const auto segments = [&](auto &&each) -> Result<void> {
      const std::uint64_t seg = f::extent_split(x_extent) ? f::extent_segment_slots(x_extent) : x_slots;
      for (std::uint64_t i = 0; i < x_slots; i += seg)
        CT_TRY_VOID(each(hd.lanes_offset + f::extent_slot(x_extent, i) * f::kSlotSize, seg * f::kSlotSize));
      return {};
    };
    for (int attempt = 0; attempt < kLaneAttempts && !settled; ++attempt) {
      if (attempt > 0) rc.retried++;
      pause_before(attempt);
      CT_TRY_VOID(t.read(m.start + desc_off, &d1, sizeof d1));
      std::uint32_t log2 = 0;
      while ((std::uint64_t{1} << log2) < S && log2 < 32) ++log2;
      x_extent = f::make_extent(static_cast<std::uint32_t>(std::uint64_t{lane} * S), log2);
      if (hd.version >= 3)
        x_extent = hd.version >= f::kSplitLaneVersion ? d1.extent : d1.extent & ((std::uint64_t{1} << 40) - 1);
      const std::uint32_t x_log2 = f::extent_log2(x_extent);
      x_slots = x_log2 >= 3 && x_log2 <= 25 ? f::extent_slots(x_extent) : 0;
      const std::uint64_t seg = f::extent_split(x_extent) ? x_slots / 2 : x_slots;
      if (x_slots == 0 || (x_extent >> 63) != 0 || f::extent_first_slot(x_extent) + seg > slot_area ||
          (f::extent_split(x_extent) && f::extent_second_slot(x_extent) + seg > slot_area)) {
        x_slots = 0; /* an extent the reader will refuse: no slots */
        break;
      }
      if (d1.write_index == 0) {
        x_slots = 0; /* never written: its slots stay zero */
        break;
      }
      const bool shared = (d1.flags & f::kLaneShared) != 0;
      CT_TRY_VOID(segments([&](std::uint64_t off, std::uint64_t len) { return t.read(m.start + off, b.data() + off, len); }));
      CT_TRY(hot, reread_hot(t, m.start + hd.lanes_offset, x_extent, x_slots, d1.write_index, shared));
      again = std::move(hot);
      CT_TRY_VOID(t.read(m.start + desc_off, &d2, sizeof d2));
      const std::uint64_t slack = lane_slack(shared, x_slots);
      settled = d2.extent == d1.extent && d2.write_index >= d1.write_index &&
                d2.write_index - d1.write_index + slack < x_slots;
      if (!settled && attempt + 1 < kLaneAttempts)
        CT_TRY_VOID(segments([&](std::uint64_t off, std::uint64_t len) -> Result<void> {
          std::memset(b.data() + off, 0, len);
          return {};
        }));
      else if (!settled)
        rc.warnings.push_back(fmt::format("lane {}: its writer moved or wrapped it during each of {} copies; the "
                                          "last copy is used", lane, kLaneAttempts));
    }
    if (x_slots > 0)
      settle_lane(b.data() + hd.lanes_offset, x_extent, x_slots, d1.write_index, d2.write_index,
                  (d1.flags & f::kLaneShared) != 0, again);
    std::memcpy(b.data() + desc_off, &d1, sizeof d1);
  }
  return rc;
}

/* --------------------------------------------------------- ELF assembly */

void put_bytes(std::vector<std::uint8_t> &out, const void *p, std::size_t n) {
  const auto *b = static_cast<const std::uint8_t *>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<std::uint8_t> &out, const T &v) {
  put_bytes(out, &v, sizeof v);
}
void pad4(std::vector<std::uint8_t> &out) {
  while (out.size() % 4 != 0) out.push_back(0);
}

void add_note(std::vector<std::uint8_t> &notes, std::string_view name, std::uint32_t type,
              const std::vector<std::uint8_t> &desc) {
  put(notes, static_cast<std::uint32_t>(name.size() + 1));
  put(notes, static_cast<std::uint32_t>(desc.size()));
  put(notes, type);
  put_bytes(notes, name.data(), name.size());
  notes.push_back(0);
  pad4(notes);
  put_bytes(notes, desc.data(), desc.size());
  pad4(notes);
}

/* struct elf_prstatus (include/uapi/linux/elfcore.h, 64-bit): pr_pid at
 * 32, pr_ppid 36, pr_pgrp 40, pr_sid 44, pr_reg at 112; registers unknown:
 * zero (the reader ignores them in a live snapshot). */
std::vector<std::uint8_t> prstatus(std::uint32_t tid, std::uint32_t ppid, std::uint16_t machine) {
  const std::size_t nregs = machine == EM_AARCH64 ? 34 : 27;
  std::vector<std::uint8_t> d(112 + nregs * 8 + 8, 0);
  std::memcpy(d.data() + 32, &tid, 4);
  std::memcpy(d.data() + 36, &ppid, 4);
  return d;
}

std::string status_field(const std::string &status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    const std::size_t nl = status.find('\n', at);
    std::string_view line(status.data() + at, (nl == std::string::npos ? status.size() : nl) - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      return std::string(line);
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return {};
}

/* The four ids of a "Uid:" or "Gid:" line (real, effective, saved, fs). */
std::vector<unsigned long> ids_of(const std::string &field) {
  std::vector<unsigned long> v;
  std::istringstream in(field);
  unsigned long x = 0;
  while (in >> x) v.push_back(x);
  return v;
}

/* struct elf_prpsinfo, 64-bit: pr_state 0, pr_sname 1, pr_zomb 2, pr_nice 3,
 * pr_flag 8, pr_uid 16, pr_gid 20, pr_pid 24, pr_ppid 28, pr_pgrp 32,
 * pr_sid 36, pr_fname 40 [16], pr_psargs 56 [80]; 136 bytes. */
std::vector<std::uint8_t> prpsinfo(std::uint32_t pid, std::uint32_t ppid, std::uint32_t uid, std::uint32_t gid,
                                   char state, const std::string &comm, const std::string &cmdline) {
  std::vector<std::uint8_t> d(136, 0);
  d[1] = static_cast<std::uint8_t>(state);
  std::memcpy(d.data() + 16, &uid, 4);
  std::memcpy(d.data() + 20, &gid, 4);
  std::memcpy(d.data() + 24, &pid, 4);
  std::memcpy(d.data() + 28, &ppid, 4);
  std::memcpy(d.data() + 40, comm.data(), std::min<std::size_t>(comm.size(), 15));
  std::string args = cmdline;
  while (!args.empty() && args.back() == '\0') args.pop_back();
  std::replace(args.begin(), args.end(), '\0', ' ');
  std::memcpy(d.data() + 56, args.data(), std::min<std::size_t>(args.size(), 79));
  return d;
}

/* NT_FILE (fs/binfmt_elf.c fill_files_note): count, page size, then
 * (start, end, page offset) per file mapping, then their names. */
std::vector<std::uint8_t> file_note(const std::vector<Mapping> &maps) {
  std::vector<std::uint8_t> d;
  std::uint64_t count = 0;
  for (const auto &m : maps) count += is_file_mapping(m);
  put(d, count);
  put(d, kPage);
  for (const auto &m : maps)
    if (is_file_mapping(m)) {
      put(d, m.start);
      put(d, m.end);
      put(d, m.offset / kPage);
    }
  for (const auto &m : maps)
    if (is_file_mapping(m)) {
      put_bytes(d, m.path.data(), m.path.size());
      d.push_back(0);
    }
  return d;
}

std::uint32_t pflags(const std::string &perms) {
  std::uint32_t fl = 0;
  if (perms.size() > 0 && perms[0] == 'r') fl |= PF_R;
  if (perms.size() > 1 && perms[1] == 'w') fl |= PF_W;
  if (perms.size() > 2 && perms[2] == 'x') fl |= PF_X;
  return fl;
}

struct Load {
  std::uint64_t vaddr = 0, memsz = 0;
  std::uint32_t flags = 0;
  std::vector<std::uint8_t> data;  /* p_filesz = data.size() */
};

std::vector<std::uint8_t> assemble(std::uint16_t machine, const std::vector<std::uint8_t> &notes,
                                   std::vector<Load> &loads) {
  const std::size_t phnum = 1 + loads.size();
  std::uint64_t at = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  const std::uint64_t notes_at = at;
  at = (at + notes.size() + kPage - 1) & ~(kPage - 1);
  std::vector<std::uint64_t> offsets;
  for (const auto &l : loads) {
    offsets.push_back(at);
    at += (l.data.size() + kPage - 1) & ~(kPage - 1);
  }
  std::vector<std::uint8_t> out;
  out.reserve(at);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
  eh.e_type = ET_CORE;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<Elf64_Half>(phnum);
  put(out, eh);
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = notes_at;
  note.p_filesz = notes.size();
  note.p_align = 4;
  put(out, note);
  for (std::size_t i = 0; i < loads.size(); ++i) {
    Elf64_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_flags = loads[i].flags;
    ph.p_offset = offsets[i];
    ph.p_vaddr = loads[i].vaddr;
    ph.p_filesz = loads[i].data.size();
    ph.p_memsz = loads[i].memsz;
    ph.p_align = kPage;
    put(out, ph);
  }
  put_bytes(out, notes.data(), notes.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    out.resize(offsets[i], 0);
    put_bytes(out, loads[i].data.data(), loads[i].data.size());
    std::vector<std::uint8_t>().swap(loads[i].data); /* the ring's bytes are held once more only briefly */
  }
  out.resize(at, 0);
  return out;
}

std::uint16_t host_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

/* A /proc/PID file that could not be read: gone, refused, or else. */
Error proc_error(pid_t pid, const std::string &what, int err) {
  if (err == ENOENT || err == ESRCH)
    return Error{Errc::kNotFound, fmt::format("pid {}: no such process ({} cannot be read)", pid, what), err};
  if (err == EPERM || err == EACCES) return Error{Errc::kIo, access_refusal(pid, err), err};
  return system_error(err, fmt::format("pid {}: reading {}", pid, what));
}

/* e_phnum is 16 bits, and 0xffff (PN_XNUM) means "see section 0", which
 * this builder does not write: past 65534 program headers (a process
 * with more mappings than the default vm.max_map_count, 65530, allows)
 * keep every load with bytes (the rings, the ELF first pages) and as many
 * data-less ones as fit, rather than a truncated e_phnum.  An error when
 * the loads with bytes alone are too many. */
Result<void> fit_program_headers(pid_t pid, std::vector<Load> &loads, std::vector<std::string> &warnings) {
  if (1 + loads.size() >= PN_XNUM) {
    const std::size_t max_loads = PN_XNUM - 2;
    std::size_t with_data = 0;
    for (const auto &l : loads) with_data += !l.data.empty();
    std::size_t room = max_loads > with_data ? max_loads - with_data : 0;
    const std::size_t before = loads.size();
    std::vector<Load> kept;
    kept.reserve(max_loads);
    for (auto &l : loads)
      if (!l.data.empty() || (room > 0 && room-- > 0)) kept.push_back(std::move(l));
    loads = std::move(kept);
    if (loads.size() > max_loads)
      return Error{Errc::kUnsupported, fmt::format("pid {}: {} mappings with bytes to copy are more than an ELF core "
                                                   "without section headers can list ({})", pid, loads.size(),
                                                   max_loads)};
    warnings.push_back(fmt::format("the process has {} mappings, more than an ELF core without section headers "
                                   "can list ({}): {} without copied bytes were left out", before, max_loads,
                                   before - loads.size()));
  }
  return {};
}

/* The process's (pid, parent pid), and `tids` made its threads' ids, as
 * its own pid namespace gives them.  In a pid namespace of its own, the ids
 * its own namespace gives, as a kernel core has them (fs/binfmt_elf.c
 * fill_prstatus(), fill_psinfo(): task_pid_vnr()) and as its ring records
 * them (gettid(2)), so that the ring's pid and tids match the core's; the
 * pid asked for (the reader's namespace's) stays in the CORE-TIMELINE note
 * (snapshot.pid).  An error when a thread exits meanwhile. */
Result<std::pair<std::uint32_t, std::uint32_t>> own_ids(pid_t pid, const std::string &proc, const std::string &status,
                                                        std::uint32_t ppid, std::vector<std::uint32_t> &tids) {
  const std::vector<std::uint64_t> ns_pids = core_timeline::document::namespace_pids(status);
  std::uint32_t own_pid = static_cast<std::uint32_t>(pid), own_ppid = ppid;
  if (ns_pids.size() > 1 && ns_pids.front() == static_cast<std::uint64_t>(pid)) {
    const std::size_t level = ns_pids.size() - 1;
    own_pid = static_cast<std::uint32_t>(ns_pids.back());
    /* The parent is in the same namespace or an outer one: its id there,
     * or 0 when it is outside (as the kernel writes it). */
    own_ppid = 0;
    if (auto ps = read_small(fmt::format("/proc/{}/status", ppid))) {
      const auto pp = core_timeline::document::namespace_pids(*ps);
      if (pp.size() > level) own_ppid = static_cast<std::uint32_t>(pp[level]);
    }
    for (auto &tid : tids) {
      /* A thread's own id in each namespace is its NSpid line (NStgid is
       * its process's), proc(5). */
      const auto ts = read_small(fmt::format("{}/task/{}/status", proc, tid));
      std::vector<std::uint64_t> t;
      if (ts) {
        std::istringstream in(status_field(*ts, "NSpid"));
        for (std::uint64_t v = 0; in >> v;) t.push_back(v);
      }
      if (t.size() != ns_pids.size() || t.front() != tid)
        return Error{Errc::kNotFound, fmt::format("pid {}: thread {} exited during the snapshot (its ids in the "
                                                  "process's pid namespace cannot be read)", pid, tid)};
      tid = static_cast<std::uint32_t>(t.back());
    }
  }
  return std::pair{own_pid, own_ppid};
}

Result<LiveSnapshot> snapshot(pid_t pid, const SnapshotOptions &options) {
  if (pid <= 0) return Error{Errc::kInvalidArgument, fmt::format("pid {} is not a process id", pid)};
  const std::string proc = fmt::format("/proc/{}", pid);
  const Target target(pid);
  LiveSnapshot snap;
  const std::int64_t mono_start = clock_ns(CLOCK_MONOTONIC);

  auto status = read_small(proc + "/status");
  if (!status) return proc_error(pid, proc + "/status", errno);
  if (status_field(*status, "Tgid") != std::to_string(pid))
    return Error{Errc::kInvalidArgument,
                 fmt::format("pid {} is a thread of process {}, not a process: give its process id", pid,
                             status_field(*status, "Tgid"))};
  auto maps_text = read_small(proc + "/maps");
  if (!maps_text) return proc_error(pid, proc + "/maps", errno);
  const std::vector<Mapping> maps = parse_maps(*maps_text);
  if (maps.empty()) {
    /* A zombie, or a kernel thread: no memory. */
    if (status_field(*status, "State").rfind("Z", 0) == 0)
      return Error{Errc::kNotFound, fmt::format("pid {} has exited (a zombie): it has no memory to read", pid)};
    return Error{Errc::kNotFound, fmt::format("pid {} has no memory mappings (a kernel thread?)", pid)};
  }

  if (options.after_maps) options.after_maps();

  std::vector<Load> loads;
  for (const auto &m : maps) {
    Load l;
    l.vaddr = m.start;
    l.memsz = m.end - m.start;
    l.flags = pflags(m.perms);
    if (is_ring_mapping(m)) {
      CT_TRY(rc, copy_ring(target, m));
      l.data = std::move(rc.bytes);
      snap.note.lanes_retried += rc.retried;
      for (auto &w : rc.warnings) snap.warnings.push_back(std::move(w));
      snap.rings++;
    } else if (((is_file_mapping(m) && m.offset == 0) || m.path == "[vdso]") && !m.perms.empty() &&
               m.perms[0] == 'r') {
      /* The first page of an ELF file mapping, as coredump_filter bit 4
       * dumps it (its build-id note), and of the vDSO, which the kernel
       * dumps whole. */
      std::uint8_t page[kPage];
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPage, l.memsz));
      if (auto r = target.read(m.start, page, n); !r) {
        if (r.error().code == Errc::kNotFound || r.error().sys_errno == EPERM || r.error().sys_errno == EACCES)
          return std::move(r).error();
        /* unreadable (a file truncated under its mapping): as the kernel, leave it out */
      } else if (n >= SELFMAG && std::memcmp(page, ELFMAG, SELFMAG) == 0) {
        l.data.assign(page, page + n);
      }
    }
    loads.push_back(std::move(l));
  }
  CT_TRY_VOID(fit_program_headers(pid, loads, snap.warnings));
  /* The snapshot's own clock anchor, read as libtimeline reads its own:
   * the slot clock on both sides of CLOCK_MONOTONIC. */
  const std::uint64_t t0 = slot_clock_now();
  snap.note.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
  const std::uint64_t t1 = slot_clock_now();
  snap.note.realtime_ns = clock_ns(CLOCK_REALTIME);
  if (t0 != 0 && t1 >= t0 && t1 - t0 < UINT32_MAX) {
    snap.note.ticks = t0 + (t1 - t0) / 2;
    snap.note.spread_ticks = static_cast<std::uint32_t>(t1 - t0);
  }
  snap.note.duration_ns = snap.note.monotonic_ns - mono_start;
  snap.note.version = kLiveNoteVersion;
  snap.note.pid = static_cast<std::uint32_t>(pid);

  /* Threads, process facts, auxv: after the memory, so that a process
   * that exited meanwhile is caught by the reads above or these. */
  std::vector<std::uint32_t> tids;
  {
    const std::string task = proc + "/task";
    DIR *d = ::opendir(task.c_str());
    if (d == nullptr) return proc_error(pid, task, errno);
    while (dirent *e = ::readdir(d)) {
      char *end = nullptr;
      const unsigned long tid = std::strtoul(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<std::uint32_t>(tid));
    }
    ::closedir(d);
    std::sort(tids.begin(), tids.end());
  }
  auto auxv = read_small(proc + "/auxv");
  if (!auxv) return proc_error(pid, proc + "/auxv", errno);
  auto cmdline = read_small(proc + "/cmdline");
  if (!cmdline) return proc_error(pid, proc + "/cmdline", errno);
  status = read_small(proc + "/status");
  if (!status) return proc_error(pid, proc + "/status", errno);
  if (tids.empty() || auxv->empty())
    return Error{Errc::kNotFound, fmt::format("pid {} exited during the snapshot (no threads or auxv left)", pid)};
  const auto uids = ids_of(status_field(*status, "Uid"));
  const auto gids = ids_of(status_field(*status, "Gid"));
  const std::uint32_t ppid = static_cast<std::uint32_t>(std::strtoul(status_field(*status, "PPid").c_str(), nullptr, 10));
  const std::string state = status_field(*status, "State");

  const std::uint16_t machine = host_machine();
  std::vector<std::uint8_t> notes;
  /* The thread asked for (the process's main thread) first, as the kernel
   * puts the thread that took the signal first. */
  std::stable_partition(tids.begin(), tids.end(), [&](std::uint32_t t) { return t == static_cast<std::uint32_t>(pid); });
  CT_TRY(own, own_ids(pid, proc, *status, ppid, tids));
  const auto [own_pid, own_ppid] = own;
  for (const auto tid : tids) add_note(notes, "CORE", NT_PRSTATUS, prstatus(tid, own_ppid, machine));
  add_note(notes, "CORE", NT_PRPSINFO,
           prpsinfo(own_pid, own_ppid, uids.empty() ? 0 : static_cast<std::uint32_t>(uids[0]),
                    gids.empty() ? 0 : static_cast<std::uint32_t>(gids[0]), state.empty() ? '?' : state[0],
                    status_field(*status, "Name"), *cmdline));
  add_note(notes, "CORE", NT_AUXV, std::vector<std::uint8_t>(auxv->begin(), auxv->end()));
  add_note(notes, "CORE", NT_FILE, file_note(maps));
  std::vector<std::uint8_t> live(sizeof snap.note);
  std::memcpy(live.data(), &snap.note, sizeof snap.note);
  add_note(notes, kLiveNoteName, kNtLiveSnapshot, live);
  snap.core = assemble(machine, notes, loads);
  return snap;
}

bool has_cap_sys_ptrace() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[CAP_SYS_PTRACE / 32].effective & (1u << (CAP_SYS_PTRACE % 32))) != 0;
}

/* True when `ancestor` is `pid` or one of its ancestors (Yama scope 1's
 * "descendant" test; /proc/PID/status PPid). */
bool is_ancestor_of(pid_t ancestor, pid_t pid) {
  for (int depth = 0; pid > 1 && depth < 4096; ++depth) {
    if (pid == ancestor) return true;
    auto st = read_small(fmt::format("/proc/{}/status", pid));
    if (!st) return false;
    pid = static_cast<pid_t>(std::strtol(status_field(*st, "PPid").c_str(), nullptr, 10));
  }
  return pid == ancestor;
}

/* The real, effective and saved ids of a /proc/PID/status Uid or Gid line
 * (its fields are tab-separated; the fourth, the filesystem id, is left
 * out), separated by spaces: "0 0 0". */
std::string first_three(const std::vector<unsigned long> &ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < 3; ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out.empty() ? "unknown" : out;
}

std::string refusal(pid_t pid, int err) {
  const std::string head = fmt::format("pid {}: reading its memory was refused ({})", pid, ::strerrordesc_np(err));
  auto status = read_small(fmt::format("/proc/{}/status", pid));
  if (!status) return head + ", and its /proc/PID/status cannot be read to tell which rule refused it";
  const auto uids = ids_of(status_field(*status, "Uid"));
  const auto gids = ids_of(status_field(*status, "Gid"));
  const uid_t ruid = ::getuid();
  const gid_t rgid = ::getgid();
  const bool cap = has_cap_sys_ptrace();
  std::optional<int> yama;
  if (auto y = read_small("/proc/sys/kernel/yama/ptrace_scope")) yama = std::atoi(y->c_str());
  const std::string yama_text = yama ? fmt::format("Yama ptrace_scope is {}", *yama) : "this kernel has no Yama";
  /* ptrace(2), "Ptrace access mode checking", in its order. */
  if (yama && *yama >= 3)
    return head + fmt::format(": Yama ptrace_scope is 3 (no attach): no process may read another's memory, not "
                              "even with CAP_SYS_PTRACE, until reboot (Documentation/admin-guide/LSM/Yama.rst)");
  const bool ids_match = uids.size() >= 3 && gids.size() >= 3 &&
                         std::all_of(uids.begin(), uids.begin() + 3, [&](unsigned long u) { return u == ruid; }) &&
                         std::all_of(gids.begin(), gids.begin() + 3, [&](unsigned long g) { return g == rgid; });
  if (!ids_match && !cap)
    return head + fmt::format(": its uids (real, effective, saved) are {} and gids {}, and ours (real) are uid {} gid "
                              "{}: reading another user's process needs the same ids or CAP_SYS_PTRACE, which we do "
                              "not have (ptrace(2), \"Ptrace access mode checking\"; run as its user or as root)",
                              first_three(uids), first_three(gids), ruid, rgid);
  /* Not dumpable (prctl PR_SET_DUMPABLE 0, a setuid or file-capability
   * program, or a credential change): /proc/PID/mem then belongs to root
   * (proc(5)). */
  struct stat mem {};
  const bool not_dumpable = ::stat(fmt::format("/proc/{}/mem", pid).c_str(), &mem) == 0 && mem.st_uid == 0 &&
                            !uids.empty() && uids[0] != 0;
  if (not_dumpable && !cap)
    return head + ": the process is not dumpable (it called prctl(PR_SET_DUMPABLE, 0), runs a set-user-ID or "
                  "file-capability program, or changed its credentials), so only a process with CAP_SYS_PTRACE may "
                  "read it (ptrace(2), \"Ptrace access mode checking\"; prctl(2))";
  if (yama && *yama == 2 && !cap)
    return head + ": Yama ptrace_scope is 2 (admin-only attach): reading another process's memory needs "
                  "CAP_SYS_PTRACE (Documentation/admin-guide/LSM/Yama.rst)";
  if (yama && *yama == 1 && !cap && !is_ancestor_of(::getpid(), pid))
    return head + ": Yama ptrace_scope is 1 (restricted): only an ancestor of the process, a process it named with "
                  "prctl(PR_SET_PTRACER), or one with CAP_SYS_PTRACE may read its memory; run the reader as root, or "
                  "set kernel.yama.ptrace_scope=0 (Documentation/admin-guide/LSM/Yama.rst)";
  return head + fmt::format(": none of the rules this reader knows explains it (same ids {}, {}, {}{}); another "
                            "security module (SELinux, AppArmor) or a user namespace may have refused it",
                            ids_match ? "yes" : "no", cap ? "CAP_SYS_PTRACE held" : "no CAP_SYS_PTRACE",
                            yama_text, not_dumpable ? ", not dumpable" : "");
}

}  // namespace

Result<LiveSnapshot> snapshot_process(pid_t pid, const SnapshotOptions &options) noexcept {
  try {
    return snapshot(pid, options);
  } catch (const std::bad_alloc &) {
    return Error{Errc::kNoMemory, fmt::format("pid {}: out of memory while taking the snapshot", pid)};
  } catch (const std::exception &e) {
    return Error{Errc::kInternal, fmt::format("pid {}: internal error while taking the snapshot: {}", pid, e.what())};
  }
}

std::string access_refusal(pid_t pid, int err) noexcept {
  try {
    return refusal(pid, err);
  } catch (...) {
    return "reading the process's memory was refused (EPERM)";
  }
}

namespace {

/* What a file of mode `m` is, as a sentence names it. */
const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

Error not_regular(const std::string &path, mode_t m) {
  return Error{Errc::kInvalidArgument,
               fmt::format("--save {}: it is {}; --save writes a regular file only (a new one, or an existing one "
                           "with --force), so nothing was written",
                           path, file_kind(m))};
}

}  // namespace

Result<void> save_snapshot(const std::vector<std::uint8_t> &bytes, const std::string &path, bool overwrite) {
  /* Looked at before it is opened, so that a FIFO, a device or a socket is
   * never opened (an open of a FIFO blocks until a reader comes; a device's
   * open may act). */
  struct Closer {
    int fd = -1;
    int get() const { return fd; }
    bool valid() const { return fd >= 0; }
    void reset(int f) { fd = f; }
    int release() { return std::exchange(fd, -1); }
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } fd;
  struct stat before {};
  if (::lstat(path.c_str(), &before) != 0) {
    if (errno != ENOENT) return system_error(errno, fmt::format("--save {}", path));
    fd.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
    if (!fd.valid()) return system_error(errno, fmt::format("--save {}: creating it", path));
  } else {
    if (!S_ISREG(before.st_mode)) return not_regular(path, before.st_mode);
    if (!overwrite)
      return Error{Errc::kIo, fmt::format("--save {}: the file exists; --force replaces it", path),
                   EEXIST};
    /* O_NONBLOCK and the fstat below: what is opened is the regular file
     * looked at, or nothing is written (swapped for a FIFO meanwhile, the
     * open fails or the fstat tells). */
    fd.reset(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid()) return system_error(errno, fmt::format("--save {}: opening it", path));
    struct stat now {};
    if (::fstat(fd.get(), &now) != 0) return system_error(errno, fmt::format("--save {}: fstat", path));
    if (!S_ISREG(now.st_mode)) return not_regular(path, now.st_mode);
    if (now.st_dev != before.st_dev || now.st_ino != before.st_ino)
      return Error{Errc::kIo, fmt::format("--save {}: the file was replaced while it was being opened; nothing was "
                                          "written", path)};
    /* Its mode and owner stay its own: only a file this call created is
     * given mode 0600. */
    if (::ftruncate(fd.get(), 0) != 0) return system_error(errno, fmt::format("--save {}: truncating it", path));
  }
  std::size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return system_error(errno, fmt::format("--save {}: write", path));
    }
    at += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return system_error(errno, fmt::format("--save {}: fsync", path));
  if (::close(fd.release()) != 0) return system_error(errno, fmt::format("--save {}: close", path));
  return {};
}

}  // namespace core_timeline::reader
