#!/usr/bin/env python3
"""Memory before authentication (docs/benchmarks.md, "Limits before authentication").

Starts a standing grid on loopback (gridbroker and one gridrelay, certificates from
`gridrun ca`), then attacks it without any credential: 40 connections to the relay's
local port each announcing a 16 MiB - 1 first frame and sending all of it but one byte (giving
up on a connection whose sends stall for SEND_TIMEOUT seconds, default 0.2), then 2000 idle TCP connections to the broker's port. Prints
the daemons' resident memory idle, at the attack's peak and after it, and how many lines
the broker logged.

    bench/unauthenticated_memory.py [BINDIR [SEND_TIMEOUT]]      (default build/bin 0.2)
"""
import atexit, os, resource, shutil, signal, socket, struct, subprocess, sys, tempfile, time
bindir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
send_timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
d = tempfile.mkdtemp(prefix="gridrt-abuse-")
daemons = []
def clean_up():  # also on failure (an exception, a closed pipe, SIGTERM): nothing left behind
    for p in daemons:
        p.terminate()
        p.wait()
    shutil.rmtree(d, ignore_errors=True)
atexit.register(clean_up)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]
broker_port, link_port, local_port = free_port(), free_port(), free_port()
gr = f"{bindir}/gridrun"
subprocess.run([gr, "ca", "init", f"{d}/ca"], check=True, capture_output=True)
for who in (["broker"], ["relay", "c0"], ["user", "alice"]):
    subprocess.run([gr, "ca", "issue", f"{d}/ca"] + who, check=True, capture_output=True)
open(f"{d}/grid.xml", "w").write(f'<grid><cluster name="c0" site="s0" slots="2"><relay link="127.0.0.1:{link_port}" local="127.0.0.1:{local_port}"/><launch>mpiexec -launcher fork -n {{np}}</launch></cluster></grid>')
ca = f"{d}/ca"
b = subprocess.Popen([f"{bindir}/gridbroker", "--grid", f"{d}/grid.xml", "--listen", f"127.0.0.1:{broker_port}", "--cert", f"{ca}/broker.pem", "--key", f"{ca}/broker.key", "--ca", f"{ca}/ca.pem"], stderr=open(f"{d}/broker.log", "w"))
daemons.append(b)
time.sleep(0.5)
r = subprocess.Popen([f"{bindir}/gridrelay", "--grid", f"{d}/grid.xml", "--cluster", "c0", "--broker", f"127.0.0.1:{broker_port}", "--cert", f"{ca}/relay-c0.pem", "--key", f"{ca}/relay-c0.key", "--ca", f"{ca}/ca.pem"], stderr=open(f"{d}/relay.log", "w"))
daemons.append(r)
time.sleep(1.5)
def rss(p):
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) // 1024
print("idle: broker", rss(b), "MB, relay", rss(r), "MB")
# 1. big unauthenticated frames on the relay's local port: a ProcHello header (wire.h:
# magic "GRDT", version 1, type 7) announcing 16 MiB - 1 bytes, then all of the body but
# its last byte, so that the frame is never complete and whatever buffered it stays held
body = 16 * 1024 * 1024 - 1
hdr = struct.pack("<IHHIIQiiIiQ", 0x54445247, 1, 7, 0, body, 0, 0, 0, 0, 0, 0)
socks = []
peak = 0
for i in range(40):
    s = socket.create_connection(("127.0.0.1", local_port)); s.settimeout(send_timeout)
    try:
        s.sendall(hdr)
        chunk = b"\0" * (1 << 20)
        for _ in range(15): s.sendall(chunk)
        s.sendall(b"\0" * (body - 1 - 15 * len(chunk)))
    except Exception: pass
    socks.append(s); peak = max(peak, rss(r))
print("40 x 16 MiB first frames: relay peak", peak, "MB")
for s in socks: s.close()
time.sleep(1)
print("  after: relay", rss(r), "MB")
# 2. idle connections on the broker's port
socks = []
peak = 0
for i in range(2000):
    try: socks.append(socket.create_connection(("127.0.0.1", broker_port)))
    except Exception as e: print("connect", i, e); break
    if i % 100 == 0: peak = max(peak, rss(b))
time.sleep(1); peak = max(peak, rss(b))
print("2000 idle connections: broker peak", peak, "MB")
for s in socks: s.close()
time.sleep(2)
print("  after: broker", rss(b), "MB; log lines:", sum(1 for _ in open(f"{d}/broker.log")))
