"""The Kubeflow Pipelines v2 backend's rules for running a container task, per released version,
as read in kubeflow/pipelines backend/src/v2 at each tag (facts carried over, not code):

    backend = kfp_backend.Backend("2.16")                     # "2.0", "2.5", "2.16" or "2.17"
    values = backend.root_inputs(spec, {"epochs": 3})          # the run's parameters
    inputs = backend.task_inputs(task, component, parent_values, produced, where)   # the driver
    argv = backend.command_line(container, component, inputs, output_files, where)  # driver + launcher
    outputs = backend.collect_outputs(component, output_files, where)               # the launcher

What differs between the versions (the three rules a pipeline must survive):

  version  tag     where {{$.inputs.parameters[..]}} is filled    IfPresent      an input the task does not pass
  2.0      2.0.5   launcher only: component/launcher_v2.go        left literal   launcher fills the component's
  2.5      2.5.0     (addDefaultParams, then getPlaceholders and    (no code for   default first (addDefaultParams):
  2.16     2.16.0    one strings.ReplaceAll per map entry, in Go    it)            fine
                     map order: a placeholder inside another
                     value is filled only when its key comes later
                     - upstream issues 11035 and 13977)
  2.17     2.17.0  driver first: driver/driver.go initPodSpecPatch resolved by     the driver fills before the
                     -> util.go resolveContainerArgs (one regex     the driver     defaults: "parameter %q not
                     pass over each arg, executor input without    (util.go       found in executor input", the
                     defaults), then the launcher as above on the  resolveCon-    task fails
                     already filled args                           dition)

Common to all four (driver/driver.go resolveInputs in 2.0.5 and 2.5.0, driver/resolve.go in 2.16.0
and 2.17.0): componentInputParameter takes the enclosing DAG's value, taskOutputParameter the producer's
output, runtimeValue.constant is passed as it is (no placeholder inside it is touched by the driver);
an optional input without a value is left out of the executor input ("resolved internally within the
component"); a declared STRING input given another type becomes its text, other type mismatches fail
("input parameter %q type mismatch"). The launcher formats a value for a command line as
metadata.PbValueToText does (number: strconv.FormatFloat 'f' -1, bool: true/false, list/struct:
encoding/json of the protobuf message); 2.17.0's driver uses util.go pbValueToString instead (a whole
number as %d, any other as %g, list/struct: encoding/json of AsInterface()). Output parameters are
read from /tmp/kfp/outputs/<name> (driver.go provisionOutputs) and typed by metadata.TextToPbValue.
Argo's compiler adds a dependency for every taskOutputParameter (argocompiler/dag.go
addImplicitDependencies), so a consumer runs after its producer.

Go's map order is random per run. With map_seed=None a substitution whose result depends on that
order is an error here (the real backend fails in some runs and not others: a test must not pass by
luck); with map_seed=N the order is one pseudo-random permutation, played as the launcher would.
"""
import decimal
import json
import math
import random
import re

VERSIONS = ("2.0", "2.5", "2.16", "2.17")
TAGS = {"2.0": "2.0.5", "2.5": "2.5.0", "2.16": "2.16.0", "2.17": "2.17.0"}
IN_PARAM = re.compile(r"\{\{\$\.inputs\.parameters\['(.+?)'\]\}\}")   # util.go fullInputParameterRe
OUTPUT_PARAMETER_FILE = "/tmp/kfp/outputs/{}"                           # driver.go provisionOutputs


class KfpError(Exception):
    """A task the backend would fail: stage is "driver", "launcher" or the component's program."""
    def __init__(self, stage, message, exit_code=None):
        super().__init__(f"{stage}: {message}")
        self.stage, self.exit_code = stage, exit_code


class PipelineError(KfpError):
    """The spec or the run's values are wrong before any task runs."""
    def __init__(self, message):
        super().__init__("pipeline", message)


# ---- how Go writes a protobuf Value -------------------------------------------------------------

def _go_float(n, fmt):
    """strconv.FormatFloat(n, fmt, -1, 64) for fmt 'f' or 'e': the shortest digits that read back as
    n (Python's repr finds the same digits), the exponent with at least two digits."""
    d = decimal.Decimal(repr(float(n)))
    if fmt == "f":
        return format(d, "f")
    sign, digits, e10 = d.normalize().as_tuple()
    e = e10 + len(digits) - 1
    rest = "".join(str(x) for x in digits[1:])
    return ("-" if sign else "") + str(digits[0]) + ("." + rest if rest else "") + \
        "e" + ("-" if e < 0 else "+") + f"{abs(e):02d}"


def launcher_number(n):
    """metadata.PbValueToText / the launcher's placeholder: strconv.FormatFloat(n, 'f', -1, 64)."""
    if float(n).is_integer():
        return str(int(n))
    return _go_float(n, "f")


def driver_number(n):
    """2.17.0 driver/util.go pbValueToString: %d for a whole number, else %g (Go's strconv with the
    shortest digits: exponent form when the decimal exponent is < -4 or >= 6)."""
    n = float(n)
    if n.is_integer() and abs(n) < 2 ** 63:
        return str(int(n))
    e = decimal.Decimal(repr(n)).adjusted()
    return _go_float(n, "e") if e < -4 or e >= 6 else _go_float(n, "f")


def _json_number(n):
    """encoding/json's (and protojson's) float: 'f' unless |n| < 1e-6 or >= 1e21, then 'e' with
    the exponent's leading zero dropped."""
    n = float(n)
    if math.isnan(n) or math.isinf(n):
        raise PipelineError(f"{n} has no JSON form")
    if n != 0 and (abs(n) < 1e-6 or abs(n) >= 1e21):
        text = _go_float(n, "e")
        return re.sub(r"e([+-])0(\d)$", r"e\1\2", text)
    return launcher_number(n)


def go_json(value):
    """A struct or list value as encoding/json writes it: compact, map keys sorted, <, > and &
    escaped as \\u003c, \\u003e, \\u0026 (HTML-safe, the default), numbers as _json_number."""
    def enc(v):
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return _json_number(v)
        if isinstance(v, str):
            s = json.dumps(v, ensure_ascii=False)
            for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
                s = s.replace(a, b)
            return s
        if isinstance(v, dict):
            return "{" + ",".join(enc(k) + ":" + enc(v[k]) for k in sorted(v)) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        raise PipelineError(f"{v!r} is not a protobuf Value")
    return enc(value)


def launcher_text(v):
    """A value as the launcher writes it into a command line (metadata.PbValueToText)."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return launcher_number(v)
    return go_json(v)


def driver_text(v):
    """A value as 2.17.0's driver writes it into a command line (util.go pbValueToString)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return driver_number(v)
    return launcher_text(v)


# ---- the values ---------------------------------------------------------------------------------

def as_value(v):
    """A Python value as a protobuf Value holds it (every number a double)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, dict):
        return {k: as_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [as_value(x) for x in v]
    return v


def fits(ptype, v):
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    return {"STRING": isinstance(v, str), "NUMBER_DOUBLE": num, "NUMBER_INTEGER": num and float(v).is_integer(),
            "BOOLEAN": isinstance(v, bool), "STRUCT": isinstance(v, dict), "LIST": isinstance(v, list)}.get(ptype, False)


def _q(text):
    """Go's %q of a string (double quotes, backslash escapes): the backend's error messages use it."""
    return json.dumps(text)


def _kind(v):
    return ("null" if v is None else "bool" if isinstance(v, bool) else "number" if isinstance(v, (int, float))
            else "string" if isinstance(v, str) else "struct" if isinstance(v, dict) else "list")


def _params(defs):
    return ((defs or {}).get("parameters")) or {}


class Backend:
    def __init__(self, version="2.16", map_seed=None):
        if version not in TAGS:
            raise ValueError(f"KFP version {version!r}: one of {', '.join(VERSIONS)}")
        self.version, self.tag, self.map_seed = version, TAGS[version], map_seed
        self.driver_fills_args = version == "2.17"          # 2.17.0 driver/driver.go initPodSpecPatch
        self.executor_json_first = version in ("2.16", "2.17")  # launcher_v2.go compileCmdAndArgs ({{$}})

    def __repr__(self):
        return f"KFP {self.version} (kubeflow/pipelines {self.tag})"

    # -- the run ---------------------------------------------------------------------------------

    def root_inputs(self, spec, overrides):
        """The run's parameter values: the given ones, the pipeline's defaults for the rest (the API
        server writes both into the run's runtimeConfig; driver/root_dag.go takes them as given)."""
        defs = _params((spec.get("root") or {}).get("inputDefinitions"))
        for name in overrides:
            if name not in defs:
                raise PipelineError(f"pipeline parameter {name!r} does not exist (parameters: {', '.join(sorted(defs))})")
        values = {}
        for name, d in defs.items():
            if name in overrides:
                v = as_value(overrides[name])
            elif "defaultValue" in d:
                v = d["defaultValue"]
            elif d.get("isOptional"):
                continue
            else:
                raise PipelineError(f"pipeline parameter {name!r} has no default and no value was given")
            if not fits(d.get("parameterType"), v):
                raise PipelineError(f"pipeline parameter {name}={v!r} is not a {d.get('parameterType')}")
            values[name] = v
        return values

    # -- the driver ------------------------------------------------------------------------------

    def task_inputs(self, task, component, parent_values, produced, where):
        """The executor input's parameter values (driver resolveInputs): see the module docstring.
        produced: {task name: {output name: value}} of the DAG's finished tasks."""
        values = {}
        for name, spec in (((task.get("inputs") or {}).get("parameters")) or {}).items():
            if "componentInputParameter" in spec:
                src = spec["componentInputParameter"]
                if src not in parent_values:
                    raise KfpError("driver", f"{where}: resolving input parameter {name}: parent DAG does not have "
                                             f"input parameter {src}")
                values[name] = parent_values[src]
            elif "taskOutputParameter" in spec:
                ref = spec["taskOutputParameter"]
                producer, key = ref.get("producerTask"), ref.get("outputParameterKey")
                if producer not in produced:
                    raise KfpError("driver", f"{where}: resolving input parameter {name}: cannot find producer task "
                                             f"{_q(producer)}")
                if key not in produced[producer]:
                    raise KfpError("driver", f"{where}: resolving input parameter {name}: cannot find output parameter "
                                             f"key {_q(key)} in producer task {_q(producer)}")
                values[name] = produced[producer][key]
            elif "runtimeValue" in spec:
                values[name] = (spec["runtimeValue"] or {}).get("constant")
            else:
                raise KfpError("driver", f"{where}: input {name}: parameter spec {sorted(spec)} not implemented")
        for name, d in _params(component.get("inputDefinitions")).items():
            if name not in values:
                if not d.get("isOptional") and "defaultValue" not in d:
                    raise KfpError("driver", f"{where}: neither value nor default value provided for non-optional "
                                             f"parameter {_q(name)}")
                continue
            ptype, v = d.get("parameterType"), values[name]
            if ptype == "STRING":
                if not isinstance(v, str):
                    values[name] = launcher_text(v)
            elif v is None:
                raise KfpError("driver", f"{where}: got null for input parameter {_q(name)}")
            elif _kind(v) != {"NUMBER_INTEGER": "number", "NUMBER_DOUBLE": "number", "BOOLEAN": "bool",
                              "LIST": "list", "STRUCT": "struct"}.get(ptype):
                # The kind only: a NUMBER_INTEGER input takes any number (1.5 too), as the driver does.
                raise KfpError("driver", f"{where}: input parameter {_q(name)} type mismatch: expect {ptype}, "
                                         f"got {_kind(v)}")
        return values

    # -- the command line ------------------------------------------------------------------------

    def command_line(self, container, component, inputs, output_files, where):
        """command + args as the program sees them. output_files: {output parameter or artifact:
        the path its placeholder becomes}."""
        args = list(container.get("command") or []) + list(container.get("args") or [])
        if self.driver_fills_args:
            args = self._driver_fill(args, inputs, where)
        return self._launcher_fill(args, component, inputs, output_files, where)

    def _driver_fill(self, args, inputs, where):
        """2.17.0 driver/util.go resolveContainerArgs: an arg with "$.outputs" is left to the
        launcher; an IfPresent clause becomes its Then or Else; every other arg has each
        {{$.inputs.parameters['x']}} replaced in one pass (text that a replacement brings in is not
        looked at again), a name the executor input lacks being an error."""
        out = []

        def fill(arg):
            def one(m):
                if m.group(1) not in inputs:
                    raise KfpError("driver", f"{where}: failed to resolve container args: failed to resolve input "
                                             f"parameters: parameter {_q(m.group(1))} not found in executor input")
                return driver_text(inputs[m.group(1)])
            return IN_PARAM.sub(one, arg)
        for arg in args:
            if "$.outputs" in arg:
                out.append(arg)
            elif arg.strip().startswith('{"IfPresent":'):
                try:
                    cond = json.loads(arg)["IfPresent"]
                except (ValueError, KeyError, TypeError) as e:
                    raise KfpError("driver", f"{where}: failed to resolve condition: failed to parse IfPresent "
                                             f"JSON: {e}") from None
                present = inputs.get(cond.get("InputName")) is not None
                chosen = cond.get("Then") if present else cond.get("Else")
                items = [] if chosen is None else [chosen] if isinstance(chosen, str) else chosen
                for item in items:
                    if not isinstance(item, str):
                        raise KfpError("driver", f"{where}: non-string item in IfPresent Then/Else array")
                    out.append(fill(item))
            else:
                out.append(fill(arg))
        return out

    def _launcher_fill(self, args, component, inputs, output_files, where):
        """component/launcher_v2.go: addDefaultParams (a default for every input without a value),
        then each arg gets one strings.ReplaceAll per placeholder of getPlaceholders, in map order."""
        values = dict(inputs)
        for name, d in _params(component.get("inputDefinitions")).items():
            if name not in values and "defaultValue" in d:
                values[name] = d["defaultValue"]
        table = {"{{$.inputs.parameters['" + n + "']}}": launcher_text(v) for n, v in values.items()}
        for name, path in output_files.items():
            table["{{$.outputs.parameters['" + name + "'].output_file}}"] = path
            table["{{$.outputs.artifacts['" + name + "'].path}}"] = path
        keys = sorted(table)
        nested = {k: [o for o in keys if o != k and o in table[k]] for k in keys}
        nested = {k: inner for k, inner in nested.items() if inner}
        if self.map_seed is None:
            used = [k for k in nested if any(k in a for a in args)]
            if used:
                k = used[0]
                raise KfpError("launcher", f"{where}: {k} is replaced by a value that holds {nested[k][0]}: the "
                                           f"launcher fills placeholders in Go map order (component/launcher_v2.go, "
                                           f"{self.tag}), so the inner one stays literal in the runs where it comes "
                                           f"first (kubeflow/pipelines issues 11035, 13977)")
        else:
            random.Random(self.map_seed).shuffle(keys)
        return [self._replace_all(a, keys, table) for a in args]

    @staticmethod
    def _replace_all(arg, keys, table):
        for k in keys:
            arg = arg.replace(k, table[k])
        return arg

    # -- outputs ---------------------------------------------------------------------------------

    def collect_outputs(self, component, output_files, where):
        """collectOutputParameters: each output parameter's file, typed by metadata.TextToPbValue."""
        out = {}
        for name, d in _params(component.get("outputDefinitions")).items():
            path = output_files[name]
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise KfpError("launcher", f"{where}: failed to read output parameter name={_q(name)} path={_q(path)}: {e}")
            out[name] = _text_to_value(text, d.get("parameterType"), f"{where}: output parameter {name}")
        return out


def _text_to_value(text, ptype, what):
    try:
        if ptype == "STRING":
            return text
        if ptype == "NUMBER_INTEGER":
            return float(int(text.strip(), 10))
        if ptype == "NUMBER_DOUBLE":
            return float(text.strip())
        if ptype == "BOOLEAN":
            t = text.strip()
            if t not in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
                raise ValueError(f"invalid syntax {t!r}")
            return t in ("1", "t", "T", "TRUE", "true", "True")
        if ptype in ("LIST", "STRUCT"):
            v = json.loads(text)
            if not isinstance(v, list if ptype == "LIST" else dict):
                raise ValueError("unexpected type")
            return as_value(v)
    except ValueError as e:
        raise KfpError("launcher", f"{what}: TextToPbValue(type={ptype}) failed: {e}") from None
    raise KfpError("launcher", f"{what}: unknown type {ptype}")
