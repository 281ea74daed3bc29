"""Nodes as network namespaces on one bridge, for the benchmarks that need real TCP between
nodes (kernel_tier.py, logical_nodes.py): a switch namespace holding bridge br0, and one
namespace per node with a veth (eth0) into it, port p<i> on the switch's side; a launcher
that hydra runs as it would ssh ("LAUNCHER [options] HOST COMMAND..."), which runs the
command in the host's namespace, under a host name of its own when asked (a UTS
namespace: gridrt then sees each node as a host). Root only. Removed by teardown(), which
kills whatever runs in the namespaces."""
import os, shutil, signal, subprocess, tempfile


def sh(*cmd, ns=None):
    subprocess.run((["ip", "netns", "exec", ns] if ns else []) + list(cmd), check=True, capture_output=True, text=True)


class Nodes:
    def __init__(self, prefix, hosts, work_prefix, own_host_names=False):
        self.prefix, self.hosts = prefix, hosts
        self.switch = f"{prefix}-sw"
        self.ns = {h: f"{prefix}-{h}" for h in hosts}
        self.work = tempfile.mkdtemp(prefix=work_prefix)
        self.launcher = f"{self.work}/netns-launch"
        run = (f'unshare --uts sh -c "hostname {prefix}-node${{host##*.}} && exec $*"' if own_host_names else 'sh -c "$*"')
        with open(self.launcher, "w") as f:
            f.write('#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\nhost=$1; shift\n'
                    f'exec ip netns exec "{prefix}-$host" {run}\n')
        os.chmod(self.launcher, 0o755)

    def build(self, switch_addr=None):
        """The switch and its bridge (with switch_addr/24 on it when given), every node on it."""
        sh("ip", "netns", "add", self.switch)
        sh("ip", "link", "add", "br0", "type", "bridge", ns=self.switch)
        if switch_addr:
            self.address_switch(switch_addr)
        sh("ip", "link", "set", "br0", "up", ns=self.switch)
        for i, h in enumerate(self.hosts):
            ns = self.ns[h]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", f"p{i}", "netns", self.switch, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", f"p{i}", "master", "br0", "up", ns=self.switch)
            sh("ip", "addr", "add", f"{h}/24", "dev", "eth0", ns=ns)
            sh("ip", "link", "set", "eth0", "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)

    def address_switch(self, addr):
        """The switch's own address on the bridge (where a relay listens for the nodes)."""
        sh("ip", "addr", "add", f"{addr}/24", "dev", "br0", ns=self.switch)
        sh("ip", "link", "set", "lo", "up", ns=self.switch)

    def teardown(self):
        for ns in list(self.ns.values()) + [self.switch]:
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
                try: os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError): pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)
