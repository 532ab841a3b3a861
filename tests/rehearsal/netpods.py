"""Pods on one machine: each pod is a network namespace with its own IP on a bridge, its own hostname
(UTS namespace) and its own /etc/hosts, which plays the cluster DNS.

    cluster = Cluster(workdir)             # a bridge with a private /24
    pod = cluster.create_pod("job-master-0", hostname="job-master-0")
    cluster.publish("job-master-0", pod.ip)   # the headless Service's record: every pod's hosts file
    proc = pod.start(["train_cifar10", ...], env, log_path, uid=1000)
    cluster.delete_pod(pod)                # SIGKILL everything inside, remove the namespace
    cluster.teardown()                     # every namespace, veth, the bridge and the hosts files

`ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, binding the inode: the file is
therefore always rewritten in place, never replaced, so running pods see records come and go
(glibc reads /etc/hosts on every lookup). resolv.conf points at 127.0.0.1 inside the pod, where
nothing listens: a name that is not published fails fast, like a missing DNS record.

What this creates is written to /run/ddp-rehearsal/<pid>.json first; a later run removes the leftovers
of a run whose process is gone (a run killed by a ctest timeout cannot clean up after itself).
"""
import ipaddress
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time

STATE_DIR = "/run/ddp-rehearsal"
IP = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin") or "ip"


class NetError(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run([IP, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


def netns_capable():
    """None when we can make network namespaces here, else the reason we cannot."""
    if os.geteuid() != 0:
        return "not root"
    probe = f"ddpr-probe-{os.getpid()}"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    for tool in ("unshare", "setpriv", "hostname"):
        if not shutil.which(tool, path="/usr/sbin:/sbin:/usr/bin:/bin"):
            return f"{tool} not found"
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _remove(state):
    for ns in state.get("netns", []):
        _kill_netns(ns)
        _ip("netns", "del", ns, check=False)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
    for link in state.get("links", []):
        _ip("link", "del", link, check=False)


def preflight(skip):
    """What every rehearsal script does first: None when pods can be made here (after removing what
    runs that died left behind, and saying so), else `skip(reason)` (tests/support/ci.py: exit 77,
    or a failure under CI=true) for the caller to return."""
    why = netns_capable()
    if why:
        return skip(f"the rehearsal needs root and network namespaces ({why})")
    stale = clean_stale()
    if stale:
        print(f"removed the leftovers of earlier runs (pids {stale})")
    return None


def clean_stale():
    """Removes what runs that died without cleaning up left behind."""
    if not os.path.isdir(STATE_DIR):
        return []
    removed = []
    for f in os.listdir(STATE_DIR):
        if not f.endswith(".json"):
            continue
        pid = int(f[:-5]) if f[:-5].isdigit() else None
        if pid is None or _alive(pid):
            continue
        path = os.path.join(STATE_DIR, f)
        try:
            state = json.load(open(path))
        except (OSError, ValueError):
            state = {}
        _remove(state)
        os.remove(path)
        removed.append(pid)
    return removed


def _kill_netns(ns, sig=signal.SIGKILL):
    r = _ip("netns", "pids", ns, check=False)
    pids = [int(p) for p in r.stdout.split()] if r.returncode == 0 else []
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass
    return pids


class Pod:
    def __init__(self, cluster, name, hostname, ns, ip, aliases):
        self.cluster, self.name, self.hostname, self.ns, self.ip = cluster, name, hostname, ns, ip
        self.aliases = aliases  # names of this pod in its own hosts file (kubelet's entry)
        self.procs = []

    def hosts_text(self):
        lines = ["# written by tests/rehearsal (plays the kubelet's /etc/hosts and the cluster DNS)",
                 "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
                 f"{self.ip}\t{' '.join(self.aliases)}"]
        for name, ip in sorted(self.cluster.records.items()):
            if name not in self.aliases:
                lines.append(f"{ip}\t{name}")
        return "\n".join(lines) + "\n"

    def write_hosts(self):
        path = f"/etc/netns/{self.ns}/hosts"
        with open(path, "r+" if os.path.exists(path) else "w") as f:  # same inode: see the module doc
            f.seek(0)
            f.write(self.hosts_text())
            f.truncate()

    def start(self, argv, env, log_path, cwd=None, uid=None, gid=None):
        """Starts argv inside the pod (its netns, a UTS namespace with the pod's hostname)."""
        drop = []
        if uid is not None:
            drop = ["setpriv", f"--reuid={uid}", f"--regid={gid if gid is not None else uid}", "--clear-groups", "--"]
        cmd = [IP, "netns", "exec", self.ns, "unshare", "--uts", "--", "/bin/sh", "-c",
               'hostname "$0" && exec "$@"', self.hostname] + drop + list(argv)
        log = open(log_path, "ab")
        log.write(f"### {time.strftime('%H:%M:%S')} {self.name} ({self.ip}): {' '.join(argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd or "/", stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def signal_all(self, sig):
        """Signals every process in the pod (what the kubelet does on delete: SIGTERM, later SIGKILL)."""
        return _kill_netns(self.ns, sig)

    def pids(self):
        """{pid: command name} of every process in the pod."""
        r = _ip("netns", "pids", self.ns, check=False)
        out = {}
        for p in (r.stdout.split() if r.returncode == 0 else []):
            try:
                with open(f"/proc/{p}/comm") as f:
                    out[int(p)] = f.read().strip()
            except OSError:
                pass  # exited meanwhile
        return out

    @property
    def host_link(self):
        """The host end of the pod's veth (a port of the cluster's bridge)."""
        return f"{self.cluster.tag}h{self.ns.rsplit('n', 1)[1]}"

    def cut_network(self):
        """Takes the host end of the veth down: the pod's eth0 loses its carrier and every packet to or
        from the pod is dropped without an error (a cable pulled, a node partitioned). Established
        connections stay open on both sides; only timeouts notice."""
        _ip("link", "set", self.host_link, "down")

    def restore_network(self):
        """Undoes cut_network() if the pod still exists (a deleted pod took its veth with it)."""
        return _ip("link", "set", self.host_link, "up", check=False).returncode == 0


class Cluster:
    def __init__(self, workdir, namespace="default"):
        self.workdir = workdir
        self.namespace = namespace
        self.tag = f"dr{os.getpid() % 10000000}"
        self.bridge = f"{self.tag}b"
        self.records = {}
        self.pods = []
        self.lock = threading.RLock()  # a data-prep Job may be played in a thread beside the job
        self.closed = False
        self.counter = 0
        self.state = {"netns": [], "links": []}
        self.state_path = os.path.join(STATE_DIR, f"{os.getpid()}.json")
        os.makedirs(STATE_DIR, exist_ok=True)
        self.subnet = self._pick_subnet()
        self._next_host = 10
        self._save()
        self.state["links"].append(self.bridge)
        self._save()
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet.network_address + 1}/{self.subnet.prefixlen}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def _pick_subnet(self):
        used = _ip("-4", "-o", "addr").stdout + _ip("-4", "route").stdout
        for _ in range(200):
            net = ipaddress.ip_network(f"10.{random.randint(200, 250)}.{random.randint(0, 255)}.0/24")
            if str(net.network_address)[:-1] not in used:
                return net
        raise NetError("no free 10.x.y.0/24 subnet")

    def _save(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f)
        os.replace(tmp, self.state_path)

    def create_pod(self, name, hostname=None, aliases=None):
        with self.lock:
            if self.closed:
                raise NetError(f"cluster torn down: not creating pod {name}")
            return self._create_pod(name, hostname, aliases)

    def _create_pod(self, name, hostname, aliases):
        self.counter += 1
        k = self.counter
        ns, host_if, peer = f"{self.tag}n{k}", f"{self.tag}h{k}", f"{self.tag}p{k}"
        ip = self._free_ip()
        self.state["netns"].append(ns)
        self.state["links"].append(host_if)
        self._save()
        _ip("netns", "add", ns)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", ns)
        _ip("link", "set", host_if, "master", self.bridge, "up")
        _ip("-n", ns, "link", "set", peer, "name", "eth0")
        _ip("-n", ns, "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
        with open(f"/etc/netns/{ns}/resolv.conf", "w") as f:
            f.write(f"nameserver 127.0.0.1\nsearch {self.namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
                    "options timeout:1 attempts:1\n")
        hostname = hostname or name
        pod = Pod(self, name, hostname, ns, ip, aliases or [hostname])
        pod.write_hosts()
        self.pods.append(pod)
        return pod

    def _free_ip(self):
        """The next address of .10-.250 that no pod holds, cycling: a long run (the chaos rounds)
        recreates more pods than the subnet has addresses, and reuses the ones freed longest ago."""
        used = {p.ip for p in self.pods}
        for _ in range(241):
            ip = str(self.subnet.network_address + self._next_host)
            self._next_host = 10 if self._next_host >= 250 else self._next_host + 1
            if ip not in used:
                return ip
        raise NetError("out of pod addresses: 241 pods exist")

    def publish(self, name, ip):
        with self.lock:
            self.records[name] = ip
            self._rewrite_hosts()

    def unpublish(self, name):
        with self.lock:
            self.records.pop(name, None)
            self._rewrite_hosts()

    def _rewrite_hosts(self):
        for p in self.pods:
            p.write_hosts()

    def delete_pod(self, pod, grace=0.0):
        if grace > 0 and pod.signal_all(signal.SIGTERM):
            deadline = time.time() + grace
            while time.time() < deadline and any(pr.poll() is None for pr in pod.procs):
                time.sleep(0.1)
        pod.signal_all(signal.SIGKILL)
        for pr in pod.procs:
            try:
                os.killpg(pr.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                pr.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        with self.lock:
            _ip("netns", "del", pod.ns, check=False)   # takes eth0 and its veth peer with it
            _ip("link", "del", f"{self.tag}h{pod.ns.rsplit('n', 1)[1]}", check=False)
            shutil.rmtree(f"/etc/netns/{pod.ns}", ignore_errors=True)
            if pod in self.pods:
                self.pods.remove(pod)

    def teardown(self):
        with self.lock:
            self.closed = True
        for pod in list(self.pods):
            self.delete_pod(pod)
        _remove(self.state)
        try:
            os.remove(self.state_path)
        except FileNotFoundError:
            pass

    def leftovers(self):
        """Anything of ours still present (a teardown check)."""
        left = []
        netns = _ip("netns", "list", check=False).stdout
        links = _ip("-o", "link", check=False).stdout
        for ns in self.state["netns"]:
            if ns in netns.split() or os.path.exists(f"/etc/netns/{ns}"):
                left.append(ns)
        for link in self.state["links"]:
            if f" {link}:" in links or f" {link}@" in links:
                left.append(link)
        return left
