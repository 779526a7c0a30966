"""The zero pipeline over R.flip, R.gather_nd, R.einsum and R.image.grid_sample (bicubic with border
padding) among elementwise ops: the ops legalize, get TVM's op patterns (flip and gather_nd
injective, gather_nd opaque, einsum kOutEWiseFusable) and fuse as TVM's FuseOps fuses them; the
result computes what the input computes (interpreters), and (tvm-marked) prints exactly what TVM
0.27's `relax.get_pipeline("zero")` prints."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from tvm_text import canonical_elem_offsets

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text
from irtool.transform import PassContext, get_pass

HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n# from tvm.script import tirx as T\n\n"


def _module(params: str, body: list[str]) -> str:
    lines = "".join(f"            {b}\n" for b in body)
    return (f"{HEADER}@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n"
            f"        with R.dataflow():\n{lines}            R.output(gv)\n        return gv\n")


def _t(shape, dtype="float32") -> str:
    return f'R.Tensor(({", ".join(map(str, shape))}{"," if len(shape) == 1 else ""}), dtype="{dtype}")'


MODULES = {
    # flip between elementwise ops: one injective group
    "flip_chain": _module(f"x: {_t((2, 3, 4))}, y: {_t((2, 3, 4))}",
                          ["a = R.exp(x)", "b = R.flip(a, axis=-1)", "c = R.add(b, y)", "gv = R.nn.relu(c)"]),
    # gather_nd of a computed tensor, then elementwise
    "gather_nd_chain": _module(f"x: {_t((3, 4))}, i: {_t((2, 2), 'int64')}",
                               ["a = R.multiply(x, x)", "b = R.gather_nd(a, i)", "gv = R.sigmoid(b)"]),
    # einsum as a reduction followed by elementwise ops (fused into it)
    "einsum_chain": _module(f"x: {_t((2, 3))}, y: {_t((3, 4))}, z: {_t((4,))}",
                            ['a = R.einsum((x, y), subscripts="ij,jk->ik")', "b = R.add(a, z)", "gv = R.tanh(b)"]),
    "einsum_after": _module(f"x: {_t((2, 3, 4))}",
                            ["a = R.negative(x)", 'b = R.einsum((a,), subscripts="bij->bji")',
                             'gv = R.einsum((b, b), subscripts="bji,bji->b")']),
    "grid_sample_chain": _module(f"x: {_t((1, 2, 4, 5))}, g: {_t((1, 2, 3, 3))}",
                                 ["h = R.tanh(g)",
                                  'a = R.image.grid_sample(x, h, method="bicubic", layout="NCHW", '
                                  'padding_mode="border", align_corners=True)',
                                  "gv = R.nn.relu(a)"]),
    "grid_sample_reflection": _module(f"x: {_t((1, 2, 4, 5))}, g: {_t((1, 2, 3, 3))}",
                                      ['a = R.image.grid_sample(x, g, method="bilinear", layout="NCHW", '
                                       'padding_mode="reflection", align_corners=False)', "gv = R.exp(a)"]),
    "mixed": _module(f"x: {_t((3, 3))}, i: {_t((2, 1), 'int64')}",
                     ["a = R.flip(x, axis=0)", 'b = R.einsum((a, x), subscripts="ij,jk->ik")',
                      "c = R.gather_nd(b, i)", "gv = R.add(c, c)"]),
    # lit_tests/relax/zero-pipeline-indexing.ir
    "lit_module": _module(f"x: {_t((2, 3))}, y: {_t((3, 4))}",
                          ["a = R.exp(x)", "b = R.flip(a, axis=1)", 'c = R.einsum((b, y), subscripts="ij,jk->ik")',
                           "gv = R.nn.relu(c)"]),
    # the scatters are opaque (8): the groups before and after them fuse on their own
    "scatter_between": _module(f"x: {_t((2, 3))}, i: {_t((2, 2), 'int64')}, u: {_t((2, 2))}",
                               ["a = R.exp(x)", "b = R.scatter_elements(a, i, u, axis=1)", "c = R.flip(b, axis=1)",
                                "gv = R.nn.relu(c)"]),
    "scatter_nd_between": _module(f"x: {_t((4, 3))}, i: {_t((2, 1), 'int64')}, u: {_t((2, 3))}",
                                  ["a = R.add(x, x)", 'b = R.scatter_nd(a, i, u, reduction="add")', "gv = R.sigmoid(b)"]),
}


def zero(mod):
    with PassContext():
        return get_pass("zero-pipeline")()(mod)


def _inputs(fn, rng) -> list:
    out = []
    for p in fn.params:
        s = p.struct_info
        shape = tuple(s.shape)
        if s.dtype == "int64":
            out.append(rng.integers(0, 2, size=shape).astype("int64"))
        else:
            out.append(rng.standard_normal(shape).astype(s.dtype))
    return out


@pytest.mark.parametrize("name", list(MODULES))
def test_zero_pipeline_computes_the_same(name):
    mod = parse(MODULES[name])
    out = zero(mod)
    text = to_text(out)
    for op in ("R.flip", "R.gather_nd", "R.einsum", "R.image.grid_sample", "R.scatter"):
        assert op not in text, f"{op} left in\n{text}"
    inputs = _inputs(mod.functions["main"], np.random.default_rng(5))
    np.testing.assert_allclose(run_relax(out, inputs), run_relax(mod, inputs), rtol=1e-5, atol=1e-5)


def test_op_patterns_are_tvms():
    """annotate-tir-op-pattern as TVM's (the tvm-marked test compares the printouts): flip injective
    (2), te_gather_nd opaque (8: a load indexed by another buffer's values), einsum kOutEWiseFusable (4)."""
    patterns = {}
    for name in ("flip_chain", "gather_nd_chain", "einsum_chain"):
        mod = get_pass("annotate-tir-op-pattern")()(get_pass("legalize-ops")()(parse(MODULES[name])))
        for gv, f in mod.functions.items():
            if hasattr(f, "attrs") and f.attrs and "op_pattern" in dict(f.attrs):
                patterns[gv if isinstance(gv, str) else gv.name_hint] = int(dict(f.attrs)["op_pattern"])
    assert patterns["flip"] == 2 and patterns["te_gather_nd"] == 8 and patterns["einsum"] == 4


_TVM_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    with open(path + ".tvm", "w") as f:
        f.write(relax.get_pipeline("zero")(mod).script())
"""


@pytest.mark.tvm
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    paths = []
    for name, text in MODULES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    failures = []
    for path in paths:
        ours = canonical_elem_offsets(to_text(zero(parse(open(path).read()))).rstrip("\n"))
        theirs = canonical_elem_offsets(open(path + ".tvm").read().rstrip("\n"))
        if ours != theirs:
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(paths)} differ:\n" + "\n\n".join(failures[:2])
