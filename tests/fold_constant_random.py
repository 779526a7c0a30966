"""Random Relax modules with constants, for fold-constant's tests (tests/test_fold_constant_relax.py).

`random_module(seed)` gives TVMScript text with a metadata section (TVM's `tvm.ir.load_json`
form, which both parsers read): a `main` over a few parameters (one of symbolic shape),
dataflow blocks and ordinary blocks binding operator calls on parameters, tensor constants
(`metadata["ir.GenericConst"][i]`), scalar `R.const`s and earlier results; tuples and their
projections; creation ops below and above ShouldBeFolded's 1024 elements. The operators are
those whose float32 results are exactly rounded (no transcendentals), so TVM's compiled
kernels and our TIR interpreter give the same bits.
"""

from __future__ import annotations

import random

import numpy as np

from irtool.ir import relax as rx
from irtool.text.tvm_json import dump_metadata

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"

# one line per operator family: Relax spelling, how many operands
UNARY = ["R.negative", "R.abs", "R.floor", "R.ceil", "R.sign"]
BINARY = ["R.add", "R.subtract", "R.multiply", "R.maximum", "R.minimum"]  # (no divide: 0 -> inf -> casts)
COMPARE = ["R.greater", "R.less", "R.equal"]
REDUCE = ["R.sum", "R.max", "R.min"]
CONST_SHAPES = [(2, 3), (3,), (1, 3), (2, 1), ()]


class _Value:
    __slots__ = ("text", "shape", "dtype")

    def __init__(self, text: str, shape, dtype: str) -> None:
        self.text, self.shape, self.dtype = text, shape, dtype


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _tensor(shape, dtype: str) -> str:
    dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape)
    return f'R.Tensor(({dims}{"," if len(shape) == 1 else ""}), dtype="{dtype}")'


def random_module(seed: int) -> str:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    constants: list[rx.Constant] = []
    counter = iter(range(1000))
    params = [_Value("x", (2, 3), "float32"), _Value("y", (3,), "float32"), _Value("i", (2, 3), "int32"),
              _Value("z", ("n", 3), "float32")]
    visible = list(params)
    lines: list[str] = []

    def constant(dtype: str) -> _Value:
        shape = rng.choice(CONST_SHAPES)
        if dtype == "int32":
            data = nrng.integers(-5, 6, size=shape).astype(dtype)
        else:  # quarter steps: sums and products stay exact in float32
            data = (nrng.integers(-12, 13, size=shape) / 4).astype(dtype)
        constants.append(rx.Constant(data))
        return _Value(f'metadata["ir.GenericConst"][{len(constants) - 1}]', shape, dtype)

    def operand(dtype: str | None = None) -> _Value | None:
        """A visible value, a new tensor constant or a scalar R.const (of `dtype`, if given)."""
        if dtype is None:
            dtype = rng.choice(["float32"] * 4 + ["int32"])
        candidates = [v for v in visible if v.dtype == dtype]
        r = rng.random()
        if dtype != "bool" and (r < 0.3 or not candidates):
            return constant(dtype)
        if dtype == "float32" and r < 0.4:
            return _Value(f'R.const({rng.randint(-3, 3)}.5, "float32")', (), "float32")
        return rng.choice(candidates) if candidates else None

    def call() -> _Value | None:
        r = rng.random()
        a = operand()
        if r < 0.15 and a.dtype == "float32":
            return _Value(f"{rng.choice(UNARY)}({a.text})", a.shape, a.dtype)
        if r < 0.45:
            b = operand(a.dtype)
            shape = _broadcast_sym(a.shape, b.shape)
            if shape is None:
                return None
            op = rng.choice(BINARY)
            return _Value(f"{op}({a.text}, {b.text})", shape, a.dtype)
        if r < 0.52:
            b = operand(a.dtype)
            shape = _broadcast_sym(a.shape, b.shape)
            return None if shape is None else _Value(f"{rng.choice(COMPARE)}({a.text}, {b.text})", shape, "bool")
        if r < 0.62 and a.shape:
            axis = rng.randrange(len(a.shape))
            keep = rng.random() < 0.5
            shape = tuple(1 if k == axis else d for k, d in enumerate(a.shape) if keep or k != axis)
            return _Value(f"{rng.choice(REDUCE)}({a.text}, axis=[{axis}], keepdims={keep})", shape, a.dtype)
        if r < 0.68 and len(a.shape) == 2:
            return _Value(f"R.permute_dims({a.text})", a.shape[::-1], a.dtype)
        if r < 0.72 and a.shape == (2, 3):
            return _Value(f"R.reshape({a.text}, R.shape([3, 2]))", (3, 2), a.dtype)
        if r < 0.76 and a.dtype != "bool":
            to = "int32" if a.dtype == "float32" else "float32"
            return _Value(f'R.astype({a.text}, dtype="{to}")', a.shape, to)
        if r < 0.82:
            shape = rng.choice([(2, 3), (3,), (40, 30), (32, 32), (33, 32)])
            kind = rng.choice(["R.zeros", "R.ones"])
            return _Value(f'{kind}(R.shape([{", ".join(map(str, shape))}]), dtype="float32")', shape, "float32")
        if r < 0.86:
            return _Value(f"{rng.choice(['R.zeros_like', 'R.ones_like'])}({a.text})", a.shape, a.dtype)
        if r < 0.9 and a.shape and isinstance(a.shape[-1], int) and a.shape[-1] == 3:
            return _Value(f"R.split({a.text}, indices_or_sections=3, axis={len(a.shape) - 1})", ("tuple", a), a.dtype)
        if r < 0.94 and a.dtype != "bool":
            c = operand("bool")
            if c is None:
                return None
            b = operand(a.dtype)
            shape = _broadcast_sym(c.shape, a.shape)
            shape = shape and _broadcast_sym(shape, b.shape)
            return None if shape is None else _Value(f"R.where({c.text}, {a.text}, {b.text})", shape, a.dtype)
        b = operand(a.dtype)
        return _Value(f"({a.text}, {b.text})", ("pair", a, b), a.dtype)

    def binding(indent: str, outputs: list | None) -> None:
        value = call()
        if value is None:
            return
        name = f"v{next(counter)}"
        lines.append(f"{indent}{name} = {value.text}")
        if isinstance(value.shape, tuple) and value.shape and value.shape[0] in ("tuple", "pair"):
            # a tuple: bind one of its fields too, which is what later calls use
            if value.shape[0] == "tuple":
                src = value.shape[1]
                field = _Value(f"{name}[{rng.randrange(3)}]", src.shape[:-1] + (1,), src.dtype)
            else:
                src = value.shape[1 + rng.randrange(2)]
                field = _Value(f"{name}[{0 if src is value.shape[1] else 1}]", src.shape, src.dtype)
            fname = f"v{next(counter)}"
            lines.append(f"{indent}{fname} = {field.text}")
            value, name = _Value(fname, field.shape, field.dtype), fname
        else:
            value = _Value(name, value.shape, value.dtype)
        if outputs is None:
            visible.append(value)
        else:
            outputs.append(value)

    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.7:
            lines.append("        with R.dataflow():")
            outputs: list[_Value] = []
            before = list(visible)
            for _ in range(rng.randint(2, 7)):
                binding("            ", outputs)
                visible[:] = before + outputs  # inside the block every binding is visible
            exported = [v for v in outputs if rng.random() < 0.6] or outputs[-1:]
            if not outputs:
                lines.pop()
                continue
            lines.append(f"            R.output({', '.join(v.text for v in exported)})")
            visible[:] = before + exported
        else:
            for _ in range(rng.randint(1, 3)):
                binding("        ", None)
    results = [v for v in visible[len(params):]][-3:] or visible[:1]
    ret = results[0].text if len(results) == 1 else f"({', '.join(v.text for v in results)})"
    sig = ", ".join(f"{p.text}: {_tensor(p.shape, p.dtype)}" for p in params)
    body = "\n".join(lines)
    meta = f'metadata = tvm.ir.load_json("""{dump_metadata({"ir.GenericConst": constants})}""")\n' if constants else ""
    return (f"{meta}{HEADER}\n@I.ir_module\nclass Module:\n    @R.function\n    def main({sig}):\n"
            f"        n = T.int64()\n{body}\n        return {ret}\n")


def _broadcast_sym(a, b):
    """np.broadcast_shapes, with the symbolic dim `"n"` equal only to itself (or 1)."""
    if any(isinstance(d, str) for d in a + b):
        out = []
        for da, db in zip(((1,) * (len(b) - len(a)) + a), ((1,) * (len(a) - len(b)) + b)):
            if da == db or db == 1:
                out.append(da)
            elif da == 1:
                out.append(db)
            else:
                return None
        return tuple(out)
    return _broadcast(a, b)
