"""TVMScript text -> IRModule of Relax functions and TIR PrimFuncs.

Two stages, as in TVM's own parser (which uses Python's `ast`):

    text ──lark LALR + indenter (syntax.py, grammar/tvmscript.lark)──> syntax tree (Python subset)
         ──_ModuleBuilder (here)──> IRModule
              ├ _RelaxBuilder   (relax.py) @R.function: scopes of Relax vars, bindings grouped
              │                 into blocks, struct info deduced for every bound value
              └ _TirBuilder     (tir_stmt.py over tir_expr.py) @T.prim_func: statement lists,
                                where "rest of the block" statements (let, decl_buffer,
                                assert, attr) own what follows
                 both over _Builder (evaluate.py): scopes and Python expression evaluation

The builders evaluate expressions over the tree: `R.add` and `T.grid` are dotted names
looked up in the tables at the end of each builder, so an unknown `R.`/`T.` name is a
diagnostic with a caret, never a crash. Names are resolved in nested scopes; a symbolic
dimension (`n` in `R.Tensor((n, 4))`) is defined where it first appears in a signature
or a match_cast, as TVM does.
"""

from __future__ import annotations

from lark import Token, Tree

from ..._util import gc_paused
from ...diagnostics import DiagnosticError, SourceFile, Span
from ...ir import relax as rx
from ...ir import tir
from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from .evaluate import _ALIASES, _Module
from .relax import _RelaxBuilder
from .syntax import _split_metadata, _syntax_tree, suite_stmts
from .tir_stmt import _build_prim_func

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
            for stmt in suite_stmts(classdef.children[-1]):
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


# ----------------------------------------------------------------------------- entry point


def parse_tvmscript(text: str, source_name: str = "<input>") -> IRModule:
    """Parse TVMScript (a `@I.ir_module` class, or one `@R.function` / `@T.prim_func`)."""
    source = SourceFile(source_name, text)
    script, meta_json = _split_metadata(text)
    metadata = None
    if meta_json is not None:
        from ..tvm_json import load_metadata

        try:
            metadata = load_metadata(meta_json)
        except ValueError as err:
            line = text[: text.find("metadata")].count("\n") + 1
            raise DiagnosticError(f"cannot read the metadata section: {err}", Span(source, line, 1)) from None
    with gc_paused():  # the syntax tree alone is ~20 objects a binding, and holds no cycles
        tree = _syntax_tree(script, source)
        return _ModuleBuilder(source, metadata).build(tree)
