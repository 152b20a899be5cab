"""Kernel labels: short unique names for table rows (`k_colsum<(Col)0>`) and operation names
for plots (`colsum db1`), both from the demangled names nsys prints."""
from __future__ import annotations

import re
from typing import Iterable

from spec.kernels import ENUMS

# Longest template-argument text kept in a label; longer ones are cut with "...".
LABEL_TEMPLATE_MAX = 40
_QUALIFIER_RE = re.compile(r"\b[A-Za-z_]\w*::")


def _split_signature(text: str) -> str:
    """The name part of a demangled signature: the text before the first '(' outside '<...>'
    (template arguments may hold parentheses: "k<(mlp::Col)0>(int)")."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            return text[:i]
    return text


def _last_component(text: str) -> str:
    """'mlp::k_colsum<(mlp::Col)0>' -> 'k_colsum<(mlp::Col)0>': the last '::' part outside '<>'."""
    depth, start = 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0 and text.startswith("::", i):
            start = i + 2
            i += 1
        i += 1
    return text[start:]


def kernel_base_name(name: str) -> str:
    """A short label for one kernel row: the function name without namespace, return type or
    parameter list, with its template arguments kept (namespace qualifiers dropped inside them),
    so two instances of one template stay apart:

        'mlp::k_dW1(int, int, const float *, float *)'                 -> 'k_dW1'
        'void mlp::k_colsum<(mlp::Col)1>(int, int, const float *, ...)' -> 'k_colsum<(Col)1>'

    Template arguments longer than LABEL_TEMPLATE_MAX characters are cut with '...'."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    text = _last_component(_split_signature(text).strip()).strip()
    lt = text.find("<")
    if lt > 0 and text.endswith(">"):
        args = _QUALIFIER_RE.sub("", text[lt + 1:-1]).strip()
        if len(args) > LABEL_TEMPLATE_MAX:
            args = args[:LABEL_TEMPLATE_MAX - 3].rstrip() + "..."
        text = f"{text[:lt]}<{args}>"
    return text or name.strip()


def kernel_labels(names: Iterable[str]) -> list[str]:
    """kernel_base_name of each name, made unique: where two rows still share a label (overloads,
    or template arguments cut to the same text), each gets ' #1', ' #2', ... in the given order."""
    return _unique([kernel_base_name(n) for n in names])


_CAST_RE = re.compile(r"^\(\s*(?P<enum>\w+)\s*\)\s*(?P<value>\d+)$")
_TEMPLATE_RE = re.compile(r"^(?P<func>[A-Za-z_]\w*)(?:<(?P<arg>.*)>)?$")


def enum_argument(func: str, arg: str | None) -> str | None:
    """The enumerator a template argument names ('(Col)1' of k_colsum -> 'db2', or the name
    itself where the demangler wrote it), by spec.kernels.ENUMS; None when it names none."""
    if func not in ENUMS or arg is None:
        return None
    enum, values = ENUMS[func]
    cast = _CAST_RE.match(arg.replace(" ", ""))
    if cast:
        if cast.group("enum") != enum or int(cast.group("value")) >= len(values):
            return None
        return values[int(cast.group("value"))]
    return arg if arg in values else None


def operation_label(name: str) -> str:
    """A label that reads like the operation, for plots: 'void mlp::k_colsum<(mlp::Col)0>(...)'
    -> 'colsum db1', 'mlp::k_fwd_hidden_bias_relu(...)' -> 'fwd hidden bias relu'. The 'k_'
    prefix goes, underscores become spaces, a scoped-enum template argument becomes its
    enumerator; other template arguments are kept."""
    base = kernel_base_name(name)
    m = _TEMPLATE_RE.match(base)
    if not m:
        return base
    func, arg = m.group("func"), m.group("arg")
    words = (func[2:] if func.startswith("k_") else func).replace("_", " ")
    value = enum_argument(func, arg)
    if value is not None:
        return f"{words} {value}"
    return words + (f"<{arg}>" if arg is not None else "")


def operation_labels(names: Iterable[str]) -> list[str]:
    """operation_label of each name, made unique as kernel_labels does (' #1', ' #2')."""
    return _unique([operation_label(n) for n in names])


def _unique(labels: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        if counts[label] > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} #{seen[label]}"
        out.append(label)
    return out
