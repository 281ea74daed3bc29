#!/usr/bin/env python3
"""Logical clusters for real: a cluster of nodes in two groups, a delay between the groups.

NODES network namespaces on a bridge are the nodes of one cluster (one process each, each
with a host name of its own), in two halves; tests/nfq_delay holds every packet from a node
to the other half's for DELAY microseconds (iptables NFQUEUE: this kernel has no netem).
MPICH runs across them over UCX's TCP, started by mpiexec through `ip netns exec`; the
cluster's relay and the embedded broker sit on the bridge. Then:

  1. `gridrun calibrate --no-sample` measures the cluster: the latencies between its nodes,
     the logical clusters the 20% rule draws from them, and one pLogP pair per logical
     cluster and per pair of them (no sample run: the predictions are the model's alone);
  2. gridbench runs every collective with that model, hierarchical, its steps inside the
     cluster composed over the logical clusters (GRIDRT_CLUSTER_STEPS=composed), MPICH's
     own over the whole cluster (=mpich), and each as the model predicts faster (the
     default); and MPICH's blocking collective without gridrt (--algo mpi); `--runs` times
     each, alternated;
  3. prints, per (operation, size), the median max_us of each with its prediction, the
     ratio MPICH's steps / composed, and the model's choice against the faster of the two.

    bench/logical_nodes.py [--build DIR] [--nodes 4] [--delay-us 400] [--runs 3] [--iters 20]
                           [--sizes 8,65536,1048576] [--interleave] [--keep-model FILE]
                           [--calibrate-sizes S,...]
    bench/logical_nodes.py --finalize-jobs N

--finalize-jobs N: instead, coll_check N times on the nodes, counting the jobs the finalize
deadline had to end (MPICH's UCX tcp transport stuck in MPI_Finalize) and how each ended.
--interleave numbers the processes alternately from each half (hosts n1 n3 n2 n4 ...), as
a host file that lists nodes in no particular order does. Root only. The namespaces and
delays are removed at the end, also on failure or Ctrl-C.
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, time

from netns_nodes import Nodes, sh

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--build", default="build", help="the build directory (bin/ and tests/bin/)")
parser.add_argument("--nodes", type=int, default=4, help="nodes (namespaces), an even number from 4 to 8")
parser.add_argument("--delay-us", type=int, default=400, help="one-way delay between the halves, microseconds")
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--iters", type=int, default=20)
parser.add_argument("--sizes", default="8,65536,1048576")
parser.add_argument("--interleave", action="store_true", help="processes numbered alternately from each half")
parser.add_argument("--keep-model", metavar="FILE", help="also write the calibrated model there")
parser.add_argument("--calibrate-sizes", metavar="S,...", help="the sizes calibration measures (gridrun calibrate --sizes; default its own)")
parser.add_argument("--finalize-jobs", type=int, default=0, metavar="N",
                    help="instead: run coll_check N times on the nodes and count the jobs the finalize deadline ended")
args = parser.parse_args()
if os.geteuid() != 0:
    sys.exit("logical_nodes: needs root (network namespaces, iptables)")
if args.nodes % 2 or not 4 <= args.nodes <= 8:
    sys.exit("logical_nodes: --nodes is an even number from 4 to 8")
build = os.path.abspath(args.build)
tools = {name: f"{build}/bin/{name}" for name in ("gridrun", "gridbench")}
tools.update(nfq_delay=f"{build}/tests/bin/nfq_delay", coll_check=f"{build}/tests/bin/coll_check")
for name, path in tools.items():
    if not os.access(path, os.X_OK):
        sys.exit(f"logical_nodes: {path} not built (scripts/build.sh; nfq_delay needs libnetfilter-queue-dev)")

hosts = [f"10.214.0.{i + 1}" for i in range(args.nodes)]
half = {h: i * 2 // args.nodes for i, h in enumerate(hosts)}
order = [h for pair in zip(hosts[:args.nodes // 2], hosts[args.nodes // 2:]) for h in pair] if args.interleave else hosts
nodes = Nodes(f"gln{os.getpid()}", hosts, "gridrt-logical-nodes-", own_host_names=True)
switch, work = nodes.switch, nodes.work
delayers = []


def teardown():
    for p in delayers:
        p.terminate()
    nodes.teardown()


def setup():
    """The nodes, and on each the delay of its packets to the other half's nodes."""
    nodes.build(switch_addr="10.214.0.254")
    for h in hosts:
        ns = nodes.ns[h]
        for other in hosts:
            if half[other] != half[h]:
                sh("iptables", "-A", "OUTPUT", "-d", other, "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass", ns=ns)
        p = subprocess.Popen(["ip", "netns", "exec", ns, tools["nfq_delay"], "--queue", "0", "--delay-us", str(args.delay_us)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        delayers.append(p)
        if not p.stdout.readline().startswith("holding"):
            raise SystemExit(f"nfq_delay did not start in {ns}")


def run(cmd, what, steps=None):
    """A gridrun job in the switch's namespace (GRIDRT_CLUSTER_STEPS=steps), stopped after 15 minutes."""
    env = dict(os.environ, UCX_TLS="tcp,self", GRIDRT_FINALIZE_TIMEOUT="5")
    if steps:
        env["GRIDRT_CLUSTER_STEPS"] = steps
    r = subprocess.run(["ip", "netns", "exec", switch, *cmd], capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"{what} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def finalize_jobs(grid):
    """coll_check on the nodes, --finalize-jobs times: how each job ended, and how many of
    them the finalize deadline (5 s) had to end (MPICH's UCX tcp transport stuck in
    MPI_Finalize)."""
    env = dict(os.environ, UCX_TLS="tcp,self", GRIDRT_FINALIZE_TIMEOUT="5")
    statuses, stuck, seconds = {}, 0, []
    for k in range(args.finalize_jobs):
        t0 = time.monotonic()
        r = subprocess.run(["ip", "netns", "exec", switch, tools["gridrun"], "--grid", grid, "-n", str(args.nodes), tools["coll_check"]],
                           capture_output=True, text=True, env=env, timeout=300)
        seconds.append(time.monotonic() - t0)
        statuses[r.returncode] = statuses.get(r.returncode, 0) + 1
        ended_by_deadline = "MPI_Finalize has not returned" in r.stderr
        stuck += ended_by_deadline
        print(f"  job {k + 1}: status {r.returncode} in {seconds[-1]:.1f} s{' (the deadline ended it)' if ended_by_deadline else ''}",
              flush=True)
    print(f"logical_nodes: {args.finalize_jobs} jobs of coll_check: statuses {statuses}; {stuck} ended by the finalize deadline; "
          f"median {statistics.median(seconds):.1f} s, longest {max(seconds):.1f} s")


def main():
    setup()
    grid = f"{work}/grid.xml"
    with open(grid, "w") as f:
        f.write(f'<grid name="logical-nodes">\n  <cluster name="nodes" site="lan" slots="{args.nodes}">'
                '<relay link="127.0.0.1:0" local="10.214.0.254:0"/><network nodes="private" inbound="no"/>'
                f'<launch>mpiexec -launcher ssh -launcher-exec {nodes.launcher} -iface br0 -hosts {",".join(order)} -n {{np}}</launch>'
                '</cluster>\n</grid>\n')
    if args.finalize_jobs:
        return finalize_jobs(grid)
    model = f"{work}/model.json"
    t0 = time.monotonic()
    sizes = ["--sizes", args.calibrate_sizes] if args.calibrate_sizes else []
    run([tools["gridrun"], "calibrate", "--grid", grid, "--no-sample", *sizes, "--output", model], "gridrun calibrate")
    shown = run([tools["gridrun"], "calibrate", "--show", model], "gridrun calibrate --show").stdout
    print(f"logical_nodes: {args.nodes} nodes, halves {args.delay_us} us apart, processes {'interleaved' if args.interleave else 'in order'};"
          f" calibrated in {time.monotonic() - t0:.0f} s:\n" + "".join(f"    {l}\n" for l in shown.splitlines()), flush=True)
    if args.keep_model:
        shutil.copyfile(model, args.keep_model)
    with open(model) as f:
        m = json.load(f)
    if "logical_clusters" not in m:
        raise SystemExit("logical_nodes: the model has no logical clusters (the latencies did not split the cluster)")
    ops = "barrier,bcast,reduce,allreduce,gather,scatter,allgather,alltoall"
    jobs = {"composed": ("hier", "composed"), "mpich steps": ("hier", "mpich"), "model": ("hier", "model"), "mpi": ("mpi", None)}
    measured, predicted = {}, {}
    for r in range(args.runs):
        for name, (algo, steps) in jobs.items():
            print(f"logical_nodes: run {r + 1}/{args.runs}: {name}", file=sys.stderr, flush=True)
            out = run([tools["gridbench"], "--grid", grid, "--model", model, "--op", ops, "--algo", algo, "--sizes", args.sizes,
                       "--iters", str(args.iters), "--json"], f"gridbench {name}", steps).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    d = json.loads(line)
                    measured.setdefault((d["op"], d["bytes"], name), []).append(d["max_us"])
                    predicted[(d["op"], d["bytes"], name)] = d.get("predicted_us")
    print(f"\nmedian max_us of {args.runs} runs of {args.iters} calls, ms (predictions in brackets); the model's choice against"
          " the faster of composed and MPICH's steps:\n")
    print("| op | bytes | composed over the logical clusters | MPICH's steps over the cluster | the model's choice | MPICH blocking"
          " | MPICH's steps / composed | choice / faster |")
    print("|---|---|---|---|---|---|---|---|")
    errors, ratios, choices, picked_right = {"composed": [], "mpich steps": []}, [], [], 0
    totals = dict.fromkeys(["composed", "mpich steps", "model", "faster"], 0.0)
    for op, n in sorted({(op, n) for op, n, _ in measured}, key=lambda k: (ops.split(",").index(k[0]), k[1])):
        t = {name: statistics.median(measured[(op, n, name)]) for name in jobs if (op, n, name) in measured}
        for name in errors:
            if p := predicted.get((op, n, name)):
                errors[name].append(abs(p - t[name]) / t[name])
        ratios.append(t["mpich steps"] / t["composed"])
        choices.append(t["model"] / min(t["composed"], t["mpich steps"]))
        for name in ("composed", "mpich steps", "model"):
            totals[name] += t[name]
        totals["faster"] += min(t["composed"], t["mpich steps"])
        # What the model picked (the lesser prediction), judged by that way's own measured time.
        pc, pm = predicted.get((op, n, "composed")), predicted.get((op, n, "mpich steps"))
        if pc and pm:
            picked_right += t["composed" if pc <= pm else "mpich steps"] <= 1.05 * min(t["composed"], t["mpich steps"])
        cell = lambda name: f"{t[name] / 1e3:.2f}" + (f" ({predicted[(op, n, name)] / 1e3:.2f})" if predicted.get((op, n, name)) else "") \
            if name in t else "-"
        print(f"| {op} | {n} | {cell('composed')} | {cell('mpich steps')} | {cell('model')} | {cell('mpi')} | {ratios[-1]:.2f} | {choices[-1]:.2f} |")
    print(f"\nMPICH's steps / composed: {min(ratios):.2f} to {max(ratios):.2f}, median {statistics.median(ratios):.2f} "
          f"over {len(ratios)} cases")
    within = sum(c <= 1.05 for c in choices)
    print(f"the model's choice, run: within 5% of the faster in {within} of {len(choices)} cases, median {statistics.median(choices):.2f},"
          f" worst {max(choices):.2f}; its pick judged by that way's own time: {picked_right} of {len(choices)}")
    print("the cases' times added up, ms: " + ", ".join(f"{name} {v / 1e3:.1f}" for name, v in totals.items()))
    for name, e in errors.items():
        if e:
            print(f"{name}: predictions against measurements: median error {statistics.median(e) * 100:.1f}%, "
                  f"max {max(e) * 100:.1f}% over {len(e)} cases")


def interrupted(*_):
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    sys.exit(1)


signal.signal(signal.SIGTERM, interrupted)
signal.signal(signal.SIGINT, interrupted)
try:
    main()
finally:
    teardown()
