#!/usr/bin/env python3
"""Runs the entries of MPICH's test lists (test/mpi/DIR/testlist) through gridrun across two
clusters, and each under MPICH alone (mpiexec.mpich), as scripts/mpich-testsuite.sh says. A test
passes when it exits 0 and prints "No Errors" (MPICH's own rule). Writes one line per test
and a summary to RESULTS/summary.txt, and the output of each failure to RESULTS/."""
import argparse
import os
import signal
import subprocess
import time


def run(cmd, cwd, env, timeout):
    """(passed, how, seconds, output) of one run; a run past `timeout` is killed whole."""
    started = time.time()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        how = "exit %d" % p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        how = "timeout"
    text = out.decode(errors="replace")
    passed = how == "exit 0" and "No Errors" in text
    return passed, how, time.time() - started, text


def entries(suite, d):
    """(name, processes, arguments, environment) of each runnable entry of a test list."""
    listed = os.path.join(suite, d, "testlist")
    if not os.path.exists(listed):
        return
    for line in open(listed):
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2 or not fields[1].isdigit():
            continue  # (blank, comment, or a subdirectory)
        args, env = [], {}
        for f in fields[2:]:
            if f.startswith("arg="):
                args.append(f[4:])
            elif f.startswith("env="):
                k, v = f[4:].split("=", 1)
                env[k] = v
        yield fields[0], int(fields[1]), args, env


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--gridrun", required=True)
    ap.add_argument("--dirs", required=True)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--results", required=True)
    ap.add_argument("--grid-only", action="store_true", help="run each test across clusters only, not under MPICH alone too")
    ap.add_argument("--unshared-files", action="store_true",
                    help="the clusters share no file system: each file lives in rank 0's cluster (gridrun --unshared-files)")
    a = ap.parse_args()
    os.makedirs(a.results, exist_ok=True)
    summary = open(os.path.join(a.results, "summary.txt"), "w")
    counts = {}
    for d in a.dirs.split(","):
        for name, n, args, extra in entries(a.suite, d):
            exe = os.path.join(a.suite, d, name)
            key = "%s/%s -n %d %s" % (d, name, n, " ".join(args))
            if not os.path.exists(exe):
                verdict = "not built"
                line = "%-34s %s" % (verdict, key)
            else:
                env = dict(os.environ, **extra)
                per_cluster = str(max(1, (n + 1) // 2))
                unshared = ["--unshared-files"] if a.unshared_files else []
                grid = run([a.gridrun, "--ranks-per-cluster", per_cluster] + unshared + ["-n", str(n), exe] + args, os.path.dirname(exe), env, a.timeout)
                if a.grid_only:
                    alone = (True, "not run", 0.0)
                    verdict = "pass" if grid[0] else "FAIL across clusters (MPICH alone not run)"
                else:
                    alone = run(["mpiexec.mpich", "-n", str(n), exe] + args, os.path.dirname(exe), env, a.timeout)
                    verdict = {(True, True): "pass", (True, False): "pass (fails under MPICH alone)",
                               (False, True): "FAIL across clusters only", (False, False): "fails under MPICH alone too"}[(grid[0], alone[0])]
                line = "%-34s %s  (grid: %s %.1fs; MPICH alone: %s %.1fs)" % (verdict, key, grid[1], grid[2], alone[1], alone[2])
                if not grid[0]:
                    with open(os.path.join(a.results, key.replace("/", "_").replace(" ", "_") + ".log"), "w") as f:
                        f.write(grid[3][-20000:])
            counts[verdict] = counts.get(verdict, 0) + 1
            print(line, flush=True)
            summary.write(line + "\n")
            summary.flush()
    total = sum(counts.values())
    tail = "\n%d tests: " % total + ", ".join("%d %s" % (c, v) for v, c in sorted(counts.items(), key=lambda x: -x[1]))
    print(tail)
    summary.write(tail + "\n")


if __name__ == "__main__":
    main()
