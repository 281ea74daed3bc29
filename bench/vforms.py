#!/usr/bin/env python3
"""The v-forms whose block sizes not every member knows, chosen by the model without them.

A scatterv's and a gatherv's sizes are the root's, an uneven alltoallv's each member's own,
so auto cannot choose by the size as it does for scatter, gather and alltoall; with a model
it takes the candidate least slower than the best predicted at its worst over 8 B to 4 MiB
(docs/algorithms.md, "Choosing"), without one the measured rules. For each grid shape:
`gridrun calibrate`, then gridbench's scatterv, gatherv and alltoallv (every block of the
size given, passed as counts) with auto, with the model and without it, and scatter,
gather and alltoall with hier on each route, flat and auto, with the model: the best any
of those took at each size is what auto could have done knowing the size. Per (operation,
size): the median over `--runs` runs of max_us, and each v-form's ratio to that best; per
operation, the worst ratio over the sizes (what the choice minimises, as predicted).

Usage: bench/vforms.py [--runs N] [--iters N] [--sizes S,...] [--shapes NAME,...] [--build DIR]
Shapes: unequal, one-port (bench/routes.py's), wan-3x2 and one-site-3x2 (bench/models.py's).
"""
import json, statistics

from models import SHAPES as MODEL_SHAPES, calibrated, options, run
from routes import ROUTES, SHAPES as ROUTE_SHAPES

SHAPES = {name: grid for name, (grid, _) in ROUTE_SHAPES.items()}
SHAPES.update(MODEL_SHAPES)
VFORMS = {"scatterv": "scatter", "gatherv": "gather", "alltoallv": "alltoall"}


def main():
    a, gridrun, gridbench, work = options(__doc__, "8,4096,131072,1048576", "unequal,one-port,one-site-3x2", "vforms")
    for shape, grid, model in calibrated(a, gridrun, work, SHAPES):
        times = {}  # (op, how, bytes) -> [max_us per run]

        def bench(ops, algos, label, extra):
            out = run([gridbench, *grid, "--op", ",".join(ops), "--algo", algos, "--sizes", a.sizes, "--iters", str(a.iters), "--json", *extra]).stdout
            for line in out.splitlines():
                d = json.loads(line)
                times.setdefault((d["op"], label(d), d["bytes"]), []).append(d["max_us"])

        for _ in range(a.runs):
            with_model = ["--model", model]
            bench(VFORMS, "auto", lambda d: "auto (model)", with_model)
            bench(VFORMS, "auto", lambda d: "auto (rules)", [])
            bench(VFORMS.values(), "hier,flat,auto", lambda d: d["algo"], with_model)
            for route in sorted({r for op in VFORMS.values() for r in ROUTES[op]}):
                ops = [op for op in VFORMS.values() if route in ROUTES[op]]
                bench(ops, "hier", lambda d, route=route: "hier " + route, with_model + ["--route", route])
        print(f"\n### {shape}: {' '.join(grid)}\n")
        print("| op | bytes | auto, model (ms) | auto, rules (ms) | best knowing the size (ms) | by | model / best | rules / best |")
        print("|---|---|---|---|---|---|---|---|")
        worst = {}
        for v, op in VFORMS.items():
            for n in sorted({k[2] for k in times if k[0] == op}):
                known = {how: statistics.median(t) for (o, how, m), t in times.items() if o == op and m == n}
                by, best = min(known.items(), key=lambda kv: kv[1])
                model_t, rules_t = statistics.median(times[(v, "auto (model)", n)]), statistics.median(times[(v, "auto (rules)", n)])
                for which, t in (("model", model_t), ("rules", rules_t)):
                    worst[(v, which)] = max(worst.get((v, which), 0.0), t / best)
                print(f"| {v} | {n} | {model_t / 1e3:.1f} | {rules_t / 1e3:.1f} | {best / 1e3:.1f} | {by} | {model_t / best:.2f} | {rules_t / best:.2f} |")
        print()
        for v in VFORMS:
            print(f"- {v}: worst over the sizes, model {worst[(v, 'model')]:.2f}x, rules {worst[(v, 'rules')]:.2f}x the best knowing the size")
    print(f"\n(models kept in {work})")


if __name__ == "__main__":
    main()
