#!/usr/bin/env python3
"""The routes of the hierarchical scatter, gather, bcast, reduce, all-to-all and all-reduce, measured against their predictions.

For each grid shape: `gridrun calibrate` measures it, then gridbench runs its operations
(scatter, gather, bcast, reduce and all-reduce, or all-to-all) with the hierarchical
algorithm on each route (--route packed, ordered, binomial, chain, direct; agents, groups;
heads, rooted, reduce-scatter; the reduce_scatter's heads, rooted), the flat
algorithm and auto, with
the model loaded, `--runs` times each. Per
(operation, size): the median over the runs of every candidate's max_us (the time until the
call was complete everywhere) and its predicted_us; the candidate the model predicts least
(what auto takes) against the fastest measured; auto's own time. Printed as markdown
(docs/benchmarks.md, "Routes of scatter, gather, broadcast, reduction and all-reduce", "The all-to-all's
two routes").

Usage: bench/routes.py [--runs N] [--iters N] [--sizes S,...] [--shapes NAME,...] [--ops OP,...] [--build DIR]
Shapes: unequal (bench/grids/three-sites-unequal.xml: pairs of different delays and rates,
an access line at the site of two clusters), one-port (bench/grids/four-sites-one-port.xml:
four sites, each sending on one access line, the one-port setting of the scatter models),
two-sites (bench/grids/two-sites-3-2.xml: clusters of 3 and 2, the all-to-all's routes),
three-sites (three sites of two processes, each pair on its own line of 10 ms and 100 Mbit/s:
the all-reduce's and the reduce-scatter's routes).
"""
import json, os, statistics, sys

from models import options, run

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {  # the grid, and the operations measured on it
    "unequal": (["--grid", os.path.join(HERE, "grids", "three-sites-unequal.xml")],
                ["scatter", "gather", "bcast", "reduce", "allreduce", "reduce_scatter"]),
    "one-port": (["--grid", os.path.join(HERE, "grids", "four-sites-one-port.xml")],
                 ["scatter", "gather", "bcast", "reduce", "allreduce", "reduce_scatter"]),
    "two-sites": (["--grid", os.path.join(HERE, "grids", "two-sites-3-2.xml")], ["alltoall"]),
    "three-sites": (["--clusters", "3", "--ranks-per-cluster", "2", "--emulate-wan", "10ms,100mbit"], ["allreduce", "reduce_scatter"]),
}
ROUTES = {"scatter": ["packed", "ordered", "binomial", "chain", "direct"], "gather": ["packed", "binomial", "chain", "direct"],
          "bcast": ["packed", "binomial", "chain"], "reduce": ["packed", "binomial", "chain"], "alltoall": ["agents", "groups"],
          "allreduce": ["heads", "rooted", "reduce-scatter"], "reduce_scatter": ["heads", "rooted"]}


def main():
    a, gridrun, gridbench, work = options(__doc__, "8,4096,131072,1048576", "unequal,one-port,two-sites", "routes", ops=True)
    for shape in a.shapes.split(","):
        grid, shape_ops = SHAPES[shape]
        shape_ops = [op for op in shape_ops if not a.ops or op in a.ops.split(",")]
        if not shape_ops:
            continue
        # Each run: a gridbench job per route (hierarchical), and one for flat and auto.
        columns = [r for op in shape_ops for r in ROUTES[op]]
        columns = sorted(set(columns), key=columns.index)
        jobs = [("hier", r) for r in columns] + [("flat,auto", None)]
        model = os.path.join(work, shape + ".json")
        run([gridrun, "calibrate", *grid, "--output", model])
        measured, predicted = {}, {}
        for r in range(a.runs):
            for algos, route in jobs:
                ops = ",".join(op for op in shape_ops if route is None or route in ROUTES[op])
                cmd = [gridbench, *grid, "--model", model, "--op", ops, "--algo", algos, "--sizes", a.sizes, "--iters", str(a.iters), "--json"]
                if route:
                    cmd += ["--route", route]
                print(f"routes.py: {shape} run {r + 1}/{a.runs}: {algos} {route or ''}", file=sys.stderr, flush=True)
                for line in run(cmd).stdout.splitlines():
                    d = json.loads(line)
                    name = d.get("route", d["algo"]) if d["algo"] == "hier" else d["algo"]
                    key = (d["op"], d["bytes"], name)
                    measured.setdefault(key, []).append(d["max_us"])
                    predicted[key] = d["predicted_us"]
        print(f"\n### {shape}: {' '.join(grid)}\n")
        columns += ["flat"]
        print("| op | bytes | " + " | ".join(columns) + " | model's pick | auto |")
        print("|---|---|" + "---|" * (len(columns) + 2))
        picks_ok, cases, auto_ok, misses = 0, 0, 0, []
        errors = []
        for op in shape_ops:
            for n in sorted({k[1] for k in measured if k[0] == op}):
                cells, best_name, best = [], None, None
                times = {}
                for name in columns:
                    if (op, n, name) not in measured:
                        cells.append("–")
                        continue
                    meas, pred = statistics.median(measured[(op, n, name)]), predicted[(op, n, name)]
                    times[name] = meas
                    errors.append(abs(pred - meas) / meas)
                    cells.append(f"{meas / 1000:.1f} ({pred / 1000:.1f})")
                    if best is None or meas < best:
                        best_name, best = name, meas
                pick = min(times, key=lambda name: predicted[(op, n, name)])
                auto = statistics.median(measured[(op, n, "auto")])
                cases += 1
                picks_ok += times[pick] <= 1.05 * best
                auto_ok += auto <= 1.05 * best
                if times[pick] > 1.05 * best:
                    misses.append(f"{op} {n} B: the model picks {pick} ({times[pick] / 1000:.1f} ms), {best_name} took {best / 1000:.1f} ms "
                                  f"({times[pick] / best:.2f}x)")
                print(f"| {op} | {n} | " + " | ".join(cells) + f" | {pick}{'' if times[pick] <= 1.05 * best else ' (miss)'} | {auto / 1000:.1f} |")
        print("\nmeasured ms, median of the runs (predicted ms in brackets); best: least measured.\n")
        print(f"prediction error over every candidate: median {100 * statistics.median(errors):.1f}%, max {100 * max(errors):.1f}% over {len(errors)}")
        print(f"the model's pick measured within 5% of the best: {picks_ok} of {cases}; auto's own time within 5%: {auto_ok} of {cases}")
        for m in misses:
            print(f"- {m}")
    print(f"\n(models kept in {work})")


if __name__ == "__main__":
    main()
