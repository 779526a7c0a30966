"""The TIR verifier (irtool.analysis.tir_verifier): well-formed PrimFuncs pass, and each
rule has a negative case whose message names the function and the culprit."""

from __future__ import annotations

import pytest
from test_tir_interpreter import TRUE, E, V, add, block, buf, load, loops, matmul_func, mul, op, store, sub

from irtool.analysis.tir_verifier import verify_prim_func
from irtool.diagnostics import DiagnosticError, SourceFile, Span
from irtool.ir import tir


def func(params, body, name: str = "f") -> tir.PrimFunc:
    """Like the interpreter tests' prim_func, without verifying."""
    handles, bmap = [], []
    for p in params:
        if isinstance(p, tir.Buffer):
            h = tir.Var(p.name.lower() + "_handle", "handle")
            handles.append(h)
            bmap.append((h, p))
        else:
            handles.append(p)
    return tir.PrimFunc(handles, body, buffer_map=bmap, attrs=[("global_symbol", name)])


def fails(f: tir.PrimFunc, message: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError, match=message) as info:
        verify_prim_func(f)
    return info.value


def sblock(name, iter_vars, body, init=None, reads=(), writes=(), alloc=(), match=()):
    return tir.SBlock(name, iter_vars, reads, writes, body, init=init, alloc_buffers=alloc, match_buffers=match)


def spatial(v, n):
    return tir.IterVar(v, tir.Range(E(0), E(n)), tir.DATA_PAR)


def region(b, *ranges):
    return tir.BufferRegion(b, [tir.Range(E(lo), E(ext)) for lo, ext in ranges])


# ----------------------------------------------------------------------------- well formed


def test_well_formed_functions_pass():
    verify_prim_func(matmul_func(8))
    n, i = V("n"), V("i")
    A, B = buf("A", [n]), buf("B", [n])
    verify_prim_func(func([A, B], tir.For(i, E(0), n, "serial", store(B, load(A, i), i))))


def test_sibling_scopes_may_reuse_a_variable():
    A = buf("A", [4])
    i = V("i")
    first = tir.For(i, E(0), E(4), "serial", store(A, 0.0, i))
    second = tir.For(i, E(0), E(4), "serial", store(A, 1.0, i))
    verify_prim_func(func([A], tir.seq([first, second])))


def test_shape_expressions_and_thread_variables():
    n = V("n")
    A, B = buf("A", [n]), buf("B", [mul(n, 2)])  # n is defined by A, used by B's shape
    tx = V("threadIdx.x")
    launch = tir.AttrStmt(tir.IterVar(tx, None, 1, "threadIdx.x"), "thread_extent", E(4),
                          store(B, load(A, tx), tx))
    verify_prim_func(func([A, B], launch))


def test_blocks_with_reads_writes_alloc_and_match_buffers():
    A, C = buf("A", [4, 8]), buf("C", [4])
    T = buf("T", [4, 8])
    row = buf("row", [8])
    i, j, vi, vj = V("i"), V("j"), V("vi"), V("vj")
    copy = block("T", [(vi, i, "S", 4), (vj, j, "S", 8)], store(T, load(A, vi, vj), vi, vj),
                 reads=[region(A, (vi, 1), (vj, 1))], writes=[region(T, (vi, 1), (vj, 1))])
    k = V("k")
    vr = V("vr")
    reduce_body = tir.For(k, E(0), E(8), "serial", store(C, add(load(C, vr), load(row, k)), vr))
    rows = tir.SBlockRealize([i], TRUE, sblock("rows", [spatial(vr, 4)], reduce_body,
                                               match=[tir.MatchBufferRegion(row, region(T, (vr, 1), (0, 8)))]))
    root = tir.SBlockRealize([], TRUE, sblock("root", [], tir.seq([
        loops([i, j], [4, 8], copy), tir.For(i, E(0), E(4), "serial", rows)]), alloc=[T]))
    verify_prim_func(func([A, C], root))


def test_an_opaque_block_may_use_loop_variables():
    A = buf("A", [4])
    i = V("i")
    opaque = tir.SBlockRealize([], TRUE, sblock("opaque", [], store(A, 1.0, i)))
    verify_prim_func(func([A], tir.For(i, E(0), E(4), "serial", opaque)))


def test_allocate_and_decl_buffer():
    A = buf("A", [4])
    data = tir.Var("tmp", "handle", tir.PointerType("float32"))
    T = buf("T", [4], data=data)
    i = V("i")
    body = tir.Allocate(data, "float32", [E(4)], TRUE, tir.DeclBuffer(T, tir.For(
        i, E(0), E(4), "serial", tir.seq([store(T, load(A, i), i), store(A, load(T, i), i)]))))
    verify_prim_func(func([A], body))


def test_long_chains_need_no_recursion(default_recursion_limit):
    x = V("x")
    e = x
    for _ in range(5000):
        e = add(e, 1)
    body = tir.Return(e)
    for d in range(2000):
        body = tir.LetStmt(V(f"l{d}"), x, body)
    verify_prim_func(func([x], body))


# ----------------------------------------------------------------------------- definitions


def test_undefined_variable():
    A = buf("A", [4])
    x = V("x")
    fails(func([A], store(A, 1.0, x), "kernel"), r"in `@kernel`: variable `x` is used but not defined")


def test_loop_variable_used_after_its_loop():
    A = buf("A", [4])
    i = V("i")
    body = tir.seq([tir.For(i, E(0), E(4), "serial", store(A, 0.0, i)), store(A, 1.0, i)])
    fails(func([A], body), r"loop variable `i` is used outside the scope that defines it")


def test_let_variable_used_outside_its_let():
    A = buf("A", [4])
    x = V("x")
    value = tir.BinOp("add", tir.Let(x, E(1), x), x)
    fails(func([A], store(A, 1.0, value)), r"let variable `x` is used outside the scope that defines it")


def test_nested_redefinition_breaks_ssa():
    A = buf("A", [4, 4])
    i = V("i")
    fails(func([A], loops([i, i], [4, 4], store(A, 0.0, i, i))),
          r"loop variable `i` is defined again inside the scope of its definition \(as a loop variable\)")
    x = V("x")
    fails(func([A, x], tir.LetStmt(x, E(1), store(A, 0.0, x, x))),
          r"let variable `x` is defined again .*\(as a parameter\)")


def test_parameter_listed_twice():
    x = V("x")
    fails(func([x, x], tir.Evaluate(E(0))), r"parameter `x` is defined again")


def test_buffer_map_of_a_non_parameter():
    A = buf("A", [4])
    stray = tir.Var("a", "handle")
    f = tir.PrimFunc([], tir.Evaluate(E(0)), buffer_map=[(stray, A)])
    fails(f, r"buffer_map entry for buffer `A` names `a`, which is not a parameter")


# ----------------------------------------------------------------------------- buffers


def test_index_count_must_match_the_rank():
    A, B = buf("A", [4, 4]), buf("B", [4])
    i = V("i")
    fails(func([A, B], tir.For(i, E(0), E(4), "serial", store(B, load(A, i), i))),
          r"buffer `A` has 2 dimensions but is loaded with 1 index")
    fails(func([A, B], tir.For(i, E(0), E(4), "serial", store(B, 0.0, i, i))),
          r"buffer `B` has 1 dimension but is stored to with 2 indices")


def test_undeclared_buffer():
    A = buf("A", [4])
    T = buf("T", [4])
    i = V("i")
    fails(func([A], tir.For(i, E(0), E(4), "serial", store(T, load(A, i), i))),
          r"buffer `T` is stored to but not declared")


def test_buffer_used_after_its_decl_buffer():
    A = buf("A", [4])
    T = buf("T", [4])
    body = tir.seq([tir.DeclBuffer(T, store(T, 1.0, 0)), store(A, load(T, 0), 0)])
    fails(func([A], body), r"buffer `T` is loaded but not declared")


def test_alloc_buffer_is_local_to_its_block():
    A = buf("A", [4])
    T = buf("T", [4])
    inner = tir.SBlockRealize([], TRUE, sblock("inner", [], store(T, 1.0, 0), alloc=[T]))
    fails(func([A], tir.seq([inner, store(A, load(T, 0), 0)])), r"buffer `T` is loaded but not declared")


# ----------------------------------------------------------------------------- blocks


def test_iter_values_count_must_match_iter_vars():
    A = buf("A", [4, 4])
    i, vi, vj = V("i"), V("vi"), V("vj")
    blk = sblock("C", [spatial(vi, 4), spatial(vj, 4)], store(A, 0.0, vi, vj))
    fails(func([A], tir.For(i, E(0), E(4), "serial", tir.SBlockRealize([i], TRUE, blk))),
          r"block `C` has 2 iterators but its realize binds 1 value")


def test_block_iterator_used_outside_its_block():
    A = buf("A", [4])
    i, vi = V("i"), V("vi")
    body = tir.For(i, E(0), E(4), "serial", tir.seq([block("C", [(vi, i, "S", 4)], store(A, 0.0, vi)),
                                                     store(A, 1.0, vi)]))
    fails(func([A], body), r"block iterator `vi` of block `C` is used outside its block")


def test_loop_variable_used_directly_inside_a_block():
    A = buf("A", [4])
    i, vi = V("i"), V("vi")
    body = tir.For(i, E(0), E(4), "serial", block("C", [(vi, i, "S", 4)], store(A, 0.0, i)))
    fails(func([A], body), r"loop variable `i` is used inside block `C`, which has iterators")


def test_loop_inside_the_block_is_fine_but_not_inside_a_nested_block():
    A = buf("A", [4, 4])
    i, j, vi, vj = V("i"), V("j"), V("vi"), V("vj")
    ok = tir.For(i, E(0), E(4), "serial", block("outer", [(vi, i, "S", 4)],
                                                 tir.For(j, E(0), E(4), "serial", store(A, 0.0, vi, j))))
    verify_prim_func(func([A], ok))
    bad = tir.For(i, E(0), E(4), "serial", block("outer", [(vi, i, "S", 4)], tir.For(
        j, E(0), E(4), "serial", block("inner", [(vj, j, "S", 4)], store(A, 0.0, vi, j)))))
    fails(func([A], bad), r"loop variable `j` is used inside block `inner`")


def test_init_needs_a_reduction_iterator():
    A = buf("A", [4])
    i, vi = V("i"), V("vi")
    body = tir.For(i, E(0), E(4), "serial", block("C", [(vi, i, "S", 4)], store(A, 1.0, vi), init=store(A, 0.0, vi)))
    fails(func([A], body), r"block `C` has an init statement but no reduction iterator")


def test_read_and_write_regions_have_the_buffer_rank():
    A, B = buf("A", [4, 4]), buf("B", [4])
    i, vi = V("i"), V("vi")
    blk = sblock("C", [spatial(vi, 4)], store(B, load(A, vi, 0), vi), reads=[region(A, (vi, 1))],
                 writes=[region(B, (vi, 1))])
    fails(func([A, B], tir.For(i, E(0), E(4), "serial", tir.SBlockRealize([i], TRUE, blk))),
          r"read region of buffer `A` has 1 range, but the buffer has 2 dimensions")
    blk = sblock("C", [spatial(vi, 4)], store(B, load(A, vi, 0), vi), reads=[region(A, (vi, 1), (0, 1))],
                 writes=[region(B, (vi, 1), (0, 1))])
    fails(func([A, B], tir.For(i, E(0), E(4), "serial", tir.SBlockRealize([i], TRUE, blk))),
          r"written region of buffer `B` has 2 ranges, but the buffer has 1 dimension")


def test_regions_and_matched_buffers_must_be_declared():
    A, T = buf("A", [4]), buf("T", [4])
    m = buf("m", [1])
    vi, i = V("vi"), V("i")
    blk = sblock("C", [spatial(vi, 4)], store(m, 0.0, 0), match=[tir.MatchBufferRegion(m, region(T, (vi, 1)))])
    fails(func([A], tir.For(i, E(0), E(4), "serial", tir.SBlockRealize([i], TRUE, blk))),
          r"buffer `T` is matched but not declared")


# ----------------------------------------------------------------------------- locations


def test_errors_point_at_the_innermost_span():
    src = SourceFile("kernel.ir", "line one\n    A[i] = B[i, 0]\n")
    A, B = buf("A", [4]), buf("B", [4])
    i = V("i")
    bad = tir.BufferStore(A, tir.BufferLoad(B, [i, E(0)], span=Span(src, 2, 12, 2, 19)), [i], span=Span(src, 2, 5))
    err = fails(func([A, B], tir.For(i, E(0), E(4), "serial", bad)), r"buffer `B` has 1 dimension")
    assert err.span.line == 2 and err.span.col == 12
    assert err.render().splitlines() == [
        "kernel.ir:2:12: error: in `@f`: buffer `B` has 1 dimension but is loaded with 2 indices",
        "    A[i] = B[i, 0]",
        "           ^~~~~~~",
    ]


def test_function_name_argument_and_no_span():
    A = buf("A", [4])
    f = tir.PrimFunc([], store(A, 0.0, 0))
    err = fails(f, r"^buffer `A` is stored to but not declared")
    assert err.span is None
    with pytest.raises(DiagnosticError, match=r"^in `@g`: buffer `A`"):
        verify_prim_func(f, "g")


def test_messages_stay_specific_with_sub_and_op():
    # a smoke test that all expression kinds are walked: the undefined `y` hides in a Select
    A = buf("A", [4])
    i, y = V("i"), V("y")
    value = tir.Select(op("lt", i, 2), tir.Cast("float32", sub(i, y)), E(0.0))
    fails(func([A], tir.For(i, E(0), E(4), "serial", store(A, value, i))), r"variable `y` is used but not defined")


def test_a_use_is_reported_at_the_use_not_at_the_definition():
    src = SourceFile("k.ir", "for i in range(4):\n    A[i] = 0\nA[i] = 1\n")
    A = buf("A", [4])
    i = tir.Var("i", "int32", span=Span(src, 1, 5))
    late = tir.BufferStore(A, E(1.0), [i], span=Span(src, 3, 1))
    body = tir.seq([tir.For(i, E(0), E(4), "serial", store(A, 0.0, i), span=Span(src, 1, 1)), late])
    err = fails(func([A], body), "loop variable `i` is used outside the scope that defines it")
    assert (err.span.line, err.span.col) == (3, 1)


def test_views_of_live_memory_need_no_decl_buffer():
    A = buf("A", [4, 4])
    A_1 = buf("A_1", [16], data=A.data)  # TVM prints `A_1 = A.view(16)`
    k = V("k")
    verify_prim_func(func([A], tir.For(k, E(0), E(16), "serial", store(A_1, 0.0, k))))
    n = V("n")
    A_n = buf("A_n", [n], data=A.data)  # ...but its shape must be defined
    fails(func([A], tir.For(k, E(0), E(16), "serial", store(A_n, 0.0, k))), r"variable `n` is used but not defined")
