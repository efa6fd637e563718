/* SPDX-License-Identifier: MIT */
/*
 * group.h - the group signature of a crash: which crashes are the same bug
 * (docs/grouping.md has the rule, its reasons and its limits).
 *
 * A signature has two parts, each hashed to an id of its own:
 *  - the stack part: the fatal signal's name and the function names of the
 *    crashing thread's top kGroupFrames frames (below any signal frame,
 *    past raise()/abort()-style frames, not below main), no addresses,
 *    offsets, lines or modules' paths;
 *  - the history part: the names of the spans the crashing thread was
 *    inside (outermost first) and of its last kGroupLastEvents user events
 *    (tl_mark, tl_mark_ptr, and the begins of spans it had left), oldest
 *    first, a run of one name counted once; no arguments, times, counts,
 *    thread ids or other sources (allocations, I/O, bookkeeping).
 * The group id is the hash of both; with no usable history (no valid ring,
 * no user event or open span on the crashing thread) it is the stack id,
 * and `history_used` is false with `note` saying why.
 *
 * Ids are the first 16 hex digits of the SHA-256 (OpenSSL's libcrypto) of
 * a canonical text that begins with the rule's number (kGroupRule), so an
 * id is the same on every host and build that gives the same names, and
 * changes with the rule.
 *
 * Sources of facts: Analysis::crash (signal, tid, the merged crash stack,
 * or the pc's location without one; a re-raised fault's signal), events,
 * spans and names of the Analysis.  Names are the core's (tl_name) or the
 * tlmap's: untrusted bytes, kept as they are; escape them for a terminal.
 *
 * Thread-safety: pure functions.  Errors: none (no signature: nullopt).
 */
#ifndef CORE_TIMELINE_READER_GROUP_H
#define CORE_TIMELINE_READER_GROUP_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace core_timeline::reader {

struct Analysis;
struct Location;

/** The number of the grouping rule; part of every id's hashed text. */
inline constexpr int kGroupRule = 1;
/** Frames of the crashing thread the stack part takes. */
inline constexpr std::size_t kGroupFrames = 3;
/** Last user events of the crashing thread the history part takes. */
inline constexpr std::size_t kGroupLastEvents = 3;
/** Open spans the words name whole (more: the two outermost and the two
 *  innermost, and how many between); the ids hash all of them. */
inline constexpr std::size_t kGroupWordSpans = 4;

struct GroupSignature {
  std::string id;          /**< the group: 16 lower-case hex digits */
  std::string stack_id;    /**< the stack part's id */
  std::string history_id;  /**< the history part's id; "" when not used */
  bool history_used = false;
  std::string signal;      /**< "SIGSEGV"; "no signal" when none was recorded */
  /** Function names, innermost first; "?? (MODULE)" for a frame without a
   *  symbol (MODULE its file name alone), "??" outside any file. */
  std::vector<std::string> frames;
  std::vector<std::string> open_spans;   /**< outermost first */
  std::vector<std::string> last_events;  /**< oldest first */
  /** "SIGSEGV in die() <- dispatch() <- main() inside REQUEST, after
   *  PARSE_BODY, LOOKUP"; with no history used, the stack's words. */
  std::string words;
  std::string stack_words; /**< the stack part alone */
  /** Why the history was not used, or what limits the signature; "". */
  std::string note;
};

/** The parts into a signature: ids, words.  `history` false: the stack
 *  alone (open_spans and last_events are then ignored), `note` says why. */
GroupSignature make_signature(std::string signal, std::vector<std::string> frames,
                              std::vector<std::string> open_spans, std::vector<std::string> last_events,
                              bool history, std::string note);

/** The signature of an analyzed core; nullopt without crash facts (a live
 *  snapshot, a core that could not be read). */
std::optional<GroupSignature> group_signature(const Analysis &a);

/** A frame's name as the stack part takes it: the function without a
 *  symbol version ("__libc_start_main@@GLIBC_2.34" -> "__libc_start_main"),
 *  else "?? (MODULE)" or "??". */
std::string group_frame_name(const Location &l);

/** 16 lower-case hex digits: the start of SHA-256(text). */
std::string group_hash(std::string_view text);

/** The document's "group" member (document/group_keys.h) of a.group;
 *  null without a signature. */
nlohmann::ordered_json group_json(const Analysis &a);

/** The text line of core-timeline-read: "group: ID WORDS" and the stack
 *  id, escaped (printable.h), ending in '\n'. */
std::string group_text(const GroupSignature &g);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_GROUP_H
