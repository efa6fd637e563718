/* SPDX-License-Identifier: MIT */
/*
 * elf_headers.h - the ELF header and program header table of a 64-bit
 * little-endian ELF file, read from untrusted bytes through a Cursor.
 *
 * The one walk of program headers in core-timeline: the reader's CoreFile
 * (a core's PT_LOAD and PT_NOTE segments, and the ELF headers of modules
 * dumped in a core's memory) and the daemon's extractor (which plans what to
 * keep of a core it decompresses) both use it.  The layouts are elf(5)'s
 * Elf64_Ehdr and Elf64_Phdr from <elf.h>; a core's are written by the
 * kernel's fs/binfmt_elf.c (elf_core_dump: the header, then e_phnum program
 * headers at e_phoff, PN_XNUM with the count in section header 0 when there
 * are 65535 or more).
 *
 * As everywhere on a Cursor (drgn's binary_buffer): a read that fails does
 * not move the cursor, and its Error names the structure (the Cursor's
 * `what`), the field in elf(5)'s words (e_phoff, e_phnum, p_offset...) and
 * the absolute offset of the value.  Error codes: kNotElf (no ELF magic),
 * kUnsupported (not ELFCLASS64 / ELFDATA2LSB), kBadData (a field that no
 * table can have: e_phentsize, a count over the caller's bound), kTruncated
 * (bytes that must be there lie past the end, or past 2^64).
 *
 * Offsets in the header (e_phoff, e_shoff) are positions in the Cursor's
 * span: the span starts with the ELF header (byte 0 of the file, or of the
 * image in memory).  Values are read as the host's (little-endian) order.
 *
 * Typical use:
 *
 *   Cursor file(bytes, 0, path);
 *   CT_TRY(eh, read_elf64_ehdr(file));
 *   CT_TRY(table, phdr_table(file, eh, kMaxPhdrs));
 *   CT_TRY(entries, phdr_entries(file, table));
 *   for (std::uint64_t i = 0; i < table.e_phnum; ++i) {
 *     CT_TRY(ph, read_elf64_phdr(entries));
 *     ...
 *   }
 *
 * Thread-safety: functions of their arguments only; see cursor.h for
 * Cursors.
 */
#ifndef CORE_TIMELINE_READER_ELF_HEADERS_H
#define CORE_TIMELINE_READER_ELF_HEADERS_H

#include <elf.h>

#include <cstdint>

#include "core_timeline/reader/cursor.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

/**
 * Reads the Elf64_Ehdr (64 bytes) at the cursor and checks e_ident: the
 * magic ELFMAG (kNotElf), EI_CLASS ELFCLASS64 and EI_DATA ELFDATA2LSB
 * (kUnsupported), each as soon as its byte is there, then the 64 bytes
 * (kTruncated).  e_type, e_machine and the tables are the caller's to judge.
 * On success the cursor is past the header; on error it has not moved.
 */
Result<Elf64_Ehdr> read_elf64_ehdr(Cursor &c);

/** Where a program header table lies, by its ELF header (phdr_table()). */
struct PhdrTable {
  std::uint64_t e_phoff = 0;  /**< position of entry 0 in the span, bytes */
  std::uint64_t e_phnum = 0;  /**< entries: e_phnum, or with PN_XNUM the
                                   sh_info of section header 0 */
  /** Bytes of the table: e_phnum * sizeof(Elf64_Phdr) (56 each). */
  std::uint64_t size() const noexcept { return e_phnum * sizeof(Elf64_Phdr); }
  /** One past its last byte; phdr_table() checked that it fits 64 bits. */
  std::uint64_t end() const noexcept { return e_phoff + size(); }
};

/**
 * The program header table that `eh` (read from `file`) declares, checked
 * against the header's own fields, not against the bytes there are:
 *   - e_phentsize must be sizeof(Elf64_Phdr) (kBadData);
 *   - e_phnum PN_XNUM: the count is section header 0's sh_info (elf(5)),
 *     read through `file` at e_shoff (kTruncated, naming e_shoff, when
 *     e_shoff is 0 or section header 0 is not all in the span);
 *   - at most `max_phnum` entries (kBadData, naming e_phnum or sh_info), a
 *     bound the caller sets against hostile counts;
 *   - e_phoff + the table's size fits in 64 bits (kTruncated, naming
 *     e_phoff).
 * `file` is not moved.  A caller that has only the start of a file (the
 * daemon's extractor) learns here how many bytes the table needs.
 */
Result<PhdrTable> phdr_table(const Cursor &file, const Elf64_Ehdr &eh, std::uint64_t max_phnum);

/**
 * A Cursor over the bytes of table `t` in `file` (its base: the file offset
 * of entry 0, its `what`: "program header table"), for read_elf64_phdr().
 * kTruncated, naming e_phoff, if e_phoff is past the end of the span, or
 * e_phnum, if the table is cut short.  On success `file` is past the
 * table; on error it has not moved.
 */
Result<Cursor> phdr_entries(Cursor &file, const PhdrTable &t);

/**
 * Reads one Elf64_Phdr (56 bytes) at the cursor.  kTruncated, naming p_type
 * (the first field), if fewer than 56 bytes are left; the cursor then has
 * not moved.  The values are not judged: p_offset + p_filesz may run past
 * the file (a truncated core) or past 2^64 (a crafted one).
 */
Result<Elf64_Phdr> read_elf64_phdr(Cursor &c);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_ELF_HEADERS_H
