"""The shared Relax ExprVisitor / ExprMutator (irtool.ir.relax_visitor)."""

from __future__ import annotations

import irtool
from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.relax_visitor import ExprMutator, ExprVisitor, normalize_blocks, same_struct_info, tir_vars
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


def test_mutator_maps_a_function_result_it_no_longer_satisfies():
    fn = _main(SMALL)
    new_x = rx.Var("x", rx.TensorStructInfo((5, 3), "float32"))
    mutator = ExprMutator()
    mutator.var_remap.update({fn.params[0]: new_x, fn.params[1]: new_x})
    out = mutator.visit_expr(fn)
    assert out.params == (new_x, new_x)  # definitions follow var_remap
    assert out.ret_struct_info.shape == (5, 3)  # (2, 3) no longer holds: the body's, as TVM's


SYMBOLIC = '''
@R.function
def main(x: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
    n = T.int64()
    with R.dataflow():
        a: R.Tensor((n, 3), dtype="float32") = R.exp(x)
        b: R.Tuple(R.Tensor((n, 3), dtype="float32"), R.Tensor((n, 3), dtype="float32")) = (a, x)
        c: R.Tensor((n, 3), dtype="float32") = b[0]
        R.output(c)
    return c
'''


class _Specialise(ExprMutator):
    """Replaces the size variable `n` by 4 wherever struct info mentions it."""

    def visit_struct_info_prim_field(self, e):
        return 4 if isinstance(e, irtool.ir.tir.Var) and e.name == "n" else e


def test_struct_info_size_fields_are_mapped_and_bindings_take_the_new_struct_info():
    fn = _main(SYMBOLIC)
    out = _Specialise().visit_expr(fn)
    a, b, c = out.body.blocks[0].bindings
    assert out.params[0].struct_info.shape == (4, 3)
    assert a.var.struct_info.shape == (4, 3) and a.value.struct_info.shape == (4, 3)
    assert [f.shape for f in b.var.struct_info.fields_] == [(4, 3), (4, 3)]
    assert c.value.tuple_value is b.var and out.body.body is c.var  # uses follow the new variables
    assert out.ret_struct_info.shape == (4, 3)
    assert ExprMutator().visit_expr(fn) is fn  # nothing to map: nothing rebuilt


class _EveryStructInfo(ExprVisitor):
    def __init__(self) -> None:
        self.seen: list = []

    def visit_expr_struct_info(self, e) -> None:
        self.seen.append(type(e).__name__)
        self.visit_struct_info(e.struct_info)

    def visit_prim_expr(self, e) -> None:
        self.seen.append(str(e.name) if isinstance(e, irtool.ir.tir.Var) else e)


def test_visitor_struct_info_of_uses_and_compound_expressions():
    seen = _EveryStructInfo()
    seen.visit_expr(_main(SYMBOLIC))
    # each struct info is followed by the size variables it mentions; `def` marks the
    # definitions' struct info (visit_var_def), the rest are TVM's value-dependent fields
    assert seen.seen == ["n",  # def x
                         "Var", "n", "Call", "n",  # exp(x)
                         "n",  # def a
                         "DataflowVar", "n", "Var", "n", "Tuple", "n", "n",  # (a, x)
                         "n", "n",  # def b
                         "DataflowVar", "n", "n", "TupleGetItem", "n",  # b[0]
                         "n",  # def c
                         "Var", "n",  # return c
                         "SeqExpr"]  # (the parser leaves a function body's struct info unset)


class _ShapeVarUses(ExprVisitor):
    def __init__(self) -> None:
        self.uses: list = []

    def visit_var_(self, v) -> None:
        self.uses.append(v.name_hint)


def test_struct_info_walk_goes_through_tuples_not_into_function_struct_info():
    s = rx.Var("s", rx.ShapeStructInfo(ndim=2))
    tensor = rx.TensorStructInfo(s, "float32")
    walker = _ShapeVarUses()
    walker.visit_struct_info(rx.TupleStructInfo([tensor, rx.TupleStructInfo([tensor])]))
    assert walker.uses == ["s", "s"]
    walker.uses.clear()
    walker.visit_struct_info(rx.FuncStructInfo([tensor], tensor))
    assert walker.uses == []  # a function's struct info mentions nothing of the scope


class _CallOrder(ExprVisitor):
    def __init__(self) -> None:
        self.order: list = []

    def visit_leaf_(self, e) -> None:
        self.order.append("op")

    def visit_var_(self, v) -> None:
        self.order.append(v.name_hint)


def test_call_parts_in_tvms_order():
    s = rx.Var("s", rx.ShapeStructInfo(ndim=1))
    x = rx.Var("x", rx.TensorStructInfo((4,), "float32"))
    walker = _CallOrder()
    walker.visit_expr(rx.Call(Op.get("relax.exp"), [x], None, [rx.TensorStructInfo(s, "float32")]))
    assert walker.order == ["op", "s", "x"]  # callee, struct-info arguments, arguments


def test_variable_uses_are_not_memoised():
    x = rx.Var("x", rx.TensorStructInfo((4,), "float32"))
    y = rx.Var("y", rx.TensorStructInfo((4,), "float32"))
    mutator = ExprMutator()
    assert mutator.visit_expr(x) is x
    mutator.var_remap[x] = y  # e.g. a recursive local function re-emitted after its own body
    assert mutator.visit_expr(x) is y


TWO_BLOCKS = '''
@R.function
def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    with R.dataflow():
        lv = R.add(x, x)
        R.output(lv)
    with R.dataflow():
        lv1 = R.add(lv, x)
        R.output(lv1)
    return lv1
'''


class _TvmBlocks(ExprMutator):
    normalize_all_blocks = True


def test_normalize_all_blocks_rebuilds_neighbouring_blocks_of_one_kind():
    fn = _main(TWO_BLOCKS)
    assert len(fn.body.blocks) == 2
    assert ExprMutator().visit_expr(fn) is fn
    out = _TvmBlocks().visit_expr(fn)
    assert len(out.body.blocks) == 1 and [b.var.name_hint for b in out.body.blocks[0].bindings] == ["lv", "lv1"]


def test_normalize_blocks_flattens_bound_seq_exprs():
    sinfo = rx.TensorStructInfo((4,), "float32")
    x, a, b, c = (rx.Var(n, sinfo) for n in "xabc")
    inner = rx.SeqExpr([rx.BindingBlock([rx.VarBinding(a, rx.Call(Op.get("relax.exp"), [x]))])], a)
    blocks = [rx.BindingBlock([rx.VarBinding(b, inner), rx.VarBinding(c, b)]), rx.BindingBlock([])]
    (block,) = normalize_blocks(blocks)
    assert [(v.var.name_hint, v.value) for v in block.bindings] == [("a", inner.blocks[0].bindings[0].value),
                                                                  ("b", a), ("c", b)]


MATCH_CAST = '''
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        y = R.match_cast(R.exp(x), R.Tensor((4,), dtype="float32"))
        R.output(y)
    return y
'''


def test_rebuilt_match_cast_of_a_compound_value_casts_a_bound_variable():
    out = _AddToSubtract().visit_expr(_main(MATCH_CAST.replace("R.exp(x)", "R.add(x, x)")))
    lv, cast = out.body.blocks[0].bindings
    assert type(lv.var) is rx.DataflowVar and lv.var.name_hint == "lv"  # TVM's NormalizeArgument
    assert "R.subtract(x, x)" in irtool.to_text(irtool.ir.module.IRModule({"main": out}))
    assert isinstance(cast, rx.MatchCast) and cast.value is lv.var


def test_same_struct_info_and_tir_vars():
    n, m = irtool.ir.tir.Var("n", "int64"), irtool.ir.tir.Var("m", "int64")
    assert same_struct_info(rx.TensorStructInfo((n, 3), "float32"), rx.TensorStructInfo((n, 3), "float32"))
    assert not same_struct_info(rx.TensorStructInfo((n, 3), "float32"), rx.TensorStructInfo((m, 3), "float32"))
    assert same_struct_info(rx.TensorStructInfo((irtool.ir.tir.IntImm(3, "int64"),), "float32"),
                            rx.TensorStructInfo((3,), "float32"))
    assert tir_vars(rx.TupleStructInfo([rx.TensorStructInfo((m, n), ""), rx.ShapeStructInfo([n])])) == [m, n]


def test_dce_and_canonicalize_bindings_on_20000_bindings(default_recursion_limit):
    """One dataflow block of 20,000 bindings (calls, aliases, dead calls) through the two
    passes built on the visitor, at Python's default recursion limit. (dead-code-elimination
    keeps lv and a, as TVM 0.27 does on the same program with two groups.)"""
    from irtool.ir.module import IRModule
    from irtool.transform import get_pass

    sinfo = rx.TensorStructInfo((4,), "float32")
    x = rx.Var("x", sinfo)

    def call(op, *args):
        out = rx.Call(Op.get(op), args)
        out.struct_info = sinfo
        return out

    bindings, last = [], x
    for i in range(5000):
        lv, alias, dead, dead_alias = (rx.DataflowVar(f"{n}{i}", sinfo) for n in ("lv", "a", "d", "da"))
        bindings += [rx.VarBinding(lv, call("relax.add", last, x)), rx.VarBinding(alias, lv),
                     rx.VarBinding(dead, call("relax.exp", alias)), rx.VarBinding(dead_alias, dead)]
        last = alias
    gv = rx.Var("gv", sinfo)
    body = rx.SeqExpr([rx.DataflowBlock(bindings + [rx.VarBinding(gv, last)])], gv)
    mod = IRModule({"main": rx.Function([x], body, sinfo)})
    assert len(bindings) == 20_000

    dce = get_pass("dead-code-elimination")()(mod)["main"]
    (block,) = dce.body.blocks
    assert [b.var.name_hint for b in block.bindings[:3]] == ["lv0", "a0", "lv1"] and len(block.bindings) == 10_001

    canonical = get_pass("canonicalize-bindings")()(mod)["main"]
    (block,) = canonical.body.blocks
    # aliases go, uses read lv directly; the last lv becomes the output gv (as TVM 0.27 does
    # on the same program with two groups: lv0, d0, gv = R.add(lv0, x), d1 = R.exp(gv))
    assert [b.var.name_hint for b in block.bindings[:4]] == ["lv0", "d0", "lv1", "d1"]
    assert len(block.bindings) == 10_000 and [b.var.name_hint for b in block.bindings[-2:]] == ["gv", "d4999"]
    assert block.bindings[2].value.args[0] is block.bindings[0].var
    assert canonical.body.body is block.bindings[-2].var is block.bindings[-1].value.args[0]


class _Recorder(_AddToSubtract):
    def __init__(self) -> None:
        super().__init__()
        self.normalized: list = []

    def normalize(self, new, old=None, fallback=None):
        self.normalized.append(type(new).__name__)
        return super().normalize(new, old, fallback)


def test_every_rebuilt_expression_goes_through_normalize():
    recorder = _Recorder()
    recorder.visit_expr(_main(SMALL))
    # a pass that must keep struct info (dead-code-elimination) overrides this one hook
    assert {"Call", "SeqExpr"} <= set(recorder.normalized)
