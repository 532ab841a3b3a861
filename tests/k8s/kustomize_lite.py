"""Renders the kustomizations under k8s/ without kustomize: the subset of kustomize our manifests use.

Supported kustomization fields: resources (files and directories with their own kustomization),
components (directories holding a `kind: Component` kustomization: its resources join the including
kustomization's and its generators and transformers run over all of them, before the includer's own),
secretGenerator (name, envs, literals, files, type; with generatorOptions.disableNameSuffixHash: true,
since a hashed name would not be rewritten inside PyTorchJob/TrainJob pod templates),
images (newName/newTag/digest, on every containers[]/initContainers[] image at any depth plus the
fieldSpecs declared in `configurations`), patches holding JSON6902 operations (add, remove, replace,
move, copy, test) with a target (group/version/kind/name/namespace), a strategic-merge patch that is
only `$patch: delete` (removes its targets; a JSON6902 patch may not rename a kind others refer to by name,
a PVC say, since kustomize would then rewrite the references), namespace, and inline replacements (source: one resource
by group/version/kind/name/namespace + fieldPath; targets: select/reject by the same keys, fieldPaths
with map keys, list indexes, [key=value] and * over list items, options.create). Transformers run in
kustomize's order: patches, namespace, images, replacements. Resources annotated
config.kubernetes.io/local-config: "true" take part in the build (a replacement's source) and are left
out of the final output, as kustomize does. Anything else, another strategic-merge patch included, is an
error rather than silently ignored. When kubectl is installed, tests/k8s/validate_manifests.py also
renders with `kubectl kustomize` and requires the same objects.

    objects = render("k8s/overlays/gpu")     # -> list of dicts, in resource order
"""
import base64
import copy
import os

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "images", "patches", "configurations", "namespace",
             "secretGenerator", "generatorOptions", "components", "replacements"}
# Kinds whose names other resources refer to (claimName, configMapRef, secretKeyRef, serviceName, ...):
# kustomize rewrites those references when a patch renames one; kustomize_lite refuses such a rename.
NAME_REFERENCED = {"ConfigMap", "Secret", "PersistentVolumeClaim", "PersistentVolume", "Service", "ServiceAccount",
                   "StorageClass", "PriorityClass", "Role", "ClusterRole"}
KINDS = {"Kustomization": "kustomize.config.k8s.io/v1beta1", "Component": "kustomize.config.k8s.io/v1alpha1"}
LOCAL_CONFIG = "config.kubernetes.io/local-config"


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
    """What `kustomize build directory` prints: every object, local-config ones left out."""
    return [o for o in _build(directory, []) if not is_local_config(o)]


def is_local_config(obj):
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(LOCAL_CONFIG) == "true"


def _build(directory, objects, component=False):
    """Accumulates `directory` onto `objects` (in place) and returns it. A Kustomization starts from
    nothing; a Component is built onto its includer's objects, as kustomize's accumulateComponents."""
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
    kind = k.get("kind", "Kustomization")
    if kind not in KINDS or k.get("apiVersion", KINDS[kind]) != KINDS[kind]:
        raise KustomizeError(f"{kfile}: kind {kind!r} apiVersion {k.get('apiVersion')!r} is not a Kustomization "
                             f"({KINDS['Kustomization']}) or a Component ({KINDS['Component']})")
    if component and kind != "Component":
        raise KustomizeError(f"{kfile}: listed under components but its kind is {kind}, not Component")
    if not component and kind == "Component":
        raise KustomizeError(f"{kfile}: a Component cannot be a resource; list it under components")
    for res in k.get("resources", []):
        path = os.path.normpath(os.path.join(directory, res))
        if os.path.isdir(path):
            here = os.path.abspath(directory)
            if os.path.commonpath([here, os.path.abspath(path)]) == os.path.abspath(path):
                raise KustomizeError(f"{kfile}: cycle detected: resource {res} contains this kustomization")
            objects += _build(path, [])
        elif os.path.isfile(path):
            objects += [copy.deepcopy(d) for d in load_yaml_docs(path)]
        else:
            raise KustomizeError(f"{kfile}: resource {res} not found")
    _check_unique(objects, kfile)
    for c in k.get("components", []):
        path = os.path.normpath(os.path.join(directory, c))
        if not os.path.isdir(path):
            raise KustomizeError(f"{kfile}: component {c} is not a directory")
        _build(path, objects, component=True)
    objects += _generate_secrets(k, directory, kfile)
    _check_unique(objects, kfile)
    for p in k.get("patches", []):
        _apply_patch_entry(objects, p, directory, kfile)
    if "namespace" in k:
        for obj in objects:
            obj.setdefault("metadata", {})["namespace"] = k["namespace"]
    image_specs = []
    for c in k.get("configurations", []):
        for spec in (load_yaml_docs(os.path.join(directory, c)) or [{}])[0].get("images", []):
            image_specs.append(spec)
    for img in k.get("images", []):
        for obj in objects:
            _set_images(obj, img, image_specs)
    for r in k.get("replacements", []):
        try:
            apply_replacement(objects, r)
        except KustomizeError as e:
            raise KustomizeError(f"{kfile}: {e}")
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
    if isinstance(ops, dict) and ops.get("$patch") == "delete":
        _delete_patch(objects, ops, entry.get("target"), kfile)
        return
    if not isinstance(ops, list):
        raise KustomizeError(f"{kfile}: only JSON6902 patches (a list of operations) and strategic-merge "
                             "`$patch: delete` are supported")
    target = entry.get("target")
    if not target:
        raise KustomizeError(f"{kfile}: a JSON6902 patch needs a target")
    hits = [o for o in objects if _matches_target(o, target)]
    if not hits:
        raise KustomizeError(f"{kfile}: patch target {target} matches no resource")
    for obj in hits:
        before = (obj.get("metadata") or {}).get("name")
        for op in ops:
            try:
                apply_json6902(obj, op)
            except KustomizeError as e:
                raise KustomizeError(f"{kfile}: {e}")
        if obj.get("kind") in NAME_REFERENCED and (obj.get("metadata") or {}).get("name") != before:
            raise KustomizeError(f"{kfile}: the patch renames {obj['kind']} {before!r}; kustomize would then rewrite "
                                 "every reference to it (nameReference), which kustomize_lite does not play")


def _delete_patch(objects, patch, target, kfile):
    """A strategic-merge patch holding `$patch: delete`: removes every resource it targets (the
    entry's target, else the patch's own apiVersion/kind/metadata.name), as kustomize's
    PatchTransformer; no match is an error."""
    if set(patch) - {"$patch", "apiVersion", "kind", "metadata"} or set(patch.get("metadata") or {}) - {"name", "namespace"}:
        raise KustomizeError(f"{kfile}: a `$patch: delete` patch may hold only apiVersion, kind and metadata.name/namespace")
    if not target:
        group, _, version = str(patch.get("apiVersion", "")).rpartition("/")
        target = {"group": group, "version": version, "kind": patch.get("kind"),
                  "name": (patch.get("metadata") or {}).get("name")}
        if (patch.get("metadata") or {}).get("namespace"):
            target["namespace"] = patch["metadata"]["namespace"]
    hits = [o for o in objects if _matches_target(o, target)]
    if not hits:
        raise KustomizeError(f"{kfile}: no resource matches the `$patch: delete` patch {target}")
    objects[:] = [o for o in objects if not any(o is h for h in hits)]


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


# ---- replacements -------------------------------------------------------------------------------

SELECTOR_KEYS = {"group", "version", "kind", "name", "namespace"}


def _selected(obj, sel, what):
    """kustomize's ResId.IsSelectedBy: every key the selector sets equals the object's."""
    if not isinstance(sel, dict) or set(sel) - SELECTOR_KEYS:
        raise KustomizeError(f"{what}: selector {sel!r} may use only {sorted(SELECTOR_KEYS)} in kustomize_lite")
    return _matches_target(obj, sel)


def _describe_selector(sel):
    return (f"{sel.get('kind', '')}.{sel.get('version') or '[noVer]'}.{sel.get('group') or '[noGrp]'}/"
            f"{sel.get('name', '')}.{sel.get('namespace') or '[noNs]'}")


def split_field_path(path):
    """'a.b.[name=x.y].c' -> ['a', 'b', '[name=x.y]', 'c']: dots inside brackets do not split."""
    parts, cur, depth = [], "", 0
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    if depth != 0 or any(p == "" for p in parts):
        raise KustomizeError(f"field path {path!r} is malformed")
    return parts


def _lookup(node, parts, create):
    """The (parent, key) slots the path names, as kyaml's PathMatcher: a map key; a list index; [k=v]
    every list item whose field k is v; * every list item. With create, missing map keys and [k=v]
    items are made on the way (the last slot is created empty)."""
    if not parts:
        return []
    head, rest = parts[0], parts[1:]
    slots = []
    if isinstance(node, dict):
        if head.startswith("["):
            return []
        if head not in node:
            if not create:
                return []
            node[head] = {} if rest else None
        slots = [(node, head)]
    elif isinstance(node, list):
        if head == "*":
            slots = [(node, i) for i in range(len(node))]
        elif head.startswith("[") and head.endswith("]") and "=" in head:
            key, _, value = head[1:-1].partition("=")
            slots = [(node, i) for i, item in enumerate(node) if isinstance(item, dict) and str(item.get(key)) == value]
            if not slots and create:
                node.append({key: value})
                slots = [(node, len(node) - 1)]
        elif head.isdigit() and int(head) < len(node):
            slots = [(node, int(head))]
    if not rest:
        return slots
    out = []
    for parent, key in slots:
        out += _lookup(parent[key], rest, create)
    return out


def _delimited(target, value, options):
    """options.delimiter/index as kustomize's replacement filter: the target string is split at the
    delimiter and the part at `index` replaced; an index below 0 prepends, one past the end appends."""
    if isinstance(target, (dict, list)) or isinstance(value, (dict, list)):
        raise KustomizeError("delimiter option can only be used with scalar nodes")
    parts = ("" if target is None else str(target)).split(options["delimiter"])
    index = int(options.get("index") or 0)
    if index < 0:
        parts.insert(0, str(value))
    elif index >= len(parts):
        parts.append(str(value))
    else:
        parts[index] = str(value)
    return options["delimiter"].join(parts)


def apply_replacement(objects, r):
    """One inline replacement: the source's field value copied to every target field, as kustomize's
    ReplacementTransformer (a missing target field is an error unless options.create)."""
    if not isinstance(r, dict) or set(r) - {"source", "targets"}:
        raise KustomizeError(f"replacement {r!r}: only inline source + targets are supported by kustomize_lite")
    src = dict(r.get("source") or {})
    if set(src) - SELECTOR_KEYS - {"fieldPath"}:
        raise KustomizeError(f"replacement source: fields {sorted(set(src) - SELECTOR_KEYS - {'fieldPath'})} "
                             "are not supported by kustomize_lite")
    field = src.pop("fieldPath", "metadata.name")
    found = [o for o in objects if _selected(o, src, "replacement source")]
    if not found:
        raise KustomizeError(f"nothing selected by {_describe_selector(src)}:{field}")
    if len(found) > 1:
        raise KustomizeError(f"multiple matches for selector {_describe_selector(src)}")
    slots = _lookup(found[0], split_field_path(field), create=False)
    if len(slots) != 1:
        raise KustomizeError(f"fieldPath `{field}` is missing for replacement source {_describe_selector(src)}")
    value = slots[0][0][slots[0][1]]
    for t in r.get("targets") or []:
        if set(t) - {"select", "reject", "fieldPaths", "options"}:
            raise KustomizeError(f"replacement target fields {sorted(set(t) - {'select', 'reject', 'fieldPaths', 'options'})} "
                                 "are not supported by kustomize_lite")
        if not t.get("select"):
            raise KustomizeError("target must specify resources to select")
        options = t.get("options") or {}
        if set(options) - {"create", "delimiter", "index"}:
            raise KustomizeError(f"replacement target options {sorted(set(options) - {'create', 'delimiter', 'index'})} "
                                 "are not supported by kustomize_lite")
        for obj in objects:
            if not _selected(obj, t["select"], "replacement target") or any(
                    _selected(obj, rej, "replacement reject") for rej in t.get("reject") or []):
                continue
            for fp in t.get("fieldPaths") or ["metadata.name"]:
                slots = _lookup(obj, split_field_path(fp), create=bool(options.get("create")))
                if not slots:
                    raise KustomizeError(f"unable to find field \"{fp}\" in replacement target "
                                         f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}")
                for parent, key in slots:
                    parent[key] = _delimited(parent[key], value, options) if options.get("delimiter") else copy.deepcopy(value)
