"""Pass infrastructure, with TVM's names and MLIR's command-line conventions.

A pass is a small frozen dataclass, registered once under its command-line name:

    @register
    @dataclass(frozen=True)
    class DeadCodeElimination(FunctionPass):
        name = "dead-code-elimination"      # irtool-opt --pass=dead-code-elimination
        tvm_name = "DeadCodeElimination"
        opt_level = 1
        inline_once: bool = False           # option: dead-code-elimination{inline-once=1}

        def transform_function(self, fn, mod, ctx): ...

`PassContext` carries the opt level, config and instruments; `Sequential` runs passes
in order, skipping those above the context's opt level unless required (TVM's rule).
Pipelines are written `a,b{key=value,...}` as in `mlir-opt -p`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import time
from collections.abc import Callable
from typing import ClassVar

from .diagnostics import DiagnosticError, SourceFile, Span
from .ir.expr import Function
from .ir.module import IRModule
from .ir.relax import Function as RelaxFunction

# --------------------------------------------------------------------------- passes


@dataclasses.dataclass(frozen=True)
class PassInfo:
    """TVM's PassInfo: what a pass is called, from which opt level it runs, what it needs first."""

    name: str
    opt_level: int
    required: tuple[str, ...] = ()


class Pass:
    """Base of every pass. Subclasses are frozen dataclasses whose fields are options."""

    name: ClassVar[str] = ""
    tvm_name: ClassVar[str] = ""
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple[str, ...]] = ()
    summary: ClassVar[str] = ""
    # TVM keyword -> option field, for the TVM-named constructors (`FuseOps(fuse_opt_level=2)`)
    tvm_args: ClassVar[dict[str, str]] = {}
    # other spellings of options in pipelines: `fuse-ops{opt-level=2}` for fuse-opt-level
    option_aliases: ClassVar[dict[str, str]] = {}

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.tvm_name or self.name, self.opt_level, self.required)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        return (ctx or PassContext.current()).run(self, mod)

    @property
    def spelling(self) -> str:
        """The pass as it is written in a pipeline: `name{opt=value,...}` (non-defaults only)."""
        opts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                text = str(int(value)) if isinstance(value, bool) else str(value)
                opts.append(f"{f.name.replace('_', '-')}={text}")
        return self.name + ("{" + ",".join(opts) + "}" if opts else "")


class ModulePass(Pass):
    """A pass over the whole module (TVM's ModulePass): override `transform_module`."""


class FunctionPass(Pass):
    """A pass applied to each Relay function of the module independently (TVM's
    FunctionPass). Functions handed to an external compiler (`Compiler="..."`) or marked
    `SkipOptimization` are left alone, and afterwards types are inferred again if the
    module came in typed, as TVM does (so missing annotations get written). A pass TVM
    registers as a module pass but that works function by function sets
    `tvm_module_pass = True`: it sees every function and types are not re-inferred."""

    tvm_module_pass: ClassVar[bool] = False

    def transform_function(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        raise NotImplementedError

    def transform_relax_function(self, fn, mod: IRModule, ctx: PassContext):
        """The pass on a Relax function; passes that work on Relax override this (the
        default leaves Relax functions, like TIR PrimFuncs, unchanged)."""
        return fn

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from ._util import gc_paused

        with gc_paused():  # rewriting big graphs: the collector's rescans would dominate
            return self._transform_functions(mod, ctx)

    def _transform_functions(self, mod: IRModule, ctx: PassContext) -> IRModule:
        relay_fns = [fn for fn in mod.functions.values() if isinstance(fn, Function)]
        typed = bool(relay_fns) and all(fn.checked_type is not None for fn in relay_fns)
        if not typed and "infer-type" in self.required:
            # called on its own rather than in a Sequential, which runs infer-type first
            from .analysis.type_infer import infer_type_pass

            mod, typed = infer_type_pass(mod), True
        functions = {}
        changed = False
        for name, fn in mod.functions.items():
            if isinstance(fn, RelaxFunction):
                skip = not self.tvm_module_pass and (
                    isinstance(fn.attr("Codegen"), str) or fn.attr("SkipOptimization"))
                new = fn if skip else self.transform_relax_function(fn, mod, ctx)
                changed |= new is not fn
                functions[name] = new
                continue
            optimizable = isinstance(fn, Function) and (self.tvm_module_pass or not (
                isinstance(fn.attr("Compiler"), str) or fn.attr("SkipOptimization")))
            new = self.transform_function(fn, mod, ctx) if optimizable else fn
            changed |= new is not fn
            functions[name] = new
        if not changed:
            return mod
        mod = mod.with_functions(functions)
        if typed and not self.tvm_module_pass:
            from .analysis.type_infer import infer_type_pass

            mod = infer_type_pass(mod)
        return mod


@dataclasses.dataclass(frozen=True, init=False)
class Sequential(Pass):
    """Run passes in order (TVM's `transform.Sequential`): a pass above the context's
    opt level is skipped unless the context requires it, a disabled pass never runs,
    and the passes a pass `required`s run right before it."""

    passes: tuple = ()
    name: ClassVar[str] = "sequential"
    tvm_name: ClassVar[str] = "Sequential"

    def __init__(self, passes=()) -> None:
        object.__setattr__(self, "passes", tuple(passes))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            if ctx.should_run(p):
                for required in p.required:
                    mod = ctx.run(get_pass(required)(), mod)
                mod = ctx.run(p, mod)
        return mod


def module_pass(opt_level: int = 0, name: str | None = None, required=()) -> Callable:
    """Decorator (TVM's `tvm.transform.module_pass`): `fn(mod, ctx) -> mod` as a pass."""
    return _pass_decorator(ModulePass, "transform_module", opt_level, name, required)


def function_pass(opt_level: int = 0, name: str | None = None, required=()) -> Callable:
    """Decorator (TVM's `relay.transform.function_pass`): `fn(func, mod, ctx) -> func` as a pass."""
    return _pass_decorator(FunctionPass, "transform_function", opt_level, name, required)


def _pass_decorator(base: type, method: str, opt_level: int, name: str | None, required) -> Callable:
    def wrap(fn: Callable) -> Pass:
        pass_name = name or fn.__name__
        cls = type(pass_name, (base,), {
            method: lambda self, *args: fn(*args),
            "name": pass_name, "tvm_name": pass_name, "opt_level": opt_level, "required": tuple(required)})
        return dataclasses.dataclass(frozen=True)(cls)()

    return wrap


def __getattr__(tvm_name: str) -> Callable[..., Pass]:
    """TVM-named pass constructors: `irtool.transform.FuseOps(fuse_opt_level=2)`,
    `FoldConstant()`, `EliminateCommonSubexpr()`, ... for every registered pass; keyword
    arguments take TVM's names (`tvm_args`) or the option names."""
    if tvm_name.startswith("_") or not tvm_name[:1].isupper():
        raise AttributeError(tvm_name)
    try:
        cls = get_pass(tvm_name)
    except KeyError:
        raise AttributeError(f"module 'irtool.transform' has no attribute '{tvm_name}'") from None

    def construct(*args, **kwargs) -> Pass:
        renamed = {cls.tvm_args.get(k, k): v for k, v in kwargs.items()}
        fields = [f.name for f in dataclasses.fields(cls)]
        renamed.update(zip(fields, args))
        return cls(**renamed)

    construct.__name__ = construct.__qualname__ = tvm_name
    construct.__doc__ = f"{cls.summary} (pass `{cls.name}`)."
    return construct


# --------------------------------------------------------------------------- context

_CONFIG_OPTIONS: dict[str, type] = {}


def register_config(key: str, kind: type) -> None:
    """Declare a PassContext config key (TVM's TVM_REGISTER_PASS_CONFIG_OPTION)."""
    _CONFIG_OPTIONS[key] = kind


def config_options() -> dict[str, type]:
    all_passes()  # passes declare their keys when their modules load
    return dict(sorted(_CONFIG_OPTIONS.items()))


def convert_config_value(key: str, value):
    """Check `key` is a declared config option and convert `value` (text or Python) to its type."""
    kind = config_options().get(key)
    if kind is None:
        known = ", ".join(config_options()) or "none"
        raise ValueError(f"unknown pass config option `{key}` (known: {known})")
    if isinstance(value, str):
        return _convert_text(kind, value)
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        if not (kind is float and isinstance(value, int)):
            raise ValueError(f"pass config `{key}` expects {kind.__name__}, got {value!r}")
    return value


class PassInstrument:
    """Hooks around every pass the context runs (TVM's `instrument.PassInstrument`)."""

    def run_before_pass(self, mod: IRModule, p: Pass) -> None:
        pass

    def run_after_pass(self, mod: IRModule, p: Pass, new_mod: IRModule) -> None:
        pass


class PassContext:
    """Opt level, config and instruments for a pipeline run; use as a context manager."""

    _stack: ClassVar[list[PassContext]] = []

    def __init__(self, opt_level: int = 2, config: dict | None = None, required_pass=(), disabled_pass=(),
                 instruments=()) -> None:
        self.opt_level = opt_level
        self.config = {k: convert_config_value(k, v) for k, v in (config or {}).items()}
        self.required_pass = set(required_pass)
        self.disabled_pass = set(disabled_pass)
        self.instruments = list(instruments)

    @classmethod
    def current(cls) -> PassContext:
        return cls._stack[-1] if cls._stack else PassContext()

    def get_config(self, key: str, default=None):
        return self.config.get(key, default)

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        PassContext._stack.pop()

    def should_run(self, p: Pass) -> bool:
        names = {p.name, p.tvm_name}
        if names & self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level or bool(names & self.required_pass)

    def run(self, p: Pass, mod: IRModule) -> IRModule:
        for inst in self.instruments:
            inst.run_before_pass(mod, p)
        new_mod = p.transform_module(mod, self)
        for inst in self.instruments:
            inst.run_after_pass(mod, p, new_mod)
        return new_mod


class PassTimingInstrument(PassInstrument):
    """Wall time per pass, reported like `mlir-opt --mlir-timing`."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []
        self._start: list[float] = []

    def run_before_pass(self, mod, p) -> None:
        self._start.append(time.perf_counter())

    def run_after_pass(self, mod, p, new_mod) -> None:
        if not isinstance(p, Sequential):
            self.timings.append((p.spelling, time.perf_counter() - self._start.pop()))
        else:
            self._start.pop()

    def report(self, extra: list[tuple[str, float]] = ()) -> str:
        rows = list(extra) + self.timings
        total = sum(t for _, t in rows) or 1e-12
        bar = "===" + "-" * 73 + "==="
        lines = [bar, "Execution time report".center(79), bar,
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]
        for name, t in rows:
            lines.append(f"  {t:9.4f} ({100 * t / total:5.1f}%)  {name}")
        lines.append(f"  {total:9.4f} (100.0%)  Total")
        return "\n".join(lines)


# --------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type[Pass]] = {}
_ALIASES = {"cse": "eliminate-common-subexpr"}


def register(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make a pass known by its command-line name."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no pass name")
    _REGISTRY[cls.name] = cls
    return cls


def _load(name: str) -> None:
    module = "irtool.passes." + name.replace("-", "_")
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise


def all_passes() -> dict[str, type[Pass]]:
    import irtool.passes as package

    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"irtool.passes.{info.name}")
    return dict(sorted(_REGISTRY.items()))


def get_pass(name: str) -> type[Pass]:
    """The pass class registered as `name` (command-line or TVM name); KeyError if none."""
    name = _ALIASES.get(name, name)
    if name not in _REGISTRY:
        _load(name)
    if name not in _REGISTRY:
        passes = all_passes()  # a module may define several passes (fold-scale-axis and its halves)
        if name in passes:
            return passes[name]
        for cls in passes.values():
            if cls.tvm_name == name:
                return cls
        raise KeyError(name)
    return _REGISTRY[name]


# --------------------------------------------------------------------------- pipelines

_PIPELINE_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)|(?P<punct>[{},=])|(?P<value>[^{},=\s]+))")


def _convert_text(kind: type, text: str):
    if kind is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "on", "yes"):
            return True
        if lowered in ("0", "false", "off", "no"):
            return False
        raise ValueError(f"expected a boolean (true/false/1/0), got `{text}`")
    if kind is int:
        try:
            return int(text, 0)
        except ValueError:
            raise ValueError(f"expected an integer, got `{text}`") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number, got `{text}`") from None
    return text


def parse_pipeline(text: str, source_name: str = "<pipeline>", line_text: str | None = None,
                   col_offset: int = 0) -> list[Pass]:
    """`'a,b{k=v,k2=v2}'` -> pass instances. Errors are diagnostics pointing into `text`
    (or into `line_text`, the command-line argument it came from, at `col_offset`)."""
    source = SourceFile(source_name, line_text if line_text is not None else text)

    def fail(message: str, start: int, end: int):
        raise DiagnosticError(message, Span(source, 1, col_offset + start + 1, 1, col_offset + end + 1))

    tokens = [(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup), m.end(m.lastgroup))
              for m in _PIPELINE_TOKEN.finditer(text) if m.lastgroup]
    if "".join(t[1] for t in tokens).strip() != re.sub(r"\s+", "", text):
        fail("malformed pass pipeline", 0, len(text))
    passes: list[Pass] = []
    i = 0
    while i < len(tokens):
        kind, value, start, end = tokens[i]
        if kind != "name":
            fail(f"expected a pass name, got `{value}`", start, end)
        try:
            cls = get_pass(value)
        except KeyError:
            fail(f"unknown pass `{value}` (see --list-passes)", start, end)
        i += 1
        options: dict = {}
        if i < len(tokens) and tokens[i][1] == "{":
            close = next((j for j in range(i, len(tokens)) if tokens[j][1] == "}"), None)
            if close is None:
                fail("unterminated `{` in pass options", tokens[i][2], len(text))
            fields = {f.name: f for f in dataclasses.fields(cls)}
            j = i + 1
            while j < close:
                if j + 2 >= close + 1 or tokens[j + 1][1] != "=" or tokens[j][0] not in ("name", "value"):
                    fail("expected `option=value` in pass options", tokens[j][2], tokens[min(j + 2, close)][3])
                key_tok, val_tok = tokens[j], tokens[j + 2]
                key = key_tok[1].replace("-", "_")
                field = fields.get(cls.option_aliases.get(key, key))
                if field is None:
                    known = ", ".join(f.name.replace("_", "-") for f in fields.values()) or "none"
                    fail(f"pass `{cls.name}` has no option `{key_tok[1]}` (options: {known})", key_tok[2], key_tok[3])
                try:
                    options[field.name] = _convert_text(type(field.default), val_tok[1])
                except ValueError as err:
                    fail(f"option `{key_tok[1]}` of `{cls.name}`: {err}", val_tok[2], val_tok[3])
                j += 3
                if j < close:
                    if tokens[j][1] != ",":
                        fail("expected `,` between pass options", tokens[j][2], tokens[j][3])
                    j += 1
            i = close + 1
        passes.append(cls(**options))
        if i < len(tokens):
            if tokens[i][1] != ",":
                fail(f"expected `,` between passes, got `{tokens[i][1]}`", tokens[i][2], tokens[i][3])
            i += 1
            if i == len(tokens):
                fail("expected a pass name after `,`", tokens[i - 1][2], tokens[i - 1][3])
    return passes
