# SPDX-License-Identifier: MIT
"""The stored document of one crash of bench/query_corpus.py: the compact
document (schema_version 7, docs/timeline-json.md "The compact document")
as core-timelined stores it, in its bytes.

Its model is a real one: `core-timeline-read --format=compact` of a core
of fixtures/crash_demo.c (version-6 ring, clock rate from the init and
crash anchors, a CRASH event with its stack), with the members the daemon
adds (coredump, pids, daemon) where and as core-timelined adds them
(reader/src/document/stored.cc stored_document()).  What differs is the
crash: its program, pid, times, its events (LANE_CLAIM, REQ_PARSE, MALLOC,
FREE, one last user event, CRASH, all on the crashing thread) and its
group signature, given by the caller.  The documents validate against
docs/timeline.schema.json, and ctl-query list, events, group and show read
them from the journal and from files alike.
"""
import hashlib
import json

BASE = 0x557063660000  # where each program's executable is mapped
HEAP = 0x55706582c000  # and its heap
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
LIBC_BASE = 0x7f6cae783000
LIBC_BUILD_ID = "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
RATE = 2299952682.675695  # slot-clock ticks a second (the model's, from its anchors)
RATE_ERROR = 0.0005967084009899753
SP = 0x7ffc4957e628
KINDS = {"LANE_CLAIM": 5, "MALLOC": 16, "FREE": 17, "CRASH": 4}  # the rest are USER (1)
USER = {"REQ_PARSE": (4097, "request_id"), "BEFORE_DIE": (4099, "code"), "RELOAD": (4100, "generation"),
        "CONFIG_LOAD": (4101, "generation"), "FLUSH": (4102, "bytes")}
ALLOC_LANE = 65  # the allocation wrappers' lane of the thread; user events go to lane 0
# Each event's ticks after the one before (the first: after the ring's init anchor).
STEPS = [5352018, 614, 20832, 122, 3452, 143506]
CRASH_ANCHOR_AFTER = 1210  # ticks from the CRASH event to the crash anchor
# (file offset, function, line) of each event's return address, then of
# the crash stack's frames below die(); the CRASH event's is die()'s.
EVENT_SITES = [(0x37a5, "parse_request", 74), (0x37e2, "handle_%s", 83), (0x3811, "handle_%s", 87),
               (0x37bf, "handle_%s", 80)]
DIE = (0x375c, "die", 62)
STACK_SITES = [(0x3816, "handle_%s", 88), (0x3aa8, "main", 156)]
LIBC_SITES = [(0x2724a, "__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58),
              (0x27305, "__libc_start_main@@GLIBC_2.34", "../csu/libc-start.c", 360)]
START = (0x3621, "_start")


def compact_layout(doc):
    """The document's bytes as core-timelined writes them
    (core_timeline/document/compact_shape.h serialize()): one top-level
    member a line; the elements of rings, threads, spans and events, and
    of each table, one a line; the rest compact JSON; a newline at the end."""
    def dump(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    def lines(a):
        return "[" + "".join(("\n" if k == 0 else ",\n") + dump(x) for k, x in enumerate(a)) + ("\n]" if a else "]")
    out = []
    for k, v in doc.items():
        if k in ("rings", "threads", "spans", "events") and isinstance(v, list):
            out.append(dump(k) + ":" + lines(v))
        elif k == "tables":
            out.append(dump(k) + ":{" + "".join(("\n" if n == 0 else ",\n") + dump(t) + ":" + lines(a)
                                              for n, (t, a) in enumerate(v.items())) + "}")
        else:
            out.append(dump(k) + ":" + dump(v))
    return "{" + ",\n".join(out) + "}\n"


def ns(ticks):
    """Nanoseconds of a tick count, as the reader computes them (truncated)."""
    return int(ticks * 1e9 / RATE)


def ms_text(n):
    return "%.3fms" % (n / 1e6)


class Crash:
    """What differs between the corpus's crashes."""

    def __init__(self, pid, comm, exe, ts, core, last, group):
        self.pid, self.comm, self.exe, self.ts, self.core, self.last, self.group = \
            pid, comm, exe, ts, core, last, group
        self.build_id = hashlib.sha1(exe.encode()).hexdigest()
        self.names = ["LANE_CLAIM", "REQ_PARSE", "MALLOC", "FREE", last, "CRASH"]
        self.lanes = [ALLOC_LANE if n in ("MALLOC", "FREE") else 0 for n in self.names]
        self.init_ticks = 27728900000000 + (pid % 1000) * 1000003
        self.ticks = []
        t = self.init_ticks
        for s in STEPS:
            t += s
            self.ticks.append(t)
        self.ref = self.ticks[-1]  # the CRASH event's: the time reference
        self.crash_ns = ts * 1000 - 48000000  # the crash anchor's wall clock: before systemd-coredump's time

    def loc(self, module, base, offset, function, file, line):
        return {"address": "0x%x" % (base + offset), "module": module,
                "build_id": self.build_id if module == self.exe else LIBC_BUILD_ID,
                "file_offset": "0x%x" % offset, "function": function, "offset": "0x%x" % (offset & 0x7f),
                "source": {"file": file, "line": line} if file else None, "verified": True,
                "verification": "verified", "mapping_changed": False}

    def frames(self):
        """The crash stack, innermost first, as crash.location has each."""
        src = "../src/%s.c" % self.comm
        f = [self.loc(self.exe, BASE, DIE[0], DIE[1], src, DIE[2])]
        f += [self.loc(self.exe, BASE, o, fn.replace("%s", self.comm), src, line) for o, fn, line in STACK_SITES]
        f += [self.loc(LIBC, LIBC_BASE, *s) for s in LIBC_SITES]
        return f + [self.loc(self.exe, BASE, START[0], START[1], None, None)]


def crash_member(c):
    frames = [dict(f, **{"from": "ring+core", "signal_frame": False}) for f in c.frames()]
    return {"signal": 11, "signal_name": "SIGSEGV", "si_code": 1, "si_code_name": "SEGV_MAPERR",
            "fault_address": "0x0", "sender_pid": None, "tid": c.pid, "pc": "0x%x" % (BASE + DIE[0]),
            "sp": "0x%x" % SP, "location": c.frames()[0], "ring_slot": True, "from": "NT_SIGINFO",
            "inside_spans": [], "stack": {"frames": frames, "core_end": "", "ring_end": "complete",
                                          "agree": len(frames), "note": None}, "reraised": None}


def lane(c, number):
    n = c.lanes.count(number)
    return {"lane": number, "shared": False, "owner_tid": c.pid, "owner_name": c.comm, "write_index": n,
            "committed": n, "first_seq": 1, "last_seq": n, "overwritten": 0, "missing": 0, "torn": 0, "invalid": 0,
            "in_flight": 0, "slots_absent": 0, "counter_inconsistent": False, "counter_reason": None}


def ring_member(c):
    header = {"version": 6, "writer_version": "0.1.0", "pid": c.pid, "build_id": c.build_id,
              "process_start_ticks": 1205598, "region_size": 17625088, "lane_count": 195, "slots_per_lane": 32,
              "compat_flags": 5, "handlers_installed": True, "clock": "tsc", "ticks_per_second": RATE,
              "mmap_generation": 4, "enabled_sources": 15, "names_capacity": 256, "init_error": None,
              "init_error_text": None}
    crash_anchor = c.ref + CRASH_ANCHOR_AFTER
    init_ns = c.crash_ns - ns(crash_anchor - c.init_ticks)
    start = "an ELF core does not record the process start time; it is checked against a sidecar"
    return {"index": 0, "state": "valid", "reason": None, "found_by": "nt_file", "address": "0x134c3840000",
            "mapping": "/memfd:core-timeline (deleted)", "mapping_size": 17625088,
            "identity": {"pid": {"result": "match", "detail": "ring pid %d = NT_PRPSINFO pid" % c.pid},
                         "build_id": {"result": "match", "detail": "ring build-id = the core's executable build-id"},
                         "start_time": {"result": "unchecked", "detail": start}},
            "header": header, "names": 0, "names_rejected": 0, "dropped": 0, "overwritten": 0, "missing": 0,
            "in_flight": 0, "counter_inconsistent": False, "truncated": False, "bytes_present": 17625088,
            "lanes": [lane(c, 0), lane(c, ALLOC_LANE)], "torn": [], "pools": [[131072, 0], [0, 0], [0, 0]],
            "live": False, "torn_slots": 0, "invalid_slots": 0,
            "anchors": [[c.init_ticks, init_ns], [crash_anchor, c.crash_ns]]}


def time_member(c):
    offer = {"from": "init_and_crash_anchors", "ticks_per_second": RATE, "rate_error": RATE_ERROR,
             "disagrees_with": []}
    return {"reference": "crash", "reference_event": len(c.names) - 1, "ticks_per_second": RATE,
            "rate_from": "init_and_crash_anchors", "rate_error": RATE_ERROR, "rate_offers": [offer],
            "wall_clock": True, "note": None, "reference_ticks": c.ref, "reference_ring": 0}


def windows_member(c):
    complete = ns(c.ref - c.init_ticks)

    def window(source, title, lane_number, loaded):
        kept = [t for t, n in zip(c.ticks, c.lanes) if n == lane_number]
        oldest = -ns(c.ref - kept[0]) if kept else None
        says = "%s: complete since tl_init, %s before the reference; %d kept" % (title, ms_text(complete), len(kept))
        says += ", oldest %s" % ms_text(oldest) if kept else ""
        if not loaded:
            says = "%s: not recorded (its wrapper library was not loaded)" % title
        return {"source": source, "events": len(kept), "overwritten": 0, "dropped": 0, "torn": 0,
                "losses_by_source": True, "oldest_age_ns": oldest, "complete_for_ns": complete,
                "complete_since_init": True, "recorder_loaded": loaded, "enabled": True, "says": says}
    return [window("user", "user marks and spans", 0, True), window("alloc", "allocations", ALLOC_LANE, True),
            window("io", "I/O", None, False)]


def tables_member(c):
    src = "../src/%s.c" % c.comm
    sites = [(o, fn.replace("%s", c.comm), line) for o, fn, line in EVENT_SITES] + [DIE]
    locations = [["0x%x" % (BASE + o), 0, "0x%x" % o, fn, "0x%x" % (o & 0x7f), src, line, "verified", None]
                 for o, fn, line in sites]
    for f in c.frames()[1:]:
        module = 0 if f["module"] == c.exe else 1
        source = f["source"] or {"file": None, "line": None}
        locations.append([f["address"], module, f["file_offset"], f["function"], f["offset"], source["file"],
                          source["line"], "verified", None])
    types = [[KINDS.get(n, 1), n if n in KINDS else "USER", n, n not in KINDS, None if n in KINDS else "tlmap"]
             for n in c.names]
    slot = {"signal": 11, "signal_name": "SIGSEGV", "si_code": 1, "si_code_name": "SEGV_MAPERR", "si_errno": 0,
            "si_pid": 0, "sender_uid": 0, "fault_address": "0x0", "sp": "0x%x" % SP, "handler_flags": 0,
            "chained": False, "repeated": False, "handed": False, "handed_outcome": "not_handed", "handed_note": ""}
    return {"threads": [[c.pid, c.comm, True]], "types": types,
            "modules": [[c.exe, c.build_id], [LIBC, LIBC_BUILD_ID]], "locations": locations,
            "mappings": [{"kind": "anonymous", "path": None, "start": "0x%x" % HEAP, "end": "0x%x" % (HEAP + 0x21000),
                          "perms": "rw-", "dumped": True}],
            "crash_slots": [slot], "bytes": [{"hex": "010000000000000000000000000000000000000000000000"}]}


def events_member(c):
    ptr = HEAP + 0x2d0
    args = {"REQ_PARSE": (41, 0), "MALLOC": (ptr, 64), "FREE": (ptr, 0), "CRASH": (0, SP)}
    seq = {0: 0, ALLOC_LANE: 0}
    events = []
    for k, n in enumerate(c.names):
        seq[c.lanes[k]] += 1
        arg0, arg1 = args.get(n, (1001, 0))
        eid = USER[n][0] if n in USER else (11 if n == "CRASH" else 0)
        e = [c.lanes[k], seq[c.lanes[k]], 0, k, eid, arg0, arg1, None if n == "LANE_CLAIM" else k - 1,
             c.ticks[k] if k == 0 else STEPS[k]]
        if n in ("MALLOC", "FREE"):
            e.append({"p": 0})
        elif n == "CRASH":
            stack = list(range(len(EVENT_SITES) + 1, len(EVENT_SITES) + 1 + len(c.frames()) - 1))
            e.append({"b": 0, "k": ["complete", stack], "c": 0})
        events.append(e)
    return events


def reader_members(c):
    """The reader's part: what `core-timeline-read --format=compact` prints
    for the core, without its bulk (tables, spans, events)."""
    return {"schema_version": 7, "status": "ok", "exit_code": 0, "reason": None, "source": "core-only",
            "core": {"path": c.core, "size": 18411520, "truncated": False, "machine": 62},
            "process": {"pid": c.pid, "ppid": 1, "comm": c.comm, "args": c.exe + " --serve --port 8080 ",
                        "exe": c.exe, "build_id": c.build_id, "threads": [c.pid]},
            "snapshot": None, "crash": crash_member(c), "thread_stacks": [], "cause": None, "group": c.group,
            "rings": [ring_member(c)], "time": time_member(c),
            "threads": [{"tid": c.pid, "name": c.comm, "events": len(c.names), "crashed": True, "open_spans": []}],
            "windows": windows_member(c),
            "names": [{"id": USER[n][0], "name": n, "arg_names": [USER[n][1], None], "name_from": "tlmap"}
                      for n in c.names if n in USER],
            "magic_rejected": {"total": 0, "first": []}, "sidecar": None, "absence_proves_nothing": False,
            "warnings": []}


def daemon_members(c, fields, cursor):
    """What core-timelined adds: the coredump entry, the ids, how it was handled."""
    decoder = {"duration_ms": 81.318, "max_rss_kb": 10260, "anon_kb": 1140, "timed_out": False, "via_server": True,
               "landlock_abi": 7, "seccomp": True, "failure": None,
               "run_as": {"uid": 1000, "gid": 1000, "as": "crashed_user"}}
    extraction = {"compression": "zstd", "input_bytes": 131972, "core_bytes": 18411520, "kept_bytes": 18411520,
                  "sparse": False, "budget_exhausted": False, "stream_truncated": False, "stream_error": None}
    return {"coredump": {"journal_cursor": cursor, "boot_id": fields["_BOOT_ID"], "realtime_usec": c.ts + 100000,
                         "core_file": c.core, "storage": "external", "fields": dict(sorted(fields.items())),
                         "dumpable": 1},
            "pids": {"host_pid": c.pid, "pid": c.pid, "namespaced": None, "from": None,
                     "threads": [{"tid": c.pid, "host_tid": c.pid}]},
            "daemon": {"version": "0.1.0", "decoded_usec": c.ts + 150000, "duration_ms": 95.66, "latency_ms": 150.0,
                       "reader_status": "ok", "prepared_before_entry": False, "extraction": extraction,
                       "decoder": decoder}}


def document(crash, fields, cursor):
    """The stored document of `crash` (a Crash), as a dict in the daemon's
    member order; `fields` and `cursor`: its systemd-coredump entry's
    fields (those core-timelined keeps: all but the trusted _EXE, _PID... it
    does not read) and cursor."""
    doc = reader_members(crash)
    doc.update(daemon_members(crash, fields, cursor))
    doc.update({"tables": tables_member(crash), "spans": [], "events": events_member(crash)})
    return doc
