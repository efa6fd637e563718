#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/query_corpus.py N DIR [LAYOUT] - the corpus bench_query.py measures.

Writes, for N crashes of one boot of one host (pids 100000.., one second
apart, COMM and EXE one of four programs):

  DIR/journal/bench.journal  through the real systemd-journal-remote (export
      format on its stdin): per crash the systemd-coredump entry
      (MESSAGE_ID fc2e22bc6ee647b6b90729ab34a250b1, systemd-coredump(8)'s
      fields and a stack-trace MESSAGE, as coredumpctl reads them) and the
      timeline entry core-timelined logs (the fields of
      reader/include/core_timeline/document/journal_entry.h) with, LAYOUT
      "split" (the default), its document entry sent just before it
      (document_entry.h: the document in an entry of its own), or, LAYOUT
      "inline", the document in the timeline entry itself, as earlier
      daemons logged it; journal-remote may split it into several files
      when one is full;
  DIR/timelines/*.timeline.json  the same documents as files, named as
      core-timelined names them (the file-scan peer).

Each document is the compact document (schema_version 7) as core-timelined
stores it, byte for byte in its layout (bench/corpus_document.py: about
11 KiB, most of it the systemd-coredump entry's fields and the crash
stack).  Every crash has the events LANE_CLAIM, REQ_PARSE, MALLOC, FREE,
then one of BEFORE_DIE, RELOAD, CONFIG_LOAD, FLUSH by turns (so "RELOAD" is
in a quarter of them), then CRASH.  Its group signature (docs/grouping.md;
the document's "group", the timeline entry's CORE_TIMELINE_GROUP* fields)
has the stack SIGSEGV in die() <- handle_COMM() <- main() and the history
inside REQUEST, after REQ_PARSE, LAST: 16 groups of 4 stacks, ids hashed by
rule 1's canonical text.

Prints "generated N crashes in S s (journal X MiB in F files, timelines Y MiB)".
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import time

import corpus_document

# What bench_query.py finds in a corpus's "done" file: a corpus of another
# version (made before the documents were compact, or before the entries
# carried group signatures) is made anew.
VERSION = "corpus of compact documents (schema_version 7) with group signatures, 16 groups"
JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
TIMELINE_ID = "9d72af4745ac4dc29e0df9be4f6139df"
DOCUMENT_ID = "fdd4b45325c349edbc4246673119f49d"
COREDUMP_ID = "fc2e22bc6ee647b6b90729ab34a250b1"
BOOT = "5e1f0b6c0a3d4e0f9b8a7c6d5e4f3a2b"
HOST = "bench-host"
T0 = 1796020111000000  # 2026-11-30 06:28:31 UTC
PROGRAMS = ["server", "worker", "backup", "indexer"]
LAST = ["BEFORE_DIE", "RELOAD", "CONFIG_LOAD", "FLUSH"]


def group_of(comm, last):
    """The group signature of one crash, as reader/src/group.cc makes it."""
    rule = "core-timeline group rule 1\n"
    frames = ["die", "handle_" + comm, "main"]
    spans, events = ["REQUEST"], ["REQ_PARSE", last]
    stack = "signal SIGSEGV\nframes\n" + "\n".join(frames)
    hist = "spans\n" + "\n".join(spans) + "\nevents\n" + "\n".join(events)

    def h(text):
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    stack_words = "SIGSEGV in " + " <- ".join(f + "()" for f in frames)
    return {"rule": 1, "id": h(rule + "group\n" + stack + "\n" + hist), "stack_id": h(rule + "stack\n" + stack),
            "history_id": h(rule + "history\n" + hist), "basis": "history+stack", "signal": "SIGSEGV",
            "frames": frames, "open_spans": spans, "last_events": events,
            "words": stack_words + " inside REQUEST, after " + ", ".join(events), "stack_words": stack_words,
            "note": None}


def export_entry(fields, realtime, monotonic):
    out = [b"__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n_BOOT_ID=%s\n" % (realtime, monotonic, BOOT.encode())]
    for k, v in fields:
        v = v.encode() if isinstance(v, str) else v
        if b"\n" in v:
            out.append(k.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n")
        else:
            out.append(k.encode() + b"=" + v + b"\n")
    out.append(b"\n")
    return b"".join(out)


# What journald and sd_journal_send() add to each entry core-timelined sends.
DAEMON_SENT = [("_UID", "0"), ("_GID", "0"), ("_COMM", "core-timelined"), ("_EXE", "/usr/sbin/core-timelined"),
               ("_CMDLINE", "/usr/sbin/core-timelined"), ("_CAP_EFFECTIVE", "1fffeffffff"),
               ("_TRANSPORT", "journal"), ("_RUNTIME_SCOPE", "system"), ("_HOSTNAME", HOST),
               ("CODE_FILE", "../daemon/src/timeline_entry.cc"), ("CODE_LINE", "208"), ("CODE_FUNC", "send_entries")]


def coredump_entry(pid, comm, exe, ts, core, i):
    """systemd-coredump's entry of the crash (its fields, in order) and the
    fields core-timelined keeps of it in the document."""
    fields = {"COREDUMP_PID": str(pid), "COREDUMP_UID": "1000", "COREDUMP_GID": "1000", "COREDUMP_SIGNAL": "11",
              "COREDUMP_SIGNAL_NAME": "SIGSEGV", "COREDUMP_EXE": exe, "COREDUMP_COMM": comm,
              "COREDUMP_CMDLINE": exe + " --serve --port 8080", "COREDUMP_TIMESTAMP": str(ts),
              "COREDUMP_RLIMIT": "18446744073709551615", "COREDUMP_HOSTNAME": HOST, "COREDUMP_DUMPABLE": "1",
              "COREDUMP_FILENAME": core}
    stack = "".join("#%d  0x%016x path_%d (%s + 0x%x)\n" % (f, 0x55b48db81000 + f * 0x40, f, exe, f * 0x40)
                    for f in range(8))
    entry = [("MESSAGE_ID", COREDUMP_ID), ("PRIORITY", "2"), ("SYSLOG_IDENTIFIER", "systemd-coredump"),
             ("_UID", "0"), ("_GID", "0"), ("_COMM", "systemd-coredum"),
             ("_EXE", "/usr/lib/systemd/systemd-coredump"), ("_TRANSPORT", "journal"), ("_HOSTNAME", HOST),
             ("MESSAGE", "Process %d (%s) of user 1000 dumped core.\n\nStack trace of thread %d:\n%s"
              % (pid, comm, pid, stack))]
    entry += list(fields.items())
    kept = dict(entry, _BOOT_ID=BOOT)  # all of them (but COREDUMP=, which it has not)
    cursor = "s=%s;i=%x;b=%s;m=%x;t=%x;x=%016x" % (BOOT, 3 * i + 1, BOOT, 1000000 + 3 * i, ts + 100000, i)
    return entry, (kept, cursor)


def timeline_fields(c, doc, cursor, path, size):
    """The timeline entry's fields core-timelined sends for crash `c`, but
    the document's own (CORE_TIMELINE_DOCUMENT or _ID) and _PID."""
    said = "pid %d (%s): timeline with %d events written to %s" % (c.pid, c.exe, len(c.names), path)
    f = doc["coredump"]["fields"]
    g = doc["group"]
    return ([("MESSAGE_ID", TIMELINE_ID), ("PRIORITY", "6"), ("SYSLOG_IDENTIFIER", "core-timelined")] + DAEMON_SENT +
            [("MESSAGE", said), ("CORE_TIMELINE_EXE", c.exe), ("CORE_TIMELINE_UID", "1000")] +
            [(k, f[k]) for k in ("COREDUMP_PID", "COREDUMP_UID", "COREDUMP_GID", "COREDUMP_SIGNAL",
                                 "COREDUMP_SIGNAL_NAME", "COREDUMP_EXE", "COREDUMP_COMM", "COREDUMP_TIMESTAMP",
                                 "COREDUMP_FILENAME")] +
            [("CORE_TIMELINE_BOOT_ID", BOOT), ("CORE_TIMELINE_KEY", "%s.%d.%d" % (BOOT, c.pid, c.ts)),
             ("CORE_TIMELINE_COREDUMP_CURSOR", cursor), ("CORE_TIMELINE_STATUS", "ok"),
             ("CORE_TIMELINE_SIGNAL", "SIGSEGV"), ("CORE_TIMELINE_EVENTS", str(len(c.names))),
             ("CORE_TIMELINE_LAST_EVENT", c.last), ("CORE_TIMELINE_OPEN_SPANS", "0"),
             ("CORE_TIMELINE_GROUP", g["id"]), ("CORE_TIMELINE_GROUP_STACK", g["stack_id"]),
             ("CORE_TIMELINE_GROUP_HISTORY", g["history_id"]), ("CORE_TIMELINE_GROUP_WORDS", g["words"]),
             ("CORE_TIMELINE_GROUP_STACK_WORDS", g["stack_words"]), ("CORE_TIMELINE_GROUP_BASIS", g["basis"])] +
            [("CORE_TIMELINE_EVENT_NAME", n) for n in c.names] +
            [("CORE_TIMELINE_EVENT_NAMES_COMPLETE", "1"), ("CORE_TIMELINE_PID", str(c.pid)),
             ("CORE_TIMELINE_SCHEMA_VERSION", "7"), ("CORE_TIMELINE_TIMELINE", path),
             ("CORE_TIMELINE_DOCUMENT_BYTES", size), ("CORE_TIMELINE_PAYLOAD", "omitted"),
             ("CORE_TIMELINE_PAYLOAD_OMITTED", "0")])


def crash(i, layout="split"):
    """Crash i: its time, systemd-coredump's entry, core-timelined's entries
    (LAYOUT split: the document entry, then the timeline entry; inline: the
    timeline entry with the document), the timeline file's name and bytes."""
    pid = 100000 + i
    comm = PROGRAMS[(i // len(LAST)) % len(PROGRAMS)]  # with LAST by turns: 16 groups
    exe = "/usr/bin/" + comm
    ts = T0 + i * 1000000
    core = "/var/lib/systemd/coredump/core.%s.1000.%s.%d.%d.zst" % (comm, BOOT, pid, ts)
    last = LAST[i % len(LAST)]
    cd_entry, (fields, cursor) = coredump_entry(pid, comm, exe, ts, core, i)
    c = corpus_document.Crash(pid, comm, exe, ts, core, last, group_of(comm, last))
    doc = corpus_document.document(c, fields, cursor)
    document = corpus_document.compact_layout(doc)
    name = "core.%s.1000.%s.%d.%d.timeline.json" % (comm, BOOT, pid, ts)
    path = "/var/lib/systemd/coredump/" + name
    size = str(len(document.encode()))
    timeline_entry = timeline_fields(c, doc, cursor, path, size)
    if layout == "inline":
        timeline_entry.append(("CORE_TIMELINE_DOCUMENT", document))
        return ts, cd_entry, [timeline_entry], name, document
    sender = [("_PID", str(20000 + i % 30000))]
    doc_id = "%032x" % (0xd0c << 64 | i)
    message = "the timeline document of " + dict(timeline_entry)["MESSAGE"]
    document_entry = ([("MESSAGE_ID", DOCUMENT_ID), ("PRIORITY", "7"), ("SYSLOG_IDENTIFIER", "core-timelined")] +
                      DAEMON_SENT +
                      [("MESSAGE", message), ("CORE_TIMELINE_DOCUMENT_ID", doc_id), ("COREDUMP_PID", str(pid)),
                       ("COREDUMP_UID", "1000"), ("COREDUMP_TIMESTAMP", str(ts)), ("CORE_TIMELINE_BOOT_ID", BOOT),
                       ("CORE_TIMELINE_TIMELINE", path), ("CORE_TIMELINE_DOCUMENT_BYTES", size),
                       ("CORE_TIMELINE_PAYLOAD", "omitted"), ("CORE_TIMELINE_DOCUMENT", document)] + sender)
    timeline_entry += [("CORE_TIMELINE_DOCUMENT_ID", doc_id)] + sender
    return ts, cd_entry, [document_entry, timeline_entry], name, document


def main():
    n, top = int(sys.argv[1]), sys.argv[2]
    layout = sys.argv[3] if len(sys.argv) > 3 else "split"
    if layout not in ("split", "inline"):
        sys.exit("query_corpus.py: LAYOUT is split or inline")
    jdir, tdir = os.path.join(top, "journal"), os.path.join(top, "timelines")
    os.makedirs(jdir, exist_ok=True)
    os.makedirs(tdir, exist_ok=True)
    start = time.monotonic()
    remote = subprocess.Popen([JOURNAL_REMOTE, "-o", os.path.join(jdir, "bench.journal"), "-"],
                              stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    buf = []
    size = 0
    for i in range(n):
        ts, cd, tl, name, document = crash(i, layout)
        buf.append(export_entry(cd, ts + 100000, 1000000 + 3 * i))
        for k, e in enumerate(tl, 1):
            buf.append(export_entry(e, ts + 200000 + k, 1000000 + 3 * i + k))
        with open(os.path.join(tdir, name), "w") as f:
            f.write(document)
        if len(buf) >= 2000:
            remote.stdin.write(b"".join(buf))
            buf = []
    remote.stdin.write(b"".join(buf))
    remote.stdin.close()
    if remote.wait() != 0:
        sys.exit("query_corpus.py: systemd-journal-remote failed")
    took = time.monotonic() - start
    jfiles = [os.path.join(jdir, f) for f in os.listdir(jdir)]
    jsize = sum(os.path.getsize(f) for f in jfiles)
    tsize = sum(e.stat().st_size for e in os.scandir(tdir))
    print("generated %d crashes in %.1f s (journal %.0f MiB in %d files, timelines %.0f MiB)"
          % (n, took, jsize / 2**20, len(jfiles), tsize / 2**20))


if __name__ == "__main__":
    main()
