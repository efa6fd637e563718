#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/bench_query.py [BUILD_DIR [N [RUNS [LAYOUT]]]] - ctl-query over N crashes
(default 100000) from the journal's index, beside coredumpctl over the same
journal and beside the file scan (docs/performance.md, "bench_query",
with its targets).

The corpus (bench/query_corpus.py: N systemd-coredump entries and N
timeline entries in a journal made by systemd-journal-remote, each with its
document entry (LAYOUT "split", the default: as core-timelined logs them)
or with the document inside (LAYOUT "inline": as earlier daemons did), and
the N timeline files) is made once in BUILD_DIR/bench-query-N-LAYOUT/ and
kept for the next runs (its making is timed and printed when it is made);
a corpus whose "done" file does not hold query_corpus.VERSION (one made
before the timeline entries carried group signatures) is made anew.

Each command runs RUNS times (default 3) with stdout on /dev/null; printed:
the median and the slowest wall time, the median CPU time (user + system,
from wait4(2)), and the peak RSS of the slowest-RSS
run (ru_maxrss of that child, from wait4(2); a child of this python starts
at python's own high-water mark, printed as the "floor" row).  One command
per line, then the targets with their verdicts (a miss says by how much).

Not a test: no time is judged (a missed target is printed, not an error),
and it is not run by ctest; it exits 1 only when a measured command fails.
tests/bench/check_bench runs it on N=200 to keep it working.
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import query_corpus  # noqa: E402


def measure(argv, runs):
    times, cpu, rss, codes = [], [], [], set()
    for _ in range(runs):
        start = time.perf_counter()
        with open(os.devnull, "wb") as null:
            p = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
            err = p.stderr.read()
            _, status, usage = os.wait4(p.pid, 0)
        times.append(time.perf_counter() - start)
        rss.append(usage.ru_maxrss)
        cpu.append(usage.ru_utime + usage.ru_stime)
        codes.add(os.waitstatus_to_exitcode(status))
        p.returncode = os.waitstatus_to_exitcode(status)
    return statistics.median(times), max(times), max(rss), codes, err.decode(errors="replace"), statistics.median(cpu)


def main():
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(src, "build")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    ctlq = os.path.join(build, "bin", "ctl-query")
    layout = sys.argv[4] if len(sys.argv) > 4 else "split"
    corpus = os.path.join(build, "bench-query-%d-%s" % (n, layout))
    done = os.path.join(corpus, "done")
    made = open(done).read().strip() if os.path.exists(done) else None
    if made != query_corpus.VERSION:
        subprocess.run(["rm", "-rf", corpus], check=True)
        start = time.monotonic()
        subprocess.run([sys.executable, os.path.join(src, "bench", "query_corpus.py"), str(n), corpus, layout],
                       check=True)
        print("corpus made in %.1f s (kept in %s)" % (time.monotonic() - start, corpus))
        with open(done, "w") as f:
            f.write(query_corpus.VERSION + "\n")
    else:
        print("corpus: %s (made by an earlier run)" % corpus)
    jdir, tdir = os.path.join(corpus, "journal"), os.path.join(corpus, "timelines")
    pid = str(100000 + n // 2)
    name = "RELOAD"
    rows = []
    cpus = {}
    failed = []

    def row(label, argv):
        med, worst, rss, codes, err, cpu = measure(argv, runs)
        rows.append((label, med, worst, rss, codes, cpu))
        cpus[label] = cpu
        if codes - {0}:
            print("  %s exited %s: %s" % (label, sorted(codes), err.strip()[:300]))
            failed.append(label)
        return med

    row("floor (/bin/true)", ["/bin/true"])
    t = {}
    t["list"] = row("ctl-query -D JOURNAL list", [ctlq, "-D", jdir, "list"])
    t["cd_list"] = row("coredumpctl -D JOURNAL list", ["coredumpctl", "--no-pager", "-D", jdir, "list"])
    t["group"] = row("ctl-query -D JOURNAL group", [ctlq, "-D", jdir, "group"])
    t["group_stack"] = row("ctl-query -D JOURNAL group --stack", [ctlq, "-D", jdir, "group", "--stack"])
    t["events"] = row("ctl-query -D JOURNAL events --name " + name, [ctlq, "-D", jdir, "events", "--name", name])
    t["show"] = row("ctl-query -D JOURNAL show " + pid, [ctlq, "-D", jdir, "show", pid])
    t["cd_info"] = row("coredumpctl -D JOURNAL info " + pid, ["coredumpctl", "--no-pager", "-D", jdir, "info", pid])
    t["f_list"] = row("ctl-query -D TIMELINES list (file scan)", [ctlq, "-D", tdir, "list"])
    t["f_events"] = row("ctl-query -D TIMELINES events --name " + name, [ctlq, "-D", tdir, "events", "--name", name])
    t["f_show"] = row("ctl-query -D TIMELINES show " + pid, [ctlq, "-D", tdir, "show", pid])

    print("bench_query: %d crashes (%d timeline entries (%s) + %d coredump entries in the journal; %d files), "
          "median of %d runs" % (n, n, "document entries apart" if layout == "split" else "documents inside", n, n,
                                 runs))
    print("| command | median s | slowest s | median CPU s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    for label, med, worst, rss, codes, cpu in rows:
        print("| %s | %.3f | %.3f | %.3f | %.1f |" % (label, med, worst, cpu, rss / 1024))

    def verdict(what, value, limit):
        ok = value <= limit
        print("target: %s <= %g: %.3f %s" % (what, limit, value,
                                             "met" if ok else "MISSED by %.3f (%.0f%%)" % (value - limit,
                                                                                           100 * (value - limit) / limit)))
    verdict("ctl-query list s", t["list"], 0.5)
    verdict("ctl-query list / coredumpctl list", t["list"] / t["cd_list"], 1.5)
    verdict("ctl-query events --name s", t["events"], 2.0)
    verdict("ctl-query show s", t["show"], 0.05)
    verdict("ctl-query list / coredumpctl list (a summary apart from the document)", t["list"] / t["cd_list"], 0.25)
    verdict("ctl-query events --name / coredumpctl list", t["events"] / t["cd_list"], 1.0)
    rss = {label: r for label, _, _, r, _, _ in rows}
    # CPU time (user + system, wait4(2)): what a loaded machine does not inflate as it does wall time.
    verdict("CPU: ctl-query list / coredumpctl list", cpus["ctl-query -D JOURNAL list"] /
            cpus["coredumpctl -D JOURNAL list"], 0.25)
    verdict("CPU: ctl-query events --name / coredumpctl list", cpus["ctl-query -D JOURNAL events --name " + name] /
            cpus["coredumpctl -D JOURNAL list"], 1.0)
    verdict("ctl-query list peak RSS / coredumpctl list's", rss["ctl-query -D JOURNAL list"] /
            rss["coredumpctl -D JOURNAL list"], 1.0)
    verdict("ctl-query events --name peak RSS / coredumpctl list's", rss["ctl-query -D JOURNAL events --name " + name] /
            rss["coredumpctl -D JOURNAL list"], 1.0)
    # No target of its own: ctl-query group beside coredumpctl list and ctl-query list, this run.
    cd_list, q_list = "coredumpctl -D JOURNAL list", "ctl-query -D JOURNAL list"
    for key, label in (("group", "ctl-query -D JOURNAL group"), ("group_stack", "ctl-query -D JOURNAL group --stack")):
        print("ratio: %s / coredumpctl list: wall %.2f, CPU %.2f, peak RSS %.2f; / ctl-query list: wall %.2f, CPU %.2f"
              % (label, t[key] / t["cd_list"], cpus[label] / cpus[cd_list], rss[label] / rss[cd_list],
                 t[key] / t["list"], cpus[label] / cpus[q_list]))
    if failed:
        sys.exit("bench_query: these commands failed, their times mean nothing: " + ", ".join(failed))


if __name__ == "__main__":
    main()
