#!/usr/bin/env python3
"""The slices of the pipelined collectives: the model's choice against every fixed size.

For each grid shape: `gridrun calibrate` measures it; then gridbench runs the hierarchical
bcast, reduce and allreduce with the model loaded, once with the slices the model chooses
for each call and once with each fixed size (GRIDRT_SLICE), `--runs` times each. The route
is the model's either way (with a fixed size, the one it predicts least for that size). Per
(operation, size): the median over the runs of max_us (the time until the call was complete
everywhere) at each slice size, the model's slice (from GRIDRT_EXPLAIN's lines; an
all-reduce by the rooted route has its reduction's and broadcast's own) and its
time against the fastest fixed size and against 64 KiB (the default without a model).
Printed as markdown (docs/benchmarks.md, "Slices chosen by the model").

Usage: bench/slices.py [--runs N] [--iters N] [--sizes S,...] [--shapes NAME,...] [--build DIR]
Shapes: one-port (bench/grids/four-sites-one-port.xml: four sites behind access lines,
where the chain broadcast wins), unequal (bench/grids/three-sites-unequal.xml), one-site
(bench/grids/one-site-3x2.xml: no WAN).
"""
import json, os, re, statistics, sys

from models import calibrated, options, run

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {
    "one-port": ["--grid", os.path.join(HERE, "grids", "four-sites-one-port.xml")],
    "unequal": ["--grid", os.path.join(HERE, "grids", "three-sites-unequal.xml")],
    "one-site": ["--grid", os.path.join(HERE, "grids", "one-site-3x2.xml")],
}
OPS = "bcast,reduce,allreduce"
FIXED = [8192, 16384, 32768, 65536, 262144, 1048576, 4194304]
CHOSEN = re.compile(r"auto: (\w+) of (\d+) B .* in slices of (\d+) B")
ROOTED = re.compile(r"auto: (allreduce) of (\d+) B .*-> hier by the rooted route")  # its reduction's and broadcast's own slices


def main():
    a, gridrun, gridbench, work = options(__doc__, "262144,1048576,4194304", "one-port,unequal,one-site", "slices")
    for shape, grid, model in calibrated(a, gridrun, work, SHAPES):
        measured, chosen = {}, {}
        for r in range(a.runs):
            for slice_bytes in [None] + FIXED:
                print(f"slices.py: {shape} run {r + 1}/{a.runs}: slices {slice_bytes or 'chosen'}", file=sys.stderr, flush=True)
                env = ["env", f"GRIDRT_SLICE={slice_bytes}"] if slice_bytes else ["env", "GRIDRT_EXPLAIN=1"]
                p = run([*env, gridbench, *grid, "--model", model, "--op", OPS, "--algo", "hier", "--sizes", a.sizes, "--iters", str(a.iters),
                         "--json"])
                for line in p.stdout.splitlines():
                    d = json.loads(line)
                    measured.setdefault((d["op"], d["bytes"], slice_bytes), []).append(d["max_us"])
                for m in CHOSEN.finditer(p.stderr):
                    chosen[(m.group(1), int(m.group(2)))] = f"{int(m.group(3)) // 1024} KiB"
                for m in ROOTED.finditer(p.stderr):
                    chosen[(m.group(1), int(m.group(2)))] = "rooted route"
        print(f"\n### {shape}: {' '.join(grid)}\n")
        print("| op | bytes | " + " | ".join(f"{s // 1024} KiB" for s in FIXED) + " | model's slice | its time | best fixed | vs 64 KiB |")
        print("|---|---|" + "---|" * (len(FIXED) + 4))
        within, cases, gains = 0, 0, []
        for op in OPS.split(","):
            for n in sorted({k[1] for k in measured if k[0] == op}):
                times = {s: statistics.median(measured[(op, n, s)]) for s in FIXED if (op, n, s) in measured}
                mine = statistics.median(measured[(op, n, None)])
                best = min(times.values())
                cases += 1
                within += mine <= 1.05 * best
                gains.append(times[65536] / mine)
                cells = [f"{times[s] / 1000:.1f}" if s in times else "–" for s in FIXED]
                print(f"| {op} | {n} | " + " | ".join(cells) + f" | {chosen.get((op, n), '?')} | {mine / 1000:.1f} | "
                      f"{mine / best:.2f}x | {times[65536] / mine:.2f}x faster |")
        print("\nmeasured ms, median of the runs; the model's slice measured in its own job.\n")
        print(f"the model's slices within 5% of the best fixed size: {within} of {cases}; "
              f"against 64 KiB: {min(gains):.2f}x to {max(gains):.2f}x faster (median {statistics.median(gains):.2f}x)")
    print(f"\n(models kept in {work})")


if __name__ == "__main__":
    main()
