"""relay-to-relax's resolution of Relay's reshape codes against symbolic sizes.

A symbolic size is a product of symbols with an integer factor (`factors`), so -3's merge,
-4's split and -1's quotient stay exact: `n * 2` split by 2 is `n`, and a -1 next to copied
symbols divides them out. What cannot be resolved exactly is `_Unsupported` (a located
diagnostic at the reshape)."""

from __future__ import annotations

from irtool.ir import tir
from irtool.ops import registry
from irtool.ops.transform import reshape_shape

from ._relax_block_builder import _Unsupported


def new_shape(dims: tuple, newshape: tuple, allowzero: bool) -> tuple:
    """Relay's newshape codes resolved against the input dimensions (ints or symbolic).
    Symbolic sizes are products of symbols with an integer factor (`_factors`), so -3's
    merge, -4's split and -1's quotient stay exact (n * 2 split by 2 is n)."""
    if all(isinstance(d, int) for d in dims):
        try:
            return reshape_shape(dims, tuple(newshape), allowzero)
        except registry.TypeRelError as err:
            raise _Unsupported(str(err)) from None
    out, src, infer, i = [], 0, None, 0
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            out.append(dims[src])
            src += 1
        elif v == -1:
            infer = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(dims[src:])
            src = len(dims)
        elif v == -3:
            out.append(_product([dims[src], dims[src + 1]]))
            src += 2
        elif v == -4:
            d1, d2 = newshape[i + 1], newshape[i + 2]
            if d1 == -1:
                d1 = _quotient([dims[src]], [d2])
            elif d2 == -1:
                d2 = _quotient([dims[src]], [d1])
            out += [d1, d2]
            src += 1
            i += 2
        else:
            raise _Unsupported(f"newshape {list(newshape)}: unsupported special value {v}")
        i += 1
    if infer is not None:
        out[infer] = _quotient(dims, [d for k, d in enumerate(out) if k != infer])
    return tuple(out)


def _factors(d) -> tuple[int, list]:
    """A dimension as (integer factor, symbols it multiplies)."""
    if isinstance(d, int):
        return d, []
    if isinstance(d, tir.IntImm):
        return d.value, []
    if isinstance(d, tir.BinOp) and d.op == "mul":
        fa, sa = _factors(d.a)
        fb, sb = _factors(d.b)
        return fa * fb, sa + sb
    return 1, [d]


def _rebuild(factor: int, syms: list):
    if not syms:
        return factor
    e = syms[0]
    for s in syms[1:]:
        e = tir.BinOp("mul", e, s)
    return e if factor == 1 else tir.BinOp("mul", e, tir.IntImm(factor, "int64"))


def _product(dims):
    factor, syms = 1, []
    for d in dims:
        f, s = _factors(d)
        factor *= f
        syms += s
    return _rebuild(factor, syms)


def _quotient(dims, known) -> tir.PrimExpr | int:
    """prod(dims) / prod(known) when it is a product of symbols with an integer factor."""
    factor, syms = _factors(_product(dims)) if dims else (1, [])
    divisor, known_syms = _factors(_product(known)) if known else (1, [])
    for k in known_syms:
        match = next((j for j, s in enumerate(syms) if s is k), None)
        if match is None:
            raise _Unsupported("reshape -1 next to a symbolic dimension that is not copied")
        del syms[match]
    if divisor == 0 or factor % divisor:
        raise _Unsupported("reshape -1 of a symbolic shape that the other dimensions do not divide")
    return _rebuild(factor // divisor, syms)
