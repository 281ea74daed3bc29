#!/usr/bin/env python3
"""Load and abuse of a standing grid (docs/benchmarks.md, "Load and abuse").

Starts a standing grid on loopback (gridbroker with a journal, relays of clusters c0 and c1
of 10 slots each, certificates from `gridrun ca`) and measures:

  1. without attack: 100 legitimate jobs (2 processes of /bin/echo, one per cluster) in
     bursts of 10 at once, each checked (status 0, both ranks' output), then JOBS_SEQ jobs
     one after the other: each job's wall time from gridrun's start to its end, the median;
  2. the same jobs under attack, for as long as they take: 2000 idle TCP connections and 500 stalled
     TLS handshakes spread over every listening port (the broker's, each relay's link and
     local ports) and over 16 source addresses (127.0.0.2-17), 40 first frames of the
     maximal size (16 MiB - 1, all of it sent but one byte) on the relays' local ports,
     and garbage (random bytes, then a close) on every port, about 50 connections a
     second;
  3. the daemons' resident memory idle (after the load of 1, so that what legitimate work
     keeps is not counted as the attack's), at the attack's peak (sampled every 0.1 s), and
     3 s after it ended; then 2 and 3 again, to tell memory kept once (libraries' and the
     allocator's, at first use) from memory that accumulates; the daemons' log lines.

    bench/abuse.py [BINDIR [JOBS_SEQ]]       (default build/bin 10)

Everything is bounded in count and time and removed at the end, also on failure
(ABUSE_KEEP=1 keeps the daemons' logs and the journal).
"""
import os, random, resource, socket, statistics, struct, subprocess, sys, threading, time

from standing_grid import credentials, free_port, workspace

bindir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
jobs_seq = int(sys.argv[2]) if len(sys.argv) > 2 else 10
resource.setrlimit(resource.RLIMIT_NOFILE, (16384, 16384))
daemons = []
attack_sockets = []
stop_attack = threading.Event()


def stop_the_attack():
    stop_attack.set()
    for s in attack_sockets:
        s.close()


d = workspace("gridrt-abuse-", "ABUSE_KEEP", daemons, stop_the_attack)  # also on failure: nothing left behind

# The grid, its credentials, its daemons.
gr = f"{bindir}/gridrun"
ca = f"{d}/ca"
credentials(gr, ca, (["broker"], ["relay", "c0"], ["relay", "c1"], ["user", "alice"]))
broker_port = free_port()
ports = {"broker": broker_port}
clusters = ""
for c in ("c0", "c1"):
    ports[f"{c} link"], ports[f"{c} local"] = free_port(), free_port()
    clusters += (f'<cluster name="{c}" site="s{c[1]}" slots="10"><relay link="127.0.0.1:{ports[c + " link"]}" '
                 f'local="127.0.0.1:{ports[c + " local"]}"/><launch>mpiexec -launcher fork -n {{np}}</launch></cluster>')
open(f"{d}/grid.xml", "w").write(f"<grid>{clusters}</grid>")
b = subprocess.Popen([f"{bindir}/gridbroker", "--grid", f"{d}/grid.xml", "--listen", f"127.0.0.1:{broker_port}", "--cert",
                      f"{ca}/broker.pem", "--key", f"{ca}/broker.key", "--ca", f"{ca}/ca.pem", "--journal", f"{d}/journal"],
                     stderr=open(f"{d}/broker.log", "w"))
daemons.append(b)
time.sleep(0.5)
relays = []
for c in ("c0", "c1"):
    relays.append(subprocess.Popen([f"{bindir}/gridrelay", "--grid", f"{d}/grid.xml", "--cluster", c, "--broker",
                                    f"127.0.0.1:{broker_port}", "--cert", f"{ca}/relay-{c}.pem", "--key", f"{ca}/relay-{c}.key",
                                    "--ca", f"{ca}/ca.pem"], stderr=open(f"{d}/relay-{c}.log", "w")))
daemons += relays
time.sleep(1.5)
profile = f"{d}/job.xml"
open(profile, "w").write(
    '<grmsJob appId="abuse"><task taskId="t"><resourcesDescription><topology><group groupId="a"/><group groupId="b"/>'
    '<processes><groupIdReference groupId="a"/><processesCount><value>1</value></processesCount></processes>'
    '<processes><groupIdReference groupId="b"/><processesCount><value>1</value></processesCount></processes>'
    '</topology></resourcesDescription><execution type="x"><executable><execFile><file><url>/bin/echo</url></file>'
    '</execFile></executable><arguments><value>legitimate</value></arguments></execution></task></grmsJob>')
submit = [gr, "--broker", f"127.0.0.1:{broker_port}", "--cert", f"{ca}/user-alice.pem", "--key", f"{ca}/user-alice.key", "--ca",
          f"{ca}/ca.pem", profile]


failures = []  # what the jobs that went wrong said


def one_job():
    """(seconds, right) of one legitimate job."""
    t0 = time.monotonic()
    r = subprocess.run(submit, capture_output=True, text=True, timeout=120)
    right = r.returncode == 0 and "[c0:0] legitimate" in r.stdout and "[c1:1] legitimate" in r.stdout
    if not right:
        failures.append(f"status {r.returncode}: {r.stderr.strip()[-300:]}")
    return time.monotonic() - t0, right


def memory_each(field="VmRSS"):
    """MB of broker, relay c0, relay c1: a field of /proc/PID/status (VmRSS resident,
    RssAnon the anonymous part of it, their heaps)."""
    out = []
    for p in daemons:
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith(field + ":"):
                out.append(int(line.split()[1]) / 1024)
    return out


def rss_mb():
    return sum(memory_each())


def anon_mb():
    return sum(memory_each("RssAnon"))


def show(each):
    return f"{sum(each):.1f} MB (broker {each[0]:.1f}, relays {each[1]:.1f} and {each[2]:.1f})"


peak = 0.0


def sample_memory():
    global peak
    while not stop_attack.is_set():
        peak = max(peak, rss_mb())
        time.sleep(0.1)


def bursts():
    """100 jobs in bursts of 10 at once, then jobs_seq one after the other: their (seconds, right)."""
    burst_results = []
    for burst in range(10):
        results = [None] * 10
        def run(i):
            results[i] = one_job()
        workers = [threading.Thread(target=run, args=(i,)) for i in range(10)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        burst_results += results
    return burst_results, [one_job() for _ in range(jobs_seq)]


def report(when, burst_results, sequential):
    print(f"{when}: 100 jobs in bursts of 10, right {sum(ok for _, ok in burst_results)}/100, "
          f"median {statistics.median(t for t, _ in burst_results):.3f} s; {jobs_seq} jobs one after the other, "
          f"right {sum(ok for _, ok in sequential)}/{jobs_seq}, median {statistics.median(t for t, _ in sequential):.3f} s")
    for f in failures:
        print("  a job went wrong:", f)
    failures.clear()
    return statistics.median(t for t, _ in sequential)


# 1. Without attack: the same load, so that what the grid keeps after it is the idle figure.
one_job()  # warm-up (page cache, first mpiexec)
fresh = memory_each()
quiet = report("without attack", *bursts())
idle_each = memory_each()
idle = sum(idle_each)
print(f"daemons' resident memory idle after that load: {show(idle_each)}, heap (anonymous) {anon_mb():.1f} MB "
      f"(fresh: {show(fresh)})")

# 2. The attack. Source addresses vary so that per-address caps do not stop it early.
targets = list(ports.items())
sources = [f"127.0.0.{i}" for i in range(2, 18)]


def connect(port, n):
    s = socket.socket()
    s.bind((sources[n % len(sources)], 0))
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    return s


opened = {"idle": 0, "stalled": 0, "frames": 0, "frame bytes": 0, "garbage": 0, "refused": 0}
# A TLS record header announcing a ClientHello of 512 bytes, and only 5 of them.
stalled_hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03])


def hold_connections():
    for n in range(2000):
        if stop_attack.is_set():
            return
        try:
            attack_sockets.append(connect(targets[n % len(targets)][1], n))
            opened["idle"] += 1
        except OSError:
            opened["refused"] += 1
    for n in range(500):
        if stop_attack.is_set():
            return
        try:
            s = connect(targets[n % len(targets)][1], n)
            s.sendall(stalled_hello)
            attack_sockets.append(s)
            opened["stalled"] += 1
        except OSError:
            opened["refused"] += 1


def big_frames():
    # A ProcHello header (magic "GRDT", version 1, type 7) announcing 16 MiB - 1 bytes.
    body = 16 * 1024 * 1024 - 1
    header = struct.pack("<IHHIIQiiIiQ", 0x54445247, 1, 7, 0, body, 0, 0, 0, 0, 0, 0)
    chunk = b"\0" * (1 << 20)
    for n in range(40):
        if stop_attack.is_set():
            return
        try:
            s = connect(ports["c0 local" if n % 2 == 0 else "c1 local"], n)
            s.settimeout(0.2)
            attack_sockets.append(s)
            opened["frames"] += 1
            s.sendall(header)
            for _ in range(15):
                s.sendall(chunk)
                opened["frame bytes"] += len(chunk)
            s.sendall(b"\0" * (body - 1 - 15 * len(chunk)))
            opened["frame bytes"] += body - 1 - 15 * len(chunk)
        except OSError:
            pass  # refused on its header, or stalled by the relay: that is the point


def garbage():
    rng = random.Random(7)
    n = 0
    while not stop_attack.is_set():
        for _, port in targets:
            try:
                s = connect(port, n)
                s.sendall(rng.randbytes(rng.randint(1, 4096)))
                s.close()
                opened["garbage"] += 1
            except OSError:
                opened["refused"] += 1
            n += 1
        time.sleep(0.1)


def attack_round(number):
    """The attack, while bursts() runs; then the memory it left."""
    global peak
    for k in opened:
        opened[k] = 0
    stop_attack.clear()
    peak = 0.0
    threads = [threading.Thread(target=f, daemon=True) for f in (sample_memory, hold_connections, big_frames, garbage)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    loaded_bursts, loaded_sequential = bursts()
    attack_seconds = time.monotonic() - t0
    stop_attack.set()
    for t in threads:
        t.join(timeout=5)
    peak = max(peak, rss_mb())
    print(f"attack {number}, for {attack_seconds:.0f} s: {opened['idle']} idle and {opened['stalled']} stalled-handshake "
          f"connections opened, {opened['frames']} maximal frames begun ({opened['frame bytes'] / 2**20:.1f} MiB of their "
          f"bodies taken in all), {opened['garbage']} garbage connections, {opened['refused']} connects that failed")
    loaded = report(f"under attack {number}", loaded_bursts, loaded_sequential)
    print(f"  a job's time one after the other, under attack against without: {loaded / quiet:.2f}")
    for s in attack_sockets:
        s.close()
    attack_sockets.clear()
    print(f"  daemons' resident memory at the attack's peak: {peak:.1f} MB, {peak - idle:+.1f} MB on idle")
    time.sleep(3)
    after = memory_each()
    print(f"  3 s after the attack: {show(after)}, {100 * (sum(after) - idle) / idle:+.0f}% on idle; "
          f"heap (anonymous) {anon_mb():.1f} MB")
    return sum(after)


# Run twice: memory an attack leaves for good (what the allocator, the libraries and Asio
# keep once they were used) shows in the first; memory that accumulates, in the second.
after_first = attack_round(1)
after_second = attack_round(2)
print(f"after the second attack against after the first: {100 * (after_second - after_first) / after_first:+.1f}%")
print(f"broker log lines: {sum(1 for _ in open(f'{d}/broker.log'))}, relays': "
      f"{sum(sum(1 for _ in open(f'{d}/relay-{c}.log')) for c in ('c0', 'c1'))}")
