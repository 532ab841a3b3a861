#!/usr/bin/python3
"""Executes a Dockerfile without a Docker engine: each stage in a Debian root made by debootstrap.

Used by scripts/check-dockerfile.sh. It reads the Dockerfile's instructions (ARG FROM RUN COPY ENV
WORKDIR USER LABEL EXPOSE ENTRYPOINT CMD) stage by stage and carries each one out the way BuildKit
would: RUN in a chroot inside fresh mount + PID namespaces with /proc, /sys, /dev, the host's
resolv.conf, Docker's default capability set, the stage's ENV and build ARGs, its USER and WORKDIR;
COPY from the build context filtered by .dockerignore or from an earlier stage (--from), owned by
root unless --chown; `RUN --mount=type=cache` bound to a persistent directory. Unknown instructions
or flags are errors, never skipped. The network is the host's (like `docker build --network=host`).

  chroot_build.py build --file docker/Dockerfile --context . --work /var/tmp/x [--target runtime]
                        [--build-arg K=V] [--layer-cache]
  chroot_build.py lint --context . docker/Dockerfile docker/Dockerfile.cuda   # static checks only
  chroot_build.py run --work /var/tmp/x [--stage runtime] [--entrypoint P] [-v HOST:CTR] [-e K=V]
                      [--] [ARGS...]           # like `docker run`, on an overlay of the stage's root
"""
import argparse
import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Docker's default capability set for containers and build steps (moby oci/caps/defaults.go).
DOCKER_CAPS = ["chown", "dac_override", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
               "net_bind_service", "net_raw", "sys_chroot", "mknod", "audit_write", "setfcap"]
KNOWN = {"ARG", "FROM", "RUN", "COPY", "ENV", "WORKDIR", "USER", "LABEL", "EXPOSE", "ENTRYPOINT", "CMD"}
LAYER_CACHE_MIN_SECONDS = 60  # snapshot the root after RUN steps that took at least this long
LAYER_CACHE_KEEP = 4


def log(msg):
    print(f"[chroot-build {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class BuildError(Exception):
    pass


# ---- parsing ------------------------------------------------------------------------------------

def parse_dockerfile(text):
    """Returns [(lineno, INSTRUCTION, rest)] with continuations joined and comments dropped."""
    out, buf, start = [], None, 0
    for no, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if buf is None and (not stripped or stripped.startswith("#")):
            continue  # blank line, comment or parser directive
        if buf is not None and (not stripped or stripped.startswith("#")):
            continue  # Docker drops comment and empty lines inside a continuation
        line = raw.rstrip()
        if buf is None:
            buf, start = "", no
        if line.endswith("\\"):
            buf += line[:-1]
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = None
    if buf is not None:
        raise BuildError(f"line {start}: continuation at end of file")
    for no, ins, _ in out:
        if ins not in KNOWN:
            raise BuildError(f"line {no}: instruction {ins} is not supported by this executor")
    return out


_VAR = re.compile(r"\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def substitute(s, env):
    """Docker's variable substitution: $V, ${V}, ${V:-default}, ${V:+alt}; \\$ stays literal."""
    def rep(m):
        if m.group(0) == "\\$":
            return "$"
        name = m.group(1) or m.group(4)
        val = env.get(name)
        if m.group(2) == "-":
            return val if val else substitute(m.group(3), env)
        if m.group(2) == "+":
            return substitute(m.group(3), env) if val else ""
        return val or ""
    return _VAR.sub(rep, s)


def split_flags(rest):
    """Leading --flag=value words (RUN --mount=..., COPY --from=...) and the remainder."""
    flags = []
    while rest.startswith("--"):
        word, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        flags.append(word[2:])
    return flags, rest


def exec_or_shell(rest):
    """JSON exec form -> list; shell form -> ['/bin/sh', '-c', rest]."""
    if rest.startswith("["):
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as e:
            raise BuildError(f"bad JSON form {rest!r}: {e}")
        if not all(isinstance(v, str) for v in value):
            raise BuildError(f"exec form must be a list of strings: {rest!r}")
        return value
    return ["/bin/sh", "-c", rest]


def parse_kv(rest, env, what):
    """ENV/LABEL/ARG key=value pairs (shell-like quoting), or the legacy `ENV key value` form."""
    words = shlex.split(rest, posix=True)
    if words and "=" not in words[0]:
        if what == "ENV" and len(words) >= 2:
            return [(words[0], substitute(rest.split(None, 1)[1], env))]
        raise BuildError(f"{what} {rest!r}: expected key=value")
    pairs = []
    for w in words:
        if "=" not in w:
            raise BuildError(f"{what} {rest!r}: {w!r} is not key=value")
        k, v = w.split("=", 1)
        pairs.append((k, substitute(v, env)))
    return pairs


# ---- .dockerignore ------------------------------------------------------------------------------

def _pattern_regex(pat):
    out, i = "", 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**", i):
            i += 2
            if pat.startswith("/", i):
                i += 1
                out += "(?:.*/)?"
            else:
                out += ".*"
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = pat.find("]", i)
            if j < 0:
                raise BuildError(f".dockerignore: unterminated [ in {pat!r}")
            cls = pat[i + 1:j]
            out += "[" + ("^" + cls[1:] if cls.startswith("!") or cls.startswith("^") else cls) + "]"
            i = j
        elif c == "\\" and i + 1 < len(pat):
            i += 1
            out += re.escape(pat[i])
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z")


class DockerIgnore:
    """Moby patternmatcher semantics: patterns cleaned and rooted at the context, the last matching
    pattern wins, '!' re-includes, and a path is excluded when it or one of its parents matches."""

    def __init__(self, context):
        self.rules = []
        path = os.path.join(context, ".dockerignore")
        if os.path.exists(path):
            for line in open(path, encoding="utf-8"):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                neg = line.startswith("!")
                pat = os.path.normpath(line[1:].strip() if neg else line).lstrip("/")
                self.rules.append((neg, _pattern_regex(pat)))

    def excluded(self, rel):
        parts = rel.split("/")
        result = False
        for neg, rx in self.rules:
            hit = any(rx.match("/".join(parts[:n])) for n in range(1, len(parts) + 1))
            if hit:
                result = not neg
        return result


# ---- paths inside a root ------------------------------------------------------------------------

def in_root(root, path, follow_last=True):
    """Host path of `path` inside `root`, following symlinks as the chroot would (never escaping)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    cur, hops = [], 0
    while parts:
        p = parts.pop(0)
        if p == "..":
            if cur:
                cur.pop()
            continue
        host = os.path.join(root, *cur, p)
        if os.path.islink(host) and (parts or follow_last):
            hops += 1
            if hops > 40:
                raise BuildError(f"too many symlinks resolving {path}")
            target = os.readlink(host)
            if target.startswith("/"):
                cur = []
            parts = [q for q in target.split("/") if q not in ("", ".")] + parts
            continue
        cur.append(p)
    return os.path.join(root, *cur)


def read_ids(root, user):
    """uid, gid, supplementary gids and home of `user` ('name', 'uid', 'name:group', 'uid:gid')."""
    name, _, group = user.partition(":")
    passwd = [l.split(":") for l in open(os.path.join(root, "etc/passwd")) if l.count(":") >= 6]
    groups = [l.strip().split(":") for l in open(os.path.join(root, "etc/group")) if l.count(":") >= 3]
    entry = next((e for e in passwd if e[0] == name or e[2] == name), None)
    if entry is None and not name.isdigit():
        raise BuildError(f"USER {user}: no such user in the image's /etc/passwd")
    uid = int(entry[2]) if entry else int(name)
    gid = int(entry[3]) if entry else 0
    home = entry[5] if entry else "/"
    if group:
        g = next((e for e in groups if e[0] == group or e[2] == group), None)
        if g is None and not group.isdigit():
            raise BuildError(f"USER {user}: no such group in the image's /etc/group")
        gid = int(g[2]) if g else int(group)
    uname = entry[0] if entry else None
    supp = sorted({int(g[2]) for g in groups if uname and uname in g[3].split(",")} | {gid})
    return uid, gid, supp, home


# ---- running a command inside a root ------------------------------------------------------------

SETUP = r"""
set -eu
R=$1; shift
mount -t proc proc "$R/proc"
mount -t sysfs -o ro sysfs "$R/sys" 2>/dev/null || true
mount -t tmpfs -o mode=755,nosuid tmpfs "$R/dev"
for n in null zero full random urandom tty; do touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done
mkdir -p "$R/dev/shm" "$R/dev/pts"; mount -t tmpfs -o mode=1777 shm "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
mount -t tmpfs -o mode=1777 tmp "$R/tmp" 2>/dev/null || true
for f in resolv.conf hosts; do
  [ -L "$R/etc/$f" ] && rm -f "$R/etc/$f"
  [ -e "$R/etc/$f" ] || touch "$R/etc/$f"
  mount --bind "/etc/$f" "$R/etc/$f"
done
while [ "$1" != "--" ]; do   # bind mounts: HOST TARGET pairs
  mkdir -p "$R$2"; mount --bind "$1" "$R$2"; shift 2
done
shift
exec "$@"
"""


def run_in_root(root, argv, env, user, workdir, binds=(), check=True, tmpfs_tmp=False):
    """Runs argv in root (fresh mount+PID namespaces), as `user` with Docker's capabilities."""
    uid, gid, supp, home = read_ids(root, user or "root")
    env = dict(env)
    env.setdefault("HOME", home)
    env.setdefault("HOSTNAME", "chroot-build")
    bind_args = []
    for host, target in binds:
        bind_args += [host, target]
    setup = SETUP if tmpfs_tmp else SETUP.replace('mount -t tmpfs -o mode=1777 tmp "$R/tmp" 2>/dev/null || true\n', "")
    caps = ",".join(["-all"] + ["+" + c for c in DOCKER_CAPS])
    inner = ["/usr/bin/setpriv", f"--bounding-set={caps}", f"--reuid={uid}", f"--regid={gid}",
             "--groups=" + ",".join(map(str, supp)), "--inh-caps=-all", "--",
             "/bin/sh", "-c", 'cd "$1" || exit 1; shift; exec "$@"', "sh", workdir or "/"] + list(argv)
    cmd = ["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "--",
           "/bin/bash", "-c", setup, "setup", root] + bind_args + ["--", "chroot", root] + inner
    proc = subprocess.run(cmd, env=env)
    if check and proc.returncode != 0:
        raise BuildError(f"command {argv} exited with {proc.returncode}")
    return proc.returncode


# ---- base images --------------------------------------------------------------------------------

# The official images' /etc/apt/sources.list.d/debian.sources (deb822, main only; a Dockerfile that
# needs contrib/non-free edits it itself, as it must on the real image).
DEBIAN_SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: {suite} {suite}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.{keyext}

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: {suite}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.{keyext}
"""
DEBIAN_SUITES = {"bookworm": "bookworm", "12": "bookworm", "trixie": "trixie", "13": "trixie"}


def base_tarball(image, work, mirror):
    """A tarball of a Debian minbase root standing in for `image` (debian:bookworm*, debian:trixie*)."""
    ref = image.split("@")[0]
    m = re.fullmatch(r"(docker\.io/)?(library/)?debian:(bookworm|12|trixie|13)([-.][\w.]+)?", ref)
    if not m:
        raise BuildError(f"FROM {image}: only debian:bookworm and debian:trixie images can be made with debootstrap")
    suite = DEBIAN_SUITES[m.group(3)]
    path = os.path.join(work, f"base-debian-{suite}-minbase.tar")
    if os.path.exists(path):
        return path
    tmp = tempfile.mkdtemp(prefix="debootstrap-", dir=work)
    log(f"debootstrap --variant=minbase {suite} from {mirror} (stands in for {image})")
    subprocess.run(["debootstrap", "--variant=minbase", suite, tmp, mirror], check=True)
    # What the official image adds on top of a minbase debootstrap (debuerreotype's tweaks).
    os.remove(os.path.join(tmp, "etc/apt/sources.list"))
    # The official images' Signed-By: .gpg on bookworm, .pgp on trixie (its keyring ships both).
    keyext = "gpg" if suite == "bookworm" else "pgp"
    with open(os.path.join(tmp, "etc/apt/sources.list.d/debian.sources"), "w") as f:
        f.write(DEBIAN_SOURCES.format(suite=suite, keyext=keyext))
    with open(os.path.join(tmp, "usr/sbin/policy-rc.d"), "w") as f:
        f.write("#!/bin/sh\nexit 101\n")
    os.chmod(os.path.join(tmp, "usr/sbin/policy-rc.d"), 0o755)
    with open(os.path.join(tmp, "etc/apt/apt.conf.d/docker-clean"), "w") as f:
        f.write('DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n'
                'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n'
                'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";\n')
    with open(os.path.join(tmp, "etc/apt/apt.conf.d/docker-no-languages"), "w") as f:
        f.write('Acquire::Languages "none";\n')
    os.chmod(tmp, 0o755)  # the image's / (mkdtemp made it 0700: apt's _apt sandbox could not read its cache)
    shutil.rmtree(os.path.join(tmp, "var/lib/apt/lists"), ignore_errors=True)
    os.makedirs(os.path.join(tmp, "var/lib/apt/lists/partial"), exist_ok=True)
    subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", tmp, "-cf", path + ".part", "."], check=True)
    os.rename(path + ".part", path)
    shutil.rmtree(tmp)
    return path


# ---- COPY ---------------------------------------------------------------------------------------

def context_files(context, ignore):
    """Relative paths (files, symlinks, dirs) of the build context that .dockerignore keeps."""
    kept = []
    for dirpath, dirnames, filenames in os.walk(context):
        rel_dir = os.path.relpath(dirpath, context)
        rel_dir = "" if rel_dir == "." else rel_dir
        for d in list(dirnames):
            rel = os.path.join(rel_dir, d)
            if ignore.excluded(rel) and not any(neg for neg, _ in ignore.rules):
                dirnames.remove(d)  # prune only when no '!' rule could re-include something below
            else:
                kept.append(rel)
        for f in filenames:
            rel = os.path.join(rel_dir, f)
            if not ignore.excluded(rel):
                kept.append(rel)
    return sorted(p for p in kept if not ignore.excluded(p))


def hash_tree(base, rels):
    h = hashlib.sha256()
    for rel in rels:
        p = os.path.join(base, rel)
        st = os.lstat(p)
        h.update(f"{rel}\0{st.st_mode:o}\0".encode())
        if os.path.islink(p):
            h.update(os.readlink(p).encode())
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def copy_entry(src, dst, uid, gid, chmod=None):
    if os.path.islink(src):
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.readlink(src), dst)
        os.lchown(dst, uid, gid)
    elif os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
        shutil.copystat(src, dst)
        os.chown(dst, uid, gid)
        if chmod is not None:
            os.chmod(dst, chmod)
    else:
        if os.path.lexists(dst) and os.path.isdir(dst) and not os.path.islink(dst):
            raise BuildError(f"COPY: cannot overwrite directory {dst} with a file")
        if os.path.lexists(dst):
            os.remove(dst)
        shutil.copy2(src, dst)
        os.chown(dst, uid, gid)
        if chmod is not None:
            os.chmod(dst, chmod)


def do_copy(stage, flags, rest, env, context, ignore, stages, workdir):
    opts = dict(f.split("=", 1) if "=" in f else (f, "") for f in flags)
    for k in opts:
        if k not in ("from", "chown", "chmod", "link"):
            raise BuildError(f"COPY --{k} is not supported by this executor")
    words = exec_or_shell(rest) if rest.startswith("[") else shlex.split(substitute(rest, env))
    if len(words) < 2:
        raise BuildError(f"COPY {rest!r}: needs a source and a destination")
    srcs, dest = words[:-1], words[-1]
    root = stage["root"]
    uid, gid = 0, 0
    if "chown" in opts:
        u, _, g = opts["chown"].partition(":")
        uid, gid0, _, _ = read_ids(root, u)
        gid = read_ids(root, f"{u}:{g}")[1] if g else gid0
    chmod = int(opts["chmod"], 8) if "chmod" in opts else None
    if not dest.startswith("/"):
        dest = os.path.join(workdir or "/", dest)
    if "from" in opts:
        src_stage = stages.get(opts["from"])
        if src_stage is None:
            raise BuildError(f"COPY --from={opts['from']}: no such stage built before this one")
        base, rels_all = src_stage["root"], None
    else:
        base, rels_all = context, context_files(context, ignore)
    matched = []
    for s in srcs:
        s_clean = os.path.normpath(s).lstrip("/")
        if rels_all is not None:
            hits = [r for r in rels_all if fnmatch.fnmatchcase(r, s_clean)] if s_clean != "." else [""]
            if not hits and os.path.lexists(os.path.join(base, s_clean)) and ignore.excluded(s_clean):
                raise BuildError(f"COPY {s}: excluded by .dockerignore")
        else:
            hits = [s_clean] if os.path.lexists(in_root(base, "/" + s_clean, follow_last=False)) else []
        if not hits:
            raise BuildError(f"COPY {s}: no such file in {'stage ' + opts['from'] if 'from' in opts else 'the build context'}")
        matched += hits
    to_dir = dest.endswith("/") or len(matched) > 1
    for rel in matched:
        src = os.path.join(base, rel) if rels_all is not None else in_root(base, "/" + rel)
        if os.path.isdir(src) and not os.path.islink(src):
            dst_root = in_root(root, dest)
            os.makedirs(dst_root, exist_ok=True)
            if rels_all is not None:
                prefix = rel + "/" if rel else ""
                entries = [r[len(prefix):] for r in rels_all if r.startswith(prefix) and r != rel]
            else:
                entries = []
                for dp, dns, fns in os.walk(src):
                    for n in dns + fns:
                        entries.append(os.path.relpath(os.path.join(dp, n), src))
            for e in sorted(entries):
                d = os.path.join(dst_root, e)
                os.makedirs(os.path.dirname(d), exist_ok=True)
                copy_entry(os.path.join(src, e), d, uid, gid, chmod)
        else:
            target = os.path.join(dest, os.path.basename(rel)) if to_dir else dest
            d = in_root(root, target, follow_last=False)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            copy_entry(src, d, uid, gid, chmod)
    if rels_all is not None:
        return hash_tree(base, sorted({r for r in rels_all if any(r == m or r.startswith(m + "/") or m == "" for m in matched)}))
    return hashlib.sha256(repr(matched).encode()).hexdigest()


# ---- the build ----------------------------------------------------------------------------------

def split_stages(instructions):
    pre, stages, cur = [], [], None
    for no, ins, rest in instructions:
        if ins == "FROM":
            cur = {"from": (no, rest), "body": []}
            stages.append(cur)
        elif cur is None:
            if ins != "ARG":
                raise BuildError(f"line {no}: only ARG may come before the first FROM")
            pre.append((no, ins, rest))
        else:
            cur["body"].append((no, ins, rest))
    return pre, stages


def chain_keys(key, body, global_args, overrides, context, ignore):
    """Cache key after each instruction: the previous key, the instruction, the build-arg values in
    scope and, for COPY from the context, the content of what it copies."""
    keys, stage_args, env = [], {}, {}
    for _, ins, rest in body:
        extra = ""
        ctx = dict(stage_args, **env)
        if ins == "ARG":
            for k, v in (parse_kv(rest, ctx, "ARG") if "=" in rest else [(rest.strip(), None)]):
                d = global_args.get(k) if v is None else v
                stage_args[k] = overrides.get(k, d if d is not None else "")
        elif ins == "ENV":
            env.update(parse_kv(rest, ctx, "ENV"))
        elif ins == "COPY" and "--from" not in rest:
            _, r = split_flags(rest)
            words = shlex.split(substitute(r, ctx))
            srcs = [os.path.normpath(w).lstrip("/") for w in words[:-1]]
            rels = context_files(context, ignore)
            sel = [p for p in rels if any(s in ("", ".") or p == s or p.startswith(s + "/")
                                         or fnmatch.fnmatchcase(p, s) for s in srcs)]
            extra = hash_tree(context, sel)
        prev = keys[-1] if keys else key
        keys.append(hashlib.sha256(f"{prev}\n{ins} {rest}\n{sorted(stage_args.items())}\n{extra}".encode()).hexdigest())
    return keys


def cache_mounts(flags, work, lineno):
    binds = []
    for f in flags:
        kind, _, val = f.partition("=")
        if kind == "network":
            continue
        if kind != "mount":
            raise BuildError(f"line {lineno}: RUN --{kind} is not supported by this executor")
        m = dict(p.split("=", 1) for p in val.split(","))
        if m.get("type") != "cache":
            raise BuildError(f"line {lineno}: RUN --mount type {m.get('type')} is not supported")
        cache = os.path.join(work, "cache-mounts", re.sub(r"[^\w.-]", "_", m.get("id", m["target"])))
        os.makedirs(cache, exist_ok=True)
        binds.append((cache, m["target"]))
    return binds


def snapshot_dir(work, key):
    return os.path.join(work, "layers", key)


def build(args):
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    context = os.path.abspath(args.context)
    dockerfile = args.file if os.path.isabs(args.file) else os.path.join(context, args.file)
    instructions = parse_dockerfile(open(dockerfile, encoding="utf-8").read())
    ignore = DockerIgnore(context)
    overrides = dict(kv.split("=", 1) for kv in args.build_arg)
    pre, stage_defs = split_stages(instructions)
    global_args = {}
    for no, _, rest in pre:
        for k, v in parse_kv(rest, global_args, "ARG") if "=" in rest else [(rest.strip(), None)]:
            global_args[k] = overrides.get(k, v)
    stages, by_name = [], {}
    target = args.target
    for idx, sd in enumerate(stage_defs):
        no, rest = sd["from"]
        words = substitute(rest, global_args).split()
        image = words[0]
        name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(idx)
        if len(words) not in (1, 3):
            raise BuildError(f"line {no}: FROM {rest!r}: expected IMAGE [AS NAME]")
        stage = {"name": name, "root": os.path.join(work, "stages", name), "env": {"PATH": DEFAULT_PATH},
                 "user": "", "workdir": "/", "entrypoint": None, "cmd": ["bash"], "labels": {}, "expose": []}
        t0 = time.time()
        if os.path.exists(stage["root"]):
            subprocess.run(["rm", "-rf", "--one-file-system", stage["root"]], check=True)
        os.makedirs(stage["root"])
        if image in by_name:
            parent = by_name[image]
            log(f"stage {name}: FROM stage {image}")
            subprocess.run(["cp", "-a", parent["root"] + "/.", stage["root"]], check=True)
            for k in ("env", "user", "workdir", "entrypoint", "cmd", "labels", "expose"):
                stage[k] = json.loads(json.dumps(parent[k]))
            key = hashlib.sha256(("stage:" + parent["key"]).encode()).hexdigest()
        else:
            tar = base_tarball(image, work, args.mirror)
            key = hashlib.sha256(f"base:{image}:{os.path.getmtime(tar)}".encode()).hexdigest()
            stage["base_tar"] = tar
        stage_args = {}
        body = sd["body"]
        keys = chain_keys(key, body, global_args, overrides, context, ignore)
        last_cached = -1
        if args.layer_cache:
            for i, (_, ins, _) in enumerate(body):
                if ins == "RUN" and os.path.isdir(snapshot_dir(work, keys[i])):
                    last_cached = i
        log(f"stage {name}: FROM {image}")
        if last_cached < 0 and "base_tar" in stage:
            subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", stage["root"], "-xf", stage["base_tar"]], check=True)
        elif last_cached >= 0:
            log(f"stage {name}: steps up to line {body[last_cached][0]} come from the layer cache")
            subprocess.run(["rm", "-rf", "--one-file-system", stage["root"]], check=True)
            subprocess.run(["cp", "-a", snapshot_dir(work, keys[last_cached]), stage["root"]], check=True)
        for i, (no2, ins, rest2) in enumerate(body):
            ctx_env = dict(stage_args)  # global ARGs reach a stage only when it redeclares them
            ctx_env.update(stage["env"])
            skip_fs = i <= last_cached  # its effect on the root is already in the restored layer
            if ins == "ARG":
                for kk, vv in (parse_kv(rest2, ctx_env, "ARG") if "=" in rest2 else [(rest2.strip(), None)]):
                    default = global_args.get(kk) if vv is None else vv
                    stage_args[kk] = overrides.get(kk, default if default is not None else "")
            elif ins == "ENV":
                for kk, vv in parse_kv(rest2, ctx_env, "ENV"):
                    stage["env"][kk] = vv
            elif ins == "LABEL":
                stage["labels"].update(dict(parse_kv(rest2, ctx_env, "LABEL")))
            elif ins == "EXPOSE":
                stage["expose"] += substitute(rest2, ctx_env).split()
            elif ins == "USER":
                stage["user"] = substitute(rest2, ctx_env).strip()
            elif ins == "WORKDIR":
                wd = substitute(rest2, ctx_env).strip()
                stage["workdir"] = os.path.normpath(os.path.join(stage["workdir"], wd))
                d = in_root(stage["root"], stage["workdir"])
                if not skip_fs and not os.path.exists(d):
                    os.makedirs(d)
                    if stage["user"]:
                        uid, gid, _, _ = read_ids(stage["root"], stage["user"])
                        os.chown(d, uid, gid)
            elif ins == "ENTRYPOINT":
                stage["entrypoint"] = exec_or_shell(rest2)
                stage["cmd"] = None  # Docker resets an inherited CMD when ENTRYPOINT is set
            elif ins == "CMD":
                stage["cmd"] = exec_or_shell(rest2)
            elif ins == "COPY" and not skip_fs:
                flags, r = split_flags(rest2)
                log(f"stage {name} line {no2}: COPY {rest2}")
                do_copy(stage, flags, r, ctx_env, context, ignore, by_name, stage["workdir"])
            elif ins == "RUN" and not skip_fs:
                t1 = time.time()
                flags, r = split_flags(rest2)
                binds = cache_mounts(flags, work, no2)
                log(f"stage {name} line {no2}: RUN {r[:200]}")
                run_in_root(stage["root"], exec_or_shell(r), ctx_env, stage["user"], stage["workdir"], binds)
                took = time.time() - t1
                log(f"stage {name} line {no2}: RUN took {took:.0f} s")
                if args.layer_cache and took >= LAYER_CACHE_MIN_SECONDS:
                    snap = snapshot_dir(work, keys[i])
                    log(f"stage {name}: caching the root after line {no2}")
                    os.makedirs(os.path.dirname(snap), exist_ok=True)
                    subprocess.run(["cp", "-a", stage["root"], snap + ".part"], check=True)
                    os.rename(snap + ".part", snap)
                    prune_layers(work)
        stage["key"] = keys[-1] if keys else key
        config = {k: stage[k] for k in ("name", "root", "env", "user", "workdir", "entrypoint", "cmd", "labels", "expose")}
        with open(os.path.join(work, f"image-{name}.json"), "w") as f:
            json.dump(config, f, indent=1)
        log(f"stage {name}: done in {time.time() - t0:.0f} s")
        stages.append(stage)
        by_name[name] = stage
        if target and name == target:
            break
    if target and target not in by_name:
        raise BuildError(f"--target {target}: no such stage")
    return 0


def prune_layers(work):
    d = os.path.join(work, "layers")
    snaps = sorted((os.path.getmtime(os.path.join(d, s)), s) for s in os.listdir(d) if not s.endswith(".part"))
    for _, s in snaps[:-LAYER_CACHE_KEEP]:
        subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(d, s)], check=True)


# ---- lint: what can be checked without building ---------------------------------------------------

def lint(args):
    """Static checks of a Dockerfile against the build context: every instruction understood, FROM
    fully resolved, COPY sources present and not excluded by .dockerignore, --from naming an earlier
    stage, the last stage running as a non-root USER with an exec-form ENTRYPOINT."""
    context = os.path.abspath(args.context)
    problems = []
    for f in args.file:
        path = f if os.path.isabs(f) else os.path.join(context, f)
        try:
            instructions = parse_dockerfile(open(path, encoding="utf-8").read())
            pre, stage_defs = split_stages(instructions)
        except BuildError as e:
            problems.append(f"{f}: {e}")
            continue
        ignore = DockerIgnore(context)
        rels = context_files(context, ignore)
        global_args = {}
        for _, _, rest in pre:
            for k, v in parse_kv(rest, {}, "ARG") if "=" in rest else [(rest.strip(), "")]:
                global_args[k] = v
        names, last = [], None
        for idx, sd in enumerate(stage_defs):
            no, rest = sd["from"]
            words = substitute(rest, global_args).split()
            if "$" in words[0] or not words[0]:
                problems.append(f"{f}:{no}: FROM {rest!r} does not resolve")
            names.append(words[2] if len(words) == 3 else str(idx))
            user, entry = "", None
            for no2, ins, rest2 in sd["body"]:
                flags, r = split_flags(rest2)
                if ins == "COPY":
                    opts = dict(x.split("=", 1) for x in flags if "=" in x)
                    if "from" in opts:
                        if opts["from"] not in names[:-1]:
                            problems.append(f"{f}:{no2}: COPY --from={opts['from']} names no earlier stage")
                        continue
                    for src in shlex.split(r)[:-1]:
                        s_clean = os.path.normpath(src).lstrip("/")
                        if s_clean in (".", ""):
                            continue
                        if not any(x == s_clean or fnmatch.fnmatchcase(x, s_clean) for x in rels):
                            why = "excluded by .dockerignore" if os.path.exists(os.path.join(context, s_clean)) else "missing"
                            problems.append(f"{f}:{no2}: COPY source {src} is {why}")
                elif ins == "RUN":
                    for fl in flags:
                        if not (fl.startswith("mount=type=cache,") or fl.startswith("network=")):
                            problems.append(f"{f}:{no2}: RUN --{fl} is not supported by chroot_build")
                elif ins == "USER":
                    user = rest2.strip()
                elif ins == "ENTRYPOINT":
                    entry = rest2.strip()
            last = (no, user, entry)
        if last:
            no, user, entry = last
            if user in ("", "root", "0") or user.startswith(("root:", "0:")):
                problems.append(f"{f}: the final stage (line {no}) runs as root")
            if not entry or not entry.startswith("["):
                problems.append(f"{f}: the final stage has no exec-form ENTRYPOINT")
        print(f"{f}: {len(instructions)} instructions, stages {names}")
    for p in problems:
        print(f"FAIL: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


# ---- docker run ---------------------------------------------------------------------------------

def run(args):
    work = os.path.abspath(args.work)
    config = json.load(open(os.path.join(work, f"image-{args.stage}.json")))
    entry = [args.entrypoint] if args.entrypoint is not None else (config["entrypoint"] or [])
    cmd = args.args if (args.args or args.entrypoint is not None) else (config["cmd"] or [])
    argv = entry + cmd
    if not argv:
        raise BuildError("nothing to run: no ENTRYPOINT/CMD and no arguments")
    env = dict(config["env"])
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    binds = []
    for v in args.volume:
        host, _, ctr = v.partition(":")
        binds.append((os.path.abspath(host), ctr))
    # A container layer: an overlay on the stage's root, thrown away afterwards.
    scratch = tempfile.mkdtemp(prefix="container-", dir=work)
    upper, wdir, merged = (os.path.join(scratch, n) for n in ("upper", "work", "merged"))
    for p in (upper, wdir, merged):
        os.makedirs(p)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={config['root']},upperdir={upper},workdir={wdir}", merged], check=True)
    try:
        return run_in_root(merged, argv, env, args.user or config["user"], config["workdir"], binds,
                           check=False, tmpfs_tmp=True)
    finally:
        subprocess.run(["umount", "-l", merged])
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build")
    b.add_argument("--file", required=True)
    b.add_argument("--context", default=".")
    b.add_argument("--work", required=True)
    b.add_argument("--target")
    b.add_argument("--build-arg", action="append", default=[])
    b.add_argument("--mirror", default="http://deb.debian.org/debian")
    b.add_argument("--layer-cache", action="store_true", help="snapshot long RUN steps, reuse them")
    li = sub.add_parser("lint")
    li.add_argument("--context", default=".")
    li.add_argument("file", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--stage", default="runtime")
    r.add_argument("--entrypoint")
    r.add_argument("--user")
    r.add_argument("-v", "--volume", action="append", default=[])
    r.add_argument("-e", "--env", action="append", default=[])
    r.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.what == "run" and a.args and a.args[0] == "--":
        a.args = a.args[1:]
    try:
        return {"build": build, "run": run, "lint": lint}[a.what](a)
    except BuildError as e:
        print(f"chroot-build: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
