#!/usr/bin/env python3
"""A broker killed and restarted under running jobs (docs/benchmarks.md, "Broker restart").

Starts a standing grid on loopback (gridbroker with --state-dir and a journal, relays of
clusters c0 and c1 of 10 slots each, certificates from `gridrun ca`). A job is 2 processes,
one per cluster, each printing LINES numbered lines 0.1 s apart and exiting 0 (c0) or 3
(c1), so that its status is 3. Each round starts JOBS such jobs at once:

  1. ROUNDS rounds undisturbed: each job's wall time (gridrun's start to its end);
  2. ROUNDS rounds in which the broker is killed (SIGKILL) 1.5 s after the jobs started and
     started again AWAY seconds later (0: at once) on the same port, state directory and
     journal: each job's wall
     time, whether it ended right (status 3, every line of both ranks printed once and in
     order) and how many lines were lost or printed twice; how long the broker was away
     (kill to listening again).

Prints the medians, the restart's extra time per job (the difference of the medians) and the
jobs lost (target: 0).

    bench/restart.py [BINDIR [ROUNDS [JOBS [LINES [AWAY]]]]]      (default build/bin 3 5 40 0)

With AWAY longer than the jobs' remaining time they end while the broker is away, and the
restarted broker learns their end (and their output) from the relays.

Everything is bounded in time and removed at the end, also on failure (RESTART_KEEP=1 keeps
the daemons' logs, the journal and the jobs' output).
"""
import os, signal, socket, statistics, subprocess, sys, time

from standing_grid import credentials, free_port, workspace

bindir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
lines = int(sys.argv[4]) if len(sys.argv) > 4 else 40
away_for = float(sys.argv[5]) if len(sys.argv) > 5 else 0
daemons = {}
d = workspace("gridrt-restart-", "RESTART_KEEP", daemons)  # also on failure: nothing left behind
gr = f"{bindir}/gridrun"
ca = f"{d}/ca"
credentials(gr, ca, (["broker"], ["relay", "c0"], ["relay", "c1"], ["user", "alice"]))
broker_port = free_port()
clusters = ""
for c in ("c0", "c1"):
    clusters += (f'<cluster name="{c}" site="s{c[1]}" slots="10"><relay link="127.0.0.1:{free_port()}" '
                 f'local="127.0.0.1:{free_port()}"/><launch>mpiexec -launcher fork -n {{np}}</launch></cluster>')
open(f"{d}/grid.xml", "w").write(f"<grid>{clusters}</grid>")


def broker_listening():
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", broker_port)) == 0


def start_broker(n):
    daemons["broker"] = subprocess.Popen(
        [f"{bindir}/gridbroker", "--grid", f"{d}/grid.xml", "--listen", f"127.0.0.1:{broker_port}", "--cert", f"{ca}/broker.pem",
         "--key", f"{ca}/broker.key", "--ca", f"{ca}/ca.pem", "--journal", f"{d}/journal", "--state-dir", f"{d}/state"],
        stderr=open(f"{d}/broker-{n}.log", "w"))
    for _ in range(500):
        if broker_listening(): return
        time.sleep(0.01)
    raise SystemExit("the broker did not listen within 5 s")


start_broker(0)
for c in ("c0", "c1"):
    daemons[c] = subprocess.Popen([f"{bindir}/gridrelay", "--grid", f"{d}/grid.xml", "--cluster", c, "--broker",
                                   f"127.0.0.1:{broker_port}", "--cert", f"{ca}/relay-{c}.pem", "--key", f"{ca}/relay-{c}.key",
                                   "--ca", f"{ca}/ca.pem"], stderr=open(f"{d}/relay-{c}.log", "w"))
time.sleep(1.5)
open(f"{d}/count.sh", "w").write(f'i=1; while [ $i -le {lines} ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done\n'
                                 '[ "$GRIDRT_CLUSTER" = c1 ] && exit 3; exit 0\n')
profile = f"{d}/job.xml"
open(profile, "w").write(
    '<grmsJob appId="restart"><task taskId="t"><resourcesDescription><topology><group groupId="a"/><group groupId="b"/>'
    '<processes><groupIdReference groupId="a"/><processesCount><value>1</value></processesCount></processes>'
    '<processes><groupIdReference groupId="b"/><processesCount><value>1</value></processesCount></processes>'
    '</topology></resourcesDescription><execution type="x"><executable><execFile><file><url>/bin/sh</url></file>'
    f'</execFile></executable><arguments><value>{d}/count.sh</value></arguments></execution></task></grmsJob>')
submit = [gr, "--broker", f"127.0.0.1:{broker_port}", "--cert", f"{ca}/user-alice.pem", "--key", f"{ca}/user-alice.key", "--ca",
          f"{ca}/ca.pem", profile]
failures = []


def check(out, status, err):
    """(right, lines lost, lines printed twice) of one job's output."""
    lost = twice = 0
    for rank, cluster in ((0, "c0"), (1, "c1")):
        seen = [int(l.split()[-1]) for l in out.splitlines() if l.startswith(f"[{cluster}:{rank}] line ")]
        lost += len(set(range(1, lines + 1)) - set(seen))
        twice += len(seen) - len(set(seen))
        if seen != sorted(seen): twice += 1  # out of order counts as wrong
    right = status == 3 and lost == 0 and twice == 0
    if not right: failures.append(f"status {status}, {lost} lines lost, {twice} twice: {err.strip()[-300:]}")
    return right, lost, twice


restarts = 0


def one_round(kill_broker):
    """[(seconds, right, lost, twice)] of JOBS jobs started at once; the broker's time away."""
    global restarts
    started, runs = time.monotonic(), []
    for n in range(jobs):
        out, err = open(f"{d}/job{n}.out", "w+"), open(f"{d}/job{n}.err", "w+")
        runs.append((subprocess.Popen(submit, stdout=out, stderr=err), out, err))
    away = None
    if kill_broker:
        time.sleep(1.5)
        daemons["broker"].send_signal(signal.SIGKILL)
        daemons["broker"].wait()
        t0 = time.monotonic()
        time.sleep(away_for)
        restarts += 1
        start_broker(restarts)
        away = time.monotonic() - t0
    results = []
    for p, out, err in runs:
        p.wait(timeout=120)
        took = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        results.append((took,) + check(out.read(), p.returncode, err.read()))
    return results, away


def summary(results):
    return (statistics.median(r[0] for r in results), sum(r[1] for r in results), sum(r[2] for r in results),
            sum(r[3] for r in results))


quiet, disturbed, aways = [], [], []
for _ in range(rounds):
    quiet += one_round(False)[0]
for _ in range(rounds):
    results, away = one_round(True)
    disturbed += results
    aways.append(away)
q, d_ = summary(quiet), summary(disturbed)
print(f"{rounds} rounds of {jobs} jobs at once, {lines} lines per rank 0.1 s apart; broker away {away_for:g} s + its start")
print(f"undisturbed:       median job {q[0]:.2f} s, {q[1]}/{len(quiet)} jobs right")
print(f"broker restarted:  median job {d_[0]:.2f} s, {d_[1]}/{len(disturbed)} jobs right, {d_[2]} lines lost, "
      f"{d_[3]} printed twice; broker away {statistics.median(aways) * 1000:.0f} ms (median)")
print(f"extra time per job: {d_[0] - q[0]:.2f} s (ratio {d_[0] / q[0]:.2f}); jobs lost: {len(disturbed) - d_[1]}")
for f in failures[:5]:
    print("  failed:", f)
