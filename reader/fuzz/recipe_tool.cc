// SPDX-License-Identifier: MIT
//
// fuzz_recipe_tool - the recipe interpreter (recipe.h) outside libFuzzer.
//   fuzz_recipe_tool gen DIR           writes the seed recipes into DIR
//                                      (deterministic; then minimize them
//                                      with -merge=1, docs/fuzzing.md)
//   fuzz_recipe_tool build RECIPE OUT  writes the core (or ring region) a
//                                      recipe makes, to look at a finding
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core_timeline/ring_format.h"
#include "recipe.h"

namespace {

namespace fmtx = core_timeline::format;
using ct::fuzz::Writer;

void save(const std::string &path, const std::vector<std::uint8_t> &b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out.flush()) {
    std::fprintf(stderr, "fuzz_recipe_tool: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::uint8_t field(int i) {
  if (i < 0) {
    std::fprintf(stderr, "fuzz_recipe_tool: unknown field name\n");
    std::exit(1);
  }
  return static_cast<std::uint8_t>(i);
}

/** The events of crash_demo's path a: a lane claim, a span, a mark, a
 *  free, a mark, the crash (lane, kind index, arg). */
Writer &story(Writer &w) {
  const std::uint8_t ev[][3] = {{0, 4, 0}, {0, 5, 41}, {0, 0, 1}, {0, 8, 0}, {0, 0, 2}, {1, 2, 0},
                                {1, 1, 7}, {1, 11, 0}, {0, 6, 0},  {0, 3, 1}};
  w.u8(static_cast<std::uint8_t>(std::size(ev)));
  for (const auto &e : ev) w.u8(e[0]).u8(e[1]).u8(e[2]);
  return w;
}

/** Every kind once (and the unknown kind 0x40 - 0xe0 = 0x20... raw 9). */
Writer &all_kinds(Writer &w) {
  w.u8(18);
  for (std::uint8_t k = 0; k < 16; ++k) w.u8(k % 3).u8(k).u8(static_cast<std::uint8_t>(k * 17));
  w.u8(0).u8(0xe9).u8(3);   // raw kind 9
  w.u8(0x81).u8(7).u8(5);   // an alloc event in a user lane (v3)
  return w;
}

int gen(const std::string &dir) {
  using namespace ct::fuzz;
  int n = 0;
  auto put = [&](const std::string &name, const Writer &w) {
    save(dir + "/" + name, w.data());
    ++n;
  };
  constexpr std::uint8_t kGeom = 0x21;  // 3 lanes, 16 slots, 2 names
  const std::uint8_t shapes[] = {kShapeCore, kShapeRing, kShapeLive, kShapeNoFileNote};
  const char *shape_names[] = {"core", "ring", "live", "nofile"};
  for (int s = 0; s < 4; ++s)
    for (int v3 = 0; v3 < 2; ++v3) {
      Writer w;
      w.u8(static_cast<std::uint8_t>(shapes[s] | (v3 ? kShapeV3 : 0) | kShapeJson)).u8(kGeom);
      story(w);
      put(std::string(shape_names[s]) + (v3 ? "-v3" : "-v2") + "-story", w);
      Writer k;
      k.u8(static_cast<std::uint8_t>(shapes[s] | (v3 ? kShapeV3 : 0))).u8(0x34);
      all_kinds(k);
      put(std::string(shape_names[s]) + (v3 ? "-v3" : "-v2") + "-kinds", k);
    }
  {
    Writer w;
    w.u8(kShapeRingless | kShapeJson).u8(0).u8(0);
    put("core-ringless", w);
  }
  {
    Writer w;
    w.u8(kShapeExcluded | kShapeJson).u8(kGeom);
    story(w);
    put("core-excluded", w);
  }
  {
    Writer w;
    w.u8(kShapeTwoRings | kShapeJson).u8(kGeom);
    story(w);
    put("core-two-rings", w);
  }
  // One of each ring edit, on the story.
  struct HeaderEdit {
    const char *field;
    Value sel;
    std::uint64_t operand;
  };
  const HeaderEdit header_edits[] = {
      {"version", kValU8, 4},          {"header_size", kValDouble, 0},   {"slot_size", kValAddI8, 1},
      {"slots_per_lane", kValDouble, 0}, {"lane_count", kValAddI8, 1},  {"lane_table_offset", kValAddI8, 8},
      {"lanes_offset", kValAddI8, 0x80}, {"region_size", kValDouble, 0}, {"pid", kValU16, 999},
      {"build_id_len", kValU8, 65},     {"ticks_per_second", kValZero, 0}, {"names_offset", kValSize, 0},
      {"names_capacity", kValU32Max, 0}, {"crash_anchor_state", kValOne, 0}, {"crash_ticks", kValZero, 0},
      {"incompat_flags", kValBit, 1},   {"names_claimed", kValAllOnes, 0}, {"sources[0].pool_slots", kValDouble, 0},
      {"sources[1].first_lane", kValAddI8, 1}, {"sources[0].pool_used", kValAllOnes, 0},
      {"source_count", kValU8, 4},      {"anchor_ticks", kValAllOnes, 0}, {"latest_anchor_seq", kValU8, 3},
  };
  for (int v3 = 0; v3 < 2; ++v3)
    for (const auto &e : header_edits) {
      Writer w;
      w.u8(v3 ? kShapeV3 : 0).u8(kGeom);
      story(w);
      w.u8(kOpHeader).u8(field(header_field(e.field))).val(e.sel, e.operand);
      put(std::string("hdr-") + (v3 ? "v3-" : "v2-") + e.field, w);
    }
  {
    Writer w;  // the CRC left as the edit made it
    w.u8(kShapeNoReseal).u8(kGeom);
    story(w);
    w.u8(kOpHeader).u8(field(header_field("pid"))).val(kValAddI8, 1);
    put("hdr-crc-stale", w);
  }
  struct LaneEdit {
    const char *field;
    Value sel;
    std::uint64_t operand;
  };
  const LaneEdit lane_edits[] = {{"write_index", kValAddI8, 20}, {"write_index", kValAllOnes, 0},
                                 {"write_index", kValZero, 0},   {"flags", kValOne, 0},
                                 {"extent", kValAddI8, 1},       {"extent", kValFlipBit, 33},
                                 {"source", kValU8, 2},          {"owner_tid", kValZero, 0}};
  for (int v3 = 0; v3 < 2; ++v3)
    for (const auto &e : lane_edits) {
      Writer w;
      w.u8(v3 ? kShapeV3 : 0).u8(kGeom);
      story(w);
      w.u8(kOpLane).u8(0).u8(field(lane_field(e.field))).val(e.sel, e.operand);
      put(std::string("lane-") + (v3 ? "v3-" : "v2-") + e.field + "-" + std::to_string(e.sel), w);
    }
  const LaneEdit slot_edits[] = {{"begin_seq", kValFlipBit, 63}, {"end_seq", kValAddI8, 1},
                                 {"inline_len", kValU8, 200},   {"kind", kValU8, 9},
                                 {"timestamp", kValAllOnes, 0}, {"tid", kValZero, 0}};
  for (const auto &e : slot_edits) {
    Writer w;
    w.u8(kShapeJson).u8(kGeom);
    story(w);
    w.u8(kOpSlot).u8(0).u8(1).u8(field(slot_field(e.field))).val(e.sel, e.operand);
    put(std::string("slot-") + e.field, w);
  }
  {
    Writer w;
    w.u8(0).u8(0x71);  // 3 lanes, 8 slots, 7 names
    story(w);
    w.u8(kOpName).u8(3).u8(0).val(kValOne, 0);       // state: writing
    w.u8(kOpName).u8(4).u8(3).val(kValAllOnes, 0);   // name bytes not text, no NUL
    w.u8(kOpName).u8(5).u8(1).val(kValU16, 0x1001);  // a second name for one id
    put("names-edits", w);
  }
  {
    Writer w;
    w.u8(0).u8(kGeom);
    story(w);
    w.u8(kOpRingBytes).u16(0x180).u8(8).bytes(std::vector<std::uint8_t>(8, 0xff));
    put("ring-bytes", w);
  }
  // Segment and ELF header edits.
  const LaneEdit phdr_edits[] = {{"p_offset", kValAddI8, 0x10}, {"p_filesz", kValDouble, 0}, {"p_memsz", kValZero, 0},
                                 {"p_vaddr", kValAddI8, 1},     {"p_type", kValU8, 4},       {"p_filesz", kValAllOnes, 0},
                                 {"p_offset", kValSize, 0}};
  for (std::uint8_t ph = 0; ph < 3; ++ph)
    for (const auto &e : phdr_edits) {
      Writer w;
      w.u8(0).u8(kGeom);
      story(w);
      w.u8(kOpPhdr).u8(ph).u8(field(phdr_field(e.field))).val(e.sel, e.operand);
      put("phdr" + std::to_string(ph) + "-" + e.field + "-" + std::to_string(e.sel), w);
    }
  const LaneEdit ehdr_edits[] = {{"e_phnum", kValU16, 0xffff}, {"e_phoff", kValAddI8, 1}, {"e_phentsize", kValAddI8, 8},
                                 {"e_machine", kValU16, 183},  {"e_type", kValU8, 3},     {"e_shoff", kValU8, 64},
                                 {"e_shnum", kValOne, 0}};
  for (const auto &e : ehdr_edits) {
    Writer w;
    w.u8(0).u8(kGeom);
    story(w);
    w.u8(kOpEhdr).u8(field(ehdr_field(e.field))).val(e.sel, e.operand);
    put(std::string("ehdr-") + e.field, w);
  }
  // Notes, mappings, threads, auxv, siginfo, process, truncation.
  for (std::uint8_t k = 0; k < kNoteKinds; ++k) {
    Writer w;
    w.u8(0).u8(kGeom);
    story(w);
    w.u8(kOpNote).u8(k).u8(k == kNoteOther ? 7 : 0).u8(0).u8(4).u8(0xff).u8(0xff).u8(0x7f).u8(0x01);
    put("note-" + std::to_string(k) + "-overlay", w);
    Writer c;
    c.u8(0).u8(kGeom);
    story(c);
    c.u8(kOpNote).u8(k).u8(3).u8(0).u8(0);  // cut to 8 bytes
    put("note-" + std::to_string(k) + "-short", c);
  }
  {
    Writer w;
    w.u8(0).u8(kGeom);
    story(w);
    w.u8(kOpFile).u8(1).u8(1).val(kValAddI8, static_cast<std::uint64_t>(-16));  // ring entry ends early
    w.u8(kOpFile).u8(3).u8(3).val(kValU8, 2);                                   // another memfd entry
    put("files-edits", w);
    Writer m;
    m.u8(kShapeJson).u8(kGeom);
    story(m);
    m.u8(kOpMap).u8(1).val(kValU64, fmtx::kHeaderSize).u8(0);  // the ring again, at a low address
    m.u8(kOpMap).u8(2).val(kValAddI8, 0).u8(2);
    m.u8(kOpMap).u8(3 | 0x10).val(kValU64, 0x500000).u8(1);
    put("maps-extra", m);
    Writer t;
    t.u8(0).u8(kGeom);
    story(t);
    t.u8(kOpThread).u16(5001).u8(0).val(kValU64, 0x401234);
    t.u8(kOpAuxv).u8(3).val(kValU64, 0x7f0000000040);  // AT_PHDR into the ring
    t.u8(kOpSiginfo).u8(7).u8(0xfa).val(kValU64, 0xdead);
    t.u8(kOpProcess).val(kValU16, 4243).u8(3).u8(0);
    put("process-edits", t);
    Writer tr;
    tr.u8(0).u8(kGeom);
    story(tr);
    tr.u8(kOpTruncate).val(kValU32, 4096 * 2 + 700);
    put("truncated-in-ring", tr);
    Writer fb;
    fb.u8(0).u8(kGeom);
    story(fb);
    fb.u8(kOpFileBytes).u32(0x40).u8(4).u8(0).u8(0).u8(0).u8(0);
    put("file-bytes", fb);
  }
  std::printf("%d recipes in %s\n", n, dir.c_str());
  return 0;
}

int build(const std::string &in, const std::string &out) {
  std::ifstream f(in, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "fuzz_recipe_tool: cannot read %s\n", in.c_str());
    return 1;
  }
  std::vector<std::uint8_t> r((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const ct::fuzz::Made m = ct::fuzz::make(r);
  save(out, m.bytes);
  std::printf("%s: %zu bytes, %s\n", out.c_str(), m.bytes.size(), m.ring_only ? "a ring region" : "an ELF core");
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "gen") return gen(argv[2]);
  if (argc == 4 && std::string(argv[1]) == "build") return build(argv[2], argv[3]);
  std::fprintf(stderr, "usage: %s gen DIR | build RECIPE OUT\n", argv[0]);
  return 2;
}
