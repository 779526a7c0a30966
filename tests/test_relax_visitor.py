"""The shared Relax ExprVisitor / ExprMutator (irtool.ir.relax_visitor)."""

from __future__ import annotations

import irtool
from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.relax_visitor import ExprMutator, ExprVisitor
from irtool.ir.structural import structural_equal

SMALL = '''
@R.function
def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    with R.dataflow():
        lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
        lv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, x)
        gv: R.Tensor((2, 3), dtype="float32") = R.add(lv1, lv)
        R.output(gv)
    return gv
'''


def _main(text: str) -> rx.Function:
    return irtool.parse(text, "t.py").functions["main"]


def _chain(n: int) -> str:
    lines = ["@R.function",
             'def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):',
             "    with R.dataflow():", '        lv0: R.Tensor((4,), dtype="float32") = R.exp(x)']
    lines += [f'        lv{i}: R.Tensor((4,), dtype="float32") = R.add(lv{i - 1}, x)' for i in range(1, n)]
    lines += [f'        gv: R.Tensor((4,), dtype="float32") = R.exp(lv{n - 1})', "        R.output(gv)", "    return gv"]
    return "\n".join(lines) + "\n"


class _UseCounter(ExprVisitor):
    def __init__(self) -> None:
        self.uses: dict = {}
        self.defs: list = []

    def visit_var_(self, v) -> None:
        self.uses[v.name_hint] = self.uses.get(v.name_hint, 0) + 1

    def visit_var_def(self, v) -> None:
        self.defs.append(v.name_hint)
        super().visit_var_def(v)


def test_visitor_sees_every_use_and_definition_in_order():
    counter = _UseCounter()
    counter.visit_expr(_main(SMALL))
    assert counter.defs == ["x", "y", "lv", "lv1", "gv"]
    assert counter.uses == {"x": 2, "y": 1, "lv": 2, "lv1": 1, "gv": 1}


def test_long_blocks_need_no_recursion(default_recursion_limit):
    fn = _main(_chain(5000))
    counter = _UseCounter()
    counter.visit_expr(fn)
    assert counter.uses["x"] == 5000
    assert ExprMutator().visit_expr(fn) is fn


def test_mutator_keeps_what_did_not_change():
    fn = _main(SMALL)
    assert ExprMutator().visit_expr(fn) is fn


class _AddToSubtract(ExprMutator):
    def visit_call_(self, e):
        e = super().visit_call_(e)
        if isinstance(e.op, Op) and e.op.name == "relax.add":
            return self.normalize(rx.Call(Op.get("relax.subtract"), e.args, e.attrs, e.sinfo_args, e.span))
        return e


def test_mutator_rebuilds_and_deduces_struct_info():
    fn = _main(SMALL)
    out = _AddToSubtract().visit_expr(fn)
    assert out is not fn
    text = irtool.to_text(irtool.ir.module.IRModule({"main": out}))
    assert "R.subtract(x, y)" in text and "R.subtract(lv1, lv)" in text and "R.add" not in text
    bindings = out.body.blocks[0].bindings
    assert bindings[0].var is fn.body.blocks[0].bindings[0].var  # same struct info: same variable
    assert bindings[2].value.struct_info is not None


class _Widen(ExprMutator):
    """Replaces `x` by a tensor of another shape: the struct info of everything downstream changes."""

    def __init__(self, new_x) -> None:
        super().__init__()
        self.new_x = new_x

    def visit_function_(self, fn):
        self.var_remap[fn.params[0]] = self.new_x
        self.var_remap[fn.params[1]] = self.new_x
        out = super().visit_function_(fn)
        return rx.Function([self.new_x], out.body, out.body.struct_info, fn.is_pure, fn.attrs, fn.private)


def test_changed_struct_info_gives_new_variables_and_remaps_uses():
    fn = _main(SMALL)
    new_x = rx.Var("x", rx.TensorStructInfo((5, 3), "float32"))
    out = _Widen(new_x).visit_expr(fn)
    block = out.body.blocks[0]
    assert all(b.var.struct_info.shape == (5, 3) for b in block.bindings)
    assert block.bindings[1].value.args[0] is block.bindings[0].var  # uses follow the new variable
    assert out.body.body is block.bindings[2].var
    expected = _main(SMALL.replace("(2, 3)", "(5, 3)").replace(', y: R.Tensor((5, 3), dtype="float32")', "")
                     .replace("R.add(x, y)", "R.add(x, x)"))
    assert structural_equal(out, expected)
