#!/usr/bin/env python3
"""How long a hung peer takes to be noticed (docs/benchmarks.md, "Detection of hung peers").

Runs hello's ping-pong on gridrun's embedded grid (two clusters) with GRIDRT_DEAD_PEER_SECONDS=T,
stops one process with SIGSTOP once traffic flows — c1's relay, the broker, or rank 2 (c1's
only rank) — and measures, RUNS times each: the silence the detecting side reported ("silent
for X s"), and the time from the stop until gridrun returned (detection plus the job's
clean-up). The stopped process is continued after 60 s at the latest. Prints the medians.

    bench/detection.py [BINDIR [T [RUNS]]]      (default build/bin 6 3)
"""
import os, re, signal, statistics, subprocess, sys, tempfile, time
bindir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
T = int(sys.argv[2]) if len(sys.argv) > 2 else 6
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
profile = open(f"{src}/jobprofiles/two-groups.xml").read().replace(
    "<value>4096</value>", "<value>4096</value><value>--rounds</value><value>600</value><value>--round-ms</value><value>100</value>")
d = tempfile.mkdtemp(prefix="gridrt-detection-")
open(f"{d}/job.xml", "w").write(profile)

def find(program, words):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") != f"{bindir}/{program}": continue
            text = (open(f"/proc/{pid}/cmdline", "rb").read() + b"\0" + open(f"/proc/{pid}/environ", "rb").read()).replace(b"\0", b" ")
            if (b" " + text).find(b" " + words.encode()) >= 0: return int(pid)
        except OSError: pass
    return None

def once(program, words):
    env = dict(os.environ, GRIDRT_DEAD_PEER_SECONDS=str(T))
    out, err = open(f"{d}/out", "w+"), open(f"{d}/err", "w+")
    g = subprocess.Popen([f"{bindir}/gridrun", f"{d}/job.xml"], stdout=out, stderr=err, env=env)
    pid = None
    for _ in range(600):
        time.sleep(0.05)
        out.seek(0)
        if "(first round)" in out.read() and (pid := find(program, words)): break
    if not pid:
        g.kill(); g.wait(); raise SystemExit(f"{program} ({words}) not found running")
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try: g.wait(timeout=60)
    except subprocess.TimeoutExpired: pass
    took = time.monotonic() - t0
    try: os.kill(pid, signal.SIGCONT)
    except ProcessLookupError: pass
    g.wait()
    err.seek(0)
    text = err.read()
    m = re.search(r"silent for ([0-9.]+) s", text)
    return (float(m.group(1)) if m else float("nan")), took, g.returncode

print(f"GRIDRT_DEAD_PEER_SECONDS={T} (heartbeat every {T/6:.1f} s, silence limit {5*T/6:.1f} s), {runs} runs each")
for name, program, words in (("relay c1", "gridrelay", "--cluster c1 "), ("broker", "gridbroker", ""), ("rank 2", "hello", "GRIDRT_CLUSTER=c1 ")):
    results = [once(program, words) for _ in range(runs)]
    silence = statistics.median(r[0] for r in results)
    ended = statistics.median(r[1] for r in results)
    print(f"{name:9s}: silence reported {silence:.2f} s, gridrun returned {ended:.2f} s after the stop "
          f"(statuses {sorted(set(r[2] for r in results))})")
