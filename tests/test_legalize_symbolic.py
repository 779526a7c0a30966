"""legalize-ops on R.reshape and R.arange with symbolic sizes: the result's struct info is
TVM's (the target shape as written; a -1 among constants the input's product of symbols), the
PrimFunc's indices are TVM's canonical forms of products of symbols (`v * (n * 3)` splits as
the term `v * n` scaled by 3, `v * (n * m)` is `v * n * m`); each case runs with concrete
sizes through the TIR interpreter to the NumPy reference, and (tvm-marked) TVM 0.27's
LegalizeOps prints byte-identical text."""

from __future__ import annotations

import numpy as np
import pytest
from test_legalize_avg_pool import _ops
from test_legalize_ops import assert_legalized_like_tvm, legalize

from irtool.diagnostics import DiagnosticError
from irtool.exec.relax import run_relax
from irtool.text import parse, to_text

SIZES = {"n": 3, "m": 5, "k": 2}


def _module(params: list[tuple[str, tuple]], call: str) -> str:
    """A one-call module; each symbol of the parameters' shapes declared as T.int64()."""
    symbols = sorted({d for _, shape in params for d in shape if isinstance(d, str)})
    sig = ", ".join(f"{name}: R.Tensor(({', '.join(repr(d).replace(chr(39), chr(34)) for d in shape)}"
                    f"{',' if len(shape) == 1 else ''}), dtype=\"float32\")" for name, shape in params)
    decls = "".join(f"        {s} = T.int64()\n" for s in symbols)
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n# from tvm.script import tirx as T\n\n"
            f"@I.ir_module\nclass Module:\n    @R.function\n    def main({sig}):\n{decls}"
            f"        with R.dataflow():\n            gv = {call}\n            R.output(gv)\n        return gv\n")


RESHAPES = [
    (("n", 4), ["n * 2", 2]), (("n", 4), ["n * 4"]), (("n", "m"), ["n * m"]), (("n", 6), ["n", 2, 3]),
    ((2, "n", 3), [2, "n * 3"]), ((1, "n", "m"), ["n", "m"]), (("n", "m"), ["m", "n"]), (("n", 8), ["n", 2, 4]),
    ((4, "n"), [2, 2, "n"]), (("n", 6), ["n", 3, 2]), (("n", 6), ["n * 2", 3]), (("n", 6), ["n * 3", 2]),
    (("n", 2, 3), ["n", 6]), (("n", 2, 3), ["n * 6"]), (("n", 2, 3), ["n * 2", 3]), ((2, "n", 3), ["n * 6"]),
    ((2, "n", 3), [6, "n"]), ((4, "n"), [2, "n * 2"]), ((4, "n"), ["n", 4]), (("n", "m", 2), ["n * m", 2]),
    (("n", "m", 2), ["n", "m * 2"]), ((2, "n", "m"), ["n * 2", "m"]), (("n", 4, "m"), ["n * 4", "m"]),
    (("n", 4, "m"), ["n", "m * 4"]), ((1, "n", 8), ["n", 2, 4]), (("n", 8), [2, "n * 4"]), (("n", 12), ["n", 3, 2, 2]),
    ((3, "n", 4), [12, "n"]), ((3, "n", 4), [3, "n * 4"]), ((3, "n", 4), ["n * 3", 4]), (("n",), ["n", 1]),
    (("n",), [1, "n", 1]), (("n", 6), ["n", -1]), (("n", 6), [-1, 3]), (("n", "m"), [-1]), (("n", 2, 3), [-1, 6]),
    ((4, "n"), [2, -1]), (("n", "m", 2), [-1]), (("n", "m", 4), [2, -1]), (("n", "m", 2), [-1, 2]),
    ((3, "n", "m"), [-1]), (("n", 2, "m"), [-1, "m"]), ((2, "n", "m"), [-1, 2]), ((2, "n", "m"), [2, "n * m"]),
    (("k", "n", "m"), ["k", "n * m"]), ((2, "n", "m", 3), [2, "n * m * 3"]), ((2, "n", "m", 3), [2, "n * m", 3]),
]
ARANGES = [("0", "n", "1", "int64"), ("1", "n", "2", "int64"), ("0", "n", "1", "float32"), ("n", "m", "1", "int64"),
           ("0", "n", "3", "int32"), ("2", "n + 5", "1", "int64"), ("0", "n * 2", "1", "float16"),
           ("n", "0", "-1", "int64")]

CASES: list[tuple[str, str]] = [
    (f"reshape-{'x'.join(map(str, src))}-to-{'x'.join(map(str, dst))}".replace(" ", ""),
     _module([("x", src)], f"R.reshape(x, R.shape([{', '.join(map(str, dst))}]))"))
    for src, dst in RESHAPES
] + [
    (f"arange-{a}-{b}-{s}-{dt}".replace(" ", ""),
     _module([(f"x_{sym}", (sym,)) for sym in ("n", "m") if sym in a + b], f'R.arange({a}, {b}, {s}, dtype="{dt}")'))
    for a, b, s, dt in ARANGES
]


def _inputs(mod) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for p in mod.functions["main"].params:
        shape = [SIZES[d.name] if hasattr(d, "name") else int(getattr(d, "value", d)) for d in p.struct_info.shape]
        out.append(rng.standard_normal(shape).astype("float32"))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    mod = parse(case[1])
    out = legalize(mod)
    assert _ops(out) == ["relax.call_tir"]
    args = _inputs(mod)
    expected, got = np.asarray(run_relax(mod, args)), np.asarray(run_relax(out, args))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert to_text(parse(to_text(out))) == to_text(out)


def test_reshape_keeps_the_product_of_symbols():
    """(n, m) -> (-1,) is `(n * m,)` in struct info, as TVM writes it (not just ndim=1)."""
    text = to_text(parse(_module([("x", ("n", "m"))], "R.reshape(x, R.shape([-1]))")))
    assert 'R.Tensor(("n * m",), dtype="float32")' in text or "R.Tensor((n * m,)" in text


def test_reshape_to_a_provably_different_count_is_an_error():
    """6 elements cannot become n * 4 (TVM's modular analysis proves it); n * 4 to n * 3 can't
    be disproved and is accepted, as in TVM."""
    with pytest.raises(DiagnosticError, match="cannot reshape"):
        parse(_module([("x", (2, 3)), ("y", ("n",))], "R.reshape(x, R.shape([n, 4]))"))
    parse(_module([("x", ("n", 4))], "R.reshape(x, R.shape([n, 3]))"))


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps on every case module prints exactly what ours prints."""
    assert_legalized_like_tvm(tvm_python, tmp_path, CASES)
