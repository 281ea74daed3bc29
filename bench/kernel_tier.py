#!/usr/bin/env python3
"""The kernel tier: contention and escalations on real TCP (docs/benchmarks.md, "Contention
and escalations on real TCP"). Root only.

The relays' emulated lines are lossless, so the all-to-all contention and the many-to-one
escalations of a switched cluster cannot appear on them. Here NODES network namespaces are
the nodes of one cluster, each with one veth into a bridge (the switch, a namespace of its
own); every node's sending side is limited to RATE by `tc tbf` (its NIC) and so is every
switch port towards a node, with a queue of QUEUE bytes (a switch's short port buffer),
where TCP loses packets when several nodes send to one. One MPICH job spans the nodes, one
process per node, started by mpiexec through `ip netns exec`, over MPICH's TCP path (UCX's
tcp transport). bench/kernel_tier.c measures; bench/kernel_fit.cpp fits the runtime's models:

  1. ping-pong between two nodes: alpha, beta, C, t, 1/beta0;
  2. all-to-all over counts 3..NODES and sizes 1 KiB-256 KiB: the contention signature
     (gamma, delta, M) fitted at one count, its predictions of the others;
  3. many-to-one over counts 3..NODES and sizes 1 KiB-256 KiB, REPS each: the linear parts,
     the escalation levels, M1(n), Mc(n), M2;
  4. the split gather against one gather, at every (n, M) the model splits, for the largest
     count and the middle one: the pieces sent back to back (the paper's sequence of
     gathers), and paced (a sender sends a piece when the root has posted its receives);
  5. gridrt on a grid whose one cluster is the nodes (its relay on the switch): `gridrun
     calibrate --escalations` measures the cluster's gathers (gridrt's own) into a model
     (--model-from fit: kernel_fit's model of step 3 instead), then gridbench times gridrt's
     gather (hier) with that model, which splits it in paced pieces where it expects
     escalations, against the same without the split (GRIDRT_GATHER_PIECES=1: MPICH's
     gather), 4 KiB to 256 KiB, all NODES processes.

    bench/kernel_tier.py [--bindir build/bin] [--nodes 8] [--rate 100mbit] [--queue 32kb]
                         [--reps 20] [--out FILE] [--model-from calibrate|fit] [--gridrt-only]

Every raw measurement goes to FILE (JSON lines, overwritten; default kernel-tier-<time>.jsonl in the
working directory). The namespaces are removed at the end, also on failure or Ctrl-C.
"""
import argparse, json, os, signal, statistics, subprocess, sys, tempfile, time

from netns_nodes import Nodes, sh

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--bindir", default="build/bin")
parser.add_argument("--nodes", type=int, default=8, help="nodes (namespaces), 3 to 16")
parser.add_argument("--rate", default="100mbit", help="every NIC's and switch port's rate (tc's units)")
parser.add_argument("--queue", default="32kb", help="a switch port's queue (tc tbf limit)")
parser.add_argument("--reps", type=int, default=20, help="repetitions of every gather (all-to-all: half as many)")
parser.add_argument("--out", default=None, help="where the raw JSON lines go")
parser.add_argument("--gridrt-only", action="store_true", help="step 5 alone (with --model-from calibrate)")
parser.add_argument("--model-from", choices=("calibrate", "fit"), default="calibrate",
                    help="the model gridrt's gather runs with: gridrun calibrate --escalations on the nodes, or kernel_fit's")
args = parser.parse_args()
if os.geteuid() != 0:
    sys.exit("kernel_tier: needs root (network namespaces, tc)")
if not 3 <= args.nodes <= 16:
    sys.exit("kernel_tier: --nodes is 3 to 16")
if args.gridrt_only and args.model_from == "fit":
    sys.exit("kernel_tier: --gridrt-only needs the model from calibration (kernel_fit's comes from the sweeps it skips)")
bindir = os.path.abspath(args.bindir)
for tool in ("kernel_tier", "kernel_fit"):
    if not os.access(f"{bindir}/{tool}", os.X_OK):
        sys.exit(f"kernel_tier: {bindir}/{tool} not built (scripts/build.sh)")
out_path = args.out or f"kernel-tier-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"

hosts = [f"10.213.0.{i + 1}" for i in range(args.nodes)]
nodes = Nodes(f"gkt{os.getpid()}", hosts, "gridrt-kernel-tier-")
switch, node_ns, work, launcher = nodes.switch, nodes.ns, nodes.work, nodes.launcher


def teardown():
    nodes.teardown()


def setup():
    nodes.build()
    for i, h in enumerate(hosts):
        # The NIC: the node sends at RATE. The switch port towards the node: RATE, short queue.
        sh("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", args.rate, "burst", "16kb", "limit", "256kb", ns=node_ns[h])
        sh("tc", "qdisc", "add", "dev", f"p{i}", "root", "tbf", "rate", args.rate, "burst", "16kb", "limit", args.queue, ns=switch)


def drops():
    text = subprocess.run(["ip", "netns", "exec", switch, "tc", "-s", "qdisc", "show", "dev", "p0"], capture_output=True, text=True).stdout
    return int(text.split("dropped ")[1].split(",")[0]) if "dropped " in text else 0


def measure(op, *options, limit=900):
    """Runs kernel_tier across the nodes; returns its JSON lines (and appends them to the out file)."""
    cmd = ["ip", "netns", "exec", node_ns[hosts[0]], "mpiexec.mpich", "-launcher", "ssh", "-launcher-exec", launcher,
           "-iface", "eth0", "-hosts", ",".join(hosts), "-n", str(args.nodes), f"{bindir}/kernel_tier", op, *options]
    env = dict(os.environ, UCX_TLS="tcp,self")  # TCP only: UCX would use shared memory between namespaces of one machine
    t0 = time.monotonic()
    for attempt in (1, 2):  # hydra's proxies now and then lose their link to mpiexec as a job ends: once more
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=limit)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"kernel_tier {op} {' '.join(options)}: not done within {limit} s (stopped)")
        if r.returncode == 0:
            break
        if attempt == 2:
            raise SystemExit(f"kernel_tier {op} failed ({r.returncode}):\n{r.stderr[-2000:]}")
        print(f"  {op} {' '.join(options)}: failed ({r.returncode}: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else 'no message'}); again", flush=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    with open(out_path, "a") as f:
        f.write("".join(l + "\n" for l in lines))
    print(f"  {op} {' '.join(options)}: {len(lines)} lines in {time.monotonic() - t0:.0f} s", flush=True)
    return [json.loads(l) for l in lines]


def run_until_results(cmd, env, expected, what, limit=900, grace=30):
    """Runs a job until it ends, or until it has printed `expected` JSON lines and `grace`
    seconds more have passed: MPICH's UCX tcp transport may spin for ever in MPI_Finalize
    after rate-limited transfers (as kernel_tier.c's runs showed), and the results are in by
    then; the job is then stopped (SIGTERM to gridbench, which stops its grid) and that is
    said. Returns its stdout and stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, start_new_session=True)
        started, complete = time.monotonic(), None
        while p.poll() is None:
            time.sleep(1)
            out.seek(0)
            if complete is None and sum(l.startswith("{") for l in out.read().splitlines()) >= expected:
                complete = time.monotonic()
            if complete is not None and time.monotonic() - complete > grace:
                print(f"  {what}: all {expected} results in, but not ended {grace} s later (MPI_Finalize over UCX tcp): stopped", flush=True)
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                break
            if time.monotonic() - started > limit:
                os.killpg(p.pid, signal.SIGKILL)
                raise SystemExit(f"{what}: not done within {limit} s (stopped)")
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
        if complete is None and p.returncode != 0:
            raise SystemExit(f"{what} failed ({p.returncode}):\n{text[-2000:]}{errors[-2000:]}")
        return text, errors


def gridrt_gather(sizes):
    """gridrt's gather across the nodes (gridbench on a grid of one cluster, the nodes; the
    embedded broker and the cluster's relay in the switch's namespace, on the bridge), with
    the model (calibrated on the nodes, or kernel_fit's), split as it says and not split.
    Returns {size: {"auto" or "1": (mean us, predicted us)}}."""
    nodes.address_switch("10.213.0.254")
    grid, model = f"{work}/grid.xml", f"{work}/model.json"
    with open(grid, "w") as f:
        f.write(f'<grid name="kernel-tier">\n  <cluster name="nodes" site="lan" slots="{args.nodes}">'
                '<relay link="127.0.0.1:0" local="10.213.0.254:0"/><network nodes="private" inbound="no"/>'
                f'<launch>mpiexec -launcher ssh -launcher-exec {launcher} -iface br0 -hosts {",".join(hosts)} -n {{np}}</launch>'
                '</cluster>\n</grid>\n')
    t0 = time.monotonic()
    if args.model_from == "fit":
        made = subprocess.run([f"{bindir}/kernel_fit", "--model", model, "--cluster", "nodes"], stdin=open(out_path), capture_output=True, text=True)
    else:
        made = subprocess.run(["ip", "netns", "exec", switch, f"{bindir}/gridrun", "calibrate", "--grid", grid, "--escalations", "--no-sample",
                               "--sizes", "0,1024,16384,65536,262144", "--output", model],
                              capture_output=True, text=True, env=dict(os.environ, UCX_TLS="tcp,self"), timeout=1800)
    if made.returncode != 0:
        raise SystemExit(f"the model ({args.model_from}) failed:\n{made.stdout[-2000:]}{made.stderr[-2000:]}")
    print(f"  the model ({args.model_from}) in {time.monotonic() - t0:.0f} s:\n" +
          "".join(f"    {l}\n" for l in made.stdout.splitlines() if args.model_from == "calibrate"), end="", flush=True)
    results = {}
    for pieces in ("auto", "1"):
        env = dict(os.environ, UCX_TLS="tcp,self", GRIDRT_GATHER_PIECES=pieces, GRIDRT_EXPLAIN="1")
        cmd = ["ip", "netns", "exec", switch, f"{bindir}/gridbench", "--grid", grid, "--model", model, "--op", "gather",
               "--algo", "hier", "--sizes", ",".join(str(m) for m in sizes), "--iters", str(args.reps), "--json"]
        t0 = time.monotonic()
        out, err = run_until_results(cmd, env, len(sizes), f"gridbench on the nodes (GRIDRT_GATHER_PIECES={pieces})")
        lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        with open(out_path, "a") as f:
            f.write("".join(json.dumps(dict(l, gather_pieces=pieces)) + "\n" for l in lines))
        for l in lines:
            results.setdefault(l["bytes"], {})[pieces] = (l["avg_us"], l.get("predicted_us"))
        said = [l for l in err.splitlines() if "gather inside cluster" in l]
        print(f"  gridbench gather hier, GRIDRT_GATHER_PIECES={pieces}: {len(lines)} sizes in {time.monotonic() - t0:.0f} s" +
              "".join(f"\n    {l}" for l in said), flush=True)
    return results


def cell_stats(lines):
    us = [l["us"] for l in lines]
    return statistics.median(us), statistics.mean(us)


def interrupted(*_):
    for s in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the clean-up short
        signal.signal(s, signal.SIG_IGN)
    sys.exit(1)


signal.signal(signal.SIGTERM, interrupted)
signal.signal(signal.SIGINT, interrupted)
started = time.monotonic()
try:
    setup()
    open(out_path, "w").close()  # this run's lines only: kernel_fit reads the whole file
    print(f"kernel tier: {args.nodes} nodes, {args.rate} NICs and switch ports, port queue {args.queue}; raw lines to {out_path}")
    sizes = "1024,2048,4096,8192,16384,24576,32768,49152,65536,98304,131072,262144"
    if not args.gridrt_only:
        counts = ",".join(str(n) for n in range(3, args.nodes + 1))
        measure("pingpong", "--sizes", "0,1024,4096,16384,65536,262144,1048576", "--reps", "20")
        measure("alltoall", "--counts", counts, "--sizes", "1024,4096,16384,65536,131072,262144", "--reps", str(max(5, args.reps // 2)))
        before = drops()
        measure("gather", "--counts", counts, "--sizes", sizes, "--reps", str(args.reps))
        print(f"  packets dropped at the root's switch port during the many-to-one sweep: {drops() - before}")
        fit = subprocess.run([f"{bindir}/kernel_fit"], stdin=open(out_path), capture_output=True, text=True)
        if fit.returncode != 0:
            raise SystemExit(f"kernel_fit failed:\n{fit.stderr}")
        report, model = fit.stdout.rsplit("\n", 2)[0], json.loads(fit.stdout.strip().splitlines()[-1])
        print(report)
        cells = model.get("split", {}).get("cells", [])
        cells = cells if isinstance(cells, list) else [cells]
        # Compared at two counts (the largest and the middle one), to bound the time.
        compared = {args.nodes, (3 + args.nodes) // 2}
        split = [(int(c["n"]), int(c["M"]), int(c["pieces"])) for c in cells if int(c["pieces"]) > 1 and int(c["n"]) in compared]
        print(f"split gather against one gather ({len(split)} cells the model splits at n = {sorted(compared)}; "
              f"medians and means of {args.reps}):")
        for n, M, k in split:
            cell = ("gather", "--counts", str(n), "--sizes", str(M), "--reps", str(args.reps))
            one = cell_stats(measure(*cell))
            many = cell_stats(measure(*cell, "--pieces", str(k)))
            paced = cell_stats(measure(*cell, "--pieces", str(k), "--paced", "1"))
            print(f"    n {n} M {M}: one gather median {one[0] / 1e3:.1f} ms mean {one[1] / 1e3:.1f} ms; "
                  f"{k} pieces median {many[0] / 1e3:.1f} ms mean {many[1] / 1e3:.1f} ms; "
                  f"paced median {paced[0] / 1e3:.1f} ms mean {paced[1] / 1e3:.1f} ms; "
                  f"mean ratios {one[1] / many[1]:.2f} {one[1] / paced[1]:.2f}", flush=True)
    print(f"gridrt's gather (hier) on the nodes, {args.nodes} processes, means of {args.reps} calls, with the model and without the split:")
    for M, r in sorted(gridrt_gather([m for m in map(int, sizes.split(",")) if m >= 4096]).items()):
        auto, one = r.get("auto"), r.get("1")
        if auto and one:
            predicted = f"{auto[1] / 1e3:.1f} ms" if auto[1] else "none"
            print(f"    M {M}: unsplit {one[0] / 1e3:.1f} ms; with the model {auto[0] / 1e3:.1f} ms (predicted {predicted}); "
                  f"ratio {one[0] / auto[0]:.2f}", flush=True)
    print(f"kernel tier: done in {time.monotonic() - started:.0f} s")
finally:
    teardown()
