#!/usr/bin/env python3
"""How well the calibrated models predict, and how well auto chooses by them.

For each grid shape: `gridrun calibrate` measures it (timed, its measurements counted against
C(C+1)/2), then gridbench runs every operation with hier, flat and auto at sizes the
calibration did not measure, with the model loaded, `--runs` times. Per (operation,
algorithm, size): the median over the runs of max_us (the time until the call was complete
everywhere) against the model's predicted_us. Printed as markdown (docs/benchmarks.md,
"Predictions"):

  - the prediction error |predicted - measured| / measured, median and maximum, over the
    cases where the WAN dominates (gridbench's bound_us at least half the measured time)
    and over all cases;
  - auto against the faster of hier and flat measured in the same runs: auto's own time
    within 5% of the faster's, and (with less noise: no third measurement) the algorithm
    auto chooses (the lesser prediction) measured within 5% of the faster; judged twice,
    by max_us (the calls' average time) and by median_us (the median call: steadier where a
    few calls are held up by processes sharing the cores).

Calls on the shape without a WAN last a millisecond or two and vary by tens of percent from
run to run on this machine: it gets five times the iterations.

Usage: bench/models.py [--runs N] [--iters N] [--sizes S,...] [--shapes NAME,...] [--build DIR]
Shapes: wan-3x2 (3 sites of one cluster of 2, 10 ms, 100 Mbit/s), one-site-3x2 (three clusters
of 2 on one LAN: no WAN), unequal (bench/grids/three-sites-unequal.xml: pairs of different
delays and rates, an access line at the site of two clusters), long-fat-2x2 (2 sites of one
cluster of 2, 10 ms, 1 Gbit/s: a line whose rate x round trip is 5 default windows, not in the
default set).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {
    "wan-3x2": ["--clusters", "3", "--ranks-per-cluster", "2", "--emulate-wan", "10ms,100mbit"],
    "one-site-3x2": ["--grid", os.path.join(HERE, "grids", "one-site-3x2.xml")],
    "unequal": ["--grid", os.path.join(HERE, "grids", "three-sites-unequal.xml")],
    "long-fat-2x2": ["--clusters", "2", "--ranks-per-cluster", "2", "--emulate-wan", "10ms,1gbit"],
}
CLUSTERS = {"wan-3x2": 3, "one-site-3x2": 3, "unequal": 4, "long-fat-2x2": 2}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"models.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p


def options(doc, sizes, shapes, name, ops=False):
    """The options the model benchmarks share: their values, gridrun's and gridbench's paths,
    and a directory of their own for the models they calibrate. `ops`: also --ops, the
    operations measured (default: each shape's own)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if ops:
        ap.add_argument("--ops", help="only these of each shape's operations (comma-separated)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--sizes", default=sizes)
    ap.add_argument("--shapes", default=shapes)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    a = ap.parse_args()
    return (a, os.path.join(a.build, "bin", "gridrun"), os.path.join(a.build, "bin", "gridbench"),
            tempfile.mkdtemp(prefix=f"gridrt-{name}-"))


def calibrated(a, gridrun, work, grids):
    """Each shape of --shapes, its grid options (from `grids`) and the model `gridrun
    calibrate` writes for it, calibrated as it comes."""
    for shape in a.shapes.split(","):
        model = os.path.join(work, shape + ".json")
        run([gridrun, "calibrate", *grids[shape], "--output", model])
        yield shape, grids[shape], model


def judge(times, predicted, what):
    """auto against the faster of hier and flat, by `times` (the median over the runs of one
    of gridbench's figures): auto's own time, and the algorithm it chose (the lesser
    prediction) by that algorithm's own time."""
    hits, misses, chose_well, choice_misses = 0, [], 0, []
    for (op, algo, n), values in times.items():
        if algo != "auto":
            continue
        hier, flat = statistics.median(times[(op, "hier", n)]), statistics.median(times[(op, "flat", n)])
        best = min(hier, flat)
        got = statistics.median(values)
        if got <= 1.05 * best:
            hits += 1
        else:
            misses.append(f"{op} {n} B: auto {got:.0f} us, best {best:.0f} us ({got / best:.2f}x)")
        chosen = "hier" if predicted[(op, "hier", n)] <= predicted[(op, "flat", n)] else "flat"
        took = hier if chosen == "hier" else flat
        if took <= 1.05 * best:
            chose_well += 1
        else:
            choice_misses.append(f"{op} {n} B: chose {chosen} ({took:.0f} us), the other {best:.0f} us ({took / best:.2f}x)")
    total = hits + len(misses)
    print(f"by {what}: auto's own time within 5% of the faster algorithm's: {hits} of {total} cases ({100 * hits / max(total, 1):.0f}%)")
    for miss in misses:
        print(f"- {miss}")
    print(f"auto's choice measured within 5% of the faster: {chose_well} of {total} cases ({100 * chose_well / max(total, 1):.0f}%)")
    for miss in choice_misses:
        print(f"- {miss}")
    print()


def main():
    a, gridrun, gridbench, work = options(__doc__, "8,4096,131072,2097152", "wan-3x2,one-site-3x2,unequal", "models")
    for shape in a.shapes.split(","):
        grid = SHAPES[shape]
        model = os.path.join(work, shape + ".json")
        t0 = time.monotonic()
        run([gridrun, "calibrate", *grid, "--output", model])
        took = time.monotonic() - t0
        m = json.load(open(model))
        C = CLUSTERS[shape]
        print(f"\n### {shape}: {' '.join(grid)}\n")
        print(f"calibration: {took:.1f} s wall ({m['seconds']:.1f} s in the job), {m['measurements']} measurements "
              f"(C(C+1)/2 = {C * (C + 1) // 2} for C = {C} clusters)\n")
        measured, medians, predicted, bound = {}, {}, {}, {}
        for r in range(a.runs):
            iters = a.iters * (5 if shape == "one-site-3x2" else 1)
            out = run([gridbench, *grid, "--model", model, "--algo", "hier,flat,auto", "--sizes", a.sizes, "--iters", str(iters), "--json"]).stdout
            for line in out.splitlines():
                d = json.loads(line)
                key = (d["op"], d["algo"], d["bytes"])
                measured.setdefault(key, []).append(d["max_us"])
                medians.setdefault(key, []).append(d["median_us"])
                predicted[key] = d["predicted_us"]
                bound[key] = d["bound_us"]
        errors_wan, errors_all, rows = [], [], []
        for key, values in sorted(measured.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
            meas, pred = statistics.median(values), predicted[key]
            if pred is None or meas <= 0:
                continue
            err = abs(pred - meas) / meas
            errors_all.append(err)
            wan = bound[key] >= 0.5 * meas
            if wan:
                errors_wan.append(err)
            rows.append((key, meas, pred, err, wan))
        print("| op | algo | bytes | measured max_us (median) | predicted_us | error | WAN dominates |")
        print("|---|---|---|---|---|---|---|")
        for (op, algo, n), meas, pred, err, wan in rows:
            print(f"| {op} | {algo} | {n} | {meas:.0f} | {pred:.0f} | {100 * err:.0f}% | {'yes' if wan else 'no'} |")

        def summary(errs):
            return f"median {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}% over {len(errs)}" if errs else "none"
        print(f"\nprediction error where the WAN dominates: {summary(errors_wan)}; all cases: {summary(errors_all)}\n")
        for times, what in ((measured, "max_us, the calls' average"), (medians, "median_us, the median call")):
            judge(times, predicted, what)
    print(f"\n(models kept in {work})")


if __name__ == "__main__":
    main()
