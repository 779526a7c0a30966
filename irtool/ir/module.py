"""IRModule: global names to functions (Relay functions, Relax functions, TIR PrimFuncs)."""

from __future__ import annotations

from .expr import Expr, Function, GlobalVar


class IRModule:
    """Maps global names to functions. `GlobalVar`s are interned per module, so every
    `@f` in a module is the same object."""

    __slots__ = ("functions", "_global_vars", "bare")

    def __init__(self, functions: dict[str, Function] | None = None,
                 global_vars: dict[str, GlobalVar] | None = None) -> None:
        self.functions: dict[str, Function] = dict(functions or {})
        self._global_vars: dict[str, GlobalVar] = dict(global_vars or {})
        # read from a file holding one bare `@T.prim_func`/`@R.function` (printed back that way)
        self.bare = False

    @classmethod
    def from_expr(cls, expr: Expr, name: str = "main") -> IRModule:
        """TVM's `IRModule.from_expr`: a non-function becomes a function of its free variables."""
        if not isinstance(expr, Function):
            from .visitor import free_vars

            expr = Function(free_vars(expr), expr)
        return cls({name: expr})

    def get_global_var(self, name: str) -> GlobalVar:
        gv = self._global_vars.get(name)
        if gv is None:
            gv = self._global_vars[name] = GlobalVar(name)
        return gv

    def __getitem__(self, name: str | GlobalVar) -> Function:
        return self.functions[name if isinstance(name, str) else name.name_hint]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def items(self):
        """(name, function) pairs, sorted by name as TVM prints them."""
        return sorted(self.functions.items())

    def with_functions(self, functions: dict[str, Function]) -> IRModule:
        """A new module with the same global variables and these functions."""
        return IRModule(functions, self._global_vars)

    def __repr__(self) -> str:
        return f"IRModule({sorted(self.functions)})"
