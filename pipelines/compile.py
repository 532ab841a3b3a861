#!/usr/bin/python3
"""Compiles the hybrid pipeline (hybrid_training.py + components.py) into a Kubeflow Pipelines v2
pipeline spec, laid out as the KFP v2 SDK compiler lays out the same pipeline (kfp 2.x,
`compiler.Compiler().compile`), without the SDK (no PyPI here; python3-yaml only):

  components:   comp-condition-<i> (a sub-DAG per branch), comp-<component> (executorLabel
                exec-<component>, inputDefinitions from the v1 inputs: String STRING, Integer
                NUMBER_INTEGER, Float NUMBER_DOUBLE, Bool/Boolean BOOLEAN, JsonObject STRUCT,
                JsonArray LIST; a default makes the input optional; untyped outputs are
                system.Artifact outputs, typed output parameters outputDefinitions.parameters)
  deploymentSpec.executors.exec-<component>.container: image, command, args with
                {{$.inputs.parameters['x']}}, {{$.outputs.artifacts['y'].path}} and
                {{$.outputs.parameters['z'].output_file}} placeholders; an inline program's text
  root:         the pipeline's parameters (defaults, optional) and one task per branch,
                condition-<i>, with triggerPolicy.condition a CEL expression such as
                inputs.parameter_values['pipelinechannel--training_runtime'] == 'kubernetes'
  A parameter used by a task inside a branch reaches it as the sub-DAG input
  pipelinechannel--<name>; a task's input from another task's output is a taskOutputParameter, and
  the consumer lists its producer in dependentTasks.

What every released backend (KFP 2.0 through 2.17) runs, compile.py enforces, refusing (exit 2):
  - an IfPresent argument (no backend before 2.17.0 resolves it),
  - a pipeline parameter inside a constant (f-string, dict, list: backends up to 2.16 fill a nested
    placeholder only when Go's map order favours it; compose such values in a step),
  - a task that leaves an input of its component out (2.17.0's driver fills the command line before
    the launcher adds defaults),
  - an inline program that is not Python 3.6 or that holds "{{$" (the backend would fill it).

  compile.py [--output pipelines/hybrid-training.yaml]    writes the spec
  compile.py --check                                       exit 1 if the committed file differs
"""
import argparse
import ast
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hybrid_training  # noqa: E402

OUTPUT = os.path.join(HERE, "hybrid-training.yaml")
SCHEMA_VERSION = "2.1.0"
SDK_VERSION = "ddp-pipelines-compile-1"   # not the KFP SDK: this script (informational field)

V1_TYPES = {"String": "STRING", "Integer": "NUMBER_INTEGER", "Float": "NUMBER_DOUBLE", "Bool": "BOOLEAN",
            "Boolean": "BOOLEAN", "JsonObject": "STRUCT", "JsonArray": "LIST"}
PY_TYPES = {str: "STRING", int: "NUMBER_INTEGER", float: "NUMBER_DOUBLE", bool: "BOOLEAN"}
PY_NAMES = {str: "str", int: "int", float: "float", bool: "bool"}
CHANNEL = re.compile(r"\{\{channel:([A-Za-z_][A-Za-z0-9_]*)\}\}")


def sanitize(name):
    """KFP's sanitize_component_name without the prefix: lower case, runs of other characters -> '-'."""
    return re.sub(r"-+", "-", re.sub(r"[^-0-9a-z]+", "-", name.lower())).strip("-")


def channel_input(name):
    return f"pipelinechannel--{name}"


def param_placeholder(name):
    return "{{$.inputs.parameters['" + name + "']}}"


def v1_default(v1_type, text):
    """A v1 default (always text in component.yaml) as the v2 compiler stores it."""
    if v1_type in ("Integer", "Float"):
        return float(text)
    if v1_type in ("Bool", "Boolean"):
        if text not in ("True", "False", "true", "false"):
            raise ValueError(f"bad boolean default {text!r}")
        return text in ("True", "true")
    if v1_type in ("JsonObject", "JsonArray"):
        return json.loads(text)
    return text


def component_spec(comp, label):
    params = {}
    for name, v1_type, default, optional in comp["inputs"]:
        p = {"parameterType": V1_TYPES[v1_type]}
        if default is not None:
            p["defaultValue"] = v1_default(v1_type, default)
            p["isOptional"] = True
        elif optional:
            p["isOptional"] = True
        params[name] = p
    spec = {"executorLabel": label, "inputDefinitions": {"parameters": params}}
    outputs = {}
    if comp["outputs"]:
        outputs["artifacts"] = {
            o: {"artifactType": {"schemaTitle": "system.Artifact", "schemaVersion": "0.0.1"}} for o in comp["outputs"]}
    if comp.get("output_parameters"):
        outputs["parameters"] = {o: {"parameterType": V1_TYPES[t]} for o, t in comp["output_parameters"]}
    if outputs:
        spec["outputDefinitions"] = outputs
    return spec


def inline_program(name):
    """An inline program's text (a file of this folder), checked as the backends will run it."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        text = f.read()
    if "{{$" in text:
        raise ValueError(f"{name} holds '{{{{$': the backend would take it for a placeholder")
    try:
        ast.parse(text, filename=name, feature_version=(3, 6))
    except SyntaxError as e:
        raise ValueError(f"{name} is not Python 3.6 (the launcher image's): {e}") from None
    return text


def render_arg(arg):
    if isinstance(arg, str):
        return arg
    kind = arg[0]
    if kind == "value":
        return param_placeholder(arg[1])
    if kind == "output_path":
        return "{{$.outputs.artifacts['" + arg[1] + "'].path}}"
    if kind == "output_file":
        return "{{$.outputs.parameters['" + arg[1] + "'].output_file}}"
    if kind == "program":
        return inline_program(arg[1])
    if kind == "if_present":
        raise ValueError(f"an IfPresent argument on {arg[1]!r}: no KFP backend before 2.17.0 resolves it "
                         "(pass the input always, or drop it)")
    raise ValueError(f"unknown argument form {arg!r}")


def executor(comp):
    return {"container": {"image": comp["image"], "command": [render_arg(a) for a in comp["command"]],
                          "args": [render_arg(a) for a in comp["args"]]}}


def channels_in(value, found):
    """Names of the parameters a constant uses, in order of first use."""
    if isinstance(value, str):
        for m in CHANNEL.finditer(value):
            if m.group(1) not in found:
                found.append(m.group(1))
    elif isinstance(value, dict):
        for k, v in value.items():
            channels_in(k, found)
            channels_in(v, found)
    elif isinstance(value, list):
        for v in value:
            channels_in(v, found)
    return found


def constant(value):
    """A Python constant as a protobuf Value holds it: every number is a double (1 -> 1.0)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: constant(v) for k, v in value.items()}
    if isinstance(value, list):
        return [constant(v) for v in value]
    return value


def task_inputs(comp, arguments, param_types, producers):
    """The task's inputs.parameters, the pipeline parameters it uses and the tasks it depends on.
    producers: {id(component): task name} of the tasks before it in its branch."""
    declared = {name for name, _, _, _ in comp["inputs"]}
    for name in sorted(declared - set(arguments)):
        raise ValueError(f"{comp['name']}: input {name} is not passed (every input of every task is: KFP 2.17.0's "
                         "driver fills the command line before the launcher adds defaults)")
    inputs, used, deps = {}, [], []
    for name, value in arguments.items():
        if name not in declared:
            raise ValueError(f"{comp['name']}: no input named {name}")
        if isinstance(value, hybrid_training.P):
            if value.name not in param_types:
                raise ValueError(f"{comp['name']}.{name}: unknown pipeline parameter {value.name}")
            inputs[name] = {"componentInputParameter": channel_input(value.name)}
            if value.name not in used:
                used.append(value.name)
            continue
        if isinstance(value, hybrid_training.Out):
            producer = producers.get(id(value.component))
            outs = dict(value.component.get("output_parameters") or [])
            if producer is None or value.output not in outs:
                raise ValueError(f"{comp['name']}.{name}: no earlier task in the branch has output {value.output}")
            inputs[name] = {"taskOutputParameter": {"outputParameterKey": value.output, "producerTask": producer}}
            if producer not in deps:
                deps.append(producer)
            continue
        nested = channels_in(value, [])
        if nested:
            raise ValueError(f"{comp['name']}.{name}: pipeline parameter {nested[0]} inside a constant (backends up to "
                             "2.16 fill such a nested placeholder only when Go's map order favours it): compose the "
                             "value in a step or pass the parameter whole")
        inputs[name] = {"runtimeValue": {"constant": constant(value)}}
    return inputs, used, sorted(deps)


def cel_literal(value):
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def build():
    pl = hybrid_training
    param_types = {name: PY_TYPES[t] for name, t, _, _ in pl.PARAMETERS}
    components, executors, root_tasks = {}, {}, {}
    for i, branch in enumerate(pl.BRANCHES, start=1):
        dag_tasks, used_all, producers = {}, [], {}
        for comp, arguments in branch["tasks"]:
            task_name = sanitize(comp["name"])
            comp_key, exec_key = f"comp-{task_name}", f"exec-{task_name}"
            if comp_key in components:
                raise ValueError(f"component {comp['name']} used twice: the KFP compiler would number it")
            components[comp_key] = component_spec(comp, exec_key)
            executors[exec_key] = executor(comp)
            inputs, used, deps = task_inputs(comp, arguments, param_types, producers)
            task = {"cachingOptions": {}, "componentRef": {"name": comp_key},
                    "inputs": {"parameters": inputs}, "taskInfo": {"name": task_name}}
            if deps:
                task["dependentTasks"] = deps
            dag_tasks[task_name] = task
            producers[id(comp)] = task_name
            used_all += [u for u in used if u not in used_all]
        cond_param, op, literal = branch["condition"]
        if op not in ("==", "!="):
            raise ValueError(f"condition operator {op!r}: only == and != are compiled")
        dag_params = sorted(set(used_all) | {cond_param})
        group = f"condition-{i}"
        components[f"comp-{group}"] = {
            "dag": {"tasks": dag_tasks},
            "inputDefinitions": {"parameters": {
                channel_input(n): {"parameterType": param_types[n]} for n in dag_params}}}
        root_tasks[group] = {
            "componentRef": {"name": f"comp-{group}"},
            "inputs": {"parameters": {channel_input(n): {"componentInputParameter": n} for n in dag_params}},
            "taskInfo": {"name": branch.get("display_name") or group},
            "triggerPolicy": {"condition": f"inputs.parameter_values['{channel_input(cond_param)}'] {op} "
                                           f"{cel_literal(literal)}"}}
    root_params = {}
    for name, t, default, description in pl.PARAMETERS:
        root_params[name] = {"defaultValue": constant(default), "description": description, "isOptional": True,
                             "parameterType": PY_TYPES[t]}
    return {
        "components": components,
        "deploymentSpec": {"executors": executors},
        "pipelineInfo": {"description": pl.DESCRIPTION, "name": pl.NAME},
        "root": {"dag": {"tasks": root_tasks}, "inputDefinitions": {"parameters": root_params}},
        "schemaVersion": SCHEMA_VERSION,
        "sdkVersion": SDK_VERSION,
    }


def header():
    """The comment block the KFP compiler writes first."""
    pl = hybrid_training
    lines = ["# PIPELINE DEFINITION", f"# Name: {pl.NAME}", f"# Description: {pl.DESCRIPTION}", "# Inputs:"]
    for name, t, default, _ in sorted(pl.PARAMETERS):
        shown = repr(float(default)) if t is int else repr(default)
        lines.append(f"#    {name}: {PY_NAMES[t]} [Default: {shown}]")
    lines.append("# Generated by pipelines/compile.py from pipelines/hybrid_training.py and components.py: edit those.")
    return "\n".join(lines) + "\n"


def render():
    return header() + yaml.safe_dump(build(), sort_keys=True, default_flow_style=False, width=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", default=OUTPUT)
    ap.add_argument("--check", action="store_true", help="compare with --output instead of writing it")
    args = ap.parse_args()
    try:
        text = render()
    except ValueError as e:
        print(f"compile.py: {e}", file=sys.stderr)
        return 2
    if args.check:
        try:
            old = open(args.output, encoding="utf-8").read()
        except OSError as e:
            print(f"compile.py: cannot read {args.output}: {e}", file=sys.stderr)
            return 1
        if old != text:
            print(f"{args.output} is not what compile.py writes from the sources: run pipelines/compile.py")
            return 1
        print(f"{args.output}: up to date")
        return 0
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
