/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/elf_headers.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>


namespace core_timeline::reader {

namespace {
constexpr std::size_t kPhoffAt = offsetof(Elf64_Ehdr, e_phoff);
constexpr std::size_t kShoffAt = offsetof(Elf64_Ehdr, e_shoff);
constexpr std::size_t kPhentsizeAt = offsetof(Elf64_Ehdr, e_phentsize);
constexpr std::size_t kPhnumAt = offsetof(Elf64_Ehdr, e_phnum);
}  // namespace

Result<Elf64_Ehdr> read_elf64_ehdr(Cursor &c) {
  const std::size_t at = c.pos();
  Cursor look = c;
  CT_TRY(ident, look.bytes(std::min<std::size_t>(c.remaining(), EI_NIDENT), "e_ident"));
  if (ident.size() < SELFMAG || std::memcmp(ident.data(), ELFMAG, SELFMAG) != 0)
    return c.error(Errc::kNotElf, "e_ident", "no ELF magic (\\x7fELF), not an ELF file");
  if (ident.size() > EI_CLASS && ident[EI_CLASS] != ELFCLASS64)
    return c.error_at(at + EI_CLASS, Errc::kUnsupported, "e_ident[EI_CLASS]",
                      fmt::format("{} is not ELFCLASS64 ({}): not a 64-bit ELF file, unsupported",
                                  ident[EI_CLASS], ELFCLASS64));
  if (ident.size() > EI_DATA && ident[EI_DATA] != ELFDATA2LSB)
    return c.error_at(at + EI_DATA, Errc::kUnsupported, "e_ident[EI_DATA]",
                      fmt::format("{} is not ELFDATA2LSB ({}): not a little-endian ELF file, unsupported",
                                  ident[EI_DATA], ELFDATA2LSB));
  if (c.remaining() < sizeof(Elf64_Ehdr))
    return c.error(Errc::kTruncated, "Elf64_Ehdr",
                   fmt::format("the ELF header is cut off ({} of {} bytes)", c.remaining(), sizeof(Elf64_Ehdr)));
  CT_TRY(bytes, c.bytes(sizeof(Elf64_Ehdr), "Elf64_Ehdr"));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  return eh;
}

Result<PhdrTable> phdr_table(const Cursor &file, const Elf64_Ehdr &eh, std::uint64_t max_phnum) {
  if (eh.e_phentsize != sizeof(Elf64_Phdr))
    return file.error_at(kPhentsizeAt, Errc::kBadData, "e_phentsize",
                         fmt::format("{} is not sizeof(Elf64_Phdr) ({})", eh.e_phentsize, sizeof(Elf64_Phdr)));
  PhdrTable t{eh.e_phoff, eh.e_phnum};
  std::string_view count_field = "e_phnum";
  std::size_t count_at = kPhnumAt;
  if (eh.e_phnum == PN_XNUM) {
    /* 65535 or more program headers: the count is in section header 0's
     * sh_info (elf(5); fs/binfmt_elf.c fill_extnum_info). */
    if (eh.e_shoff == 0 || eh.e_shoff > file.size() || file.size() - eh.e_shoff < sizeof(Elf64_Shdr))
      return file.error_at(kShoffAt, Errc::kTruncated, "e_shoff",
                           fmt::format("e_phnum is PN_XNUM, but section header 0 at {:#x}, whose sh_info holds the "
                                       "count, is not in the {:#x} bytes",
                                       eh.e_shoff, file.size()));
    Cursor sh = file;
    CT_TRY_VOID(sh.seek(eh.e_shoff, "e_shoff"));
    CT_TRY(bytes, sh.bytes(sizeof(Elf64_Shdr), "section header 0"));
    Elf64_Shdr sh0;
    std::memcpy(&sh0, bytes.data(), sizeof sh0);
    t.e_phnum = sh0.sh_info;
    count_field = "sh_info";
    count_at = eh.e_shoff + offsetof(Elf64_Shdr, sh_info);
  }
  if (t.e_phnum > max_phnum)
    return file.error_at(count_at, Errc::kBadData, count_field,
                         fmt::format("{} program headers is more than {}", t.e_phnum, max_phnum));
  if (t.e_phoff > UINT64_MAX - t.size())
    return file.error_at(kPhoffAt, Errc::kTruncated, "e_phoff",
                         fmt::format("{:#x} + {} program headers of {} bytes is past 2^64", t.e_phoff, t.e_phnum,
                                     sizeof(Elf64_Phdr)));
  return t;
}

Result<Cursor> phdr_entries(Cursor &file, const PhdrTable &t) {
  if (t.e_phoff > file.size())
    return file.error_at(kPhoffAt, Errc::kTruncated, "e_phoff",
                         fmt::format("{:#x} is past the end ({:#x} bytes)", t.e_phoff, file.size()));
  if (file.size() - t.e_phoff < t.size())
    return file.error_at(kPhnumAt, Errc::kTruncated, "e_phnum",
                         fmt::format("{} program headers at e_phoff {:#x} need {:#x} bytes, {:#x} are there",
                                     t.e_phnum, t.e_phoff, t.size(), file.size() - t.e_phoff));
  Cursor moved = file;
  CT_TRY_VOID(moved.seek(t.e_phoff, "e_phoff"));
  const std::uint64_t base = moved.offset();
  CT_TRY(bytes, moved.bytes(t.size(), "e_phnum"));
  file = moved;
  return Cursor(bytes, base, "program header table");
}

Result<Elf64_Phdr> read_elf64_phdr(Cursor &c) {
  if (c.remaining() < sizeof(Elf64_Phdr))
    return c.error(Errc::kTruncated, "p_type",
                   fmt::format("an Elf64_Phdr needs {} bytes, {} left", sizeof(Elf64_Phdr), c.remaining()));
  CT_TRY(bytes, c.bytes(sizeof(Elf64_Phdr), "p_type"));
  Elf64_Phdr ph;
  std::memcpy(&ph, bytes.data(), sizeof ph);
  return ph;
}

}  // namespace core_timeline::reader
