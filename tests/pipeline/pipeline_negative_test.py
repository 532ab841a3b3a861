#!/usr/bin/python3
"""Planted mistakes in the compiled hybrid pipeline, each of which validate_pipeline.py must report:
the check is only worth something if it fails on what it claims to catch.

Each case edits a copy of pipelines/hybrid-training.yaml (as data, then dumped back to YAML) and
expects an error containing a given text; the unedited file must give no error. Exit 0 when every
case is reported, 1 otherwise; 77 without protoc / python3-protobuf (tests/support/ci.py).
"""
import copy
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import ci  # noqa: E402
import pipeline_checks  # noqa: E402
import proto_messages  # noqa: E402
import validate_pipeline  # noqa: E402

K8S_TASK = ["components", "comp-condition-1", "dag", "tasks", "pytorch-operator-training-job"]
SM_TASK = ["components", "comp-condition-2", "dag", "tasks", "sagemaker-training-job"]
SM_COMPOSE = "compose-sagemaker-inputs"
ROOT_TASK = ["root", "dag", "tasks", "condition-1"]


def at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def setter(path, key, value):
    def edit(doc):
        at(doc, path)[key] = value
    return edit


def renamer(path, old, new):
    def edit(doc):
        d = at(doc, path)
        d[new] = d.pop(old)
    return edit


def arg_append(executor, new):
    def edit(doc):
        doc["deploymentSpec"]["executors"][executor]["container"]["args"].append(new)
    return edit


def arg_edit(executor, old, new):
    def edit(doc):
        args = doc["deploymentSpec"]["executors"][executor]["container"]["args"]
        args[args.index(old)] = new
    return edit


# (what is planted, the edit, a text the report must contain)
CASES = [
    ("an unknown field in a task (triggerPolicy.conditon)",
     renamer(ROOT_TASK + ["triggerPolicy"], "condition", "conditon"), "conditon"),
    ("an unknown top-level field", setter([], "pipelineInfos", {"name": "x"}), "pipelineInfos"),
    ("an unknown field in an executor's container (deploymentSpec is a Struct in PipelineSpec)",
     setter(["deploymentSpec", "executors", "exec-sagemaker-training-job", "container"], "imagePullPolicy", "Always"),
     "imagePullPolicy"),
    ("a misspelt componentRef", setter(SM_TASK + ["componentRef"], "name", "comp-sagemaker-trainig-job"),
     "'comp-sagemaker-trainig-job' names no component"),
    ("a misspelt executorLabel", setter(["components", "comp-pytorch-operator-training-job"], "executorLabel",
                                        "exec-pytorch-operator-trainig-job"), "names no executor"),
    ("a parameterType that does not exist",
     setter(["root", "inputDefinitions", "parameters", "epochs"], "parameterType", "NUMBER_INTEGR"), "NUMBER_INTEGR"),
    ("a wrong parameterType on a sub-DAG input (STRING for the root's NUMBER_INTEGER)",
     setter(["components", "comp-condition-2", "inputDefinitions", "parameters", "pipelinechannel--instance_count"],
            "parameterType", "STRING"), "is NUMBER_INTEGER but"),
    ("a default that does not fit its parameterType",
     setter(["root", "inputDefinitions", "parameters", "epochs"], "defaultValue", 2.5), "is not a NUMBER_INTEGER"),
    ("a constant that does not fit the input (a string for BOOLEAN delete_after_done)",
     setter(K8S_TASK + ["inputs", "parameters", "delete_after_done"], "runtimeValue", {"constant": "False"}),
     "is not a BOOLEAN"),
    ("a task input its component does not have", setter(SM_TASK + ["inputs", "parameters"], "instance_cout",
                                                        {"componentInputParameter": "pipelinechannel--instance_count"}),
     "'instance_cout' is not an input"),
    ("a required component input left out", lambda doc: at(doc, SM_TASK + ["inputs", "parameters"]).pop("role"),
     "required input role"),
    ("a componentInputParameter the enclosing DAG does not have",
     setter(SM_TASK + ["inputs", "parameters", "region"], "componentInputParameter", "pipelinechannel--regoin"),
     "'pipelinechannel--regoin' is not an input"),
    ("an executor placeholder naming no input", arg_edit("exec-pytorch-operator-training-job",
                                                        "{{$.inputs.parameters['master_spec']}}",
                                                        "{{$.inputs.parameters['master_specs']}}"),
     "names no input parameter"),
    ("an unknown placeholder kind", arg_edit("exec-sagemaker-training-job", "{{$.inputs.parameters['region']}}",
                                             "{{$.inputs.parameter['region']}}"), "is not one this check knows"),
    ("an IfPresent on an input that does not exist",
     arg_append("exec-pytorch-operator-training-job",
                '{"IfPresent": {"InputName": "backof_limit", "Then": ["--backoffLimit", '
                '"{{$.inputs.parameters[\'namespace\']}}"]}}'), "IfPresent names 'backof_limit'"),
    ("a placeholder in a constant naming no task input",
     setter(SM_TASK + ["inputs", "parameters", "algorithm_name"], "runtimeValue",
            {"constant": "{{$.inputs.parameters['pipelinechannel--bucket']}}"}), "names no input of this task"),
    ("a task output read without dependentTasks naming its producer",
     lambda doc: at(doc, SM_TASK).pop("dependentTasks"), "which dependentTasks does not list"),
    ("a task output its producer does not have",
     setter(SM_TASK + ["inputs", "parameters", "channels", "taskOutputParameter"], "outputParameterKey", "channel"),
     f"{SM_COMPOSE} has no output parameter 'channel'"),
    ("a task output of another type (STRUCT hyperparameters into LIST channels)",
     setter(SM_TASK + ["inputs", "parameters", "channels", "taskOutputParameter"], "outputParameterKey",
            "hyperparameters"), "is LIST but"),
    ("an output-file placeholder naming no output parameter",
     arg_edit("exec-compose-sagemaker-inputs", "{{$.outputs.parameters['channels'].output_file}}",
              "{{$.outputs.parameters['channel'].output_file}}"), "names no output parameter"),
    ("a condition reading an undeclared parameter",
     setter(ROOT_TASK + ["triggerPolicy"], "condition",
            "inputs.parameter_values['pipelinechannel--training_runtim'] == 'kubernetes'"), "training_runtim"),
    ("a condition outside the supported CEL", setter(ROOT_TASK + ["triggerPolicy"], "condition",
                                                     "inputs.parameter_values['pipelinechannel--training_runtime'] "
                                                     "== 'kubernetes' || true"), "unsupported syntax"),
    ("a condition comparing a STRING with a number",
     setter(ROOT_TASK + ["triggerPolicy"], "condition",
            "inputs.parameter_values['pipelinechannel--training_runtime'] == 1"), "compares STRING"),
    ("a component no task uses", setter(["components"], "comp-unused", {"executorLabel": "exec-sagemaker-training-job"}),
     "comp-unused is not used"),
    ("a third YAML document", None, "3 YAML documents"),
]


def main():
    why = proto_messages.missing()
    if why:
        return ci.skip(f"cannot generate the pipeline spec messages: no {why}")
    msgs = proto_messages.load()
    compiler = validate_pipeline.load_compiler(REPO)
    text = open(compiler.OUTPUT, encoding="utf-8").read()
    base = yaml.safe_load(text)
    failed = 0
    clean = pipeline_checks.check_text(text, msgs)
    if clean:
        print(f"FAIL: the committed pipeline is not valid to begin with: {clean}")
        return 1
    for what, edit, expected in CASES:
        if edit is None:
            bad = text + "---\n{}\n---\nplatforms: {}\n"
        else:
            doc = copy.deepcopy(base)
            edit(doc)
            bad = yaml.safe_dump(doc, sort_keys=True)
        errors = pipeline_checks.check_text(bad, msgs)
        hit = [e for e in errors if expected in e]
        if hit:
            print(f"ok   {what}: {hit[0]}")
        else:
            failed += 1
            print(f"FAIL {what}: no error containing {expected!r}; got {errors}")
    edited = text.replace("'0.5'", "'0.6'", 1)   # a hand edit: --momentum in the master's args
    errors = validate_pipeline.validate(edited, msgs, compiler.render())
    hit = [e for e in errors if "differs from what pipelines/compile.py writes" in e]
    if edited != text and hit:
        print(f"ok   a compiled file edited by hand: {hit[0]}")
    else:
        print(f"FAIL a compiled file edited by hand is not reported: {errors}")
        failed += 1
    print(f"{len(CASES) + 1 - failed}/{len(CASES) + 1} planted mistakes reported")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
