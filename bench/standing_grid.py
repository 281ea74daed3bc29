"""What the benchmarks on a standing grid share (abuse.py, restart.py): a private directory
and daemons that go at the end, also on failure; free loopback ports; the grid's
credentials from `gridrun ca`."""
import atexit, os, shutil, signal, socket, subprocess, sys, tempfile


def workspace(prefix, keep_variable, daemons, before=lambda: None):
    """A new directory, removed at exit after `before()` and after terminating every process
    in `daemons` (a list, or a dict of them), unless the environment sets `keep_variable`."""
    d = tempfile.mkdtemp(prefix=prefix)

    def clean_up():
        before()
        for p in (daemons.values() if isinstance(daemons, dict) else daemons):
            p.terminate()
            p.wait()
        if os.environ.get(keep_variable):
            print(f"logs kept in {d} ({keep_variable} is set)")
        else:
            shutil.rmtree(d, ignore_errors=True)

    atexit.register(clean_up)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    return d


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def credentials(gridrun, ca, holders):
    """A grid CA in `ca` and a certificate for each holder (["broker"], ["relay", "c0"], ...)."""
    subprocess.run([gridrun, "ca", "init", ca], check=True, capture_output=True)
    for who in holders:
        subprocess.run([gridrun, "ca", "issue", ca] + who, check=True, capture_output=True)
