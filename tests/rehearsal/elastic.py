"""The elastic PyTorchJob (k8s/overlays/cpu-elastic) in the rehearsal: the settings that make it short,
and what ddprun's logs say about the group's sizes (rehearse.py's `elastic` scenario, chaos.py's
`lose-node` rounds).

ddprun logs one line per attempt on every node, "run <id> attempt K: node R of N runs ranks a..b of W",
and on a node that sees others waiting while its round runs, "N node(s) waiting to join: re-forming
the group as attempt K". A pod's log holds every container run of every incarnation of the pod, each
after a "### " line (netpods.Pod.start).
"""
import re

OVERLAY = "k8s/overlays/cpu-elastic"
# A round with fewer than maxReplicas nodes closes this long after it had minReplicas (the overlay's
# 15 s is for a cluster, where pods start seconds apart; here a few seconds are enough).
LAST_CALL_S = "3"
# What `nprocPerNode: auto` gives under the template's CPU limit (2) on a cluster. The rehearsal's pods
# have no cgroup, so ddprun's auto would count this machine's CPUs instead: set it as the limit would.
NPROC = "2"

_ATTEMPT = re.compile(r"run \S+ attempt (\d+): node (\d+) of (\d+) runs ranks")
_REFORM = re.compile(r"(\d+) node\(s\) waiting to join: re-forming the group as attempt (\d+)")
_RESUMED = re.compile(r"resumed from \S*ckpt-(\d+)\.ddpckpt")
_RESIZED = re.compile(r"was saved by (\d+) ranks, this run has (\d+)")


def shorten(job, last_call_s=LAST_CALL_S, nproc=NPROC):
    """The job's elasticPolicy.rdzvConf with last_call_timeout=last_call_s (other keys kept), and
    spec.nprocPerNode (module constants say why)."""
    ep = job["spec"]["elasticPolicy"]
    conf = [c for c in ep.get("rdzvConf") or [] if c.get("key") != "last_call_timeout"]
    ep["rdzvConf"] = conf + [{"key": "last_call_timeout", "value": str(last_call_s)}]
    job["spec"]["nprocPerNode"] = str(nproc)
    return job


def container_runs(log_text):
    """A pod's log split at the "### " line each container start writes (init containers too): the
    last part is the main container of the pod's latest incarnation."""
    parts = re.split(r"(?m)^### ", log_text)
    return parts[1:] if len(parts) > 1 else [log_text]


def events(log_text):
    """("attempt", K, node R, N nodes) and ("reform", K, waiting, 0) in the order the log has them."""
    out = []
    for line in log_text.splitlines():
        m = _ATTEMPT.search(line)
        if m:
            out.append(("attempt", int(m.group(1)), int(m.group(2)), int(m.group(3))))
            continue
        m = _REFORM.search(line)
        if m:
            out.append(("reform", int(m.group(2)), int(m.group(1)), 0))
    return out


def sizes(log_text):
    """The node counts of the attempts a log shows, in order."""
    return [e[3] for e in events(log_text) if e[0] == "attempt"]


def resumed_steps(log_text):
    """Global steps of the checkpoints the workers logged resuming from."""
    return [int(s) for s in _RESUMED.findall(log_text)]


def resizes(log_text):
    """(saved world, new world) of every resume across a change of the world size."""
    return [(int(a), int(b)) for a, b in _RESIZED.findall(log_text)]
