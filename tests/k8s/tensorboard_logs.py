"""The Kubeflow Tensorboard reads what the jobs write: every training container under k8s/ passes
--tensorboard-dir, that folder lies on a volume whose claim and sub-path a Tensorboard's
`spec.logspath: pvc://<claim>/<path>` covers (the tensorboard-controller mounts <path> of <claim>
and runs `tensorboard --logdir` there, tensorboard_controller.go), one job per sub-folder.

Used by validate_manifests.py: check(objects) on the manifests, self_test(objects) on mutations.
"""
import copy
import posixpath

TRAINERS = {"train_cifar10", "train_ranzcr"}


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def training_argvs(obj):
    """(where, argv) of every container (or TrainJob trainer) that starts one of our trainers."""
    for i, node in enumerate(_walk(obj)):
        argv = list(node.get("command") or []) + list(node.get("args") or [])
        if any(isinstance(a, str) and posixpath.basename(a) in TRAINERS for a in argv):
            yield f"{node.get('name') or 'trainer'}#{i}", [str(a) for a in argv]


def volumes(obj):
    """{mountPath: claimName} from the volumeMounts and volumes anywhere in the object."""
    claims = {}
    for node in _walk(obj):
        for v in node.get("volumes") or []:
            if isinstance(v, dict) and (v.get("persistentVolumeClaim") or {}).get("claimName"):
                claims[v["name"]] = v["persistentVolumeClaim"]["claimName"]
    out = {}
    for node in _walk(obj):
        for m in node.get("volumeMounts") or []:
            if isinstance(m, dict) and m.get("name") in claims:
                out[m["mountPath"].rstrip("/")] = claims[m["name"]]
    return out


def logspaths(objects):
    """(name, claim, sub-path) of every Tensorboard; a logspath that is not pvc://claim/path is listed with claim None."""
    out = []
    for o in objects:
        if o.get("kind") == "Tensorboard":
            path = ((o.get("spec") or {}).get("logspath") or "")
            claim, _, sub = path[len("pvc://"):].partition("/") if path.startswith("pvc://") else (None, "", path)
            out.append((o["metadata"].get("name"), claim, sub.strip("/")))
    return out


def check(objects):
    """Problems (strings); empty when every trainer's --tensorboard-dir is read by a Tensorboard."""
    problems = []
    boards = logspaths(objects)
    if not boards:
        problems.append("no Tensorboard under k8s/ reads the jobs' --tensorboard-dir")
    for name, claim, sub in boards:
        if claim is None:
            problems.append(f"Tensorboard/{name}: spec.logspath must be pvc://<claim>/<path> (the jobs' shared volume)")
    for o in objects:
        if o.get("kind") not in ("PyTorchJob", "TrainJob"):
            continue
        mounts = volumes(o)
        for where, argv in training_argvs(o):
            what = f"{o['kind']}/{o['metadata'].get('name')} {where}"
            if "--tensorboard-dir" not in argv or argv.index("--tensorboard-dir") + 1 >= len(argv):
                problems.append(f"{what}: no --tensorboard-dir (the Kubeflow Tensorboard would show nothing of it)")
                continue
            d = argv[argv.index("--tensorboard-dir") + 1].rstrip("/")
            mount = max((m for m in mounts if d.startswith(m + "/")), key=len, default=None)
            if mount is None:
                problems.append(f"{what}: --tensorboard-dir {d} is on no persistent volume")
                continue
            rel = d[len(mount) + 1:]
            if not any(claim == mounts[mount] and sub and rel.startswith(sub + "/") and "/" not in rel[len(sub) + 1:]
                       for _, claim, sub in boards):
                problems.append(f"{what}: --tensorboard-dir {d} (claim {mounts[mount]}, path {rel}) is not one "
                                f"sub-folder of a Tensorboard's logspath {[f'pvc://{c}/{s}' for _, c, s in boards]}")
    return problems


def self_test(objects):
    """Mutations check() must catch: (what, problems found)."""
    failures = []

    def expect(what, mutate, fragment):
        objs = copy.deepcopy(objects)
        mutate(objs)
        found = check(objs)
        if not any(fragment in p for p in found):
            failures.append(f"tensorboard logs: '{what}' was not caught (wanted {fragment!r}; got {found})")

    def set_logspath(value):
        def f(objs):
            for o in objs:
                if o.get("kind") == "Tensorboard":
                    o["spec"]["logspath"] = value
        return f

    def drop_flag(objs):
        for o in objs:
            for node in _walk(o):
                args = node.get("args")
                if isinstance(args, list) and "--tensorboard-dir" in args:
                    i = args.index("--tensorboard-dir")
                    del args[i:i + 2]
                    return

    if check(objects):
        failures.append(f"tensorboard logs: the manifests do not pass: {check(objects)}")
    expect("Tensorboard on another claim", set_logspath("pvc://other-claim/tensorboard"), "is not one sub-folder")
    expect("Tensorboard on another folder", set_logspath("pvc://ddp-shared/tb"), "is not one sub-folder")
    expect("logspath not on a PVC", set_logspath("/shared/tensorboard"), "must be pvc://")
    expect("a job without --tensorboard-dir", drop_flag, "no --tensorboard-dir")
    return failures
