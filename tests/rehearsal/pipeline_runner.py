#!/usr/bin/python3
"""Runs a compiled Kubeflow Pipelines v2 spec as a released KFP backend would (kfp_backend.py: the
driver's and launcher's rules of 2.0.5, 2.5.0, 2.16.0 or 2.17.0), far enough to say which container
tasks run, with which command lines, and what the components we use would then ask of Kubernetes or
SageMaker (kfp_components.py).

    spec = pipeline_runner.load("pipelines/hybrid-training.yaml")
    backend = kfp_backend.Backend("2.17")
    values = backend.root_inputs(spec, {"training_runtime": "sagemaker", "epochs": 1})
    for run in pipeline_runner.plan(spec, values, backend, out_dir):   # tasks whose conditions hold
        run.argv                                  # the command line the container gets
        run.outputs                               # the output parameters it wrote (inline programs)
    job, settings = kfp_components.launch_pytorchjob(run.argv)

A task that the backend or its program would fail raises kfp_backend.KfpError naming the stage
("driver", "launcher", the program) and, for a program, its exit code.

The DAG walk (driver/dag.go and container.go, argocompiler/dag.go): tasks run in dependency order
(dependentTasks plus one dependency per taskOutputParameter, as Argo's compiler adds them), ties by
name; a triggerPolicy.condition (tests/pipeline/kfp_cel.py: a single == or !=) is evaluated over the
task's inputs and a false one skips the task and everything under it; a DAG task's inputs become the
sub-DAG's values. A container task whose command is `python -c PROGRAM` / `python3 -c PROGRAM` (an
inline program, like the SDK's lightweight components) is run here with this machine's python3, its
output parameters read back as the launcher reads them; other programs are not run (they need a
cluster or AWS): kfp_components.py plays them from their command lines.
Not played: artifacts passed between tasks, loops, exit handlers, caching, retries.

  pipeline_runner.py SPEC [--kfp-version 2.17] [--param name=value ...] [--map-seed N]
      plans every training_runtime (or the one given with --param) and prints, per run, the command
      lines and what the components ask for, or the error the backend ends with; exit 1 on any error.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "pipeline"))
import kfp_backend  # noqa: E402
import kfp_cel  # noqa: E402
import kfp_components  # noqa: E402
from kfp_backend import KfpError, PipelineError  # noqa: E402,F401  (re-exported for callers)

INLINE_PYTHON = (["python", "-c"], ["python3", "-c"])
INLINE_TIMEOUT = 60


def load(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs or not isinstance(docs[0], dict) or "root" not in docs[0]:
        raise PipelineError(f"{path}: no PipelineSpec")
    return docs[0]


class ContainerRun:
    """A container task that runs: where it is, its component, inputs and command line."""
    def __init__(self, path, component_name, component, container, inputs, argv, output_files):
        self.path, self.component_name, self.component = path, component_name, component
        self.container, self.inputs, self.argv = container, inputs, argv
        self.image = container.get("image", "")
        self.output_files = output_files
        self.outputs = {}

    @property
    def inline(self):
        return (self.container.get("command") or [])[:2] in INLINE_PYTHON


def _order(tasks, where):
    """Task names in the order Argo runs them: after every task they depend on, ties by name."""
    deps = {}
    for name, t in tasks.items():
        d = set(t.get("dependentTasks") or [])
        for spec in (((t.get("inputs") or {}).get("parameters")) or {}).values():
            if "taskOutputParameter" in spec:
                d.add(spec["taskOutputParameter"].get("producerTask"))
        for producer in d:
            if producer not in tasks:
                raise PipelineError(f"{where}/{name}: failed to add implicit deps: unknown producer task {producer!r} in DAG")
        deps[name] = d
    done, order = set(), []
    while len(order) < len(tasks):
        ready = sorted(n for n in tasks if n not in done and deps[n] <= done)
        if not ready:
            raise PipelineError(f"{where}: the tasks {sorted(set(tasks) - done)} depend on each other")
        order.append(ready[0])
        done.add(ready[0])
    return order


def run_inline(run):
    """Runs an inline Python program as its container would; its output files become run.outputs."""
    argv = [sys.executable] + run.argv[1:]
    for path in run.output_files.values():
        os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=INLINE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise KfpError(run.path, f"the inline program ran past {INLINE_TIMEOUT} s", 137) from None
    if p.returncode != 0:
        raise KfpError(run.path, f"exit code {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}", p.returncode)
    return p


def plan(spec, values, backend, out_dir, log=None):
    """The container tasks that run, in the order they run; inline programs are run on the way.
    log (a list) gets one line per condition."""
    components = spec.get("components") or {}
    executors = ((spec.get("deploymentSpec") or {}).get("executors")) or {}
    runs = []

    def walk(dag, dag_values, path):
        tasks = dag.get("tasks") or {}
        produced = {}
        for name in _order(tasks, path):
            task, where = tasks[name], f"{path}/{name}"
            ref = (task.get("componentRef") or {}).get("name")
            if ref not in components:
                raise PipelineError(f"{where}: componentRef {ref!r} names no component")
            comp = components[ref]
            inputs = backend.task_inputs(task, comp, dag_values, produced, where)
            cond = (task.get("triggerPolicy") or {}).get("condition")
            if cond is not None:
                try:
                    holds = kfp_cel.evaluate(kfp_cel.parse(cond), inputs)
                except kfp_cel.CelError as e:
                    raise PipelineError(f"{where}: triggerPolicy.condition: {e}") from None
                if log is not None:
                    log.append(f"{where}: {cond} -> {'true: runs' if holds else 'false: skipped'}")
                if not holds:
                    continue
            if "dag" in comp:
                walk(comp["dag"], inputs, where)
                continue
            label = comp.get("executorLabel")
            ex = executors.get(label)
            if ex is None or "container" not in ex:
                raise PipelineError(f"{where}: executor {label!r} is not a container executor of the spec")
            outs = list((((comp.get("outputDefinitions") or {}).get("parameters")) or {})) + \
                list((((comp.get("outputDefinitions") or {}).get("artifacts")) or {}))
            files = {o: os.path.join(out_dir, where.replace("/", "_"), o) for o in outs}
            argv = backend.command_line(ex["container"], comp, inputs, files, where)
            run = ContainerRun(where, ref, comp, ex["container"], inputs, argv, files)
            if run.inline:
                run.process = run_inline(run)
                run.outputs = backend.collect_outputs(comp, files, where)
            produced[name] = run.outputs
            runs.append(run)
    walk(spec["root"].get("dag") or {}, values, "root")
    return runs


def describe(run):
    """What a run asks for, as text: its program's request, or its outputs."""
    if run.inline:
        return "outputs " + json.dumps(run.outputs, sort_keys=True)[:400]
    if run.image == kfp_components.LAUNCHER_IMAGE:
        job, settings = kfp_components.launch_pytorchjob(run.argv)
        rs = job["spec"]["pytorchReplicaSpecs"]
        return (f"creates PyTorchJob {job['metadata']['namespace']}/{job['metadata']['name']}: "
                + ", ".join(f"{k} {v.get('replicas')}" for k, v in rs.items()) + f"; {settings}")
    if run.image.startswith(kfp_components.SAGEMAKER_IMAGE_PREFIX):
        r = kfp_components.sagemaker_training(run.argv)
        return (f"CreateTrainingJob {r['TrainingJobName']}: {r['ResourceConfig']['InstanceCount']} x "
                f"{r['ResourceConfig']['InstanceType']}, hyperparameters {json.dumps(r['HyperParameters'])}, "
                f"channels {json.dumps(r['InputDataConfig'])}")
    return "(not played)"


def _param(text):
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=value")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("--kfp-version", default="2.16", choices=kfp_backend.VERSIONS)
    ap.add_argument("--param", type=_param, action="append", default=[],
                    help="a pipeline parameter, name=value (value as JSON when it parses)")
    ap.add_argument("--map-seed", type=int, help="play one Go map order instead of refusing order-dependent results")
    args = ap.parse_args()
    backend = kfp_backend.Backend(args.kfp_version, args.map_seed)
    spec = load(args.spec)
    params = dict(args.param)
    runtimes = [params["training_runtime"]] if "training_runtime" in params else ["kubernetes", "sagemaker"]
    failed = False
    print(f"{args.spec} on {backend}")
    for runtime in runtimes:
        print(f"== training_runtime={runtime}")
        try:
            values = backend.root_inputs(spec, dict(params, training_runtime=runtime))
            with tempfile.TemporaryDirectory(prefix="kfp-outputs-") as out:
                for run in plan(spec, values, backend, out):
                    shown = run.argv[:2] + ["<program>"] + run.argv[3:] if run.inline else run.argv
                    print(f"  {run.path}: {' '.join(shown)[:300]}")
                    print(f"    -> {describe(run)}")
        except KfpError as e:
            failed = True
            print(f"  FAILS: {e}" + (f" (exit {e.exit_code})" if e.exit_code is not None else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
