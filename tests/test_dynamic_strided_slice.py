"""R.dynamic_strided_slice (TVM 0.27's slice with bounds in int64 tensors): its struct info (the
rank only), its NumPy reference, and legalize-ops as TVM's: a shape function, R.tensor_to_shape,
R.match_cast to fresh sizes `s` and TOPI's slice of those sizes. The legalized module, run by the
interpreters, equals the reference on random bounds; (tvm) TVM 0.27 prints the same module."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from tvm_text import canonical_type_vars

from irtool.diagnostics import DiagnosticError
from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.text import parse, to_text
from irtool.transform import get_pass


def module_text(x: str, bounds: str = "int64", n: int | None = None, dataflow: bool = True) -> str:
    """main(x, b, e, st) = R.dynamic_strided_slice(x, b, e, st); x's shape like `(8, 10)`."""
    rank = x.count(",") + (0 if x.endswith(",)") else 1)
    k = rank if n is None else n
    bound = f'R.Tensor(({k},), dtype="{bounds}")'
    sig = f'x: R.Tensor({x}, dtype="float32"), b: {bound}, e: {bound}, st: {bound}'
    call = "R.dynamic_strided_slice(x, b, e, st)"
    body = (f"        with R.dataflow():\n            gv = {call}\n            R.output(gv)\n" if dataflow
            else f"        gv = {call}\n")
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            f"@I.ir_module\nclass Module:\n    @R.function\n    def main({sig}):\n{body}        return gv\n")


def test_struct_info_keeps_the_rank_only():
    fn = parse(module_text('(8, "n")'))["main"]
    sinfo = fn.body.blocks[0].bindings[0].var.struct_info
    assert isinstance(sinfo, rx.TensorStructInfo) and sinfo.ndim == 2 and sinfo.shape is None
    assert sinfo.dtype == "float32"


@pytest.mark.parametrize("text,message", [
    (module_text("(8, 10)", bounds="int32"), "1-d int64 tensor of 2 values"),  # TVM: int64 bounds
    (module_text("(8, 10)", n=1), "1-d int64 tensor of 2 values"),  # one value per axis of x
])
def test_struct_info_errors(text, message):
    with pytest.raises(DiagnosticError) as info:  # located at the call
        parse(text)
    assert message in str(info.value)


def _random_bounds(rng, shape):
    k = len(shape)
    return [rng.integers(-14, 14, k), rng.integers(-14, 14, k), rng.choice([-3, -2, -1, 1, 2, 3], k)]


def _valid(shape, b, e, s) -> bool:
    """TOPI's sizes are ceildiv(end - begin, stride) of the clamped bounds: negative when the bounds
    run against the stride (TVM then fails to allocate; the reference raises)."""
    for d, bb, ee, ss in zip(shape, b, e, s):
        lo, hi = (-1, d - 1) if ss < 0 else (0, d)
        bb, ee = (min(max(v + d if v < 0 else v, lo), hi) for v in (bb, ee))
        if (ee - bb) * np.sign(ss) < 0:
            return False
    return True


@pytest.mark.parametrize("x,shapes", [
    ("(8, 10)", [(8, 10)]),
    ('("n", 10)', [(5, 10), (1, 10)]),
    ("(6, 4, 5)", [(6, 4, 5)]),
    ("(7,)", [(7,)]),
])
@pytest.mark.parametrize("dataflow", [True, False])
def test_legalized_equals_the_reference(x, shapes, dataflow):
    mod = parse(module_text(x, dataflow=dataflow))
    legal = get_pass("legalize-ops")()(mod)
    ops = [b.value.op.name if isinstance(b.value, rx.Call) else type(b).__name__
           for blk in legal["main"].body.blocks for b in blk.bindings]
    assert ops == ["relax.call_tir", "relax.tensor_to_shape", "MatchCast", "relax.call_tir"]
    rng = np.random.default_rng(len(x))
    checked = 0
    for shape in shapes:
        data = rng.standard_normal(shape).astype("float32")
        for _ in range(150):
            bounds = _random_bounds(rng, shape)
            if not _valid(shape, *bounds):
                continue
            want = data[tuple(slice(*(int(v) for v in t)) for t in zip(*bounds))]
            got, lowered = run_relax(mod, [data, *bounds]), run_relax(legal, [data, *bounds])
            assert got.shape == want.shape == lowered.shape
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(lowered, want)
            checked += 1
    assert checked > 20


def test_legalized_text_parses_back():
    legal = get_pass("legalize-ops")()(parse(module_text('("n", 10)')))
    text = to_text(legal)
    assert "R.match_cast(lv1, R.Shape([s, s_1]))" in text
    assert 'out_ty=R.Tensor((s, s_1), dtype="float32")' in text
    assert to_text(parse(text)) == text


_TVM_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    with open(path + ".tvm", "w") as f:
        f.write(relax.transform.LegalizeOps()(mod).script(show_meta=True))
"""

TVM_CASES = {
    "2d": module_text("(8, 10)"),
    "3d": module_text("(8, 10, 6)"),
    "1d": module_text("(7,)"),
    "symbolic": module_text('("n", 10)'),
    "no-dataflow": module_text("(8, 10)", dataflow=False),
}


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps prints what ours prints (the numbering of the fresh sizes' names in
    the PrimFunc aside: TVM's printer numbers same-named variables in a run-dependent order)."""
    (tmp_path / "runner.py").write_text(_TVM_RUNNER)
    paths = []
    for name, text in TVM_CASES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append((name, path))
    proc = subprocess.run([tvm_python, str(tmp_path / "runner.py"), *[str(p) for _, p in paths]],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    failures = []
    for name, path in paths:
        ours = to_text(get_pass("legalize-ops")()(parse(path.read_text())), show_meta_data=True)
        theirs = (tmp_path / f"{name}.py.tvm").read_text()
        if canonical_type_vars(ours).rstrip("\n") != canonical_type_vars(theirs).rstrip("\n"):
            failures.append(f"{name}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, "\n".join(failures)
