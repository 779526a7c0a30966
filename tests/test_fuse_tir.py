"""fuse-tir (TVM 0.27's relax.transform.FuseTIR): byte-identical on TVM's seed printouts,
invariants and the interpreters on hand cases, and TVM itself on the hand cases and on
random fuse-ops outputs (tvm-marked)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from irtool.analysis.tir_rename import next_unique_name, renew_defs, unique_sblock_names
from irtool.diagnostics import DiagnosticError
from irtool.exec.relax import random_input, run_relax
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.structural import structural_equal
from irtool.ir.tir_visitor import StmtExprVisitor, substitute
from irtool.text import parse, to_text
from irtool.text.tvmscript.tir_stmt import printed_domains
from irtool.transform import get_pass

HERE = os.path.dirname(__file__)
LIT_FILE = os.path.join(HERE, "..", "lit_tests", "relax", "fuse-tir.ir")
_REFERENCE_DIRS = (os.path.join(HERE, "data", "tvm-0.27"),)
REFERENCE = next((d for d in _REFERENCE_DIRS if os.path.isdir(d)), None)
SEEDS = ("seed_conv_add_relu", "seed_two_conv_branches")


def fuse_tir(mod):
    return get_pass("fuse-tir")()(mod)


def hand_cases() -> list[str]:
    """The lit file's cases (TVMScript inputs; their expected lines are TVM's)."""
    text = open(LIT_FILE).read()
    return [case for case in text.split("# -----")]


def _reference(seed: str, name: str) -> str:
    return open(os.path.join(REFERENCE, seed, name)).read()


# ----------------------------------------------------------------------------- TVM's seeds


@pytest.mark.skipif(REFERENCE is None, reason="TVM's reference printouts are not here")
@pytest.mark.parametrize("seed", SEEDS)
def test_seed_is_byte_identical(seed):
    mod = parse(_reference(seed, "4_FuseOps.py"), "4_FuseOps.py")
    assert to_text(fuse_tir(mod), show_meta_data=False) == _reference(seed, "5_FuseTIR.py")


@pytest.mark.skipif(REFERENCE is None, reason="TVM's reference printouts are not here")
def test_seed_with_metadata_is_byte_identical():
    """The show_meta printout: the constant's data travels into the call_tir of main."""
    with_meta = _reference("seed_conv_add_relu", "5_FuseTIR_show_meta.py")
    header = with_meta[:with_meta.index("# from tvm.script")]
    body = _reference("seed_conv_add_relu", "4_FuseOps.py").replace(
        "\n\n# Metadata omitted. Use show_meta=True in script() method to show it.", "")
    mod = parse(header + body, "4_FuseOps.py")
    assert to_text(fuse_tir(mod), show_meta_data=True) == with_meta


# ----------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("index", range(len(hand_cases())))
def test_no_primitive_function_survives_and_callers_call_tir(index):
    mod = parse(hand_cases()[index], "fuse-tir.ir")
    primitive = {n for n, f in mod.functions.items() if isinstance(f, rx.Function) and f.is_primitive}
    out = fuse_tir(mod)
    for name, fn in out.functions.items():
        assert not (isinstance(fn, rx.Function) and fn.is_primitive), name
    for name in primitive:
        fused = out.functions[name]
        assert isinstance(fused, tir.PrimFunc) and fused.attr("tirx.noalias") is True
        assert fused.attr("op_pattern") is None
        names = []
        _collect_block_names(fused.body, names)
        assert len(names) == len(set(names)), names
    # every PrimFunc left is called by some Relax function (DCE ran)
    text = to_text(out)
    for name, fn in out.functions.items():
        if isinstance(fn, tir.PrimFunc):
            assert f"cls.{name}," in text, name
    # the printout parses back to the same module (nested domains as printed: printed_domains)
    assert structural_equal(printed_domains(parse(text, "out")), out)


def _collect_block_names(stmt, out: list) -> None:
    class _Names(StmtExprVisitor):
        def visit_SBlock(self, b) -> None:
            out.append(b.name)

    _Names().visit(stmt)


def test_fused_primfunc_computes_what_the_relax_function_did():
    """The fused PrimFuncs (TIR interpreter) give main the values the unfused Relax
    functions (relax interpreter, call_tir of the original PrimFuncs) gave it."""
    rng = np.random.default_rng(0)
    checked = 0
    sources = hand_cases()
    if REFERENCE is not None:
        sources += [_reference(seed, "4_FuseOps.py") for seed in ("seed_two_conv_branches",)]
    for text in sources:
        mod = parse(text, "case")
        main = mod.functions["main"]
        if any(isinstance(p.struct_info, rx.ShapeStructInfo) for p in main.params):
            continue  # a shape argument: covered by test_shape_parameter_becomes_a_scalar_argument
        inputs = [random_input(p.struct_info, rng) for p in main.params]
        before = run_relax(mod, inputs)
        after = run_relax(fuse_tir(mod), inputs)
        for a, b in zip(_flatten(before), _flatten(after), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        checked += 1
    assert checked >= 5


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [np.asarray(value)]


def test_shape_parameter_becomes_a_scalar_argument():
    case = next(c for c in hand_cases() if "fused_shift_shift" in c)
    mod = parse(case, "case")
    out = fuse_tir(mod)
    fused = out.functions["fused_shift_shift"]
    scalars = [p for p in fused.params if fused.buffer_of(p) is None]
    assert [(p.name, p.dtype) for p in scalars] == [("m", "int64")]
    call = out.functions["main"].body.blocks[0].bindings[0].value
    assert [type(a).__name__ for a in call.args[1].fields_] == ["Var", "PrimValue"]


def test_tuple_parameter_is_a_diagnostic():
    text = '''
@I.ir_module
class Module:
    @R.function(private=True)
    def fused(t: R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32"))) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": True})
        return t[0]

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        gv = cls.fused((x, x))
        return gv
'''
    with pytest.raises(DiagnosticError, match="tuple parameter"):
        fuse_tir(parse(text, "t.ir"))


def test_non_call_tir_in_a_fused_function_is_a_diagnostic():
    text = '''
@I.ir_module
class Module:
    @R.function(private=True)
    def fused(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        gv = cls.fused(x)
        return gv
'''
    with pytest.raises(DiagnosticError, match="only call_tir"):
        fuse_tir(parse(text, "t.ir"))


def test_cli_reports_unsupported_input_without_traceback(tmp_path):
    path = tmp_path / "bad.ir"
    path.write_text('''@I.ir_module
class Module:
    @R.function(private=True)
    def fused(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        gv = cls.fused(x)
        return gv
''')
    exe = os.path.join(os.path.dirname(sys.executable), "irtool-opt")
    proc = subprocess.run([exe, str(path), "-p", "fuse-tir"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "error: fuse-tir:" in proc.stderr and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- TIR helpers


def test_unique_names_count_on_from_trailing_digits():
    taken: set[str] = set()
    got = [next_unique_name(n, taken) for n in ("T_add", "T_add", "T_add1", "T_add", "add2", "add2", "x9", "x9")]
    assert got == ["T_add", "T_add1", "T_add2", "T_add3", "add2", "add3", "x9", "x10"]


def _copy_block(name: str, inner: tir.Stmt | None = None) -> tir.Stmt:
    a = tir.Buffer("A", (tir.IntImm(4, "int64"),))
    i = tir.Var("i", "int64")
    store = tir.BufferStore(a, tir.FloatImm(0.0), (i,))
    body = tir.seq([store, inner]) if inner is not None else store
    block = tir.SBlock(name, (), (), (), body)
    return tir.For(i, tir.IntImm(0, "int64"), tir.IntImm(4, "int64"), "serial",
                   tir.SBlockRealize((), tir.IntImm(1, "bool"), block))


def test_sblock_names_are_made_unique_inner_blocks_first():
    stmt = tir.seq([_copy_block("b", _copy_block("b")), _copy_block("b")])
    names: list[str] = []
    _collect_block_names(unique_sblock_names(stmt), names)
    assert names == ["b1", "b", "b2"]  # pre-order listing of post-order naming


def test_renew_defs_gives_fresh_definitions_of_the_same_structure():
    mod = parse(hand_cases()[1], "case")
    add = mod.functions["add"]
    copy = renew_defs(add)
    assert structural_equal(copy, add)
    old_vars, new_vars = _vars(add), _vars(copy)
    assert old_vars and not (old_vars & new_vars)


def _nested_domains(func: tir.PrimFunc, block_name: str) -> list[tuple[str, str]]:
    """(min, extent) of each iteration variable of the sblock named `block_name`, written
    with variables, integers and subtractions (`1 - v - v` as `((1 - v) - v)`)."""
    found: list = []

    def show(e) -> str:
        if isinstance(e, tir.Var):
            return e.name
        if isinstance(e, tir.IntImm):
            return str(e.value)
        if isinstance(e, tir.BinOp) and e.op == "sub":
            return f"({show(e.a)} - {show(e.b)})"
        return type(e).__name__

    class _Blocks(StmtExprVisitor):
        def visit_SBlock(self, b) -> None:
            if b.name == block_name:
                found.extend((show(iv.dom.min), show(iv.dom.extent)) for iv in b.iter_vars)

    _Blocks().visit(func)
    return found


def test_renew_defs_takes_a_nested_domain_extent_for_an_end_as_tvm_does():
    """TVM's RenewDefs rebuilds an iteration domain with Range(min, extent), whose second
    argument is an end: a non-zero min is subtracted from the extent once per copy."""
    case = next(c for c in hand_cases() if "def fused_adaptive_avg_pool2d_relu" in c)
    # the domains as printed (TVM's in-memory module), not as parsed (`v + (1 - v) - v`)
    pool = printed_domains(parse(case, "case")).functions["adaptive_avg_pool2d"]
    before = _nested_domains(pool, "adaptive_pool_sum")
    assert before[0] == ("v_ax0", "1") and before[2] == ("v_ax2", "(1 - v_ax2)")
    once = _nested_domains(renew_defs(pool), "adaptive_pool_sum")
    twice = _nested_domains(renew_defs(renew_defs(pool)), "adaptive_pool_sum")
    assert once[0] == ("v_ax0", "(1 - v_ax0)") and once[2] == ("v_ax2", "((1 - v_ax2) - v_ax2)")
    assert twice[0] == ("v_ax0", "((1 - v_ax0) - v_ax0)")
    assert once[4] == before[4]  # the window's reduce domain starts at 0: unchanged


def _vars(node) -> set[int]:
    found: set[int] = set()

    class _Vars(StmtExprVisitor):
        def visit_Var(self, v) -> None:
            found.add(id(v))

    _Vars().visit(node)
    return found


def test_substitute_rebuilds_each_buffer_once_and_handles_deep_expressions():
    n = tir.Var("n", "int64")
    buf = tir.Buffer("A", (n,))
    i = tir.Var("i", "int64")
    value: tir.PrimExpr = tir.BufferLoad(buf, (i,))
    for _ in range(5000):  # deeper than Python's recursion limit
        value = tir.BinOp("add", value, tir.BufferLoad(buf, (i,)))
    stmt = tir.BufferStore(buf, value, (i,))
    out = substitute(stmt, {n: tir.IntImm(8, "int64")})
    assert out.buffer is not buf and out.buffer.shape[0].value == 8
    e = out.value
    while isinstance(e, tir.BinOp):
        assert e.b.buffer is out.buffer
        e = e.a
    assert substitute(stmt, {}) is stmt


# ----------------------------------------------------------------------------- TVM


_TVM_FUSE_TIR = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    open(path + ".tvm", "w").write(relax.transform.FuseTIR()(mod).script())
"""

_TVM_FUSE_OPS = """
import sys, tvm
from tvm import relax
seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                relax.transform.FoldConstant(), relax.transform.FuseOps()])
for path in sys.argv[1:]:
    text = seq(tvm.script.from_source(open(path).read())).script()
    open(path + ".fused", "w").write(text)
    open(path + ".tvm", "w").write(relax.transform.FuseTIR()(tvm.script.from_source(text)).script())
"""


def _run_tvm(tvm_python, tmp_path, script: str, paths: list[str]) -> None:
    runner = tmp_path / "runner.py"
    runner.write_text(script)
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.tvm
def test_hand_cases_match_tvm(tvm_python, tmp_path):
    paths = []
    for i, case in enumerate(hand_cases()):
        path = tmp_path / f"case{i}.py"
        path.write_text("# from tvm.script import ir as I\n" + case)
        paths.append(str(path))
    _run_tvm(tvm_python, tmp_path, _TVM_FUSE_TIR, paths)
    for path in paths:
        ours = to_text(fuse_tir(parse(open(path).read(), path)), show_meta_data=False)
        assert ours == open(path + ".tvm").read(), path


UNARY = ("R.exp({})", "R.nn.relu({})", "R.sigmoid({})", "R.tanh({})", "R.negative({})", "R.sqrt(R.abs({}))")
BINARY = ("R.add({}, {})", "R.multiply({}, {})", "R.subtract({}, {})", "R.maximum({}, {})")


def random_relax_program(seed: int) -> str:
    """A random Relax main for TVM's LegalizeOps + FuseOps: elementwise chains, matmuls,
    reductions, split/concat (tuples inside groups), softmax, reshapes, constants;
    symbolic row counts in about a third of the programs; one or two outputs."""
    rng = random.Random(seed)
    symbolic = rng.random() < 0.3
    rows = "n" if symbolic else str(rng.choice([2, 3, 4]))
    cols = rng.choice([4, 6, 8])
    dims = f'"{rows}"' if symbolic else rows
    params = [f'x: R.Tensor(({dims}, {cols}), "float32")', f'w: R.Tensor(({cols}, {cols}), "float32")',
              f'b: R.Tensor(({cols},), "float32")']
    values, lines = ["x"], []
    for i in range(rng.randint(3, 10)):
        v, k, a = f"v{i}", rng.random(), rng.choice(values[-3:])
        if k < 0.3:
            e = rng.choice(UNARY).format(a)
        elif k < 0.55:
            e = rng.choice(BINARY).format(a, rng.choice([*values, "b"]))
        elif k < 0.7:
            e = f"R.matmul({a}, w)"
        elif k < 0.8:
            e = f"R.add({a}, R.sum({a}, axis=[1], keepdims=True))"
        elif k < 0.9:
            lines += [f"{v}s = R.split({a}, 2, axis=1)", f"{v}t = R.add({v}s[0], {v}s[1])"]
            e = f"R.concat(({v}t, {v}s[1]), axis=1)"
        elif k < 0.93:
            e = rng.choice([f"R.nn.softmax({a}, axis=1)", f"R.subtract({a}, R.mean({a}, axis=[1], keepdims=True))",
                            f"R.reshape(R.permute_dims(R.reshape({a}, R.shape([{rows}, {cols}, 1])), [0, 2, 1]), "
                            f"R.shape([{rows}, {cols}]))"])
        else:
            e = f'R.add({a}, R.const({rng.choice([0.5, 2.0, -1.0])}, "float32"))'
        lines.append(f"{v} = {e}")
        values.append(v)
    outs = rng.sample(values[1:], min(len(values) - 1, rng.choice([1, 1, 2])))
    lines.append(f"out = {outs[0]}" if len(outs) == 1 else f"out = ({', '.join(outs)})")
    body = "\n".join("            " + line for line in lines)
    size_var = "        n = T.int64()\n" if symbolic else ""
    return (f"# from tvm.script import relax as R\n@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main({', '.join(params)}):\n{size_var}        with R.dataflow():\n{body}\n"
            f"            R.output(out)\n        return out\n")


RANDOM_SEEDS = range(120)


@pytest.mark.tvm
def test_random_fuse_ops_outputs_match_tvm(tvm_python, tmp_path):
    """TVM makes fuse-ops outputs of random programs and prints them; TVM's FuseTIR and
    ours on that text print the same bytes. (Names are the printed ones: TVM run on its
    in-memory module can differ where its printer renamed a duplicate buffer name.)"""
    paths = []
    for seed in RANDOM_SEEDS:
        path = tmp_path / f"random{seed}.py"
        path.write_text(random_relax_program(seed))
        paths.append(str(path))
    _run_tvm(tvm_python, tmp_path, _TVM_FUSE_OPS, paths)
    fused_groups = 0
    for path in paths:
        text = open(path + ".fused").read()
        fused_groups += text.count('R.func_attr({"Primitive": True})')
        ours = to_text(fuse_tir(parse(text, path + ".fused")), show_meta_data=False)
        assert ours == open(path + ".tvm").read(), path
    assert fused_groups >= len(paths) // 2  # the programs do fuse


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


# Uneven adaptive_avg_pool2d (nested sblocks) fused with elementwise ops: TVM's FuseTIR on
# its in-memory module (its parser reads a nested domain `(v, v + (1 - v))` as extent
# `v + (1 - v) - v`, not LegalizeOps' `1 - v`, so these start from Relax source).
_UNEVEN_POOL_PROGRAMS = (
    ("(1, 2, 5, 4)", "R.nn.adaptive_avg_pool2d(x, output_size=(3, 4))", "R.nn.relu({})"),
    ("(1, 4, 10, 6)", "R.nn.adaptive_avg_pool2d(x, output_size=(6, 6))", "R.add({}, R.const(1.0, \"float32\"))"),
    ("(2, 7, 4, 3)", 'R.nn.adaptive_avg_pool2d(x, output_size=(3, 2), layout="NHWC")', "R.sigmoid(R.exp({}))"),
    ('(1, 3, "h", 6)', "R.nn.adaptive_avg_pool2d(x, output_size=(5, 3))", "R.nn.relu({})"),
    ('("n", 3, 9, 5)', "R.nn.adaptive_avg_pool2d(x, output_size=(4, 5))", "R.multiply({}, {})"),
)


def _uneven_pool_program(shape: str, pool: str, after: str) -> str:
    return ("# from tvm.script import relax as R\n@I.ir_module\nclass Module:\n    @R.function\n"
            f'    def main(x: R.Tensor({shape}, "float32")):\n        with R.dataflow():\n'
            f"            a = {pool}\n            b = {after.format('a', 'a')}\n"
            "            R.output(b)\n        return b\n")


_TVM_STAGES_IN_MEMORY = """
import sys, tvm
from tvm import relax
seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                relax.transform.FoldConstant(), relax.transform.FuseOps()])
for path in sys.argv[1:]:
    mod = seq(tvm.script.from_source(open(path).read()))
    open(path + ".fused", "w").write(mod.script())
    open(path + ".tvm", "w").write(relax.transform.FuseTIR()(mod).script())
    reparsed = tvm.script.from_source(mod.script())
    open(path + ".reparsed", "w").write(relax.transform.FuseTIR()(reparsed).script())
"""

_ZERO_STAGES = ("legalize-ops", "annotate-tir-op-pattern", "fold-constant", "fuse-ops", "fuse-tir")


def _zero_stages(mod):
    for name in _ZERO_STAGES:
        mod = get_pass(name)()(mod)
    return mod


@pytest.mark.tvm
def test_uneven_adaptive_pools_fuse_as_tvm_in_memory(tvm_python, tmp_path):
    paths = []
    for i, program in enumerate(_UNEVEN_POOL_PROGRAMS):
        path = tmp_path / f"pool{i}.py"
        path.write_text(_uneven_pool_program(*program))
        paths.append(str(path))
    case = next(c for c in hand_cases() if "adaptive_pool_sum_l1" in c)
    _run_tvm(tvm_python, tmp_path, _TVM_STAGES_IN_MEMORY, paths)
    # the lit case is TVM's fuse-ops output of the first program
    assert to_text(printed_domains(parse(case, "case")), show_meta_data=False) == open(paths[0] + ".fused").read()
    for path in paths:
        expected = open(path + ".tvm").read()
        assert "(T.int64(1) - v_ax2 - v_ax2 - v_ax2)" in expected or \
            "(T.int64(1) - v_ax1 - v_ax1 - v_ax1)" in expected, path  # NHWC: H is axis 1
        # TVM's parser reads the printed nested domain `(v, v + (1 - v))` as extent
        # `v + (1 - v) - v` (not the in-memory `1 - v`), and so does ours
        isolated = fuse_tir(parse(open(path + ".fused").read(), path + ".fused"))
        assert to_text(isolated, show_meta_data=False) == open(path + ".reparsed").read(), path
        whole = _zero_stages(parse(open(path).read(), path))
        assert to_text(whole, show_meta_data=False) == expected, path


def test_uneven_adaptive_pools_fused_compute_numpys_pool():
    """The fused PrimFunc (TIR interpreter) equals the Relax program run on the ops'
    NumPy references (symbolic sizes bound to the inputs' sizes)."""
    rng = np.random.default_rng(7)
    for program in _UNEVEN_POOL_PROGRAMS:
        source = _uneven_pool_program(*program).replace('"h"', "6").replace('"n"', "2")
        mod = parse(source, "pool")
        inputs = [random_input(p.struct_info, rng) for p in mod.functions["main"].params]
        expected = run_relax(mod, inputs)
        fused = _zero_stages(mod)
        assert "adaptive_pool_sum_l1" in to_text(fused, show_meta_data=False)
        np.testing.assert_allclose(run_relax(fused, inputs), expected, rtol=1e-5, atol=1e-6)
