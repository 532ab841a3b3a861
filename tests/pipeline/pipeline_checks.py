"""Checks a compiled Kubeflow Pipelines v2 pipeline (the YAML the KFP compiler writes).

    errors = pipeline_checks.check_text(yaml_text, messages)   # [] when valid

1. Messages (strict): the first YAML document parses into ml_pipelines.PipelineSpec with
   json_format.ParseDict(..., ignore_unknown_fields=False): every field name, enum value
   (parameterType) and value type as pipeline_spec.proto declares; deploymentSpec (a Struct in
   PipelineSpec) parses into PipelineDeploymentConfig the same way; a second document, if any, into
   PlatformSpec. More documents are an error.
2. References the messages cannot check:
   - every task's componentRef names a component; every component is used; every executorLabel
     names an executor and every executor is used; dependentTasks name tasks of the same DAG
   - a task's input names an input of its component, and every required input (no default, not
     optional) is given; componentInputParameter names an input of the enclosing component (root or
     sub-DAG) of the same parameterType; a constant's type fits the input's parameterType, and a
     placeholder inside a constant names another input of the same task
   - defaults fit their parameterType (NUMBER_INTEGER: a whole number, STRUCT: a map, ...)
   - a taskOutputParameter names a task of the same DAG that the consumer lists in dependentTasks,
     and an output parameter of its component of the consumer's input type
   - in an executor's command and args, {{$.inputs.parameters['x']}} names a parameter input of its
     component, {{$.outputs.artifacts['y'].path}} an artifact output,
     {{$.outputs.parameters['z'].output_file}} an output parameter, {"IfPresent": ...} an optional
     input (its Then/Else checked the same way); no other {{$...}} placeholder is accepted
   - triggerPolicy.condition parses (kfp_cel: a single == or != over
     inputs.parameter_values['...'] and literals) and reads only inputs that the task passes to its
     component and that the component declares, compared with a literal of the input's type
"""
import json
import re

import yaml

import kfp_cel

TYPE_CHECK = {
    "STRING": lambda v: isinstance(v, str),
    "NUMBER_INTEGER": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer(),
    "NUMBER_DOUBLE": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "BOOLEAN": lambda v: isinstance(v, bool),
    "STRUCT": lambda v: isinstance(v, dict),
    "LIST": lambda v: isinstance(v, list),
}
PLACEHOLDER = re.compile(r"\{\{\$[^}]*\}\}")
IN_PARAM = re.compile(r"^\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}$")
OUT_ARTIFACT_PATH = re.compile(r"^\{\{\$\.outputs\.artifacts\['([^']+)'\]\.path\}\}$")
OUT_PARAMETER_FILE = re.compile(r"^\{\{\$\.outputs\.parameters\['([^']+)'\]\.output_file\}\}$")


def load_documents(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def check_messages(docs, msgs, errors):
    from google.protobuf import json_format
    if not docs:
        errors.append("no YAML document: expected a PipelineSpec")
        return
    if len(docs) > 2:
        errors.append(f"{len(docs)} YAML documents: expected a PipelineSpec and at most a PlatformSpec")
    for i, (doc, cls, what) in enumerate([(docs[0], msgs.PipelineSpec, "PipelineSpec")]
                                         + ([(docs[1], msgs.PlatformSpec, "PlatformSpec")] if len(docs) > 1 else [])):
        if not isinstance(doc, dict):
            errors.append(f"document {i + 1}: not a mapping")
            continue
        try:
            _parse(cls, doc)
        except json_format.ParseError as e:
            errors.append(f"document {i + 1} is not a valid {what}: {e}")
    dep = docs[0].get("deploymentSpec") if isinstance(docs[0], dict) else None
    if dep is not None:
        try:
            _parse(msgs.PipelineDeploymentConfig, dep)
        except json_format.ParseError as e:
            errors.append(f"deploymentSpec is not a valid PipelineDeploymentConfig: {e}")


def _parse(cls, doc):
    from google.protobuf import json_format
    msg = cls()
    json_format.ParseDict(doc, msg, ignore_unknown_fields=False)
    return msg


def _fits(ptype, value):
    check = TYPE_CHECK.get(ptype)
    return check is not None and check(value)


def _placeholders_in(value):
    if isinstance(value, str):
        return PLACEHOLDER.findall(value)
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _placeholders_in(k) + _placeholders_in(v)]
    if isinstance(value, list):
        return [p for v in value for p in _placeholders_in(v)]
    return []


def check_definitions(where, inputs, errors):
    for name, p in ((inputs or {}).get("parameters") or {}).items():
        if "defaultValue" in p and not _fits(p.get("parameterType"), p["defaultValue"]):
            errors.append(f"{where}: input {name}: default {p['defaultValue']!r} is not a {p.get('parameterType')}")


def check_dag(where, dag, enclosing_inputs, components, errors, used_components):
    tasks = dag.get("tasks") or {}
    params_of_parent = (enclosing_inputs or {}).get("parameters") or {}
    for tname, task in tasks.items():
        tw = f"{where}.tasks.{tname}"
        ref = (task.get("componentRef") or {}).get("name")
        comp = components.get(ref)
        if comp is None:
            errors.append(f"{tw}: componentRef {ref!r} names no component (known: {', '.join(sorted(components))})")
            continue
        used_components.add(ref)
        for dep in task.get("dependentTasks") or []:
            if dep not in tasks:
                errors.append(f"{tw}: dependentTasks names {dep!r}, not a task of this DAG")
        declared = ((comp.get("inputDefinitions") or {}).get("parameters")) or {}
        given = ((task.get("inputs") or {}).get("parameters")) or {}
        # The compiler injects pipelinechannel--<x> inputs for the placeholders in a task's constants
        # (f-strings, dicts, lists): they are task inputs its component does not declare.
        in_constants = {m.group(1) for spec in given.values() if "runtimeValue" in spec
                        for ph in _placeholders_in((spec["runtimeValue"] or {}).get("constant"))
                        for m in [IN_PARAM.match(ph)] if m}
        for iname, spec in given.items():
            if iname not in declared:
                if not (iname.startswith("pipelinechannel--") and iname in in_constants):
                    errors.append(f"{tw}: input {iname!r} is not an input of {ref}"
                                  + (" (nor used by a placeholder in a constant)" if iname.startswith("pipelinechannel--") else ""))
                    continue
                if "componentInputParameter" not in spec and "taskOutputParameter" not in spec:
                    errors.append(f"{tw}: injected input {iname} must come from the enclosing DAG or a task")
                elif spec.get("componentInputParameter") is not None and spec["componentInputParameter"] not in params_of_parent:
                    errors.append(f"{tw}: input {iname}: componentInputParameter {spec['componentInputParameter']!r} "
                                  f"is not an input of {where}")
                continue
            ptype = declared[iname].get("parameterType")
            if "componentInputParameter" in spec:
                src = spec["componentInputParameter"]
                if src not in params_of_parent:
                    errors.append(f"{tw}: input {iname}: componentInputParameter {src!r} is not an input of {where}")
                elif params_of_parent[src].get("parameterType") != ptype:
                    errors.append(f"{tw}: input {iname} is {ptype} but {where}'s {src} is "
                                  f"{params_of_parent[src].get('parameterType')}")
            elif "taskOutputParameter" in spec:
                ref = spec["taskOutputParameter"] or {}
                producer, key = ref.get("producerTask"), ref.get("outputParameterKey")
                pcomp = components.get(((tasks.get(producer) or {}).get("componentRef") or {}).get("name"), {})
                outs = ((pcomp.get("outputDefinitions") or {}).get("parameters")) or {}
                if producer not in tasks:
                    errors.append(f"{tw}: input {iname}: producerTask {producer!r} is not a task of {where}")
                elif producer not in (task.get("dependentTasks") or []):
                    errors.append(f"{tw}: input {iname} reads {producer!r}, which dependentTasks does not list")
                elif key not in outs:
                    errors.append(f"{tw}: input {iname}: {producer} has no output parameter {key!r}")
                elif outs[key].get("parameterType") != ptype:
                    errors.append(f"{tw}: input {iname} is {ptype} but {producer}'s {key} is "
                                  f"{outs[key].get('parameterType')}")
            elif "runtimeValue" in spec:
                value = (spec["runtimeValue"] or {}).get("constant")
                if not _fits(ptype, value):
                    errors.append(f"{tw}: input {iname}: constant {value!r} is not a {ptype}")
                for ph in _placeholders_in(value):
                    m = IN_PARAM.match(ph)
                    if not m:
                        errors.append(f"{tw}: input {iname}: placeholder {ph} in a constant is not an input parameter")
                    elif m.group(1) not in given:
                        errors.append(f"{tw}: input {iname}: placeholder {ph} names no input of this task")
        for iname, d in declared.items():
            if iname not in given and not d.get("isOptional") and "defaultValue" not in d:
                errors.append(f"{tw}: required input {iname} of {ref} is not given")
        cond = (task.get("triggerPolicy") or {}).get("condition")
        if cond is not None:
            try:
                ast = kfp_cel.parse(cond)
            except kfp_cel.CelError as e:
                errors.append(f"{tw}: triggerPolicy.condition: {e}")
            else:
                for pname in kfp_cel.parameters(ast):
                    if pname not in given:
                        errors.append(f"{tw}: triggerPolicy.condition reads {pname!r}, which the task does not pass")
                    elif pname not in declared:
                        errors.append(f"{tw}: triggerPolicy.condition reads {pname!r}, which {ref} does not declare")
                    else:
                        ptype = declared[pname].get("parameterType")
                        for o in ast[1:]:
                            if o[0] == "lit" and not _fits(ptype, o[1]):
                                errors.append(f"{tw}: triggerPolicy.condition compares {ptype} {pname} with {o[1]!r}")


def check_executor_args(where, container, comp, errors):
    params = ((comp.get("inputDefinitions") or {}).get("parameters")) or {}
    outs = ((comp.get("outputDefinitions") or {}).get("artifacts")) or {}
    out_params = ((comp.get("outputDefinitions") or {}).get("parameters")) or {}

    def one(arg, aw):
        if not isinstance(arg, str):
            errors.append(f"{aw}: not a string")
            return
        if arg.lstrip().startswith('{"IfPresent"'):
            try:
                cond = json.loads(arg)["IfPresent"]
                name = cond["InputName"]
            except (ValueError, KeyError, TypeError) as e:
                errors.append(f"{aw}: a malformed IfPresent placeholder ({e})")
                return
            if name not in params:
                errors.append(f"{aw}: IfPresent names {name!r}, not an input of the component")
            elif not params[name].get("isOptional"):
                errors.append(f"{aw}: IfPresent on {name!r}, which is not optional")
            for branch in ("Then", "Else"):
                items = cond.get(branch, [])
                for j, a in enumerate(items if isinstance(items, list) else [items]):
                    one(a, f"{aw}.IfPresent.{branch}[{j}]")
            return
        for ph in PLACEHOLDER.findall(arg):
            m = IN_PARAM.match(ph)
            if m:
                if m.group(1) not in params:
                    errors.append(f"{aw}: placeholder {ph} names no input parameter of the component")
                continue
            m = OUT_ARTIFACT_PATH.match(ph)
            if m:
                if m.group(1) not in outs:
                    errors.append(f"{aw}: placeholder {ph} names no output artifact of the component")
                continue
            m = OUT_PARAMETER_FILE.match(ph)
            if m:
                if m.group(1) not in out_params:
                    errors.append(f"{aw}: placeholder {ph} names no output parameter of the component")
                continue
            errors.append(f"{aw}: placeholder {ph} is not one this check knows")
    for field in ("command", "args"):
        for i, a in enumerate(container.get(field) or []):
            one(a, f"{where}.{field}[{i}]")


def check_references(spec, errors):
    components = spec.get("components") or {}
    executors = ((spec.get("deploymentSpec") or {}).get("executors")) or {}
    used_components, used_executors = set(), set()
    root = spec.get("root") or {}
    check_definitions("root", root.get("inputDefinitions"), errors)
    check_dag("root", root.get("dag") or {}, root.get("inputDefinitions"), components, errors, used_components)
    for name, comp in components.items():
        check_definitions(name, comp.get("inputDefinitions"), errors)
        if "dag" in comp:
            check_dag(name, comp["dag"], comp.get("inputDefinitions"), components, errors, used_components)
        label = comp.get("executorLabel")
        if label is not None:
            ex = executors.get(label)
            if ex is None:
                errors.append(f"{name}: executorLabel {label!r} names no executor (known: {', '.join(sorted(executors))})")
                continue
            used_executors.add(label)
            if "container" in ex:
                check_executor_args(f"deploymentSpec.executors.{label}.container", ex["container"], comp, errors)
    for name in sorted(set(components) - used_components):
        errors.append(f"component {name} is not used by any task")
    for name in sorted(set(executors) - used_executors):
        errors.append(f"executor {name} is not used by any component")


def check_text(text, msgs):
    errors = []
    try:
        docs = load_documents(text)
    except yaml.YAMLError as e:
        return [f"not YAML: {e}"]
    check_messages(docs, msgs, errors)
    if docs and isinstance(docs[0], dict):
        check_references(docs[0], errors)
    return errors
