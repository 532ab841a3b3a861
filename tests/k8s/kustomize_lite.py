"""Renders the kustomizations under k8s/ without kustomize: the subset of kustomize our manifests use.

Supported kustomization fields: resources (files and directories with their own kustomization),
secretGenerator (name, envs, literals, files, type; with generatorOptions.disableNameSuffixHash: true,
since a hashed name would not be rewritten inside PyTorchJob/TrainJob pod templates),
images (newName/newTag/digest, on every containers[]/initContainers[] image at any depth plus the
fieldSpecs declared in `configurations`), patches holding JSON6902 operations (add, remove, replace,
move, copy, test) with a target (group/version/kind/name/namespace), namespace. Anything else, a
strategic-merge patch included, is an error rather than silently ignored. When kubectl is installed,
tests/k8s/validate_manifests.py also renders with `kubectl kustomize` and requires the same objects.

    objects = render("k8s/overlays/gpu")     # -> list of dicts, in resource order
"""
import base64
import copy
import os

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "images", "patches", "configurations", "namespace",
             "secretGenerator", "generatorOptions"}


class KustomizeError(Exception):
    pass


def load_yaml_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def _kustomization_file(d):
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def render(directory):
    kfile = _kustomization_file(directory)
    if kfile is None:
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    docs = load_yaml_docs(kfile)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise KustomizeError(f"{kfile}: expected one mapping")
    k = docs[0]
    unknown = set(k) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{kfile}: fields {sorted(unknown)} are not supported by kustomize_lite")
    objects = []
    for res in k.get("resources", []):
        path = os.path.normpath(os.path.join(directory, res))
        if os.path.isdir(path):
            objects += render(path)
        elif os.path.isfile(path):
            objects += [copy.deepcopy(d) for d in load_yaml_docs(path)]
        else:
            raise KustomizeError(f"{kfile}: resource {res} not found")
    objects += _generate_secrets(k, directory, kfile)
    _check_unique(objects, kfile)
    for p in k.get("patches", []):
        _apply_patch_entry(objects, p, directory, kfile)
    image_specs = []
    for c in k.get("configurations", []):
        for spec in (load_yaml_docs(os.path.join(directory, c)) or [{}])[0].get("images", []):
            image_specs.append(spec)
    for img in k.get("images", []):
        for obj in objects:
            _set_images(obj, img, image_specs)
    if "namespace" in k:
        for obj in objects:
            obj.setdefault("metadata", {})["namespace"] = k["namespace"]
    return objects


# ---- secretGenerator ----------------------------------------------------------------------------

def _read_env_file(path, kfile):
    """KEY=VALUE lines as kustomize reads an env file: blank lines and # comments skipped."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise KustomizeError(f"{kfile}: {path}:{n}: expected KEY=VALUE")
            key, value = line.split("=", 1)
            out.append((key, value))
    return out


def _generate_secrets(k, directory, kfile):
    gens = k.get("secretGenerator", [])
    options = k.get("generatorOptions") or {}
    if set(options) - {"disableNameSuffixHash"}:
        raise KustomizeError(f"{kfile}: generatorOptions {sorted(set(options) - {'disableNameSuffixHash'})} not supported")
    if gens and options.get("disableNameSuffixHash") is not True:
        raise KustomizeError(f"{kfile}: secretGenerator needs generatorOptions.disableNameSuffixHash: true "
                             "(kustomize_lite does not compute the name hash)")
    secrets = []
    for g in gens:
        unknown = set(g) - {"name", "envs", "literals", "files", "type"}
        if unknown:
            raise KustomizeError(f"{kfile}: secretGenerator fields {sorted(unknown)} are not supported")
        pairs = []
        for e in g.get("envs", []):
            pairs += _read_env_file(os.path.join(directory, e), kfile)
        for lit in g.get("literals", []):
            if "=" not in lit:
                raise KustomizeError(f"{kfile}: literal {lit!r} is not KEY=VALUE")
            pairs.append(tuple(lit.split("=", 1)))
        for f in g.get("files", []):
            key, _, rel = f.partition("=") if "=" in f else (os.path.basename(f), "", f)
            with open(os.path.join(directory, rel), "rb") as fh:
                pairs.append((key, fh.read().decode("utf-8")))
        data = {key: base64.b64encode(value.encode("utf-8")).decode("ascii") for key, value in pairs}
        secrets.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": g["name"]},
                        "type": g.get("type", "Opaque"), "data": data})
    return secrets


def _check_unique(objects, where):
    seen = set()
    for o in objects:
        key = (o.get("apiVersion"), o.get("kind"), o.get("metadata", {}).get("namespace"), o.get("metadata", {}).get("name"))
        if key in seen:
            raise KustomizeError(f"{where}: resource {key} appears twice")
        seen.add(key)


# ---- patches ------------------------------------------------------------------------------------

def _matches_target(obj, target):
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    checks = {"group": group, "version": version, "kind": obj.get("kind"),
              "name": obj.get("metadata", {}).get("name"), "namespace": obj.get("metadata", {}).get("namespace")}
    for key, want in target.items():
        if key not in checks:
            raise KustomizeError(f"patch target field {key!r} is not supported by kustomize_lite")
        if checks[key] != want:
            return False
    return True


def _apply_patch_entry(objects, entry, directory, kfile):
    if "patch" in entry:
        text = entry["patch"]
    elif "path" in entry:
        with open(os.path.join(directory, entry["path"]), encoding="utf-8") as f:
            text = f.read()
    else:
        raise KustomizeError(f"{kfile}: patch without patch or path")
    ops = yaml.safe_load(text)
    if not isinstance(ops, list):
        raise KustomizeError(f"{kfile}: only JSON6902 patches (a list of operations) are supported")
    target = entry.get("target")
    if not target:
        raise KustomizeError(f"{kfile}: a JSON6902 patch needs a target")
    hits = [o for o in objects if _matches_target(o, target)]
    if not hits:
        raise KustomizeError(f"{kfile}: patch target {target} matches no resource")
    for obj in hits:
        for op in ops:
            try:
                apply_json6902(obj, op)
            except KustomizeError as e:
                raise KustomizeError(f"{kfile}: {e}")


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise KustomizeError(f"JSON pointer {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts, path):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise KustomizeError(f"path {path}: {p!r} does not exist")
            cur = cur[p]
        elif isinstance(cur, list):
            if not p.isdigit() or int(p) >= len(cur):
                raise KustomizeError(f"path {path}: index {p!r} out of range")
            cur = cur[int(p)]
        else:
            raise KustomizeError(f"path {path}: cannot descend into a scalar at {p!r}")
    return cur


def _add(doc, parts, value, path):
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise KustomizeError(f"add {path}: bad index {last!r}")
    else:
        raise KustomizeError(f"add {path}: parent is a scalar")


def _remove(doc, parts, path):
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise KustomizeError(f"remove {path}: nothing there")


def apply_json6902(doc, op):
    kind, path = op.get("op"), op.get("path")
    parts = _pointer(path)
    if not parts:
        raise KustomizeError("patching the whole document is not supported")
    if kind == "add":
        _add(doc, parts, copy.deepcopy(op["value"]), path)
    elif kind == "remove":
        _remove(doc, parts, path)
    elif kind == "replace":
        _walk(doc, parts, path)  # must exist
        _remove(doc, parts, path)
        _add(doc, parts, copy.deepcopy(op["value"]), path)
    elif kind == "test":
        have = _walk(doc, parts, path)
        if have != op["value"]:
            raise KustomizeError(f"test {path}: expected {op['value']!r}, found {have!r}")
    elif kind in ("move", "copy"):
        src = _pointer(op["from"])
        value = copy.deepcopy(_walk(doc, src, op["from"]))
        if kind == "move":
            _remove(doc, src, op["from"])
        _add(doc, parts, value, path)
    else:
        raise KustomizeError(f"unknown JSON6902 op {kind!r}")


# ---- images -------------------------------------------------------------------------------------

def _split_image(ref):
    """'repo/name:tag@sha256:x' -> ('repo/name', ':tag', '@sha256:x')."""
    name, digest = (ref.split("@", 1) + [""])[:2]
    digest = "@" + digest if digest else ""
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon:]
    return name, tag, digest


def _new_image(ref, img):
    name, tag, digest = _split_image(ref)
    if name != img["name"]:
        return ref
    name = img.get("newName", name)
    if "digest" in img:
        return f"{name}@{img['digest']}"
    if "newTag" in img:
        return f"{name}:{img['newTag']}"
    return name + tag + digest


def _set_images(obj, img, specs):
    def visit(node):
        if isinstance(node, dict):
            for key, val in node.items():
                if key in ("containers", "initContainers") and isinstance(val, list):
                    for c in val:
                        if isinstance(c, dict) and isinstance(c.get("image"), str):
                            c["image"] = _new_image(c["image"], img)
                visit(val)
        elif isinstance(node, list):
            for v in node:
                visit(v)
    visit(obj)
    for spec in specs:
        if spec.get("kind") and spec["kind"] != obj.get("kind"):
            continue
        parts = spec["path"].split("/")
        cur = obj
        for p in parts[:-1]:
            cur = cur.get(p) if isinstance(cur, dict) else None
        if isinstance(cur, dict) and isinstance(cur.get(parts[-1]), str):
            cur[parts[-1]] = _new_image(cur[parts[-1]], img)
