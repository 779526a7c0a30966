"""TVMScript text -> IRModule of Relax functions and TIR PrimFuncs.

Two stages, as in TVM's own parser (which uses Python's `ast`):

    text ──lark LALR + indenter (grammar/tvmscript.lark)──> syntax tree (Python subset)
         ──_ModuleBuilder──> IRModule
              ├ _RelaxBuilder   @R.function: scopes of Relax vars, bindings grouped into
              │                 blocks, struct info deduced for every bound value
              └ _TirBuilder     @T.prim_func: statement lists, where "rest of the block"
                                statements (let, decl_buffer, assert, attr) own what follows

The builders evaluate expressions over the tree: `R.add` and `T.grid` are dotted names
looked up in the tables at the end of each builder, so an unknown `R.`/`T.` name is a
diagnostic with a caret, never a crash. Names are resolved in nested scopes; a symbolic
dimension (`n` in `R.Tensor((n, 4))`) is defined where it first appears in a signature
or a match_cast, as TVM does.
"""

from __future__ import annotations

import functools
import importlib.resources
import keyword
import re
import threading

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import DedentError, Indenter

from ..diagnostics import DiagnosticError, SourceFile, Span
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import Attrs, GlobalVar, Op
from ..ir.module import IRModule
from ..ir.types import is_valid_dtype
from ..ops import relax_memory

# ----------------------------------------------------------------------------- syntax


class _ScriptIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token):  # noqa: N802 (lark's name)
        self.last_newline = token
        yield from super().handle_NL(token)


@functools.lru_cache(maxsize=1)
def _lark() -> tuple[Lark, _ScriptIndenter, threading.Lock]:
    grammar = importlib.resources.files("irtool.grammar").joinpath("tvmscript.lark").read_text()
    indenter = _ScriptIndenter()
    parser = Lark(grammar, parser="lalr", postlex=indenter, propagate_positions=True,
                  maybe_placeholders=True, cache=True)
    return parser, indenter, threading.Lock()


_METADATA = re.compile(r'^metadata\s*=\s*tvm\.ir\.load_json\("""(.*?)"""\)[ \t]*$', re.S | re.M)


def _split_metadata(text: str) -> tuple[str, str | None]:
    """Cut out the `metadata = tvm.ir.load_json(\"\"\"…\"\"\")` block (blanked, so line
    numbers stay), returning the remaining script and the JSON text."""
    m = _METADATA.search(text)
    if m is None:
        return text, None
    blank = "\n" * m.group(0).count("\n")
    return text[: m.start()] + blank + text[m.end():], m.group(1)


def _syntax_tree(text: str, source: SourceFile) -> Tree:
    parser, indenter, lock = _lark()
    with lock:
        indenter.last_newline = None
        try:
            return parser.parse(text if text.endswith("\n") else text + "\n")
        except DedentError:
            tok = indenter.last_newline
            line = tok.end_line if tok is not None else 1
            col = len(tok.value.rsplit("\n", 1)[-1]) + 1 if tok is not None else 1
            raise DiagnosticError("unindent does not match any outer indentation level",
                                  Span(source, line, col)) from None
        except UnexpectedInput as err:
            raise _syntax_error(err, source) from None


def _syntax_error(err: UnexpectedInput, source: SourceFile) -> DiagnosticError:
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream
        char = source.text[pos] if pos < len(source.text) else ""
        message = "unterminated string literal" if char in "\"'" else f"unexpected character `{char}`"
        return DiagnosticError(message, Span(source, err.line, err.column))
    if isinstance(err, UnexpectedToken):
        tok = err.token
        if tok.type == "_INDENT":
            return DiagnosticError("unexpected indent", Span(source, tok.end_line, tok.end_column))
        if tok.type in ("$END", "_DEDENT") or tok.line is None:
            lines = source.text.rstrip().split("\n")
            return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
        if tok.type == "_NL":
            return DiagnosticError("unexpected end of line", Span(source, tok.line, tok.column))
        if "_INDENT" in (err.expected or ()):
            return DiagnosticError("expected an indented block", Span(source, tok.line, tok.column))
        return DiagnosticError(f"unexpected `{tok.value}`",
                               Span(source, tok.line, tok.column, tok.end_line, tok.end_column))
    if isinstance(err, UnexpectedEOF):
        lines = source.text.rstrip().split("\n")
        return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
    return DiagnosticError(str(err))


# ----------------------------------------------------------------------------- shared evaluation


class _Dotted:
    """A dotted name rooted at a module alias (`R.nn.conv2d`), resolved when called."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Module:
    """`cls` / `Module` inside the module: attribute access gives a GlobalVar."""


class _Metadata:
    """The `metadata` name: `metadata["ir.GenericConst"][i]`."""


class _MetaList:
    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


_ALIASES = {"R": "R", "T": "T", "I": "I", "tvm": "tvm", "relax": "R", "tir": "T", "tirx": "T"}
_PY_CONSTS = {"none": None, "true": True, "false": False}


class _Builder:
    """Expression evaluation shared by the Relax and TIR builders."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        self.mb = mb
        self.scopes: list[dict[str, object]] = [{}]

    # -- scopes
    def span(self, node) -> Span:
        return self.mb.span(node)

    def error(self, message: str, node):
        raise DiagnosticError(message, self.span(node))

    def lookup(self, name: str, node):
        if keyword.iskeyword(name):  # a keyword where the contextual lexer wanted a name (Python rejects it)
            self.error(f"`{name}` is a Python keyword, not a name", node)
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.mb.globals_scope:
            return self.mb.globals_scope[name]
        if name in _ALIASES:
            return _Dotted(_ALIASES[name])
        if name == "metadata":
            return _Metadata()
        if name in ("range",):
            return _Dotted(name)
        return self.undefined(name, node)

    def undefined(self, name: str, node):
        self.error(f"undefined name `{name}`", node)

    def define(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    # -- expressions
    def eval(self, node):
        if isinstance(node, Token):
            if node.type == "NAME":
                return self.lookup(str(node), node)
            self.error(f"unexpected `{node}`", node)
        method = getattr(self, "e_" + node.data, None)
        if method is None:
            self.error("this kind of expression is not part of TVMScript", node)
        try:
            return method(node)
        except NotPrimError as err:  # located at the innermost expression that needed a TIR value
            self.error(str(err), node)

    def e_name(self, node):
        return self.lookup(str(node.children[0]), node)

    def e_number(self, node):
        text = str(node.children[0])
        if re.fullmatch(r"\d+", text):
            return int(text)
        return float(text)

    def e_string(self, node):
        import ast

        try:
            return "".join(ast.literal_eval(str(t)) for t in node.children)
        except (SyntaxError, ValueError) as err:  # e.g. a NUL byte or a bad escape inside the string
            self.error(f"invalid string literal ({_plain(err)})", node)

    def e_none(self, node):
        return None

    def e_true(self, node):
        return True

    def e_false(self, node):
        return False

    def e_tuple(self, node):
        return tuple(self.eval(c) for c in node.children)

    def e_empty_tuple(self, node):
        return ()

    def e_list(self, node):
        return [self.eval(c) for c in node.children if c is not None]

    def e_dict(self, node):
        out = {}
        for item in node.children:
            if item is None:
                continue
            out[self.eval(item.children[0])] = self.eval(item.children[1])
        return out

    def e_attribute(self, node):
        base_node, attr = node.children
        base = self.eval(base_node)
        name = str(attr)
        if isinstance(base, _Dotted):
            return _Dotted(f"{base.name}.{name}")
        if isinstance(base, _Module):
            return self.mb.global_var(name, node)
        return self.attribute(base, name, node)

    def attribute(self, base, name: str, node):
        self.error(f"`{name}` is not an attribute of this value", node)

    def e_subscript(self, node):
        base_node, subs = node.children
        base = self.eval(base_node)
        if isinstance(base, _Metadata):
            key = self.eval(subs.children[0])
            return _MetaList(key)
        if isinstance(base, _MetaList):
            return self.mb.metadata_ref(base.key, self.eval(subs.children[0]), node)
        return self.subscript(base, subs, node)

    def subscript(self, base, subs, node):
        self.error("this value cannot be subscripted", node)

    def call_args(self, node) -> tuple[list, dict, list]:
        """(positional values, keyword values, positional syntax nodes) of a call."""
        args_node = node.children[1]
        pos, kw, pos_nodes = [], {}, []
        if args_node is None:
            return pos, kw, pos_nodes
        as_written = self.keeps_arguments(node)
        for a in args_node.children:
            if isinstance(a, Tree) and a.data == "kwarg":
                kw[str(a.children[0])] = self.eval(a.children[1])
            elif isinstance(a, Tree) and a.data == "star_arg":
                value = self.eval(a.children[0])
                pos.extend(value)
                pos_nodes.extend([a] * len(value))
            else:
                value = self.eval(a)
                pos.append(value if as_written else self.argument(value, a))
                pos_nodes.append(a)
        return pos, kw, pos_nodes

    def keeps_arguments(self, node) -> bool:
        return True

    def argument(self, value, node):
        """A positional argument as the call takes it, right after it is evaluated."""
        return value

    def e_call(self, node):
        callee = self.eval(node.children[0])
        if isinstance(callee, _Dotted):
            handler = self.CALLS.get(callee.name)
            if handler is None:
                self.error(f"unknown name `{callee.name}`", node.children[0])
            pos, kw, pos_nodes = self.call_args(node)
            try:
                return handler(self, node, pos, kw)
            except TypeError as err:
                if "positional argument" in str(err) or "keyword argument" in str(err):
                    self.error(f"`{callee.name}`: {str(err).split(') ', 1)[-1]}", node)
                self.error(f"`{callee.name}`: invalid arguments ({_plain(err)})", node)
            except (ValueError, OverflowError) as err:  # a value the construct cannot hold (1e400 as int32...)
                self.error(f"`{callee.name}`: invalid value ({_plain(err)})", node)
        return self.call_value(callee, node)

    def call_value(self, callee, node):
        self.error("this value cannot be called", node)

    CALLS: dict = {}


# ----------------------------------------------------------------------------- TIR


_TIR_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
               "float32", "float64", "bfloat16", "handle")

# T.<name>(x, ...) intrinsics that keep the dtype of their first argument
_TIR_MATH = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
             "floor", "ceil", "round", "trunc", "fabs", "nearbyint", "sin", "cos", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "pow", "fmod", "atan2", "hypot", "copysign", "popcount",
             "clz", "likely")
# intrinsics whose result is bool
_TIR_PREDICATES = ("isnan", "isinf", "isfinite", "isnullptr")


def _as_prim(v, dtype: str | None = None) -> tir.PrimExpr:
    if isinstance(v, tir.PrimExpr):
        return v
    if isinstance(v, bool):
        return tir.IntImm(int(v), "bool")
    if isinstance(v, int):
        if dtype is None:
            dtype = "int32" if -(2**31) <= v < 2**31 else "int64"
        return tir.const(v, dtype)
    if isinstance(v, float):
        return tir.const(v, dtype if dtype and dtype.startswith(("float", "bfloat")) else "float32")
    if isinstance(v, str):
        return tir.StringImm(v)
    raise NotPrimError(f"expected a TIR expression, got {_describe_value(v)}")


class NotPrimError(TypeError):
    """A value used where TIR needs an expression; the parser turns it into a located diagnostic."""


def _describe_value(v) -> str:
    if isinstance(v, tuple):
        return "a tuple"
    if isinstance(v, _Dotted):
        return f"`{v.name}`"
    return f"a {type(v).__name__}" if not isinstance(v, (int, float, str)) else repr(v)


def _plain(err: Exception) -> str:
    """An exception's message for a diagnostic (Python's wording, without internals)."""
    text = str(err).split("\n")[0]
    return text[:200] or type(err).__name__


def _unify(a, b) -> tuple[tir.PrimExpr, tir.PrimExpr]:
    """Python literals take the other operand's dtype (TVM's implicit conversion)."""
    if not isinstance(a, tir.PrimExpr) and isinstance(b, tir.PrimExpr):
        return _as_prim(a, b.dtype), b
    if isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
        return a, _as_prim(b, a.dtype)
    a, b = _as_prim(a), _as_prim(b)
    if a.dtype != b.dtype:
        # an int32 constant meeting int64 is widened, as TVM does for index arithmetic
        if isinstance(b, tir.IntImm) and a.dtype.startswith("int") and b.dtype.startswith("int"):
            b = tir.IntImm(b.value, a.dtype)
        elif isinstance(a, tir.IntImm) and a.dtype.startswith("int") and b.dtype.startswith("int"):
            a = tir.IntImm(a.value, b.dtype)
        else:
            target = _promoted(a.dtype, b.dtype)
            if target is not None:
                a, b = _cast_to(a, target), _cast_to(b, target)
    return a, b


# TVM 0.27's bitwise and shift operators: the Python operator, and whether bools are allowed
_BIT_OPS = {"bitwise_and": (int.__and__, True), "bitwise_or": (int.__or__, True),
            "bitwise_xor": (int.__xor__, True), "shift_left": (int.__lshift__, False),
            "shift_right": (int.__rshift__, False)}
_INDEX_DTYPES = ("int32", "int64")


def _bit_op(op: str, a, b, span=None, fold: bool = True):
    """`a & b`, `a << b` ... as TVM's operators build them (tirx/op/op.cc): the operands'
    types matched, int32/int64 constants folded (TVM_INDEX_CONST_PROPAGATION), a shift by 0
    dropped; Python numbers on both sides stay Python numbers. `fold=False` is the node
    constructor (`T.BitwiseAnd`, `T.LShift`). Raises TypeError for non-integer operands."""
    py_op, bools = _BIT_OPS[op]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b)) and fold:
        return py_op(a, b)
    a, b = _unify(a, b)
    for v in (a, b):
        if not (v.dtype.startswith(("int", "uint")) or bools and v.dtype == "bool"):
            raise TypeError(f"`{op}` needs integer operands, got {v.dtype}")
    if fold and isinstance(b, tir.IntImm) and b.dtype in _INDEX_DTYPES and a.dtype in _INDEX_DTYPES:
        if op.startswith("shift") and not 0 <= b.value < int(a.dtype[3:]):
            raise TypeError(f"shift amount {b.value} must be non-negative and less than {a.dtype[3:]} "
                            f"for type {a.dtype}")
        if isinstance(a, tir.IntImm):
            return tir.IntImm(py_op(a.value, b.value), a.dtype, span=span)
        if op.startswith("shift") and b.value == 0:
            return a
    return tir.Call(a.dtype, f"tirx.{op}", [a, b], span=span)


def _bit_not(a, span=None):
    """`~a` (TVM's bitwise_neg: never folded)."""
    if not (a.dtype.startswith(("int", "uint")) or a.dtype == "bool"):
        raise TypeError(f"`bitwise_not` needs an integer operand, got {a.dtype}")
    return tir.Call(a.dtype, "tirx.bitwise_not", [a], span=span)


def _promoted(x: str, y: str) -> str | None:
    """TVM's BinaryOpMatchTypes: an integer meets a float as that float; the same kind
    meets the wider width. None when TVM has no rule (the operands stay as they are)."""
    def kind_bits(d):
        for kind in ("float", "int", "uint"):
            if d.startswith(kind) and d[len(kind):].isdigit():
                return kind, int(d[len(kind):])
        return None

    kx, ky = kind_bits(x), kind_bits(y)
    if kx is None or ky is None:
        return None
    if kx[0] == "float" and ky[0] != "float":
        return x
    if ky[0] == "float" and kx[0] != "float":
        return y
    if kx[0] == ky[0]:
        return x if kx[1] >= ky[1] else y
    return None


def _cast_to(e: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    if e.dtype == dtype:
        return e
    if isinstance(e, (tir.IntImm, tir.FloatImm)):
        return tir.const(e.value, dtype)
    return tir.Cast(dtype, e)


_PY_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "floormod",
              "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_PY_FOLD = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "//": lambda a, b: a // b, "%": lambda a, b: a % b, "/": lambda a, b: a / b}


def _identity_fold(op: str, a, b):
    """TVM's TryConstFold for one constant operand: `x + 0`, `x * 1`, `x // 1` are x, `x * 0`
    is 0, `x % 1` is 0 (TVM's operators fold them as the script is evaluated). None if no rule."""
    a_const, b_const = type(a) in (tir.IntImm, tir.FloatImm), type(b) in (tir.IntImm, tir.FloatImm)
    if a_const == b_const or a.dtype != b.dtype:
        return None
    av, bv = (a.value if a_const else None), (b.value if b_const else None)
    index_op = op in ("floordiv", "floormod")
    if index_op and type(a if a_const else b) is not tir.IntImm:
        return None
    if op == "add" and 0 in (av, bv) or op == "sub" and bv == 0:
        return b if av == 0 else a
    if op == "mul" and (av in (0, 1) or bv in (0, 1)):
        return (b if av == 1 else a) if a_const else (a if bv == 1 else b)
    if op in ("div", "floordiv", "floormod") and av == 0:
        return a
    if op in ("div", "floordiv") and bv == 1:
        return a
    if op == "floormod" and bv == 1:
        return tir.IntImm(0, a.dtype)
    return None


class _TirBuilder(_Builder):
    """Builds one PrimFunc."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        super().__init__(mb)
        self.loop_extents: dict[int, tir.PrimExpr] = {}
        self.symbolic_dtype = "int64"

    def undefined(self, name: str, node):
        if name in self.mb.type_vars:
            var = tir.Var(name, self.mb.type_vars[name], span=self.span(node))
            self.scopes[0][name] = var
            return var
        return super().undefined(name, node)

    # -- arithmetic on TIR values (Python literals fold)
    def _chain(self, node):
        items = node.children
        value = self.eval(items[0])
        for i in range(1, len(items), 2):
            op = str(items[i])
            rhs = self.eval(items[i + 1])
            value = self.arith(op, value, rhs, node)
        return value

    def arith(self, op: str, a, b, node):
        if (isinstance(a, (int, float)) and isinstance(b, (int, float)) and op in _PY_FOLD
                and not isinstance(a, bool) and not isinstance(b, bool)):
            if op in ("//", "%", "/") and b == 0:
                self.error("division by zero", node)
            return _PY_FOLD[op](a, b)
        if op not in _PY_BINOPS:
            self.error(f"operator `{op}` is not supported in TIR", node)
        if op in ("//", "%", "/") and isinstance(b, (tir.IntImm, tir.FloatImm, int, float)) and \
                getattr(b, "value", b) == 0:
            self.error("division by zero", node)
        try:
            a, b = _unify(a, b)
            folded = _identity_fold(_PY_BINOPS[op], a, b)
            return folded if folded is not None else tir.BinOp(_PY_BINOPS[op], a, b, span=self.span(node))
        except TypeError as err:
            self.error(str(err), node)

    e_arith = e_term = e_comparison = _chain

    def e_shift(self, node):
        items = node.children
        value = self.eval(items[0])
        for i in range(1, len(items), 2):
            op = "shift_left" if str(items[i]) == "<<" else "shift_right"
            value = self.bit_op(op, value, self.eval(items[i + 1]), node)
        return value

    def bit_op(self, op: str, a, b, node, fold: bool = True):
        try:
            return _bit_op(op, a, b, self.span(node), fold)
        except TypeError as err:
            self.error(str(err), node)

    def _bitwise(self, op):
        def handler(node):
            vals = [self.eval(c) for c in node.children]
            value = vals[0]
            for v in vals[1:]:
                value = self.bit_op(op, value, v, node)
            return value
        return handler

    def e_bitor_chain(self, node):
        return self._bitwise("bitwise_or")(node)

    def e_bitxor_chain(self, node):
        return self._bitwise("bitwise_xor")(node)

    def e_bitand_chain(self, node):
        return self._bitwise("bitwise_and")(node)

    def e_invert(self, node):
        v = self.eval(node.children[0])
        if isinstance(v, int) and not isinstance(v, bool):
            return ~v  # a Python number, as TVM's parser evaluates it
        return _bit_not(_as_prim(v), self.span(node))

    def e_unary(self, node):
        op, operand = node.children
        v = self.eval(operand)
        if str(op) == "+":
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        if isinstance(v, tir.IntImm):
            return tir.IntImm(-v.value, v.dtype)
        if isinstance(v, tir.FloatImm):
            return tir.FloatImm(-v.value, v.dtype)
        v = _as_prim(v)
        if v.dtype.startswith("uint"):
            self.error(f"cannot negate a {v.dtype} value (TVM makes no -1 of an unsigned type)", node)
        # TVM's PrimExpr.__neg__: x * -1
        return tir.BinOp("mul", v, tir.const(-1, v.dtype), span=self.span(node))

    def e_power(self, node):
        base, exp = node.children
        a, b = _unify(self.eval(base), self.eval(exp))
        return tir.Call(a.dtype, "tirx.pow", [a, b], span=self.span(node))

    def e_and_chain(self, node):
        vals = [self.eval(c) for c in node.children]
        value = _as_prim(vals[0])
        for v in vals[1:]:
            value = tir.BinOp("and", value, _as_prim(v), span=self.span(node))
        return value

    def e_or_chain(self, node):
        vals = [self.eval(c) for c in node.children]
        value = _as_prim(vals[0])
        for v in vals[1:]:
            value = tir.BinOp("or", value, _as_prim(v), span=self.span(node))
        return value

    def e_not_(self, node):
        v = self.eval(node.children[0])
        if isinstance(v, bool):
            return not v
        return tir.Not(_as_prim(v), span=self.span(node))

    # -- buffers
    def subscript(self, base, subs, node):
        items = subs.children
        if isinstance(base, tir.Buffer):
            if any(isinstance(i, Tree) and i.data == "slice" for i in items):
                return tir.BufferRegion(base, [self.range_of(i) for i in items], span=self.span(node))
            return tir.BufferLoad(base, self.buffer_indices(items), span=self.span(node))
        if isinstance(base, _Dotted) and base.name == "T.let":
            return ("let", self.eval(items[0]))
        if isinstance(base, _Dotted) and base.name in ("T.Buffer",):
            return self.make_buffer(node, [self.eval(i) for i in items], {}, "")
        return super().subscript(base, subs, node)

    def buffer_indices(self, items) -> list:
        values = [self.eval(i) for i in items]
        if len(values) == 1 and values[0] == ():
            return []  # `A[()]`: the element of a 0-d buffer
        return [_as_prim(v, "int32") for v in values]

    def range_of(self, item) -> tir.Range:
        if isinstance(item, Tree) and item.data == "slice":
            lo, hi, step = item.children
            if step is not None:
                self.error("strided regions are not supported", item)
            lo_v = _as_prim(self.eval(lo) if lo is not None else 0)
            hi_v = self.eval(hi)
            lo_v, hi_v = _unify(lo_v, hi_v)
            extent = self.simplify_sub(hi_v, lo_v)
            return tir.Range(lo_v, extent)
        v = _as_prim(self.eval(item), "int32")
        return tir.Range(v, tir.const(1, v.dtype))

    @staticmethod
    def simplify_sub(hi, lo):
        if isinstance(lo, tir.IntImm) and lo.value == 0:
            return hi
        if isinstance(hi, tir.IntImm) and isinstance(lo, tir.IntImm):
            return tir.IntImm(hi.value - lo.value, hi.dtype)
        if isinstance(hi, tir.BinOp) and hi.op == "add":
            from ..ir.node_structural import node_equal

            if hi.a is lo or node_equal(hi.a, lo):
                return hi.b
        return tir.BinOp("sub", hi, lo)

    def attribute(self, base, name: str, node):
        if isinstance(base, tir.Buffer):
            if name == "data":
                return base.data
            if name == "shape":
                return base.shape
            if name == "dtype":
                return base.dtype
            if name == "view":
                return ("view", base)
        if isinstance(base, tuple) and len(base) == 2 and base[0] == "handle_type" and name == "ty":
            return base[1]
        return super().attribute(base, name, node)

    def call_value(self, callee, node):
        if isinstance(callee, tuple) and callee and callee[0] == "view":
            pos, kw, _ = self.call_args(node)
            src = callee[1]
            shape = pos[0] if isinstance(pos[0], (tuple, list)) else pos
            return tir.Buffer(src.name, [_as_prim(d, "int32") for d in shape], kw.get("dtype", src.dtype),
                              data=src.data, span=self.span(node))
        return super().call_value(callee, node)

    def dtype_of(self, value, node) -> str:
        if isinstance(value, str) and (is_valid_dtype(value) or value == "void"):
            return value
        if isinstance(value, str):
            self.error(f"unknown data type `{value}`", node)
        if isinstance(value, _Dotted) and value.name.startswith("T.") and is_valid_dtype(value.name[2:]):
            return value.name[2:]
        self.error("expected a data type", node)

    def shape_of(self, value, node) -> tuple:
        if isinstance(value, (int, tir.PrimExpr)):
            value = (value,)
        if not isinstance(value, (tuple, list)):
            self.error("expected a shape (a tuple of dimensions)", node)
        dims = []
        for d in value:
            if isinstance(d, str):
                d = self.lookup_or_symbol(d, node) if d.isidentifier() else self.string_dim(d, node)
            if not isinstance(d, (int, tir.PrimExpr)) or isinstance(d, bool):
                self.error("a buffer dimension must be an integer expression", node)
            dims.append(_as_prim(d, "int32"))
        return tuple(dims)

    def string_dim(self, text: str, node):
        """A dimension written as a string, `"n * 4"` (TVM prints a signature's compound
        symbolic dims that way): parsed and evaluated like the expression it spells."""
        try:
            tree = _syntax_tree(f"_ = {text}\n", SourceFile("<dim>", f"_ = {text}\n"))
        except DiagnosticError:
            self.error(f"`\"{text}\"` is not a shape expression", node)
        return self.eval(tree.children[0].children[0].children[1])

    def lookup_or_symbol(self, name: str, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        var = tir.Var(name, "int32", span=self.span(node))
        self.scopes[0][name] = var
        return var

    def make_buffer(self, node, pos, kw, name: str) -> tir.Buffer:
        shape = self.shape_of(pos[0] if pos else kw.pop("shape"), node)
        dtype = self.dtype_of(pos[1] if len(pos) > 1 else kw.pop("dtype", "float32"), node)
        data = pos[2] if len(pos) > 2 else kw.pop("data", None)
        strides = kw.pop("strides", None) or ()
        elem_offset = kw.pop("elem_offset", None)
        scope = kw.pop("scope", "global")
        align = kw.pop("align", 0) or 0
        offset_factor = kw.pop("offset_factor", 0) or 0
        buffer_type = kw.pop("buffer_type", "default")
        axis_separators = kw.pop("axis_separators", None) or ()
        if kw:
            self.error(f"unknown buffer argument `{next(iter(kw))}`", node)
        return tir.Buffer(name, shape, dtype, data=data,
                          strides=[_as_prim(s, "int32") for s in strides],
                          elem_offset=None if elem_offset is None else _as_prim(elem_offset, "int32"),
                          scope=scope, align=align, offset_factor=offset_factor,
                          buffer_type="" if buffer_type == "default" else buffer_type,
                          axis_separators=axis_separators, span=self.span(node))

    # -- T.<name>(...) calls
    def t_dtype_const(self, node, pos, kw, dtype):
        if not pos:
            if kw.get("is_size_var"):
                return ("new_var", dtype)
            return ("new_var", dtype)
        v = pos[0]
        if isinstance(v, str):
            v = float(v)
        if isinstance(v, tir.PrimExpr):
            if v.dtype == dtype:
                return v
            if isinstance(v, (tir.IntImm, tir.FloatImm)):
                return tir.const(v.value, dtype)
            return tir.Cast(dtype, v, span=self.span(node))
        return tir.const(v, dtype)

    def t_handle(self, node, pos, kw):
        if not pos and not kw:
            return ("handle_type", "handle")
        elem = pos[0] if pos else kw.get("dtype", "void")
        scope = pos[1] if len(pos) > 1 else kw.get("storage_scope", "global")
        return ("handle_type", ("ptr", elem, scope))

    def t_intrin(self, name):
        def handler(self, node, pos, kw):
            args = [_as_prim(a) for a in pos]
            if len(args) == 2:
                args = list(_unify(*args))
            dtype = "bool" if name in _TIR_PREDICATES else args[0].dtype
            return tir.Call(dtype, f"tirx.{name}", args, span=self.span(node))
        return handler

    def t_minmax(self, op):
        def handler(self, node, pos, kw):
            a, b = _unify(pos[0], pos[1])
            return tir.BinOp(op, a, b, span=self.span(node))
        return handler

    def t_bit_op(self, op: str, fold: bool):
        def handler(self, node, pos, kw):
            if len(pos) != 2 or kw:
                self.error(f"`T.{op}` takes two operands", node)
            a, b = (_as_prim(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in pos)
            return self.bit_op(op, a, b, node, fold)
        return handler

    def t_bit_not(self, node, pos, kw):
        if len(pos) != 1 or kw:
            self.error("`T.bitwise_not` takes one operand", node)
        try:
            return _bit_not(_as_prim(pos[0]), self.span(node))
        except TypeError as err:
            self.error(str(err), node)

    def t_if_then_else(self, node, pos, kw):
        cond = _as_prim(pos[0])
        t, f = _unify(pos[1], pos[2])
        return tir.Call(t.dtype, "tirx.if_then_else", [cond, t, f], span=self.span(node))

    def t_select(self, node, pos, kw):
        t, f = _unify(pos[1], pos[2])
        return tir.Select(_as_prim(pos[0]), t, f, span=self.span(node))

    def t_cast(self, node, pos, kw):
        # TVM spells it T.Cast("int32", x); the older T.cast(x, "int32") is accepted too
        if isinstance(pos[0], str):
            dtype, value = pos[0], pos[1]
        else:
            value, dtype = pos[0], pos[1]
        return tir.Cast(self.dtype_of(dtype, node), _as_prim(value), span=self.span(node))

    def t_call_with_dtype(self, name):
        """`T.tvm_struct_get(args, 0, 13, "int32")`: the last argument is the result dtype."""
        def handler(self, node, pos, kw):
            dtype = self.ret_dtype(pos[-1], node)
            return tir.Call(dtype, f"tirx.{name}", [_as_prim(a) for a in pos[:-1]], span=self.span(node),
                            type_annotation=self.ret_pointer(pos[-1]))
        return handler

    @staticmethod
    def ret_pointer(value) -> tir.PointerType | None:
        if isinstance(value, tuple) and value and value[0] == "ptr":
            return tir.PointerType(value[1], value[2])
        return None

    def ret_dtype(self, value, node):
        if isinstance(value, tuple) and value and value[0] == "ptr":
            return "handle"
        if value == "handle" or isinstance(value, tuple):
            return "handle"
        return self.dtype_of(value, node)

    def t_reinterpret(self, node, pos, kw):
        dtype = self.ret_dtype(pos[0], node)
        return tir.Call(dtype, "tirx.reinterpret", [_as_prim(pos[1])], span=self.span(node),
                        type_annotation=self.ret_pointer(pos[0]))

    def t_call_extern(self, name):
        def handler(self, node, pos, kw):
            dtype = self.dtype_of(pos[0], node)
            return tir.Call(dtype, f"tirx.{name}", [_as_prim(a) for a in pos[1:]], span=self.span(node))
        return handler

    def t_handle_intrin(self, name):
        def handler(self, node, pos, kw):
            return tir.Call("handle", f"tirx.{name}", [_as_prim(a) for a in pos], span=self.span(node))
        return handler

    def t_target(self, node, pos, kw):
        return ("target", pos[0] if pos else kw)

    def t_ramp(self, node, pos, kw):
        base, stride = _unify(pos[0], pos[1])
        return tir.Ramp(base, stride, int(pos[2]), span=self.span(node))

    def t_broadcast(self, node, pos, kw):
        return tir.Broadcast(_as_prim(pos[0]), int(pos[1]), span=self.span(node))

    def t_let_expr(self, node, pos, kw):
        self.error("`T.Let` expressions are not supported", node)

    def t_statement_only(self, node, pos, kw):
        self.error("this `T.` form is a statement and cannot be used as a value", node)

    def t_buffer(self, node, pos, kw):
        return self.make_buffer(node, list(pos), dict(kw), "")

    # -- functions and statements
    BUFFER_MAKERS = ("T.Buffer", "T.match_buffer", "T.decl_buffer", "T.alloc_buffer", "T.sblock_alloc_buffer",
                     "T.buffer_decl")

    def build_func(self, funcdef, options: dict) -> tir.PrimFunc:
        name_tok, params_node, ret_node, suite = funcdef.children
        self.func_name = str(name_tok)
        self.func_attrs: dict = {}
        self.root_allocs: list[tir.Buffer] = []
        self.block_stack: list[dict] = []
        self.has_blocks = False
        self.forward_buffers: dict[str, tir.Buffer] = {}
        param_nodes = list(params_node.children) if params_node is not None else []
        # scalar parameters first: a buffer's shape may name one that comes later (`"n"`)
        scalars: dict[int, tir.Var] = {}
        for i, p in enumerate(param_nodes):
            pname_tok, ann = p.children
            if ann is None:
                self.error(f"parameter `{pname_tok}` of a PrimFunc needs a type annotation", p)
            if self.dotted_callee(ann) not in self.BUFFER_MAKERS:
                dtype, ptr = self.var_type(self.eval(ann), ann)
                scalars[i] = tir.Var(str(pname_tok), dtype, ptr, span=self.span(p))
                self.define(str(pname_tok), scalars[i])
        params, self.buffer_map = [], []
        for i, p in enumerate(param_nodes):
            if i in scalars:
                params.append(scalars[i])
                continue
            pname = str(p.children[0])
            buf = self.named_buffer(p.children[1], pname)
            handle = tir.Var(f"{pname}_handle", "handle", span=self.span(p))
            params.append(handle)
            self.buffer_map.append((handle, buf))
            self.define(pname, buf)
        ret_type = None
        if ret_node is not None:
            ret_type = self.var_type(self.eval(ret_node), ret_node)[0]
        self.scopes.append({})
        body_stmts = self.stmt_list(_ModuleBuilder.suite_stmts(suite), top=True)
        self.scopes.pop()
        body = tir.seq(body_stmts) if body_stmts else tir.Evaluate(tir.IntImm(0))
        is_root = (isinstance(body, tir.SBlockRealize) and body.block.name == "root" and not body.iter_values)
        if (self.has_blocks or self.root_allocs) and not is_root:
            body = tir.SBlockRealize((), tir.IntImm(1, "bool"),
                                     tir.SBlock("root", (), (), (), body, alloc_buffers=self.root_allocs))
        if self.func_attrs.get("global_symbol") == self.func_name and not options.get("private"):
            del self.func_attrs["global_symbol"]  # implied by a public function, as TVM prints it
        if options.get("s_tir") or self.has_blocks:
            # TVM records structured TIR (sblocks) as the `s_tir` attribute
            self.func_attrs["s_tir"] = True
        attrs = tuple(sorted(self.func_attrs.items()))
        position = {id(p): i for i, p in enumerate(params)}
        self.buffer_map.sort(key=lambda pair: position.get(id(pair[0]), len(params)))
        return tir.PrimFunc(params, body, ret_type, self.buffer_map, attrs, private=options.get("private", False),
                            span=self.span(funcdef))

    def var_type(self, value, node) -> tuple[str, tir.PointerType | None]:
        if isinstance(value, _Dotted) and value.name.startswith("T."):
            dt = value.name[2:]
            if dt == "handle" or is_valid_dtype(dt):
                return dt, None
        if isinstance(value, tuple) and value and value[0] == "handle_type":
            ty = value[1]
            if isinstance(ty, tuple):
                return "handle", tir.PointerType(ty[1], ty[2])
            return "handle", None
        if isinstance(value, tuple) and value and value[0] == "new_var":
            return value[1], None
        if isinstance(value, str) and is_valid_dtype(value):
            return value, None
        self.error("expected a TIR type such as `T.int32` or `T.handle`", node)

    def dotted_callee(self, node) -> str | None:
        if isinstance(node, Tree) and node.data in ("call", "subscript"):
            callee = node.children[0]
            try:
                v = self.eval(callee)
            except DiagnosticError:
                return None
            if isinstance(v, _Dotted):
                return v.name
        return None

    def named_buffer(self, node, name: str) -> tir.Buffer | None:
        """The buffer built by `T.Buffer(...)`-like syntax, named `name`; None otherwise."""
        callee = self.dotted_callee(node)
        if callee not in self.BUFFER_MAKERS:
            return None
        if node.data == "subscript":
            pos = [self.eval(i) for i in node.children[1].children]
            kw = {}
        else:
            pos, kw, _ = self.call_args(node)
        if callee == "T.match_buffer" and pos and isinstance(pos[0], (tir.BufferRegion, tir.Var)):
            return None
        return self.make_buffer(node, pos, dict(kw), name)

    def stmt_list(self, nodes: list, top: bool = False) -> list:
        out: list = []
        for i, node in enumerate(nodes):
            result = self.stmt(node, nodes[i + 1:], top)
            if isinstance(result, _Rest):
                out.append(result.stmt)
                break
            if result is not None:
                out.append(result)
        return out

    def rest(self, nodes, top=False) -> tir.Stmt | None:
        """The statements after a scope-opening one: its body (None when nothing follows,
        as TVM 0.27's flat statements have no body)."""
        body = self.stmt_list(nodes, top)
        return tir.seq(body) if body else None

    def suite_body(self, nodes) -> tir.Stmt:
        body = self.stmt_list(nodes)
        return tir.seq(body) if body else tir.Evaluate(tir.IntImm(0))

    def stmt(self, node, rest: list, top: bool):
        kind = node.data
        try:
            if kind == "simple_stmt":
                return self.simple(node.children[0], rest, top)
            return getattr(self, "s_" + kind, self.s_unknown)(node, rest, top)
        except NotPrimError as err:
            self.error(str(err), node)

    def s_unknown(self, node, rest, top):
        self.error("this statement is not part of TIR", node)

    def simple(self, node, rest, top):
        kind = node.data
        if kind == "pass_stmt":
            return None
        if kind == "return_stmt":
            value = node.children[0]
            return tir.Return(_as_prim(self.eval(value)) if value is not None else tir.IntImm(0),
                              span=self.span(node))
        if kind == "assert_stmt":
            return self.s_assert(node, rest, top)
        if kind == "expr_stmt":
            return self.s_expr(node, rest, top)
        if kind == "assign":
            return self.s_assign(node, rest, top)
        if kind == "ann_assign":
            return self.s_ann_assign(node, rest, top)
        self.error("this statement is not part of TIR", node)

    def s_assert(self, node, rest, top):
        cond = _as_prim(self.eval(node.children[0]))
        msg = self.eval(node.children[1]) if node.children[1] is not None else ""
        if isinstance(msg, tuple) and len(msg) == 2 and isinstance(msg[0], str):
            kind, parts = msg[0], msg[1]
        else:  # `assert c, "message"` is TVM's ("RuntimeError", ["message"])
            kind, parts = "RuntimeError", [msg]
        parts = [_as_prim(p) for p in parts]
        self.scopes.append({})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.AssertStmt(cond, kind, parts, body, span=self.span(node)))

    def s_expr(self, node, rest, top):
        expr = node.children[0]
        callee = self.dotted_callee(expr)
        if callee == "T.func_attr":
            if not top:
                self.error("`T.func_attr` must be at the top of the function body", node)
            value = self.eval(expr.children[1].children[0])
            if not isinstance(value, dict):
                self.error("`T.func_attr` takes a dict", expr)
            self.func_attrs.update(value)
            return None
        if callee in ("T.reads", "T.writes", "T.where", "T.sblock_attr", "T.block_attr"):
            if not self.block_stack:
                self.error(f"`{callee}` is only allowed inside `T.sblock`", node)
            ctx = self.block_stack[-1]
            pos, kw, _ = self.call_args(expr)
            if callee == "T.where":
                ctx["where"] = _as_prim(pos[0])
            elif callee in ("T.sblock_attr", "T.block_attr"):
                ctx["annotations"].update(pos[0] if pos else kw)
            else:
                regions = []
                for v in pos:
                    for r in (v if isinstance(v, (list, tuple)) else [v]):
                        regions.append(self.as_region(r, expr))
                ctx["reads" if callee == "T.reads" else "writes"] = regions
            return None
        if callee == "T.attr":
            pos, kw, _ = self.call_args(expr)
            node_v, key, value = self.attr_args(pos, expr)
            self.scopes.append({})
            body = self.rest(rest, top)
            self.scopes.pop()
            return _Rest(tir.AttrStmt(node_v, key, value, body, span=self.span(node)))
        if callee == "T.evaluate":
            pos, _, _ = self.call_args(expr)
            return tir.Evaluate(_as_prim(pos[0]), span=self.span(node))
        value = self.eval(expr)
        if isinstance(value, (tir.PrimExpr, int)):
            return tir.Evaluate(_as_prim(value), span=self.span(node))
        self.error("this expression has no effect", node)

    def attr_args(self, pos, node):
        if len(pos) == 1 and isinstance(pos[0], dict):
            # T.attr({"compute_scope": "x"}): a dict of one attribute on no node
            (key, value), = pos[0].items()
            return tir.IntImm(0), key, _as_prim(value) if not isinstance(value, str) else tir.StringImm(value)
        if len(pos) != 3:
            self.error("`T.attr` takes (node, key, value)", node)
        node_v, key, value = pos
        if isinstance(node_v, (int, float)):
            node_v = _as_prim(node_v)
        value = _as_prim(value) if not isinstance(value, tir.PrimExpr) else value
        return node_v, key, value

    def as_region(self, value, node) -> tir.BufferRegion:
        if isinstance(value, tir.BufferRegion):
            return value
        if isinstance(value, tir.BufferLoad):
            return tir.BufferRegion(value.buffer, [tir.Range(i, tir.const(1, i.dtype)) for i in value.indices])
        if isinstance(value, tir.Buffer):
            return tir.BufferRegion(value, [tir.Range(tir.const(0, d.dtype), d) for d in value.shape])
        self.error("expected a buffer region such as `A[i, 0:8]`", node)

    def s_assign(self, node, rest, top):
        target, value_node = node.children
        if isinstance(target, Tree) and target.data == "subscript":
            buf = self.eval(target.children[0])
            if not isinstance(buf, tir.Buffer):
                self.error("only buffers can be stored to", target)
            indices = self.buffer_indices(target.children[1].children)
            value = _as_prim(self.eval(value_node), buf.dtype)
            if isinstance(value, (tir.IntImm, tir.FloatImm)) and value.dtype != buf.dtype and \
                    not isinstance(self.eval(value_node), tir.PrimExpr):
                value = tir.const(value.value, buf.dtype)
            return tir.BufferStore(buf, value, indices, span=self.span(node))
        if isinstance(target, Tree) and target.data == "target_tuple":
            callee = self.dotted_callee(value_node)
            if callee != "T.axis.remap":
                self.error("only `T.axis.remap` can assign several names", node)
            names = [str(t.children[0]) for t in target.children if t is not None]
            pos, _, _ = self.call_args(value_node)
            if len(pos) != 2 or not isinstance(pos[0], str) or not isinstance(pos[1], (list, tuple)):
                self.error("`T.axis.remap` takes the kind letters and a list of loop variables", value_node)
            kinds, loops = pos
            if len(kinds) != len(names) or len(loops) != len(names):
                self.error("`T.axis.remap` needs one kind letter and one loop variable per name", value_node)
            for name, kind, loop in zip(names, kinds, loops, strict=True):
                self.remap_one(name, kind, loop, value_node, node)
            return None
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        name = str(target.children[0])
        callee = self.dotted_callee(value_node)
        if callee == "T.axis.remap":  # one variable: `vi = T.axis.remap("S", [i])`
            pos, _, _ = self.call_args(value_node)
            if len(pos) != 2 or not isinstance(pos[0], str) or not isinstance(pos[1], (list, tuple)):
                self.error("`T.axis.remap` takes the kind letters and a list of loop variables", value_node)
            kinds, loops = pos
            if len(kinds) != 1 or len(loops) != 1:
                self.error("`T.axis.remap` needs one kind letter and one loop variable per name", value_node)
            self.remap_one(name, kinds, loops[0], value_node, node)
            return None
        if callee in ("T.axis.spatial", "T.axis.reduce", "T.axis.scan", "T.axis.opaque", "T.axis.S", "T.axis.R"):
            pos, kw, _ = self.call_args(value_node)
            dom, value = pos[0], _as_prim(pos[1], "int32")
            if isinstance(dom, (tuple, list)):
                lo, hi = _unify(dom[0], dom[1])
                rng = tir.Range(lo, self.simplify_sub(hi, lo))
            else:  # TVM: a plain number is an int32 extent, whatever the binding's dtype
                ext = _as_prim(dom, "int32")
                rng = tir.Range(tir.const(0, ext.dtype), ext)
            kind = {"spatial": tir.DATA_PAR, "S": tir.DATA_PAR, "reduce": tir.COMM_REDUCE, "R": tir.COMM_REDUCE,
                    "scan": tir.ORDERED, "opaque": tir.OPAQUE}[callee.rsplit(".", 1)[1]]
            # TVM's ir_builder axis: the variable is as wide as the widest of the domain and
            # `dtype` (int32 by default); the binding is kept as written
            dtype = str(kw.get("dtype", "int32"))
            bits = max(_int_bits(rng.min.dtype), _int_bits(rng.extent.dtype), _int_bits(dtype))
            self.add_iter(name, kind, rng, value, node, var_dtype=f"{dtype.rstrip('0123456789')}{bits}")
            return None
        buf = self.named_buffer(value_node, name)
        if buf is not None:
            if callee in ("T.sblock_alloc_buffer", "T.alloc_buffer"):
                (self.block_stack[-1]["alloc"] if self.block_stack else self.root_allocs).append(buf)
                self.define(name, buf)
                return None
            if callee == "T.decl_buffer":
                earlier = self.forward_buffers.get(name)
                if earlier is not None and _same_layout(earlier, buf):
                    # TVM prints a buffer used before its declaration as `A = T.Buffer(...)` at
                    # the first use, and `A = T.decl_buffer(...)` again where it is declared:
                    # one buffer, so the declaration takes the earlier object
                    earlier.data = buf.data
                    buf = earlier
                self.scopes.append({name: buf})
                body = self.rest(rest, top)
                self.scopes.pop()
                return _Rest(tir.DeclBuffer(buf, body, span=self.span(node)))
            if callee == "T.match_buffer":
                self.error("`T.match_buffer` of a parameter belongs in the signature", node)
            self.define(name, buf)  # T.Buffer(...) in a body names a buffer without declaring it
            self.forward_buffers[name] = buf
            return None
        if callee == "T.match_buffer" and top and not self.block_stack:
            # the older spelling of a buffer parameter: `A = T.match_buffer(a, (n, 4))`
            pos, kw, _ = self.call_args(value_node)
            handle = pos[0]
            if not (isinstance(handle, tir.Var) and handle.dtype == "handle"):
                self.error("`T.match_buffer` at the top of a function takes a handle parameter", value_node)
            if any(h is handle for h, _ in self.buffer_map):
                self.error(f"parameter `{handle.name}` is matched twice", value_node)
            buf = self.make_buffer(value_node, list(pos[1:]), dict(kw), name)
            self.buffer_map.append((handle, buf))
            self.define(name, buf)
            return None
        if callee == "T.match_buffer":
            pos, kw, _ = self.call_args(value_node)
            region = self.as_region(pos[0], value_node)
            buf = self.make_buffer(value_node, list(pos[1:]), dict(kw), name)
            if not self.block_stack:
                self.error("`T.match_buffer` of a region is only allowed inside `T.sblock`", node)
            self.block_stack[-1]["match"].append(tir.MatchBufferRegion(buf, region))
            self.define(name, buf)
            return None
        value = self.eval(value_node)
        if isinstance(value, tir.Buffer):  # A_1 = A.view(...): a DeclBuffer sharing A's data
            buf = tir.Buffer(name, value.shape, value.dtype, data=value.data, span=value.span)
            self.scopes.append({name: buf})
            body = self.rest(rest, top)
            self.scopes.pop()
            return _Rest(tir.DeclBuffer(buf, body, span=self.span(node)))
        if isinstance(value, tuple) and value and value[0] == "new_var":
            self.define(name, tir.Var(name, value[1], span=self.span(node)))
            return None
        return self.let(name, _as_prim(value), rest, top, node)

    def remap_one(self, name, kind, loop, value_node, node):
        extent = self.loop_extents.get(id(loop))
        if extent is None:
            self.error(f"`T.axis.remap` needs loop variables; `{getattr(loop, 'name', loop)}` is not one", value_node)
        if kind not in ("S", "R", "O"):
            self.error(f"unknown iteration kind `{kind}` (S spatial, R reduce, O ordered)", value_node)
        self.add_iter(name, {"S": tir.DATA_PAR, "R": tir.COMM_REDUCE, "O": tir.ORDERED}[kind],
                      tir.Range(extent[0], extent[1]), loop, node)

    def let(self, name, value, rest, top, node, dtype=None):
        var = tir.Var(name, dtype or value.dtype, span=self.span(node))
        self.scopes.append({name: var})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.LetStmt(var, value, body, span=self.span(node)))

    def s_ann_assign(self, node, rest, top):
        target, ann, value_node = node.children
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        ann_v = self.eval(ann)
        if isinstance(ann_v, tuple) and ann_v and ann_v[0] == "let":
            ann_v = ann_v[1]
        dtype, ptr = self.var_type(ann_v, ann)
        raw = self.eval(value_node)
        value = _as_prim(raw, dtype)
        if isinstance(raw, tir.PrimExpr) and raw.dtype != dtype:
            self.error(f"the value has dtype {raw.dtype}, but the variable is declared {dtype}", value_node)
        name = str(target.children[0])
        var = tir.Var(name, dtype, ptr, span=self.span(node))
        self.scopes.append({name: var})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.LetStmt(var, value, body, span=self.span(node)))

    def add_iter(self, name, kind, rng, value, node, var_dtype: str | None = None):
        if not self.block_stack:
            self.error("`T.axis` is only allowed inside `T.sblock`", node)
        ctx = self.block_stack[-1]
        var = tir.Var(name, var_dtype or _as_prim(value).dtype, span=self.span(node))
        ctx["iter_vars"].append(tir.IterVar(var, rng, kind))
        ctx["iter_values"].append(_as_prim(value))
        self.define(name, var)

    # -- compound statements
    LOOP_KINDS = {"range": "serial", "T.serial": "serial", "T.parallel": "parallel",
                  "T.vectorized": "vectorized", "T.unroll": "unroll", "T.thread_binding": "thread_binding"}

    def s_for_stmt(self, node, rest, top):
        target, iter_node, suite = node.children
        names = ([str(t.children[0]) for t in target.children if t is not None]
                 if target.data == "target_tuple" else [str(target.children[0])])
        callee = self.dotted_callee(iter_node)
        pos, kw, _ = self.call_args(iter_node) if callee else ([], {}, [])
        if callee == "T.grid":
            if len(pos) != len(names):
                self.error(f"`T.grid` has {len(pos)} extents for {len(names)} loop variables", node)
            loops = [(n, 0, e, "serial", None, {}) for n, e in zip(names, pos, strict=True)]
        elif callee in self.LOOP_KINDS:
            if len(names) != 1:
                self.error("this loop binds one variable", target)
            if not pos:
                self.error("the loop needs an extent", iter_node)
            lo, hi = (0, pos[0]) if len(pos) == 1 else (pos[0], pos[1])
            loops = [(names[0], lo, hi, self.LOOP_KINDS[callee], kw.get("thread"), kw.get("annotations") or {})]
        else:
            if callee is not None and callee.startswith("T.") and callee not in self.CALLS:
                self.error(f"unknown name `{callee}`", iter_node.children[0])
            self.error("a TIR loop iterates over `range`, `T.grid`, `T.serial`, `T.parallel`, `T.vectorized`, "
                       "`T.unroll` or `T.thread_binding`", iter_node)
        made = []
        self.scopes.append({})
        for name, lo, hi, kind, thread, ann in loops:
            lo_p, hi_p = _unify(lo, hi)
            if isinstance(lo, int) and not isinstance(hi, int):
                lo_p = tir.const(lo, hi_p.dtype)
            extent = self.simplify_sub(hi_p, lo_p)
            var = tir.Var(name, extent.dtype, span=self.span(node))
            self.loop_extents[id(var)] = (lo_p, extent)
            self.define(name, var)
            made.append((var, lo_p, extent, kind, thread, ann))
        body = self.suite_body(_ModuleBuilder.suite_stmts(suite))
        self.scopes.pop()
        for var, lo_p, extent, kind, thread, ann in reversed(made):
            body = tir.For(var, lo_p, extent, kind, body, thread_binding=thread,
                           annotations=tuple(ann.items()), span=self.span(node))
        return body

    def s_while_stmt(self, node, rest, top):
        cond_node, suite = node.children
        return tir.While(_as_prim(self.eval(cond_node)), self.scoped_suite(suite), span=self.span(node))

    def s_if_stmt(self, node, rest, top):
        cond_node, then_suite, elifs, else_suite = node.children
        branches = [(cond_node, then_suite)]
        for i in range(0, len(elifs.children), 2):
            branches.append((elifs.children[i], elifs.children[i + 1]))
        else_stmt = None
        if else_suite is not None:
            else_stmt = self.scoped_suite(else_suite)
        for cond, suite in reversed(branches):
            then = self.scoped_suite(suite)
            else_stmt = tir.IfThenElse(_as_prim(self.eval(cond)), then, else_stmt, span=self.span(node))
        return else_stmt

    def scoped_suite(self, suite):
        self.scopes.append({})
        body = self.suite_body(_ModuleBuilder.suite_stmts(suite))
        self.scopes.pop()
        return body

    def s_with_stmt(self, node, rest, top):
        ctx_node, target, suite = node.children
        callee = self.dotted_callee(ctx_node)
        if callee in ("T.sblock", "T.block"):
            return self.sblock(node, ctx_node, suite, top)
        if callee == "T.init":
            if not self.block_stack:
                self.error("`T.init` is only allowed inside `T.sblock`", node)
            self.block_stack[-1]["init"] = self.scoped_suite(suite)
            return None
        if callee == "T.attr":
            pos, kw, _ = self.call_args(ctx_node)
            node_v, key, value = self.attr_args(pos, ctx_node)
            return tir.AttrStmt(node_v, key, value, self.scoped_suite(suite), span=self.span(node))
        if callee is None:
            self.error("a `with` statement in TIR needs `T.sblock`, `T.init` or `T.attr`", ctx_node)
        self.error(f"`with {callee}(...)` is not supported in TIR", ctx_node)

    def sblock(self, node, ctx_node, suite, top):
        pos, kw, _ = self.call_args(ctx_node)
        name = pos[0] if pos else kw.get("name_hint", "")
        self.has_blocks = True
        ctx = {"iter_vars": [], "iter_values": [], "reads": None, "writes": None, "init": None, "alloc": [],
               "match": [], "where": None, "annotations": {}}
        self.block_stack.append(ctx)
        self.scopes.append({})
        body = self.suite_body(_ModuleBuilder.suite_stmts(suite))
        self.scopes.pop()
        self.block_stack.pop()
        reads, writes = ctx["reads"], ctx["writes"]
        if reads is None or writes is None:
            auto_reads, auto_writes = _access_regions(body, ctx["init"], ctx["alloc"])
            reads = auto_reads if reads is None else reads
            writes = auto_writes if writes is None else writes
        block = tir.SBlock(name, ctx["iter_vars"], reads, writes, body, ctx["init"], ctx["alloc"], ctx["match"],
                           tuple(ctx["annotations"].items()), span=self.span(node))
        predicate = ctx["where"] if ctx["where"] is not None else tir.IntImm(1, "bool")
        if top and name == "root" and not ctx["iter_vars"]:
            self.has_blocks = True
        return tir.SBlockRealize(ctx["iter_values"], predicate, block, span=self.span(node))

    CALLS: dict = {}


def _same_layout(a: tir.Buffer, b: tir.Buffer) -> bool:
    from ..ir.node_structural import node_equal

    return a.dtype == b.dtype and node_equal(a.shape, b.shape)


class _Rest:
    """A statement that took the rest of its block as its body."""

    __slots__ = ("stmt",)

    def __init__(self, stmt) -> None:
        self.stmt = stmt


def _access_regions(body, init, allocs) -> tuple[list, list]:
    """TVM's read/write region detection for a block without `T.reads`/`T.writes`:
    every buffer touched, in order of first access, as the point each access names;
    a buffer accessed at several different points gets its whole extent. With an init
    statement the written buffers are not reads (the reduction's update)."""
    from ..ir.node_structural import node_equal

    loads: dict[int, list] = {}
    stores: dict[int, list] = {}
    order_l: list = []
    order_s: list = []
    local = {id(b) for b in allocs}

    def visit(x):
        if isinstance(x, tir.SBlockRealize):
            for r in x.block.reads:
                note(loads, order_l, r.buffer, None)
            for w in x.block.writes:
                note(stores, order_s, w.buffer, None)
            return
        if isinstance(x, tir.BufferLoad):
            note(loads, order_l, x.buffer, x.indices)
        elif isinstance(x, tir.BufferStore):
            note(stores, order_s, x.buffer, x.indices)
        if isinstance(x, tir.Node):
            for f in type(x).fields:
                visit(getattr(x, f))
        elif isinstance(x, tuple):
            for v in x:
                visit(v)

    def note(table, order, buf, indices):
        if id(buf) in local:
            return
        if id(buf) not in table:
            table[id(buf)] = []
            order.append(buf)
        if indices is None or not any(node_equal(indices, seen) for seen in table[id(buf)] if seen is not None):
            table[id(buf)].append(indices)

    for stmt in (init, body):
        if stmt is not None:
            visit(stmt)

    def region(buf, accesses):
        if len(accesses) == 1 and accesses[0] is not None:
            return tir.BufferRegion(buf, [tir.Range(i, tir.const(1, i.dtype)) for i in accesses[0]])
        return tir.BufferRegion(buf, [tir.Range(tir.const(0, d.dtype), d) for d in buf.shape])

    written = {id(b) for b in order_s}
    reads = [region(b, loads[id(b)]) for b in order_l if not (init is not None and id(b) in written)]
    writes = [region(b, stores[id(b)]) for b in order_s]
    return reads, writes


def _build_prim_func(mb, funcdef, options) -> tir.PrimFunc:
    return _TirBuilder(mb).build_func(funcdef, options)


def _dtype_call(dtype: str):
    return lambda self, node, pos, kw: self.t_dtype_const(node, pos, kw, dtype)


def _tir_calls() -> dict:
    t = _TirBuilder
    calls = {f"T.{dt}": _dtype_call(dt) for dt in _TIR_DTYPES if dt != "handle"}
    calls["T.handle"] = t.t_handle
    for name in _TIR_MATH + _TIR_PREDICATES:
        calls[f"T.{name}"] = t.t_intrin(t, name)
    calls["T.abs"] = t.t_intrin(t, "fabs")
    calls["T.max"] = t.t_minmax(t, "max")
    calls["T.min"] = t.t_minmax(t, "min")
    # TVM's truncdiv builds its Div node (printed `T.Div` on integers); truncmod is Mod
    for op, name in (("div", "truncdiv"), ("truncmod", "truncmod"), ("floordiv", "floordiv"),
                     ("floormod", "floormod")):
        calls[f"T.{name}"] = t.t_minmax(t, op)
    # the spellings TVM prints when Python would fold the operator (both sides constant)
    for op, spelled in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div"), ("floordiv", "FloorDiv"),
                        ("floormod", "FloorMod"), ("eq", "EQ"), ("ne", "NE"), ("lt", "LT"), ("le", "LE"),
                        ("gt", "GT"), ("ge", "GE"), ("and", "And"), ("or", "Or"), ("min", "Min"), ("max", "Max")):
        calls[f"T.{spelled}"] = t.t_minmax(t, op)
    calls["T.Not"] = lambda self, node, pos, kw: tir.Not(_as_prim(pos[0]), span=self.span(node))
    # bitwise operators as functions (folding as the operators do) and as nodes (never folding)
    for op, node_name in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"),
                          ("bitwise_xor", "BitwiseXor"), ("shift_left", "LShift"), ("shift_right", "RShift")):
        calls[f"T.{op}"] = t.t_bit_op(t, op, True)
        calls[f"T.{node_name}"] = t.t_bit_op(t, op, False)
    calls["T.bitwise_not"] = calls["T.BitwiseNot"] = t.t_bit_not
    calls["T.if_then_else"] = t.t_if_then_else
    calls["T.Select"] = t.t_select
    calls["T.Cast"] = calls["T.cast"] = t.t_cast
    for name in ("tvm_struct_get",):
        calls[f"T.{name}"] = t.t_call_with_dtype(t, name)
    calls["T.reinterpret"] = t.t_reinterpret
    calls["T.call_extern"] = t.t_call_extern(t, "call_extern")
    calls["T.call_pure_extern"] = t.t_call_extern(t, "call_pure_extern")
    for name in ("handle_add_byte_offset", "address_of", "tvm_stack_alloca"):
        calls[f"T.{name}"] = t.t_handle_intrin(t, name)
    calls["T.target"] = t.t_target
    calls["T.Ramp"] = t.t_ramp
    calls["T.Broadcast"] = t.t_broadcast
    calls["T.Buffer"] = t.t_buffer
    return calls


_TirBuilder.CALLS = _tir_calls()


# ----------------------------------------------------------------------------- Relax


def _incompatible(ann: rx.StructInfo, value: rx.StructInfo) -> bool:
    """True when a value of struct info `value` can never satisfy `ann` (TVM's kFailL0:
    the annotation is then an error; weaker mismatches are checked at run time)."""
    from ..ir.node_structural import node_equal

    if isinstance(ann, rx.ObjectStructInfo) or isinstance(value, rx.ObjectStructInfo):
        return False
    if type(ann) is not type(value):
        return True
    if isinstance(ann, rx.TensorStructInfo):
        if ann.dtype and value.dtype and ann.dtype != value.dtype:
            return True
        if ann.ndim >= 0 and value.ndim >= 0 and ann.ndim != value.ndim:
            return True
        if isinstance(ann.shape, tuple) and isinstance(value.shape, tuple):
            return any(isinstance(a, int) and isinstance(b, int) and a != b
                       for a, b in zip(ann.shape, value.shape, strict=False))
        return False
    if isinstance(ann, rx.TupleStructInfo):
        return len(ann.fields_) != len(value.fields_) or any(
            _incompatible(a, b) for a, b in zip(ann.fields_, value.fields_, strict=True))
    if isinstance(ann, rx.ShapeStructInfo):
        if ann.ndim >= 0 and value.ndim >= 0 and ann.ndim != value.ndim:
            return True
        if ann.values is not None and value.values is not None:
            return any(isinstance(a, int) and isinstance(b, int) and a != b
                       for a, b in zip(ann.values, value.values, strict=True))
        return False
    if isinstance(ann, rx.PrimStructInfo):
        return ann.dtype != value.dtype
    if isinstance(ann, rx.FuncStructInfo):
        return not node_equal(ann, value) and ann.params is not None and value.params is not None and \
            len(ann.params) != len(value.params)
    return False


def _describe_sinfo(sinfo) -> str:
    """Struct info as TVMScript writes it, for messages."""
    def dim(d):
        if isinstance(d, int):
            return str(d)
        if isinstance(d, tir.Var):
            return d.name
        return "?"

    def fmt(s) -> str:
        if isinstance(s, rx.TensorStructInfo):
            parts = []
            if isinstance(s.shape, tuple):
                parts.append("(" + ", ".join(dim(d) for d in s.shape) + ("," if len(s.shape) == 1 else "") + ")")
            if s.dtype:
                parts.append(f'dtype="{s.dtype}"')
            if not isinstance(s.shape, tuple) and s.ndim >= 0:
                parts.append(f"ndim={s.ndim}")
            return f"R.Tensor({', '.join(parts)})"
        if isinstance(s, rx.TupleStructInfo):
            return "R.Tuple(" + ", ".join(fmt(f) for f in s.fields_) + ")"
        if isinstance(s, rx.ShapeStructInfo):
            if s.values is not None:
                return "R.Shape([" + ", ".join(dim(d) for d in s.values) + "])"
            return f"R.Shape(ndim={s.ndim})"
        if isinstance(s, rx.PrimStructInfo):
            return f'R.Prim("{s.dtype}")'
        if isinstance(s, rx.FuncStructInfo):
            return "R.Callable"
        return "R.Object"

    return f"`{fmt(sinfo)}`"


_STRUCT_INFO_NAMES = ("R.Tensor", "R.Tuple", "R.Shape", "R.Prim", "R.Object", "R.Callable")


class _RelaxBuilder(_TirBuilder):
    """Builds one Relax function. Shares the TIR builder's arithmetic for symbolic dims
    and its `T.` table (`R.prim_value(T.int64(1))`)."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        super().__init__(mb)
        self.defining_symbols = False
        self.blocks: list = []
        self.bindings: list = []
        self.dataflow_outputs: set[str] | None = None

    def undefined(self, name: str, node):
        if self.defining_symbols:
            var = tir.Var(name, "int64", span=self.span(node))
            self.scopes[0][name] = var
            return var
        return super().undefined(name, node)

    # -- struct info annotations
    def struct_info(self, node, define: bool = False) -> rx.StructInfo:
        saved = self.defining_symbols
        self.defining_symbols = saved or define
        try:
            value = self.eval(node)
        finally:
            self.defining_symbols = saved
        return self.as_struct_info(value, node)

    def as_struct_info(self, value, node) -> rx.StructInfo:
        if isinstance(value, rx.StructInfo):
            return value
        if isinstance(value, _Dotted):
            bare = {"R.Tensor": rx.TensorStructInfo, "R.Object": rx.ObjectStructInfo, "R.Any": rx.ObjectStructInfo,
                    "R.Shape": rx.ShapeStructInfo}
            if value.name in bare:
                return bare[value.name]()
            if value.name.startswith("T.") and is_valid_dtype(value.name[2:]):
                return rx.PrimStructInfo(value.name[2:])  # TVM 0.27 prints R.Prim("int64") as T.int64
        if isinstance(value, (tuple, list)):
            return rx.TupleStructInfo([self.as_struct_info(v, node) for v in value])
        self.error("expected struct info such as `R.Tensor((2, 3), dtype=\"float32\")`", node)

    def dims(self, values, node) -> tuple:
        out = []
        for d in values:
            if isinstance(d, str) and not d.isidentifier():
                d = self.string_dim(d, node)
            elif isinstance(d, str):
                d = self.lookup(d, node) if not self.defining_symbols else self.symbol(d, node)
            if isinstance(d, tir.IntImm):
                d = d.value
            if isinstance(d, bool) or not isinstance(d, (int, tir.PrimExpr)):
                self.error("a shape dimension must be an integer or a symbolic expression", node)
            if isinstance(d, tir.PrimExpr) and d.dtype != "int64":
                d = _widen(d)
            out.append(d)
        return tuple(out)

    def symbol_in_scope(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def symbol(self, name, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.undefined(name, node)

    def r_tensor(self, node, pos, kw):
        shape = pos[0] if pos else kw.pop("shape", None)
        dtype = pos[1] if len(pos) > 1 else kw.pop("dtype", None)
        if isinstance(shape, str) and dtype is None:  # TVM: `R.Tensor("float32", ndim=2)` names the dtype
            shape, dtype = None, shape
        ndim = self.ndim_value(kw.pop("ndim", -1), node)
        kw.pop("vdevice", None)
        if kw:
            self.error(f"`R.Tensor` has no argument `{next(iter(kw))}`", node)
        if dtype is None:
            dtype = ""
        if dtype and not is_valid_dtype(dtype):
            self.error(f"unknown data type `{dtype}`", node)
        if isinstance(shape, rx.Var):
            return rx.TensorStructInfo(shape, dtype, ndim)
        if shape is not None:
            dims = self.dims(shape if isinstance(shape, (tuple, list)) else [shape], node)
            if ndim != -1 and ndim != len(dims):
                self.error(f"`ndim={ndim}` does not match the shape's {len(dims)} dimensions", node)
            return rx.TensorStructInfo(dims, dtype)
        return rx.TensorStructInfo(None, dtype, ndim)

    def r_tuple_sinfo(self, node, pos, kw):
        if len(pos) == 1 and isinstance(pos[0], list):
            pos = pos[0]
        return rx.TupleStructInfo([self.as_struct_info(v, node) for v in pos])

    def r_shape_sinfo(self, node, pos, kw):
        values = pos[0] if pos else kw.get("values")
        if values is not None:
            return rx.ShapeStructInfo(self.dims(values, node))
        return rx.ShapeStructInfo(None, self.ndim_value(kw.get("ndim", -1), node))

    def ndim_value(self, ndim, node) -> int:
        if isinstance(ndim, tir.IntImm):
            ndim = ndim.value
        if not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < -1:
            self.error("`ndim` must be an integer, -1 for unknown", node)
        return ndim

    def r_prim_sinfo(self, node, pos, kw):
        dtype = pos[0] if pos else kw.get("dtype")
        value = kw.get("value")
        if value is not None:
            value = _as_prim(value, "int64") if not isinstance(value, str) else self.symbol(value, node)
            dtype = dtype or value.dtype
        if dtype is not None and (not isinstance(dtype, str) or not is_valid_dtype(dtype)):
            self.error(f"unknown data type `{dtype}`", node)
        return rx.PrimStructInfo(dtype or "int64", value)

    def r_object(self, node, pos, kw):
        return rx.ObjectStructInfo()

    def r_callable(self, node, pos, kw):
        params = pos[0] if pos else kw.get("params")
        ret = pos[1] if len(pos) > 1 else kw.get("ret", rx.ObjectStructInfo())
        purity = pos[2] if len(pos) > 2 else kw.get("purity", True)
        params = None if params is None else [self.as_struct_info(p, node) for p in params]
        return rx.FuncStructInfo(params, self.as_struct_info(ret, node), purity)

    # -- expressions
    def to_expr(self, value, node) -> rx.Expr:
        if isinstance(value, rx.Expr):
            return value
        if isinstance(value, (tuple, list)):
            fields = [self.leaf(self.to_expr(v, node), node) for v in value]
            return self.normalize(rx.Tuple(fields, span=self.span(node)))
        if isinstance(value, tir.PrimExpr):
            return rx.PrimValue(value, span=self.span(node))
        if isinstance(value, GlobalVar):
            return value
        if isinstance(value, str):
            return rx.StringImm(value, span=self.span(node))
        if isinstance(value, bool) or isinstance(value, (int, float)):
            return rx.PrimValue(_as_prim(value, "int64" if isinstance(value, int) else "float32"),
                                span=self.span(node))
        self.error("expected a Relax expression", node)

    def keeps_arguments(self, node) -> bool:
        return self.dotted_callee(node) == "R.match_cast"  # TVM keeps a match_cast's value as written

    def argument(self, value, node):
        # bound as soon as evaluated, so nested calls are emitted in evaluation order
        return self.leaf(value, node) if isinstance(value, rx.Expr) else value

    def e_tuple(self, node):
        return tuple(self.leaf(v, c) if isinstance(v, rx.Expr) else v
                     for v, c in ((self.eval(c), c) for c in node.children))

    def leaf(self, expr, node):
        """TVM's normal form: an argument that is itself a call (or if, or tuple
        projection) is bound to a fresh variable first, as Relax's BlockBuilder does
        (`R.add(R.exp(x), x)` is `lv = R.exp(x); R.add(lv, x)`)."""
        if isinstance(expr, (rx.Call, rx.If, rx.TupleGetItem, rx.SeqExpr)):
            self.normalize(expr, node)
            dataflow = self.dataflow_outputs is not None
            var = (rx.DataflowVar if dataflow else rx.Var)("lv" if dataflow else "gv", expr.struct_info)
            self.bindings.append(rx.VarBinding(var, expr, span=expr.span))
            return var
        return expr

    def subscript(self, base, subs, node):
        if isinstance(base, rx.Expr) and not isinstance(base, rx.Constant):
            base = self.leaf(base, node)
            index = self.eval(subs.children[0])
            if not isinstance(index, int) or isinstance(index, bool):
                self.error("a tuple index must be an integer", node)
            sinfo = self.sinfo(base)
            if isinstance(sinfo, rx.TupleStructInfo) and not 0 <= index < len(sinfo.fields_):
                self.error(f"index {index} is out of range for a tuple of {len(sinfo.fields_)} fields", node)
            return self.normalize(rx.TupleGetItem(base, index, span=self.span(node)))
        if isinstance(base, (tuple, list)):  # a tuple literal: indexed as Python does, as TVM's parser
            index = self.eval(subs.children[0])
            if not isinstance(index, int) or isinstance(index, bool):
                self.error("a tuple index must be an integer", node)
            if not -len(base) <= index < len(base):
                self.error(f"index {index} is out of range for a tuple of {len(base)} fields", node)
            return base[index]
        return super().subscript(base, subs, node)

    def e_call(self, node):
        callee = self.eval(node.children[0])
        if isinstance(callee, _Dotted):
            name = callee.name
            if name in self.CALLS:
                return super().e_call(node)
            if name.startswith("R."):
                return self.op_call(name, node)
            self.error(f"unknown name `{name}`", node.children[0])
        pos, kw, pos_nodes = self.call_args(node)
        if isinstance(callee, (GlobalVar, rx.Var, rx.ExternFunc)):
            if kw:
                self.error("calls of functions take no keyword arguments", node)
            args = [self.leaf(self.to_expr(a, n), n) for a, n in zip(pos, pos_nodes, strict=True)]
            return self.normalize(rx.Call(callee, args, span=self.span(node)), node)
        self.error("this value cannot be called", node)

    def op_call(self, name: str, node):
        from ..ops import relax as relax_ops
        from ..ops.registry import AttrError

        op_name = "relax." + name[2:]
        if op_name in relax_memory.MEMORY_OPS:
            return self.memory_op_call(op_name, node)
        op = relax_ops.lookup(op_name)
        if op is None:
            self.error(f"unknown name `{name}`", node.children[0])
        pos, kw, pos_nodes = self.call_args(node)
        arg_names = op.arg_names
        values, nodes = list(pos), list(pos_nodes)
        # attributes TVM's Python API also takes positionally (`R.astype(x, "float16")`)
        extra = values[len(arg_names):]
        if len(extra) > len(op.positional_attrs):
            most = len(arg_names) + len(op.positional_attrs)
            self.error(f"`{name}` takes at most {most} positional arguments, got {len(values)}", node)
        for attr, value in zip(op.positional_attrs, extra):
            if attr in kw:
                self.error(f"`{name}` got attribute `{attr}` twice", node)
            kw[attr] = value
        del values[len(arg_names):], nodes[len(arg_names):]
        for a in arg_names[len(values):]:
            if a not in kw:
                break
            values.append(kw.pop(a))
            nodes.append(node)
        if len(values) < op.min_args:
            self.error(f"`{name}` needs argument `{arg_names[len(values)]}`", node)
        args = [self.leaf(self.op_arg(kind, v, n), n) for kind, v, n in zip(op.arg_kinds, values, nodes, strict=False)]
        try:
            attrs = relax_ops.make_call_attrs(op, {k: _tuples(v) for k, v in kw.items()})
        except AttrError as err:
            self.error(str(err), node)
        return self.normalize(rx.Call(Op.get(op_name), args, attrs, span=self.span(node)), node)

    def memory_op_call(self, op_name: str, node):
        """R.builtin.alloc_tensor / R.memory.*: arguments as TVM's Python constructors take
        them; `ty_args=` (TVM prints it on CallTIRRewrite's allocations) is kept."""
        op = relax_memory.MEMORY_OPS[op_name]
        pos, kw, _ = self.call_args(node)
        ty_args = kw.pop("ty_args", None)
        try:
            values = relax_memory.bind_arguments(op, pos, kw)
            args = [relax_memory.as_argument(kind, v) for (_, kind, _), v in zip(op.args, values, strict=True)]
        except ValueError as err:
            self.error(f"`R.{op_name[6:]}` {err}", node)
        sinfo_args = [self.as_struct_info(s, node) for s in (ty_args if isinstance(ty_args, (list, tuple))
                                                              else [ty_args] if ty_args is not None else [])]
        args = [self.leaf(a, node) for a in args]
        return self.normalize(rx.Call(Op.get(op_name), args, None, sinfo_args, span=self.span(node)), node)

    def op_arg(self, kind: str, value, node) -> rx.Expr:
        if kind == "shape" and isinstance(value, (tuple, list)):
            return rx.ShapeExpr(self.dims(value, node), span=self.span(node))
        if kind == "prim" and not isinstance(value, rx.Expr):
            return rx.PrimValue(_as_prim(value, "int64" if isinstance(value, int) else None), span=self.span(node))
        if kind == "prims" and isinstance(value, (tuple, list)):
            return rx.Tuple([rx.PrimValue(_as_prim(v, "int64" if isinstance(v, int) else None)) for v in value],
                            span=self.span(node))
        return self.to_expr(value, node)

    def normalize(self, expr, node=None):
        """Deduce and record the struct info of a freshly built expression."""
        if expr.struct_info is None:
            try:
                expr.struct_info = self.deduce(expr)
            except _StructInfoError as err:
                self.error(str(err), node if node is not None else expr)
        return expr

    def sinfo(self, expr) -> rx.StructInfo:
        if isinstance(expr, GlobalVar):
            return self.mb.signatures.get(expr.name_hint) or rx.ObjectStructInfo()
        if expr.struct_info is None:
            self.normalize(expr)
        return expr.struct_info

    def deduce(self, expr) -> rx.StructInfo:
        if isinstance(expr, rx.Tuple):
            return rx.TupleStructInfo([self.sinfo(f) for f in expr.fields_])
        if isinstance(expr, rx.TupleGetItem):
            t = self.sinfo(expr.tuple_value)
            if isinstance(t, rx.TupleStructInfo):
                return t.fields_[expr.index]
            if isinstance(t, rx.ObjectStructInfo):
                return rx.ObjectStructInfo()
            raise _StructInfoError("only a tuple can be indexed")
        if isinstance(expr, rx.Call):
            return self.deduce_call(expr)
        if isinstance(expr, rx.SeqExpr):
            return self.sinfo(expr.body)
        if isinstance(expr, rx.If):
            from ..analysis.struct_info import lca

            return lca(self.sinfo(expr.true_branch), self.sinfo(expr.false_branch))
        return rx.ObjectStructInfo()

    def deduce_call(self, call: rx.Call) -> rx.StructInfo:
        op = call.op
        if isinstance(op, Op):
            if call.sinfo_args and op.name in ("relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed",
                                               "relax.call_tir_inplace", "relax.call_inplace_packed"):
                return call.sinfo_args[0]
            from ..analysis.struct_info import StructInfoError, deduce_call

            try:
                return deduce_call(op.name, [self.sinfo(a) for a in call.args], call.attrs, call.args)
            except StructInfoError as err:
                raise _StructInfoError(f"`{op.name.replace('relax.', 'R.', 1)}`: {err}") from None
        fsinfo = self.sinfo(op) if not isinstance(op, rx.ExternFunc) else op.struct_info
        prim_func = self.mb.functions.get(op.name_hint) if isinstance(op, GlobalVar) else None
        if isinstance(prim_func, tir.PrimFunc):  # destination passing (CallTIRRewrite's form): returns nothing
            if len(call.args) != len(prim_func.params):
                raise _StructInfoError(f"`{op.name_hint}` is a PrimFunc of {len(prim_func.params)} parameters "
                                       f"(inputs, then outputs), called with {len(call.args)} arguments")
            return rx.TupleStructInfo([])
        if isinstance(fsinfo, rx.FuncStructInfo):
            if fsinfo.params is not None and len(fsinfo.params) != len(call.args):
                raise _StructInfoError(f"the function takes {len(fsinfo.params)} arguments, "
                                       f"got {len(call.args)}")
            return _bind_symbols(fsinfo, [self.sinfo(a) for a in call.args])
        return rx.ObjectStructInfo()

    # -- R.<name> special forms
    def r_const(self, node, pos, kw):
        import numpy as np

        value = pos[0] if pos else kw.get("value")
        dtype = pos[1] if len(pos) > 1 else kw.get("dtype")
        if dtype is None:
            dtype = "float32" if isinstance(value, float) else ("bool" if isinstance(value, bool) else "int32")
        if not is_valid_dtype(dtype):
            self.error(f"unknown data type `{dtype}`", node)
        return rx.Constant(np.array(value, dtype=dtype), span=self.span(node))

    def r_tuple(self, node, pos, kw):
        return self.to_expr(tuple(pos), node)

    def r_shape(self, node, pos, kw):
        return rx.ShapeExpr(self.dims(pos[0], node), span=self.span(node))

    def r_prim_value(self, node, pos, kw):
        value = pos[0] if pos else kw.get("value")
        if isinstance(value, rx.Expr):
            if isinstance(self.sinfo(value), rx.PrimStructInfo):
                return value  # already a scalar value (an R.Prim parameter)
            self.error("`R.prim_value` takes a TIR scalar expression", node)
        try:
            return rx.PrimValue(_as_prim(value, "int64"), span=self.span(node))
        except TypeError:
            self.error("`R.prim_value` takes a TIR scalar expression", node)

    def r_str(self, node, pos, kw):
        return rx.StringImm(pos[0], span=self.span(node))

    def r_dtype(self, node, pos, kw):
        return rx.DataTypeImm(pos[0], span=self.span(node))

    def r_extern(self, node, pos, kw):
        return rx.ExternFunc(pos[0], span=self.span(node))

    def out_sinfo(self, kw, node):
        out = kw.pop("out_ty", None)
        if out is None:
            out = kw.pop("out_sinfo", None)
        if out is None:
            self.error("missing `out_ty=` (the output struct info)", node)
        if isinstance(out, list):
            return rx.TupleStructInfo([self.as_struct_info(o, node) for o in out])
        return self.as_struct_info(out, node)

    def r_call_tir(self, node, pos, kw):
        if len(pos) < 2:
            self.error("`R.call_tir` takes a PrimFunc and a tuple of arguments", node)
        func, args = pos[0], pos[1]
        if not isinstance(func, GlobalVar) or not isinstance(self.mb.functions.get(func.name_hint, tir.PrimFunc([],
                                                                                        tir.Evaluate(tir.IntImm(0)))),
                                                               tir.PrimFunc):
            self.error("the first argument of `R.call_tir` must be a PrimFunc of the module (`cls.name`)", node)
        return self.dps_call("relax.call_tir", func, args, pos[2:], kw, node)

    def dps_call(self, op_name, func, args, extra, kw, node):
        sinfo = self.out_sinfo(kw, node)
        tir_vars = kw.pop("tir_vars", None) if not extra else extra[0]
        if kw:
            self.error(f"unexpected argument `{next(iter(kw))}`", node)
        # TVM wraps a single argument in a tuple unless it is tuple-typed already (`R.tuple()`)
        is_tuple = isinstance(args, rx.Expr) and isinstance(getattr(args, "struct_info", None), rx.TupleStructInfo)
        args_expr = self.to_expr(args if isinstance(args, (tuple, list)) or is_tuple else (args,), node)
        call_args = [func, args_expr]
        if tir_vars is not None:
            call_args.append(tir_vars if isinstance(tir_vars, rx.ShapeExpr) else
                             rx.ShapeExpr(self.dims(tir_vars, node)))
        call = rx.Call(Op.get(op_name), call_args, None, [sinfo], span=self.span(node))
        call.struct_info = sinfo
        return call

    def r_call_packed(self, node, pos, kw):
        """`R.call_packed("f", args..., ty_args=...)`: a call of the packed function itself (its
        result the struct info argument, else an object), as RemovePurityChecking and
        CallTIRRewrite leave them."""
        if not pos or not isinstance(pos[0], str):
            self.error("`R.call_packed` takes the packed function's name first", node)
        sinfo = kw.pop("ty_args", kw.pop("sinfo_args", None))
        if kw:
            self.error(f"unexpected argument `{next(iter(kw))}`", node)
        sinfos = [self.as_struct_info(s, node) for s in
                  (sinfo if isinstance(sinfo, (list, tuple)) else [sinfo] if sinfo is not None else [])]
        args = [self.leaf(self.to_expr(a, node), node) for a in pos[1:]]
        call = rx.Call(rx.ExternFunc(pos[0]), args, None, sinfos, span=self.span(node))
        call.struct_info = sinfos[0] if sinfos else rx.ObjectStructInfo()
        return call

    def r_call_tir_inplace(self, node, pos, kw):
        indices = kw.pop("inplace_indices", None)
        if len(pos) < 2 or indices is None:
            self.error("`R.call_tir_inplace` takes a PrimFunc, a tuple of arguments, `out_ty=` and "
                       "`inplace_indices=`", node)
        indices = tuple(indices) if isinstance(indices, (list, tuple)) else (indices,)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
            self.error("`inplace_indices` must be integers (-1: a new output)", node)
        call = self.r_call_tir(node, pos, kw)
        call.op = Op.get("relax.call_tir_inplace")
        call.attrs = Attrs({"inplace_indices": indices})
        return call

    def r_call_dps_packed(self, node, pos, kw):
        func = pos[0]
        if isinstance(func, str):
            func = rx.ExternFunc(func)
        return self.dps_call("relax.call_dps_packed", func, pos[1], pos[2:], kw, node)

    def r_call_pure_packed(self, node, pos, kw):
        func = pos[0]
        if isinstance(func, str):
            func = rx.ExternFunc(func)
        sinfo = kw.pop("sinfo_args", None)
        if sinfo is None:
            sinfo = kw.pop("ty_args", None)  # TVM 0.27's spelling
        if sinfo is None:
            self.error("`R.call_pure_packed` needs `ty_args=`", node)
        sinfos = [self.as_struct_info(s, node) for s in (sinfo if isinstance(sinfo, (list, tuple)) else [sinfo])]
        args = [func] + [self.to_expr(a, node) for a in pos[1:]]
        call = rx.Call(Op.get("relax.call_pure_packed"), args, None, sinfos, span=self.span(node))
        call.struct_info = sinfos[0]
        return call

    def r_match_cast(self, node, pos, kw):
        return ("match_cast", pos[0], pos[1])

    def r_statement_only(self, node, pos, kw):
        self.error("this form is a statement and cannot be used as a value", node)

    # -- functions
    def read_signature(self, funcdef, options: dict) -> None:
        name_tok, params_node, ret_node, _ = funcdef.children
        self.name = str(name_tok)
        self.options = options
        self.params = []
        for p in params_node.children if params_node is not None else ():
            pname_tok, ann = p.children
            if ann is None:
                self.error(f"parameter `{pname_tok}` needs struct info such as `R.Tensor((2, 3), \"float32\")`", p)
            var = rx.Var(str(pname_tok), self.struct_info(ann, define=True), span=self.span(p))
            self.params.append(var)
            self.define(str(pname_tok), var)
        self.ret_sinfo = self.struct_info(ret_node, define=True) if ret_node is not None else None
        self.signature = rx.FuncStructInfo([p.struct_info for p in self.params],
                                           self.ret_sinfo or rx.ObjectStructInfo(), options.get("pure", True))

    def build_body(self, funcdef) -> rx.Function:
        suite = funcdef.children[-1]
        self.func_attrs: dict = {}
        self.scopes.append({})
        body = self.seq(_ModuleBuilder.suite_stmts(suite), top=True, node=funcdef)
        self.scopes.pop()
        ret = self.ret_sinfo
        body_sinfo = self.sinfo(body.body)
        if ret is not None and _incompatible(ret, body_sinfo):
            self.error(f"the function returns {_describe_sinfo(body_sinfo)}, but its annotation says "
                       f"{_describe_sinfo(ret)}", funcdef.children[2])
        ret = _annotated(ret, body_sinfo, self.params)
        if self.func_attrs.get("global_symbol") == self.name and not self.options.get("private"):
            del self.func_attrs["global_symbol"]  # implied by a public function, as TVM prints it
        return rx.Function(self.params, body, ret, self.options.get("pure", True), tuple(self.func_attrs.items()),
                           private=self.options.get("private", False), span=self.span(funcdef))

    def seq(self, stmts, top=False, node=None, result_name=None, suffix="") -> rx.SeqExpr:
        """Statements up to a `return` (or, in an if-branch, a final assignment)."""
        saved = self.blocks, self.bindings
        self.blocks, self.bindings = [], []
        result = None
        for i, stmt in enumerate(stmts):
            last = i == len(stmts) - 1
            if stmt.data == "simple_stmt" and stmt.children[0].data == "return_stmt":
                if not last:
                    self.error("statements after `return` are never run", stmts[i + 1])
                if result_name is not None:
                    self.error("an if-branch ends with an assignment, not `return`", stmt)
                value = stmt.children[0].children[0]
                if value is None:
                    self.error("a Relax function must return a value", stmt)
                result = self.leaf(self.to_expr(self.eval(value), value), value)
                self.normalize(result, value)
                continue
            if result_name is not None and last:
                result = self.branch_result(stmt, result_name, suffix)
                continue
            self.r_stmt(stmt, top)
        self.flush()
        blocks = self.blocks
        self.blocks, self.bindings = saved
        if result is None:
            self.error("a Relax function body must end with `return`", node if node is not None else stmts[-1])
        return rx.SeqExpr(blocks, result, span=self.span(node) if node is not None else None)

    def branch_result(self, stmt, name, suffix):
        """TVM's GetSeqExprForBranch: the branch's final `name = value` is its result; a
        value that is not a leaf or tuple is bound to `name_then`/`name_else` first."""
        inner = stmt.children[0] if stmt.data == "simple_stmt" else stmt
        if inner.data not in ("assign", "ann_assign") or str(inner.children[0].children[0]) != name:
            self.error(f"each branch of the `if` must end by assigning `{name}`", stmt)
        value = self.to_expr(self.eval(inner.children[-1]), inner.children[-1])
        self.normalize(value, inner.children[-1])
        if isinstance(value, (rx.Call, rx.If, rx.TupleGetItem, rx.SeqExpr)):
            var = rx.Var(name + suffix, value.struct_info, span=self.span(inner))
            self.bindings.append(rx.VarBinding(var, value, span=self.span(inner)))
            return var
        return value

    def flush(self) -> None:
        if self.bindings:
            self.blocks.append(rx.BindingBlock(self.bindings))
            self.bindings = []

    def r_stmt(self, stmt, top: bool) -> None:
        kind = stmt.data
        if kind == "simple_stmt":
            inner = stmt.children[0]
            if inner.data == "expr_stmt":
                return self.r_expr_stmt(inner, top)
            if inner.data in ("assign", "ann_assign"):
                return self.r_assign(inner)
            if inner.data == "pass_stmt":
                return None
            self.error("this statement is not part of a Relax function", stmt)
        if kind == "with_stmt":
            return self.r_dataflow(stmt)
        if kind == "if_stmt":
            return self.r_if(stmt)
        self.error("this statement is not part of a Relax function", stmt)

    def r_expr_stmt(self, node, top):
        expr = node.children[0]
        callee = self.dotted_callee(expr)
        if callee == "R.func_attr":
            if not top:
                self.error("`R.func_attr` must be at the top of the function body", node)
            value = self.eval(expr.children[1].children[0])
            if not isinstance(value, dict):
                self.error("`R.func_attr` takes a dict", expr)
            self.func_attrs.update(value)
            return None
        if callee == "R.output":
            if self.dataflow_outputs is None:
                self.error("`R.output` is only allowed inside `with R.dataflow()`", node)
            return None
        value = self.to_expr(self.eval(expr), expr)
        self.normalize(value, expr)
        # inside a dataflow block the unnamed result is a dataflow variable, as TVM's builder emits it
        self.emit((rx.DataflowVar if self.dataflow_outputs is not None else rx.Var)("_", value.struct_info), value)
        return None

    def r_assign(self, node):
        if node.data == "ann_assign":
            target, ann_node, value_node = node.children
        else:
            target, value_node = node.children
            ann_node = None
        if isinstance(target, Tree) and target.data == "target_tuple":
            self.error("bind a tuple to one name and index it (`t = ...; a = t[0]`)", target)
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        name = str(target.children[0])
        if isinstance(value_node, Tree) and value_node.data == "name" and ann_node is None:
            v = self.eval(value_node)
            if isinstance(v, _Module):
                self.define(name, v)  # `cls = Module`
                return None
        ann = self.struct_info(ann_node, define=True) if ann_node is not None else None
        value = self.eval(value_node)
        if isinstance(value, tuple) and len(value) == 3 and value[0] == "match_cast":
            expr = self.to_expr(value[1], value_node)
            self.normalize(expr, value_node)
            sinfo = self.struct_info_defining(value[2], value_node)
            if _incompatible(sinfo, self.sinfo(expr)):
                self.error(f"cannot match_cast a value of {_describe_sinfo(self.sinfo(expr))} to "
                           f"{_describe_sinfo(sinfo)}", value_node)
            var = self.new_var(name, ann or sinfo, target)
            self.bindings.append(rx.MatchCast(var, expr, sinfo, span=self.span(node)))
            return None
        if isinstance(value, tuple) and value and value[0] == "new_var":
            existing = self.symbol_in_scope(name)
            if not (isinstance(existing, tir.Var) and existing.dtype == value[1]):
                self.define(name, tir.Var(name, value[1], span=self.span(node)))
            return None
        expr = self.to_expr(value, value_node)
        self.normalize(expr, value_node)
        deduced = self.sinfo(expr)
        if ann is not None and _incompatible(ann, deduced):
            self.error(f"struct info mismatch: the value is {_describe_sinfo(deduced)}, but `{name}` is "
                       f"annotated {_describe_sinfo(ann)}", ann_node)
        # TVM keeps a binding's annotation, except that an alias takes what it aliases
        # when that is finer (`c: R.Tensor(ndim=2) = x` has x's shape)
        keep = ann is not None and not isinstance(expr, rx.Var)
        var = self.new_var(name, ann if keep else _annotated(ann, deduced), target)
        self.bindings.append(rx.VarBinding(var, expr, span=self.span(node)))
        return None

    def struct_info_defining(self, value, node):
        return self.as_struct_info(value, node)

    def emit(self, var, value):
        self.bindings.append(rx.VarBinding(var, value))

    def new_var(self, name, sinfo, node) -> rx.Var:
        dataflow = self.dataflow_outputs is not None and name not in self.dataflow_outputs
        var = (rx.DataflowVar if dataflow else rx.Var)(name, sinfo, span=self.span(node))
        self.define(name, var)
        return var

    def r_dataflow(self, stmt):
        ctx_node, target, suite = stmt.children
        if self.dotted_callee(ctx_node) != "R.dataflow":
            self.error("a `with` statement in a Relax function must be `with R.dataflow():`", ctx_node)
        if self.dataflow_outputs is not None:
            self.error("dataflow blocks cannot nest", stmt)
        stmts = _ModuleBuilder.suite_stmts(suite)
        outputs: set[str] = set()
        output_nodes: dict = {}
        for s in stmts:
            inner = s.children[0] if s.data == "simple_stmt" else None
            if inner is not None and inner.data == "expr_stmt" and self.dotted_callee(inner.children[0]) == "R.output":
                args = inner.children[0].children[1]
                for a in args.children if args is not None else ():
                    if not (isinstance(a, Tree) and a.data == "name"):
                        self.error("`R.output` takes variable names", a)
                    outputs.add(str(a.children[0]))
                    output_nodes[str(a.children[0])] = a
        self.flush()
        self.dataflow_outputs = outputs
        for s in stmts:
            if s.data != "simple_stmt":
                self.error("only bindings are allowed in a dataflow block", s)
            self.r_stmt(s, False)
        self.dataflow_outputs = None
        defined = {b.var.name_hint for b in self.bindings}
        for name in sorted(outputs - defined):
            self.error(f"`R.output({name})`: `{name}` is not bound in this dataflow block", output_nodes[name])
        self.blocks.append(rx.DataflowBlock(self.bindings, span=self.span(stmt)))
        self.bindings = []

    def r_if(self, stmt):
        cond_node, then_suite, elifs, else_suite = stmt.children
        if self.dataflow_outputs is not None:
            self.error("`if` is not allowed inside a dataflow block", stmt)
        if elifs.children or else_suite is None:
            self.error("a Relax `if` needs exactly one `else` (no `elif`)", stmt)
        then_stmts = _ModuleBuilder.suite_stmts(then_suite)
        last = then_stmts[-1]
        inner = last.children[0] if last.data == "simple_stmt" else last
        if inner.data not in ("assign", "ann_assign"):
            self.error("each branch of a Relax `if` must end by assigning the result", last)
        name = str(inner.children[0].children[0])
        cond = self.to_expr(self.eval(cond_node), cond_node)
        self.normalize(cond, cond_node)
        branches = []
        for suite, suffix in ((then_suite, "_then"), (else_suite, "_else")):
            self.scopes.append({})
            branches.append(self.seq(_ModuleBuilder.suite_stmts(suite), result_name=name, node=suite, suffix=suffix))
            self.scopes.pop()
        expr = self.normalize(rx.If(cond, branches[0], branches[1], span=self.span(stmt)), stmt)
        ann = None
        if inner.data == "ann_assign":
            ann = self.struct_info(inner.children[1], define=True)
        var = self.new_var(name, ann if ann is not None else expr.struct_info, inner.children[0])
        self.bindings.append(rx.VarBinding(var, expr, span=self.span(stmt)))

    CALLS: dict = {}


class _StructInfoError(Exception):
    pass


def _annotated(ann, deduced, params=None):
    """The struct info a binding (or function result) gets, as TVM's BlockBuilder: the
    deduced one when the annotation is no finer (`c: R.Tensor(ndim=2) = x` keeps x's
    shape), the annotation when it promises more than deduction can show. A function
    result keeps only what its parameters define (match_cast variables are erased)."""
    from ..analysis.struct_info import erase_to_well_defined, is_base_of

    if ann is None or is_base_of(ann, deduced):
        if params is not None:
            defined = {d for p in params for d in rx.struct_info_dims(p.struct_info) if isinstance(d, tir.Var)}
            if any(not _dims_defined(d, {id(v) for v in defined}) for d in rx.struct_info_dims(deduced)):
                return erase_to_well_defined(deduced, defined) if ann is None else ann
        return deduced
    return ann


def _dims_defined(d, defined: set) -> bool:
    if isinstance(d, tir.Var):
        return id(d) in defined
    if isinstance(d, tir.Node):
        return all(_dims_defined(getattr(d, f), defined) for f in type(d).fields
                   if isinstance(getattr(d, f), tir.PrimExpr))
    return True


def _tuples(value):
    """Attribute values: TVMScript lists are the registry's tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, tir.IntImm):
        return value.value
    if isinstance(value, tir.FloatImm):
        return value.value
    return value


def _int_bits(dtype: str) -> int:
    """The bit width of an integer dtype ("int64" -> 64)."""
    digits = dtype.lstrip("abcdefghijklmnopqrstuvwxyz")
    return int(digits) if digits.isdigit() else 32


def _widen(d):
    if isinstance(d, tir.IntImm):
        return d.value
    if isinstance(d, tir.Var):
        return d
    return d


def _bind_symbols(fsinfo: rx.FuncStructInfo, args: list) -> rx.StructInfo:
    """The return struct info of a call: the callee's symbolic dims replaced by what the
    arguments give them (a callee `(n, 4) -> (n, 8)` called on `(2, 4)` returns `(2, 8)`)."""
    binding: dict[int, object] = {}

    def match(param, arg):
        if isinstance(param, rx.TensorStructInfo) and isinstance(arg, rx.TensorStructInfo):
            if isinstance(param.shape, tuple) and isinstance(arg.shape, tuple) and len(param.shape) == len(arg.shape):
                for p, a in zip(param.shape, arg.shape, strict=True):
                    if isinstance(p, tir.Var) and id(p) not in binding:
                        binding[id(p)] = a
        elif isinstance(param, rx.TupleStructInfo) and isinstance(arg, rx.TupleStructInfo):
            for p, a in zip(param.fields_, arg.fields_, strict=False):
                match(p, a)
        elif isinstance(param, rx.ShapeStructInfo) and isinstance(arg, rx.ShapeStructInfo):
            if param.values is not None and arg.values is not None:
                for p, a in zip(param.values, arg.values, strict=False):
                    if isinstance(p, tir.Var) and id(p) not in binding:
                        binding[id(p)] = a

    for p, a in zip(fsinfo.params or (), args, strict=False):
        match(p, a)
    if not binding:
        return fsinfo.ret

    def subst_dim(d):
        if isinstance(d, tir.Var) and id(d) in binding:
            return binding[id(d)]
        return d

    def subst(s):
        if isinstance(s, rx.TensorStructInfo) and isinstance(s.shape, tuple):
            return rx.TensorStructInfo(tuple(subst_dim(d) for d in s.shape), s.dtype)
        if isinstance(s, rx.TupleStructInfo):
            return rx.TupleStructInfo([subst(f) for f in s.fields_])
        if isinstance(s, rx.ShapeStructInfo) and s.values is not None:
            return rx.ShapeStructInfo(tuple(subst_dim(d) for d in s.values))
        return s

    return subst(fsinfo.ret)


def _relax_calls() -> dict:
    r = _RelaxBuilder
    calls = dict(_TirBuilder.CALLS)
    calls.update({
        "R.Tensor": r.r_tensor, "R.Tuple": r.r_tuple_sinfo, "R.Shape": r.r_shape_sinfo, "R.Prim": r.r_prim_sinfo,
        "R.Object": r.r_object, "R.Any": r.r_object,
        "R.Callable": r.r_callable,
        "R.const": r.r_const, "R.tuple": r.r_tuple, "R.shape": r.r_shape, "R.prim_value": r.r_prim_value,
        "R.str": r.r_str,
        "R.dtype": r.r_dtype, "R.ExternFunc": r.r_extern, "R.extern": r.r_extern,
        "R.call_tir": r.r_call_tir, "R.call_dps_packed": r.r_call_dps_packed,
        "R.call_tir_inplace": r.r_call_tir_inplace, "R.call_packed": r.r_call_packed,
        "R.call_pure_packed": r.r_call_pure_packed, "R.match_cast": r.r_match_cast,
        "R.func_attr": r.r_statement_only, "R.output": r.r_statement_only, "R.dataflow": r.r_statement_only,
    })
    return calls


_RelaxBuilder.CALLS = _relax_calls()


# ----------------------------------------------------------------------------- module


class _ModuleBuilder:
    def __init__(self, source: SourceFile, metadata: dict | None) -> None:
        self.source = source
        self.metadata = metadata
        self.global_vars: dict[str, GlobalVar] = {}
        self.globals_scope: dict[str, object] = {}
        self.type_vars: dict[str, str] = {}
        self.functions: dict[str, object] = {}
        self.signatures: dict[str, rx.StructInfo] = {}
        self.meta_refs: dict[tuple[str, int], object] = {}

    def span(self, node) -> Span:
        if isinstance(node, Token):
            return Span(self.source, node.line, node.column, node.end_line, node.end_column)
        meta = getattr(node, "meta", None)
        if meta is None or getattr(meta, "empty", True):
            return Span(self.source, 1, 1)
        return Span(self.source, meta.line, meta.column, meta.end_line, meta.end_column)

    def error(self, message: str, node):
        raise DiagnosticError(message, self.span(node))

    def global_var(self, name: str, node) -> GlobalVar:
        if name not in self.global_vars:
            self.error(f"the module has no function `{name}`", node)
        return self.global_vars[name]

    def metadata_ref(self, key: str, index, node):
        if not isinstance(index, int):
            self.error("a metadata index must be an integer", node)
        cached = self.meta_refs.get((key, index))
        if cached is not None:
            return cached
        value = None
        if self.metadata is not None:
            entries = self.metadata.get(key)
            if entries is None or not 0 <= index < len(entries):
                self.error(f"the metadata section has no `{key}` entry {index}", node)
            value = entries[index]
            if isinstance(value, rx.Constant):
                value = rx.Constant(value.data, value.struct_info, meta_index=index, span=self.span(node))
        elif key == "ir.GenericConst":
            value = rx.Constant(None, rx.TensorStructInfo(), meta_index=index, span=self.span(node))
        elif key == "ir.StringImm":
            value = tir.StringImm(None, span=self.span(node), meta_index=index)
        else:
            value = rx.MetadataRef(key, index, span=self.span(node))
        self.meta_refs[(key, index)] = value
        return value

    # -- top level
    def build(self, tree: Tree) -> IRModule:
        module_class = None
        loose = []
        for stmt in tree.children:
            if stmt is None or isinstance(stmt, Token):
                continue
            if stmt.data == "decorated" and stmt.children[-1].data == "classdef":
                if module_class is not None:
                    self.error("only one `@I.ir_module` class may appear in a file", stmt)
                module_class = stmt
            elif stmt.data == "decorated":
                loose.append(stmt)
            elif stmt.data == "simple_stmt" and self.type_var_decl(stmt.children[0]):
                continue
            elif stmt.data == "simple_stmt" and stmt.children[0].data == "expr_stmt":
                continue  # a bare docstring or expression at top level has no meaning
            else:
                self.error("expected `@I.ir_module`, `@R.function` or `@T.prim_func` at top level", stmt)
        if module_class is not None and loose:
            self.error("functions outside the `@I.ir_module` class are not part of the module", loose[0])
        bare = False
        if module_class is not None:
            decorator = module_class.children[0]
            if self.decorator_name(decorator) != "I.ir_module":
                self.error("a module class must be decorated with `@I.ir_module`", decorator)
            classdef = module_class.children[-1]
            cls_name = str(classdef.children[0])
            self.globals_scope[cls_name] = _Module()
            defs = []
            for stmt in self.suite_stmts(classdef.children[-1]):
                if stmt.data == "decorated":
                    defs.append(stmt)
                elif stmt.data == "funcdef":
                    self.error("a module function needs `@R.function` or `@T.prim_func`", stmt)
                elif stmt.data == "simple_stmt" and stmt.children[0].data in ("pass_stmt", "expr_stmt"):
                    continue
                else:
                    self.error("expected a function definition in the module class", stmt)
        else:
            defs = loose
            bare = len(loose) == 1
        if not defs and module_class is None:
            self.error("expected `@I.ir_module`, `@R.function` or `@T.prim_func`", tree)
        kinds = []
        for d in defs:
            funcdef = d.children[-1]
            name = str(funcdef.children[0])
            if name in self.global_vars:
                self.error(f"function `{name}` is defined twice", funcdef)
            self.global_vars[name] = GlobalVar(name)
            kinds.append((name, d, funcdef))
        # signatures first: a call to a later function needs its return struct info
        relax_builders = {}
        for name, d, funcdef in kinds:
            kind, options = self.function_kind(d)
            if kind == "R":
                b = _RelaxBuilder(self)
                b.read_signature(funcdef, options)
                relax_builders[name] = b
                self.signatures[name] = b.signature
        for name, d, funcdef in kinds:
            kind, options = self.function_kind(d)
            if kind == "T":
                self.functions[name] = _build_prim_func(self, funcdef, options)
            else:
                self.functions[name] = relax_builders[name].build_body(funcdef)
        mod = IRModule(self.functions, self.global_vars)
        mod.bare = bare
        return mod

    def type_var_decl(self, stmt) -> bool:
        """`n = TypeVar("n")` declares a module-level symbolic shape variable."""
        if stmt.data != "assign":
            return False
        target, value = stmt.children
        if not (isinstance(value, Tree) and value.data == "call"):
            return False
        callee = value.children[0]
        if not (isinstance(callee, Tree) and callee.data == "name" and str(callee.children[0]) == "TypeVar"):
            return False
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("expected `name = TypeVar(\"name\")`", stmt)
        self.type_vars[str(target.children[0])] = "int64"
        return True

    def decorator_name(self, decorator) -> str:
        expr = decorator.children[0]
        if isinstance(expr, Tree) and expr.data == "call":
            expr = expr.children[0]
        parts = []
        while isinstance(expr, Tree) and expr.data == "attribute":
            parts.append(str(expr.children[1]))
            expr = expr.children[0]
        if isinstance(expr, Tree) and expr.data == "name":
            parts.append(str(expr.children[0]))
        name = ".".join(reversed(parts))
        head, _, rest = name.partition(".")
        return f"{_ALIASES.get(head, head)}.{rest}" if rest else name

    def decorator_options(self, decorator) -> dict:
        expr = decorator.children[0]
        if not (isinstance(expr, Tree) and expr.data == "call") or expr.children[1] is None:
            return {}
        options = {}
        for a in expr.children[1].children:
            if not (isinstance(a, Tree) and a.data == "kwarg"):
                self.error("decorator arguments must be keywords", a)
            value = a.children[1]
            if not (isinstance(value, Tree) and value.data in ("true", "false")):
                self.error("expected True or False", value)
            options[str(a.children[0])] = value.data == "true"
        return options

    def function_kind(self, decorated) -> tuple[str, dict]:
        decorators = decorated.children[:-1]
        if len(decorators) != 1:
            self.error("a function takes exactly one decorator", decorated)
        name = self.decorator_name(decorators[0])
        options = self.decorator_options(decorators[0])
        if name == "R.function":
            allowed = {"private", "pure", "check_well_formed"}
            kind = "R"
        elif name == "T.prim_func":
            allowed = {"private", "s_tir", "check_well_formed"}
            kind = "T"
        else:
            self.error(f"unknown decorator `@{name}`; expected `@R.function` or `@T.prim_func`", decorators[0])
        for key in options:
            if key not in allowed:
                self.error(f"`@{name}` has no option `{key}`", decorators[0])
        return kind, options

    @staticmethod
    def suite_stmts(suite) -> list:
        out = []
        for s in suite.children:
            if s is None or isinstance(s, Token):
                continue
            out.append(s)
        return out


# ----------------------------------------------------------------------------- entry point


def parse_tvmscript(text: str, source_name: str = "<input>") -> IRModule:
    """Parse TVMScript (a `@I.ir_module` class, or one `@R.function` / `@T.prim_func`)."""
    source = SourceFile(source_name, text)
    script, meta_json = _split_metadata(text)
    metadata = None
    if meta_json is not None:
        from .tvm_json import load_metadata

        try:
            metadata = load_metadata(meta_json)
        except ValueError as err:
            line = text[: text.find("metadata")].count("\n") + 1
            raise DiagnosticError(f"cannot read the metadata section: {err}", Span(source, line, 1)) from None
    tree = _syntax_tree(script, source)
    return _ModuleBuilder(source, metadata).build(tree)
