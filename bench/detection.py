#!/usr/bin/env python3
"""How long a hung peer takes to be noticed (docs/benchmarks.md, "Detection of hung peers").

Runs hello's ping-pong on gridrun's embedded grid (two clusters) with GRIDRT_DEAD_PEER_SECONDS=T,
stops one process with SIGSTOP once traffic flows — c1's relay, the broker, or rank 2 (c1's
only rank) — or silences the relay link between c0 and c1 (iptables DROP both ways; as root
only: the grid then runs in a network namespace of its own, whose loopback alone is touched),
and measures, RUNS times each: the silence the detecting side reported ("silent for X s"),
and the time from the stop until gridrun returned (detection plus the job's clean-up). The
stopped process is continued after 60 s at the latest. Prints the medians.

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

def stop_process(program, words):
    """SIGSTOPs the process once it runs; returns how to continue it, or None if not found."""
    pid = find(program, words)
    if not pid: return None
    os.kill(pid, signal.SIGSTOP)
    def resume():
        try: os.kill(pid, signal.SIGCONT)
        except ProcessLookupError: pass
    return resume

NETNS = f"gridrt-detection-{os.getpid()}"

def silence_link():
    """Drops every packet of the relay link between c0 and c1 (both ways) in the grid's namespace."""
    relays = {find("gridrelay", f"--cluster c{i} ") for i in (0, 1)}
    if None in relays: return None
    listing = subprocess.run(["ip", "netns", "exec", NETNS, "ss", "-Htnp", "state", "established"],
                             capture_output=True, text=True).stdout
    for line in listing.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        ends = re.findall(r"127\.0\.0\.1:(\d+)", line)
        if len(ends) == 2 and owners and owners <= relays:
            a, b = ends
            for sport, dport in ((a, b), (b, a)):
                subprocess.run(["ip", "netns", "exec", NETNS, "iptables", "-I", "INPUT", "-p", "tcp", "--sport", sport,
                                "--dport", dport, "-j", "DROP"], check=True)
            return lambda: None  # the namespace goes, rules and all
    return None

def once(stop, in_netns=False):
    env = dict(os.environ, GRIDRT_DEAD_PEER_SECONDS=str(T))
    out, err = open(f"{d}/out", "w+"), open(f"{d}/err", "w+")
    prefix = ["ip", "netns", "exec", NETNS] if in_netns else []
    g = subprocess.Popen(prefix + [f"{bindir}/gridrun", f"{d}/job.xml"], stdout=out, stderr=err, env=env)
    resume = None
    for _ in range(600):
        time.sleep(0.05)
        out.seek(0)
        if "(first round)" in out.read() and (resume := stop()): break
    if not resume:
        g.kill(); g.wait(); raise SystemExit(f"nothing to stop found running:\n{open(f'{d}/err').read()}")
    t0 = time.monotonic()
    try: g.wait(timeout=60)
    except subprocess.TimeoutExpired: pass
    took = time.monotonic() - t0
    resume()
    g.wait()
    err.seek(0)
    text = err.read()
    m = re.search(r"silent for ([0-9.]+) s", text)
    return (float(m.group(1)) if m else float("nan")), took, g.returncode

print(f"GRIDRT_DEAD_PEER_SECONDS={T} (heartbeat every {T/6:.1f} s, silence limit {5*T/6:.1f} s), {runs} runs each")
cases = [(f"{name} stopped", lambda p=program, w=words: stop_process(p, w), False)
         for name, program, words in (("relay c1", "gridrelay", "--cluster c1 "), ("broker", "gridbroker", ""),
                                      ("rank 2", "hello", "GRIDRT_CLUSTER=c1 "))]
if os.geteuid() == 0:
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    subprocess.run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"], check=True)
    cases.append(("link c0-c1 silent", silence_link, True))
else:
    print("not root: the silent link is left out (it needs a network namespace and iptables)")
try:
    for name, stop, in_netns in cases:
        results = [once(stop, in_netns) for _ in range(runs)]
        silence = statistics.median(r[0] for r in results)
        ended = statistics.median(r[1] for r in results)
        print(f"{name:17s}: silence reported {silence:.2f} s, gridrun returned {ended:.2f} s after the stop "
              f"(statuses {sorted(set(r[2] for r in results))})")
finally:
    if os.geteuid() == 0: subprocess.run(["ip", "netns", "delete", NETNS])
