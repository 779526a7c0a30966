"""Fused bindings: the commonest line of printed Relax read as one token and built directly.

TVM prints an imported model's Relax function as thousands of lines like

    lv3: R.Tensor((1, 64, 56, 56), dtype="float32") = R.nn.conv2d(lv2, w, strides=[1, 1], out_dtype=None)

Token by token that is 20-60 lexer matches and LALR steps and as many syntax-tree nodes,
then a walk of the tree by the builder. The grammar's FUSED_BINDING terminal (marked
`// fused` in grammar/tvmscript.lark) reads such a line whole when it is in exactly this
shape: a name, a static `R.Tensor` annotation in TVM's spelling, a call of a dotted `R.`
name whose arguments are names, `R.shape([...])` and `metadata["..."][i]`, followed by
keywords whose values are numbers, integer lists, plain strings, None, True or False, and
nothing after it on the line but a comment. Python keywords are never taken for names, so the token matches only
what the general rules accept as one `ann_assign` statement.

The node it becomes (`FusedBinding`) is an `ann_assign` whose children are made only when
something asks for them, and then they are exactly the nodes, tokens and positions the
general rules build (`expand`). The Relax builder asks for none of them in the common
case: `build_fused` decodes the token text and calls the builder's own steps (the
`R.Tensor` handler, name lookup, `R.shape`, the operator call, the binding) with stand-in
nodes that carry the same positions. On anything unusual (a shadowed `R`, an unknown
operator, a special form, any diagnostic) it undoes nothing because it has done nothing
yet, and the general path builds the statement from the expanded tree, so results and
diagnostics are those of the general rules.

`IRTOOL_PARSER_ENGINE=reference` reads TVMScript with the grammar without its `// fused`
lines; a syntax error found with the fused grammar is always reported by that one too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lark import Token, Tree

from ...ir import relax as rx
from .evaluate import _Metadata
from .positions import Positions

if TYPE_CHECKING:
    from .relax import _RelaxBuilder

# ----------------------------------------------------------------------------- the terminal
#
# Composed here from its parts; grammar/tvmscript.lark holds the same text (a test checks).
_KEYWORDS = ("False|None|True|and|as|assert|async|await|break|class|continue|def|del|elif|else|except|"
             "finally|for|from|global|if|import|in|is|lambda|nonlocal|not|or|pass|raise|return|try|"
             "while|with|yield")
_NAME = rf"(?!(?:{_KEYWORDS})(?![A-Za-z_0-9]))[A-Za-z_][A-Za-z_0-9]*"
_TENSOR = r'R\.Tensor\(\((?:\d+,|\d+(?:, \d+)+)?\), dtype="[A-Za-z0-9_]+"\)'
_INT_LIST = r"\[\d+(?:, \d+)*\]"
_NUMBER = r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"  # the grammar's NUMBER
_VALUE = rf'(?:{_INT_LIST}|"[A-Za-z0-9_.]*"|-?{_NUMBER}|None|True|False)'
_META = r'metadata\["[A-Za-z0-9_.]*"\]\[\d+\]'
_POSITIONAL = rf"(?:{_NAME}|R\.shape\({_INT_LIST}\)|{_META})"
_KWARG = rf"{_NAME}={_VALUE}"
_ARGS = rf"(?:{_POSITIONAL}(?:, {_POSITIONAL})*(?:, {_KWARG})*|{_KWARG}(?:, {_KWARG})*)?"
FUSED_BINDING_PATTERN = (rf"{_NAME}: {_TENSOR} = R(?:\.{_NAME})+\({_ARGS}\)"
                         r"(?=[\t \f]*(?:#|\r?\n))")
# Two or more such lines one under the other: one token for the whole run (see `split_run`)
FUSED_RUN_PATTERN = rf"{FUSED_BINDING_PATTERN}(?:\r?\n[ \t]*{FUSED_BINDING_PATTERN})+"
_LINE_BREAK = re.compile(r"\r?\n([ \t]*)")

# Decoding a token the pattern above has already checked
_HEAD = re.compile(r'([^:]+): (R\.Tensor\(\(([^)]*)\), dtype="([^"]*)"\)) = ([^(]+)\(')
_ARG = re.compile(r'(?:([A-Za-z_][A-Za-z_0-9]*)=)?(R\.shape\((\[[^\]]*\])\)|metadata\["([^"]*)"\]\[(\d+)\]'
                  r'|\[[^\]]*\]|"[^"]*"|[^, ]+)')
_INTEGER = re.compile(r"\d+")
_DIGITS = re.compile(r"\d+")


# ----------------------------------------------------------------------------- the node


class FusedBinding(Tree):
    """An `ann_assign` read as one FUSED_BINDING token; its children are made on demand."""

    def __init__(self, tok: Token) -> None:
        self.data = "ann_assign"
        self.token = tok
        self._children: list | None = None
        end = (tok.end_line, tok.end_column, tok.end_pos)
        self._meta = Positions((tok.line, tok.column, tok.start_pos), end)

    @property
    def children(self) -> list:
        if self._children is None:
            self._children = expand(self.token)
        return self._children

    @children.setter
    def children(self, value: list) -> None:
        self._children = value


class _Spot:
    """Where a node of the expanded tree would be: what the builders' `span()` reads."""

    __slots__ = ("line", "column", "end_line", "end_column")
    empty = False

    def __init__(self, tok: Token, start: int, end: int) -> None:
        self.line = self.end_line = tok.line
        self.column = tok.column + start
        self.end_column = tok.column + end

    @property
    def meta(self) -> _Spot:
        return self


# ----------------------------------------------------------------------------- runs of lines


def split_run(tok: Token) -> list[tuple[Token, Token | None]]:
    """The lines of a FUSED_RUN token: (its FUSED_BINDING token, the `_NL` token after it),
    the last line without one (the grammar's own `_NL` follows the run), exactly as the
    lexer would have read them one by one."""
    text = tok.value
    out = []
    line, column, start = tok.line, tok.column, 0
    for m in _LINE_BREAK.finditer(text):
        end = m.start()
        binding = Token("FUSED_BINDING", text[start:end], tok.start_pos + start, line, column, line,
                        column + end - start, tok.start_pos + end)
        indent = len(m.group(1))
        newline = Token("_NL", m.group(), tok.start_pos + end, line, column + end - start, line + 1, indent + 1,
                        tok.start_pos + m.end())
        out.append((binding, newline))
        line, column, start = line + 1, indent + 1, m.end()
    out.append((Token("FUSED_BINDING", text[start:], tok.start_pos + start, line, column, line,
                      column + len(text) - start, tok.start_pos + len(text)), None))
    return out


def run_indents(tok: Token) -> list[str]:
    """The indentation of every line of a FUSED_RUN token but the first."""
    return _LINE_BREAK.findall(tok.value)


def fused_run(children: list) -> Tree:
    """The `_fused_run` rule (`FUSED_RUN _NL`): one `simple_stmt` a line, as the grammar
    builds it for each line read alone (the parent rule takes them in as its own children)."""
    run, last_newline = children
    stmts = []
    for binding, newline in split_run(run):
        newline = newline or last_newline
        node = FusedBinding(binding)
        stmts.append(Tree("simple_stmt", [node], Positions(
            (binding.line, binding.column, binding.start_pos),
            (newline.end_line, newline.end_column, newline.end_pos))))
    first, last = stmts[0].meta, stmts[-1].meta
    return Tree("_fused_run", stmts, Positions((first.line, first.column, first.start_pos),
                                               (last.end_line, last.end_column, last.end_pos)))


# ----------------------------------------------------------------------------- expansion


def _tok(kind: str, tok: Token, start: int, end: int) -> Token:
    col, pos = tok.column + start, tok.start_pos + start
    return Token(kind, tok.value[start:end], pos, tok.line, col, tok.line, tok.column + end, tok.start_pos + end)


def _node(data: str, children: list, tok: Token, start: int, end: int) -> Tree:
    return Tree(data, children, Positions((tok.line, tok.column + start, tok.start_pos + start),
                                          (tok.line, tok.column + end, tok.start_pos + end)))


def _leaf(data: str, kind: str, tok: Token, start: int, end: int) -> Tree:
    return _node(data, [_tok(kind, tok, start, end)], tok, start, end)


def _dotted(tok: Token, start: int, end: int) -> Tree:
    """`R.nn.conv2d` at text[start:end]: attribute(attribute(name(R), nn), conv2d)."""
    text = tok.value
    dot = text.index(".", start, end)
    node = _leaf("name", "NAME", tok, start, dot)
    while dot < end:
        following = text.find(".", dot + 1, end)
        stop = end if following < 0 else following
        node = _node("attribute", [node, _tok("NAME", tok, dot + 1, stop)], tok, start, stop)
        dot = stop
    return node


def _value(tok: Token, start: int, end: int) -> Tree:
    """A keyword argument's value at text[start:end], as the general rules build it."""
    text = tok.value
    first = text[start]
    if first == "[":
        return _leaf("int_list", "INT_LIST", tok, start, end)
    if first == '"':
        return _leaf("string", "STRING", tok, start, end)
    if first == "-":  # op_seq [ADD_OP, number], rebuilt as a unary node
        return _node("unary", [_tok("ADD_OP", tok, start, start + 1),
                               _leaf("number", "NUMBER", tok, start + 1, end)], tok, start, end)
    if first.isdigit() or first == ".":
        return _leaf("number", "NUMBER", tok, start, end)
    return _node(text[start:end].lower(), [], tok, start, end)  # None, True, False


def expand(tok: Token) -> list:
    """The children of the `ann_assign` the general rules build for a FUSED_BINDING token:
    [name, static_tensor, call], every node and token at its place in the line."""
    text = tok.value
    m = _HEAD.match(text)
    target = _leaf("name", "NAME", tok, 0, m.end(1))
    tensor = _leaf("static_tensor", "STATIC_TENSOR", tok, m.start(2), m.end(2))
    callee = _dotted(tok, m.start(5), m.end(5))
    args = []
    for a in _ARG.finditer(text, m.end(), len(text) - 1):
        start, end = a.start(2), a.end(2)
        if a.group(1) is not None:
            args.append(_node("kwarg", [_tok("NAME", tok, a.start(1), a.end(1)), _value(tok, start, end)],
                              tok, a.start(), end))
        elif a.group(4) is not None:  # metadata["key"][i]: subscript(subscript(name, [string]), [number])
            close = text.index("]", start) + 1
            key = _node("subscripts", [_leaf("string", "STRING", tok, a.start(4) - 1, a.end(4) + 1)],
                        tok, a.start(4) - 1, a.end(4) + 1)
            inner = _node("subscript", [_leaf("name", "NAME", tok, start, start + 8), key], tok, start, close)
            index = _node("subscripts", [_leaf("number", "NUMBER", tok, a.start(5), a.end(5))],
                          tok, a.start(5), a.end(5))
            args.append(_node("subscript", [inner, index], tok, start, end))
        elif a.group(3) is not None:  # R.shape([...])
            shape_args = _node("args", [_leaf("int_list", "INT_LIST", tok, a.start(3), a.end(3))],
                               tok, a.start(3), a.end(3))
            args.append(_node("call", [_dotted(tok, start, start + 7), shape_args], tok, start, end))
        else:
            args.append(_leaf("name", "NAME", tok, start, end))
    args_node = _node("args", args, tok, args[0].meta.column - tok.column, len(text) - 1) if args else None
    call = _node("call", [callee, args_node], tok, m.start(5), len(text))
    return [target, tensor, call]


# ----------------------------------------------------------------------------- the fast path


_ANNOTATIONS: dict[str, tuple] = {}  # annotation text -> (dims, dtype), once R.Tensor's handler took it
_KEYWORDS_OF: dict[str, tuple] = {}  # keyword-argument text -> ((name, value), ...)
_CACHE_LIMIT = 4096  # texts per cache: a model repeats a few dozen; a long-lived process reads many models
_ops = None


def _relax_ops():
    global _ops
    if _ops is None:  # the operator tables import late, as in the Relax builder
        from ...ops import relax as relax_ops
        from ...ops import relax_memory

        _ops = relax_ops, relax_memory
    return _ops


def _number(text: str):
    """A NUMBER token's value, as the builders' `e_number` reads it."""
    return int(text) if _INTEGER.fullmatch(text) else float(text)


def _keywords(text: str, start: int, end: int) -> tuple:
    """The keyword arguments at text[start:end] as the general rules evaluate them. Their
    lists are shared by the calls of one text: nothing changes them (they become tuples)."""
    key = text[start:end]
    pairs = _KEYWORDS_OF.get(key)
    if pairs is None:
        out = []
        for a in _ARG.finditer(key):
            value = a.group(2)
            first = value[0]
            if first == "[":
                value = [int(d) for d in _DIGITS.findall(value)]
            elif first == '"':
                value = value[1:-1]
            elif first == "-":
                value = -_number(value[1:])
            elif first.isdigit() or first == ".":
                value = _number(value)
            else:
                value = None if value == "None" else value == "True"
            out.append((a.group(1), value))
        if len(_KEYWORDS_OF) >= _CACHE_LIMIT:
            _KEYWORDS_OF.clear()
        pairs = _KEYWORDS_OF[key] = tuple(out)
    return pairs


def build_fused(b: _RelaxBuilder, node: FusedBinding) -> bool:
    """Bind one fused line in the Relax builder `b` as `r_assign` would; False (having
    changed nothing) when the general path must do it."""
    tok = node.token
    text = tok.value
    m = _HEAD.match(text)
    callee = m.group(5)
    calls = b.CALLS
    if callee in calls or "R" in b.mb.globals_scope or "R.Tensor" not in calls:
        return False  # a special form, or `R` may not be TVMScript's module
    for scope in b.scopes:
        if "R" in scope:
            return False
    relax_ops, relax_memory = _relax_ops()
    op_name = "relax." + callee[2:]
    if op_name in relax_memory.MEMORY_OPS:
        return False
    op = relax_ops.lookup(op_name)
    if op is None:
        return False
    bindings = len(b.bindings)
    try:
        annotation = m.group(2)
        known = _ANNOTATIONS.get(annotation)
        ann_spot = _Spot(tok, m.start(2), m.end(2))
        if known is None:  # R.Tensor's handler checks it (the dtype) once
            dims = tuple(int(d) for d in _DIGITS.findall(m.group(3)))
            ann = calls["R.Tensor"](b, ann_spot, [dims], {"dtype": m.group(4)})
            if len(_ANNOTATIONS) >= _CACHE_LIMIT:
                _ANNOTATIONS.clear()
            _ANNOTATIONS[annotation] = (ann.shape, ann.dtype)
        else:
            ann = rx.TensorStructInfo(*known)
        # the arguments: names and R.shape([...]), then keywords (the token's pattern says so)
        pos, pos_nodes = [], []
        end = len(text) - 1
        keywords_at = end
        for a in _ARG.finditer(text, m.end(), end):
            if a.group(1) is not None:
                keywords_at = a.start()
                break
            spot = _Spot(tok, a.start(2), a.end(2))
            if a.group(3) is not None:
                arg = calls["R.shape"](b, spot, [[int(d) for d in _DIGITS.findall(a.group(3))]], {})
            elif a.group(4) is not None:  # metadata["key"][i], when `metadata` is not a variable
                if not isinstance(b.lookup("metadata", spot), _Metadata):
                    raise LookupError("`metadata` is bound to something else")
                arg = b.mb.metadata_ref(a.group(4), int(a.group(5)), spot)
            else:
                arg = b.lookup(a.group(2), spot)
            pos.append(b.argument(arg, spot))
            pos_nodes.append(spot)
        kw = dict(_keywords(text, keywords_at, end)) if keywords_at < end else {}
        call_spot = _Spot(tok, m.start(5), len(text))
        expr = b.op_call_args(callee, op, call_spot, pos, kw, pos_nodes,
                              attrs_key=(callee, text[keywords_at:end]))
        b.bind(m.group(1), ann, ann_spot, expr, call_spot, _Spot(tok, 0, m.end(1)), _Spot(tok, 0, len(text)))
    except Exception:  # the general path gives the result or the diagnostic
        del b.bindings[bindings:]
        return False
    return True
