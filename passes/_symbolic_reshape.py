"""relay-to-relax's resolution of Relay's reshape codes against symbolic sizes.

A symbolic size is a product of symbols with an integer factor (`factors`), so -3's merge,
-4's split and -1's quotient stay exact: `n * 2` split by 2 is `n`, and a -1 next to copied
symbols divides them out. What cannot be resolved exactly is `_Unsupported` (a located
diagnostic at the reshape)."""

from __future__ import annotations

from math import gcd

from irtool.ir import tir
from irtool.ops import registry
from irtool.ops.transform import reshape_shape, resolve_newshape

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
    try:
        try:
            return resolve_newshape(dims, newshape, allowzero, lambda a, b: _product([a, b]), _quotient)
        except _Unsupported:
            if -4 in newshape:  # a split must divide
                raise
            # a -1 beside a static size the symbols' factor does not divide (a traced length,
            # 10 of (S * N * 32) / 80): TVM's floordiv(prod(old), prod(new)); the reshape
            # then checks the count at run time
            return resolve_newshape(dims, newshape, allowzero, lambda a, b: _product([a, b]),
                                    lambda d, k: _quotient(d, k, floor=True))
    except ValueError as err:
        raise _Unsupported(str(err)) from None


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


def _quotient(dims, known, floor: bool = False) -> tir.PrimExpr | int:
    """prod(dims) / prod(known) when it is a product of symbols with an integer factor
    (with `floor`, else its floordiv)."""
    factor, syms = _factors(_product(dims)) if dims else (1, [])
    divisor, known_syms = _factors(_product(known)) if known else (1, [])
    for k in known_syms:
        match = next((j for j, s in enumerate(syms) if s is k), None)
        if match is None:
            raise _Unsupported("reshape -1 next to a symbolic dimension that is not copied")
        del syms[match]
    if divisor == 0:
        raise _Unsupported("reshape -1 next to a dimension of size 0")
    if factor % divisor and not floor:
        raise _Unsupported("reshape -1 of a symbolic shape that the other dimensions do not divide")
    if factor % divisor:
        g = gcd(factor, divisor)
        return tir.BinOp("floordiv", _rebuild(factor // g, syms), tir.IntImm(divisor // g, "int64"))
    return _rebuild(factor // divisor, syms)
