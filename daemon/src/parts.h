/* SPDX-License-Identifier: MIT */
/*
 * parts.h - the four parts core-timelined's main loop (daemon.h) works
 * with, each behind a small interface of its own:
 *
 *   EntrySource  the coredump entries, in journal order      journal.h
 *   Extractor    a stored core into a file the decoder maps  extract.h
 *   Decoder      that file into the reader's result, isolated decode.h
 *   Store        timelines and the cursor, and their fsyncs  files.h
 *
 * The Daemon takes them ready-made: make_parts() builds core-timelined's
 * own from the Options (for main()); tests build theirs (a Journal over
 * journal files of their own, a Store whose fsync fails, a Decoder exec'ing
 * the daemon's binary from a test process).  What the Daemon does with
 * them - trust, verdicts, documents, when to fsync and save the cursor -
 * stays in the Daemon.
 *
 * Thread-safety: one thread uses a Parts (the Daemon's).
 */
#ifndef CORE_TIMELINE_DAEMON_PARTS_H
#define CORE_TIMELINE_DAEMON_PARTS_H

#include <memory>

#include "decode.h"
#include "extract.h"
#include "files.h"
#include "journal.h"
#include "options.h"
#include "util.h"

namespace core_timeline::daemon {

struct Parts {
  std::unique_ptr<EntrySource> entries;
  std::unique_ptr<Extractor> extractor;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Store> store;
};

/**
 * core-timelined's parts for `o`: the journal (the system's, or
 * --journal-directory's files), StreamExtractor with --keep-whole-below and
 * --max-kept, ChildDecoder with --decode-timeout and --memory-limit
 * exec'ing /proc/self/exe, and a FileStore on --state-dir (creating
 * --output-dir).  A state directory others cannot traverse is logged as a
 * warning (spdlog).  Errors: the journal or a directory cannot be opened
 * (the message says which, and what to do).
 */
Result<Parts> make_parts(const Options &o);

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_PARTS_H
