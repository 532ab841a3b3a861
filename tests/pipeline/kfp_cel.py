"""The part of CEL that a KFP v2 condition in our pipelines uses, parsed and evaluated.

The KFP compiler writes a dsl.If / dsl.Condition as PipelineTaskSpec.triggerPolicy.condition, a CEL
expression over the condition task's inputs, e.g.

    inputs.parameter_values['pipelinechannel--training_runtime'] == 'kubernetes'

This module accepts exactly one comparison `OPERAND (== | !=) OPERAND`, where an operand is
inputs.parameter_values['NAME'] or a literal: a quoted string ('..' or ".." with \\ escapes), a
number, true, false or null. Anything else the compiler can emit (&&, ||, !, <, int(...), ...) is
refused with an error naming it, so a condition this code cannot judge is never guessed at.

    ast = parse(text)              # raises CelError
    names = parameters(ast)        # the input names it reads
    evaluate(ast, {"pipelinechannel--training_runtime": "kubernetes"})  # -> True; CelError on a
                                   # missing input or operands of different types
"""
import re


class CelError(ValueError):
    pass


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<param>inputs\.parameter_values\[\s*(?P<q>['"])(?P<pname>(?:\\.|(?!(?P=q)).)*)(?P=q)\s*\])
  | (?P<string>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>==|!=)
  | (?P<other>\S)
""", re.X)

_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def _unescape(body, where):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            if i + 1 >= len(body) or body[i + 1] not in _ESCAPES:
                raise CelError(f"unsupported escape in {where}")
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        kind = m.lastgroup   # the outermost alternative that matched
        if kind == "param":
            out.append(("operand", ("param", _unescape(m.group("pname"), "a parameter name"))))
        elif kind == "string":
            out.append(("operand", ("lit", _unescape(m.group("string")[1:-1], "a string literal"))))
        elif kind == "number":
            out.append(("operand", ("lit", float(m.group("number")))))
        elif kind == "word":
            words = {"true": True, "false": False, "null": None}
            if m.group("word") not in words:
                raise CelError(f"unsupported name or function {m.group('word')!r} at offset {pos} "
                               f"(only inputs.parameter_values['...'] and literals)")
            out.append(("operand", ("lit", words[m.group("word")])))
        elif kind == "op":
            out.append(("op", m.group("op")))
        elif kind == "other":
            rest = text[pos:pos + 2]
            raise CelError(f"unsupported syntax {rest!r} at offset {pos} (only a single == or != comparison)")
        pos = m.end()
    return out


def parse(text):
    """(op, left, right) for `left op right`."""
    if not isinstance(text, str) or not text.strip():
        raise CelError("empty condition")
    toks = _tokens(text)
    shape = [t[0] for t in toks]
    if shape != ["operand", "op", "operand"]:
        raise CelError(f"condition {text!r}: expected OPERAND == OPERAND or OPERAND != OPERAND")
    return (toks[1][1], toks[0][1], toks[2][1])


def parameters(ast):
    return [o[1] for o in ast[1:] if o[0] == "param"]


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def evaluate(ast, values):
    op, left, right = ast

    def value(o):
        if o[0] == "lit":
            return o[1]
        if o[1] not in values:
            raise CelError(f"the condition reads inputs.parameter_values[{o[1]!r}], which the task does not have")
        return values[o[1]]
    a, b = value(left), value(right)
    if _kind(a) != _kind(b):
        raise CelError(f"cannot compare {_kind(a)} {a!r} with {_kind(b)} {b!r}")
    return (a == b) if op == "==" else (a != b)
