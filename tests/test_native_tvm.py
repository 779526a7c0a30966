"""Native code against TVM 0.27's: the same TVMScript module compiled by `tvm.compile(mod,
target="llvm")` and run by `relax.VirtualMachine`, and built by `irtool.build`; the same
inputs; the outputs must be equal (integers and bools exactly, floats to rtol 1e-5).

The modules: TVM's own printouts (tests/data/tvm-0.27: the seed models after FuseTIR with
their metadata, the second seed's input, a symbolic batch after the zero pipeline), and
modules printed after *our* zero pipeline and CPU schedule (with metadata; before memory planning): one case of every operator of
test_native_ops.py and its IEEE special-value cases (NaN, infinities, signed zeros: TVM's
semantics, not NumPy's), and random programs of test_legalize_ops.py. TVM runs in a subprocess
(the `tvm_python` fixture), on text we print.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import test_native_ops as ops
from test_legalize_ops import random_program

import irtool
from irtool.codegen.executable import prepare
from irtool.text import parse, to_text

DATA = Path(__file__).parent / "data" / "tvm-0.27"
REFERENCE_FILES = ["seed_conv_add_relu/5_FuseTIR_show_meta.py", "seed_two_conv_branches/5_FuseTIR.py",
                   "seed_two_conv_branches/0_input.py", "syntax/dynamic_shape_after_zero.py"]
SIZES = {"n": 5, "batch": 3, "m": 4}

_TVM_RUNNER = r"""
import os, sys, traceback
import numpy as np
import tvm
from tvm import relax

for folder in sys.argv[1:]:
    try:
        mod = tvm.script.from_source(open(os.path.join(folder, "mod.py")).read())
        exe = tvm.compile(mod, target="llvm")
        vm = relax.VirtualMachine(exe, tvm.cpu())
        data = np.load(os.path.join(folder, "in.npz"))
        args = [tvm.runtime.tensor(data[f"arr_{i}"]) for i in range(len(data.files))]
        out = vm["main"](*args)
        outs = [out] if hasattr(out, "numpy") else list(out)
        np.savez(os.path.join(folder, "out.npz"), *[o.numpy() for o in outs])
    except Exception:
        open(os.path.join(folder, "error.txt"), "w").write(traceback.format_exc())
"""


def _inputs(mod, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod.functions["main"].params:
        s = p.struct_info
        shape = tuple(d if isinstance(d, int) else SIZES[d.name] for d in s.shape)
        out.append(ops.random_array(shape, s.dtype, "any", rng))
    return out


def _modules() -> list[tuple[str, str, list]]:
    """(name, TVMScript text with metadata, inputs)."""
    out = []
    for path in REFERENCE_FILES:
        text = (DATA / path).read_text()
        out.append((path.replace("/", "-"), text, _inputs(parse(text, path), 0)))
    specials = [k for k, c in enumerate(ops.CASES) if c[0] == "special"]
    for k in ops.FIRST_OF_EACH_OP + specials:
        _, case_id, params, call = ops.CASES[k]
        mod = parse(ops.module_text(params, call), case_id)
        out.append((f"op-{case_id}", to_text(prepare(mod, plan_memory=False), show_meta_data=True), ops._inputs_for(k, mod)))
    for seed in range(8):
        mod = parse(random_program(seed))
        out.append((f"random{seed}", to_text(prepare(mod, plan_memory=False), show_meta_data=True), _inputs(mod, seed)))
    return out


@pytest.mark.tvm
def test_native_outputs_equal_tvm_compile(tvm_python, tmp_path):
    modules = _modules()
    folders = []
    for name, text, inputs in modules:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "mod.py").write_text(text)
        np.savez(folder / "in.npz", *inputs)
        folders.append(str(folder))
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    proc = subprocess.run([tvm_python, str(runner), *folders], capture_output=True, text=True, timeout=3000,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    failures, compared = [], 0
    for (name, text, inputs), folder in zip(modules, folders):
        if os.path.exists(os.path.join(folder, "error.txt")):
            failures.append(f"{name}: TVM failed:\n{open(os.path.join(folder, 'error.txt')).read()[-1500:]}")
            continue
        theirs = np.load(os.path.join(folder, "out.npz"))
        theirs = [theirs[f"arr_{i}"] for i in range(len(theirs.files))]
        ours = irtool.build(parse(text, name))(*inputs)
        ours = list(ours) if isinstance(ours, tuple) else [ours]
        try:
            assert len(ours) == len(theirs)
            for a, b in zip(ours, theirs):
                assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
                if a.dtype.kind == "f":
                    tol = 2e-3 if a.dtype == np.float16 else 1e-5
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
                else:
                    np.testing.assert_array_equal(a, b)
            compared += 1
        except AssertionError as err:
            failures.append(f"{name}: {str(err)[:800]}")
    assert not failures, f"{len(failures)} of {len(modules)} differ:\n" + "\n\n".join(failures[:5])
    assert compared == len(modules) > 180
