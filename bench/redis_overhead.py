#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/redis_overhead.py BUILD_DIR [--main-build DIR] [--other NAME=DIR] [--reps N] ...

The overhead of libtimeline on a real server (docs/performance.md, "A real
server: redis"): redis-benchmark against Debian's redis-server on
127.0.0.1, in configurations that differ only in what is preloaded:

  base      no preload
  tl        LD_PRELOAD=libtimeline.so.1 (a ring, the crash handlers, no
            wrapper: what a program that links libtimeline and records
            nothing pays)
  wrap      LD_PRELOAD="libtimeline.so.1 libtimeline-alloc.so
            libtimeline-io.so" (every heap and I/O call recorded)
  bytes     wrap with TL_IO_BYTES=N (--io-bytes N): the payload bytes of
            each read and write as well.  Left out unless --io-bytes is
            given: the hook for a libtimeline that records them
  wrap_main wrap with the libraries of another build (--main-build), for
            the windows of two builds measured in the same run
  NAME      likewise, with the libraries of build DIR (--other NAME=DIR,
            repeatable)

each without pipelining and with -P 16 (-c 50 clients, SET and GET,
--requests and --pipelined-requests of each per measurement: 200,000
and 2,000,000, a second or two each).  The configurations are interleaved:
every repetition runs each (pipelining, configuration) pair once, the
configurations in a rotated order, each against a fresh redis-server
(--save '' --appendonly no), so that a slow minute of a shared machine
falls on all of them.

Also the server's CPU time (utime + stime, /proc/PID/stat) per request:
on a machine shared with other work, requests/s falls whenever another
process takes the CPU, but the CPU time the server itself spends on a
request hardly moves, so base's CPU time over a configuration's is the
steadier estimate of the throughput ratio (cache and frequency effects of
the neighbours remain).

After each measurement, with the server still up: its VmRSS and VmHWM
(/proc/PID/status, proc(5)), and, for the configurations with wrappers, a
live snapshot (core-timeline-read --pid --json, of BUILD_DIR) whose
windows give, per source, the time span of the events the ring kept (the
newest kept event's time minus the oldest's) and how many were kept.

Prints each measurement as it is taken, then per (pipelining, command,
configuration) the median requests/s, its min-max, the median of the
ratios to base within each repetition (paired: the same minute), RSS, and
the windows; the spread (max/min - 1 of base's own runs) says how noisy
the machine was.  Everything also goes to --out (JSON).

Needs: redis-server, redis-benchmark (packaging/install-build-deps), a
build with libtimeline.so.1, the two wrappers and core-timeline-read
(ninja -C BUILD_DIR timeline timeline_alloc timeline_io core-timeline-read).
Not root.  Takes about (reps x configurations x 2) x some 3 s.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SOURCES = {"alloc": ("MALLOC", "FREE", "CALLOC", "REALLOC"),
           "io": ("OPEN", "READ", "WRITE", "CONNECT", "CLOSE")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, timeout=10.0):
    """Wait until redis accepts connections (or its process died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("redis-server did not answer PING")


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def cpu_seconds(pid):
    """utime + stime of `pid` (proc(5), /proc/PID/stat fields 14 and 15), s."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def windows(reader, pid):
    """Per source: (events kept, ms between the oldest and the newest kept
    event), from a live snapshot of `pid`."""
    r = subprocess.run([reader, "--pid", str(pid), "--json", "--no-symbols"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return {"error": r.stderr.strip()[:200]}
    doc = json.loads(r.stdout)
    out = {}
    for src, kinds in SOURCES.items():
        times = [e["time_ns"] for e in doc.get("events", []) if e.get("kind") in kinds and e.get("time_ns") is not None]
        out[src] = {"kept": len(times), "span_ms": (max(times) - min(times)) / 1e6 if times else 0.0}
    for w in doc.get("windows", []):
        if w.get("source") in out:
            out[w["source"]]["dropped"] = w.get("dropped")
    return out


def measure(args, config, env_extra, pipeline):
    port = free_port()
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("TL_")]:
        del env[k]
    env.update(env_extra)
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--daemonize", "no", "--logfile", "/dev/null"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, server)
        cpu0 = cpu_seconds(server.pid)
        bench = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50",
                                "-n", str(args.requests if pipeline == 1 else args.pipelined_requests), "-P", str(pipeline), "-t", "set,get", "--csv"],
                               capture_output=True, text=True, check=True)
        cpu = cpu_seconds(server.pid) - cpu0
        rps = {}
        for line in bench.stdout.splitlines():
            cells = [c.strip('"') for c in line.split(",")]
            if len(cells) >= 2 and cells[0] in ("SET", "GET"):
                rps[cells[0]] = float(cells[1])
        n = 2 * (args.requests if pipeline == 1 else args.pipelined_requests)
        result = {"config": config, "pipeline": pipeline, "rps": rps, "cpu_us_per_request": cpu / n * 1e6,
                  "rss_kib": status_kib(server.pid, "VmRSS"), "hwm_kib": status_kib(server.pid, "VmHWM")}
        if "LD_PRELOAD" in env_extra and "alloc" in env_extra["LD_PRELOAD"]:
            result["windows"] = windows(args.reader, server.pid)
        return result
    finally:
        server.terminate()
        server.wait()


def summarize(runs, configs):
    lines = []
    for pipeline in sorted({r["pipeline"] for r in runs}):
        for cmd in ("SET", "GET"):
            base = {r["rep"]: r["rps"].get(cmd) for r in runs
                    if r["config"] == "base" and r["pipeline"] == pipeline}
            bvals = [v for v in base.values() if v]
            noise = (max(bvals) / min(bvals) - 1) * 100 if bvals else 0.0
            lines.append(f"-P {pipeline} {cmd}: base's own runs spread {noise:.1f}% (max/min - 1)")
            for config in configs:
                mine = [r for r in runs if r["config"] == config and r["pipeline"] == pipeline]
                vals = [r["rps"].get(cmd) for r in mine if r["rps"].get(cmd)]
                if not vals:
                    continue
                ratios = [r["rps"][cmd] / base[r["rep"]] for r in mine if base.get(r["rep"]) and r["rps"].get(cmd)]
                rss = statistics.median(r["rss_kib"] for r in mine) / 1024
                line = (f"  {config:9} {statistics.median(vals):>11,.0f} req/s ({min(vals):,.0f}-{max(vals):,.0f})"
                        f"  ratio {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
                        f"  RSS {rss:.1f} MiB")
                lines.append(line)
        base_cpu = {r["rep"]: r["cpu_us_per_request"] for r in runs if r["config"] == "base" and r["pipeline"] == pipeline}
        lines.append(f"-P {pipeline} server CPU time per request (SET and GET), and base's over it "
                     f"(the throughput a CPU of its own would give, relative to base):")
        for config in configs:
            mine = [r for r in runs if r["config"] == config and r["pipeline"] == pipeline]
            if not mine:
                continue
            cpu = [r["cpu_us_per_request"] for r in mine]
            ratios = [base_cpu[r["rep"]] / r["cpu_us_per_request"] for r in mine if r["rep"] in base_cpu]
            lines.append(f"  {config:9} {statistics.median(cpu):.3f} us ({min(cpu):.3f}-{max(cpu):.3f})"
                         f"  ratio {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
        for config in configs:
            mine = [r for r in runs if r["config"] == config and r["pipeline"] == pipeline and "windows" in r]
            if not mine or any("error" in r["windows"] for r in mine):
                continue
            parts = []
            for src in SOURCES:
                spans = [r["windows"][src]["span_ms"] for r in mine]
                kept = statistics.median(r["windows"][src]["kept"] for r in mine)
                parts.append(f"{src} {statistics.median(spans):.1f} ms ({min(spans):.1f}-{max(spans):.1f}), "
                             f"{kept:,.0f} kept")
            lines.append(f"  -P {pipeline} windows {config:9} " + "; ".join(parts))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--main-build", help="another build whose wrappers run as wrap_main")
    ap.add_argument("--other", action="append", default=[], metavar="NAME=DIR",
                    help="also run NAME: wrap with the libraries of build DIR (repeatable)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000,
                    help="requests of each command per measurement without pipelining")
    ap.add_argument("--pipelined-requests", type=int, default=2000000, help="the same with pipelining")
    ap.add_argument("--io-bytes", type=int, help="also run `bytes`: wrap with TL_IO_BYTES=N")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--out", help="write every measurement here (JSON)")
    args = ap.parse_args()
    lib = os.path.join(os.path.abspath(args.build), "lib")
    args.reader = os.path.join(os.path.abspath(args.build), "bin", "core-timeline-read")
    tl = os.path.join(lib, "libtimeline.so.1")
    wrappers = f"{tl} {lib}/libtimeline-alloc.so {lib}/libtimeline-io.so"
    configs = [("base", {}), ("tl", {"LD_PRELOAD": tl}), ("wrap", {"LD_PRELOAD": wrappers})]
    if args.io_bytes is not None:
        configs.append(("bytes", {"LD_PRELOAD": wrappers, "TL_IO_BYTES": str(args.io_bytes)}))
    if args.main_build:
        mlib = os.path.join(os.path.abspath(args.main_build), "lib")
        configs.append(("wrap_main", {"LD_PRELOAD": f"{mlib}/libtimeline.so.1 {mlib}/libtimeline-alloc.so "
                                                    f"{mlib}/libtimeline-io.so"}))
    for other in args.other:
        name, _, build = other.partition("=")
        if not name or not build or name in (c for c, _ in configs):
            sys.exit(f"redis_overhead: --other {other}: give NAME=DIR with a NAME of its own")
        olib = os.path.join(os.path.abspath(build), "lib")
        configs.append((name, {"LD_PRELOAD": f"{olib}/libtimeline.so.1 {olib}/libtimeline-alloc.so "
                                             f"{olib}/libtimeline-io.so"}))
    for _, env in configs:
        for path in env.get("LD_PRELOAD", "").split():
            if not os.path.exists(path):
                sys.exit(f"redis_overhead: {path} is missing (build it first)")
    print(f"load before: {open('/proc/loadavg').read().strip()}; {os.cpu_count()} CPUs; "
          f"redis-server {subprocess.run(['redis-server', '--version'], capture_output=True, text=True).stdout.split()[2]}",
          flush=True)
    runs = []
    pipelines = [int(p) for p in args.pipelines.split(",")]
    for rep in range(args.reps):
        for pipeline in pipelines:
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for name, env in order:
                r = measure(args, name, env, pipeline)
                r["rep"] = rep
                runs.append(r)
                w = r.get("windows", {})
                wtxt = "" if not w or "error" in w else "  windows " + ", ".join(
                    f"{s} {w[s]['span_ms']:.1f} ms/{w[s]['kept']}" for s in SOURCES)
                print(f"rep {rep} -P {pipeline:<2} {name:9} SET {r['rps'].get('SET', 0):>10,.0f} "
                      f"GET {r['rps'].get('GET', 0):>10,.0f}  CPU {r['cpu_us_per_request']:.3f} us/req  RSS {r['rss_kib'] / 1024:.1f} MiB{wtxt}"
                      f"{'  ' + w['error'] if 'error' in w else ''}", flush=True)
    print(f"load after: {open('/proc/loadavg').read().strip()}")
    print()
    for line in summarize(runs, [c for c, _ in configs]):
        print(line)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
