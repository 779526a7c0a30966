"""The parallel runtime of native code: a persistent thread pool, written in LLVM IR.

`T.parallel` loops are outlined by llvm_codegen.py into a task `i32 task(ptr ctx, i64 begin,
i64 end)` and run by

    i32 irtool_parallel_for(ptr task, ptr ctx, i64 n)     0, or the first failing task's status

which splits [0, n) into one contiguous chunk per thread. The caller takes chunks too,
then waits for the others. Workers are started once (pthreads) and then wait for work:
they spin on a generation counter (cheap hand-off for models that run in 0.1 ms), and
after a while sleep on it with a futex, so an idle process burns no CPU.

    caller (thread 0)                        worker k
    -----------------                        --------
    lock the pool (else: run serially)       spin / futex-wait until gen changes
    task, ctx, n, chunks, done = 0           read task, ctx, n (written before gen)
    claim[c] = 2 * (gen+1), c < chunks       claim chunk k first, then any other: CAS
    gen += 1; futex-wake sleepers                claim[c]: 2 * gen -> 2 * gen + 1
    claim and run chunks (0 first)           run the chunk; done += 1
    wait until done == chunks; unlock

Thread k takes chunk k when it comes in time, so a loop run again (a model's next inference)
gives each core the same part of the data as before, still in its cache (MLP weights split
across two cores' L2 stay there); a late thread's chunk is taken by whoever is free. A claim
word carries its generation, so a worker that wakes late can never run a chunk of the next
loop with the previous loop's task (every chunk of a loop is claimed before the loop ends).
A nested or concurrent parallel loop finds the pool locked and runs serially.
`irtool_set_num_threads(n)` limits the threads (1: serial); until it is called, every online
CPU is used.

Nothing here is host-specific but the futex syscall number and the spin hint, chosen from
the target triple.
"""

from __future__ import annotations

import llvmlite.ir as ir

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
TASK_TYPE = ir.FunctionType(I32, [PTR, I64, I64])
SPIN = 1 << 16  # pause instructions before a worker sleeps (tens of microseconds)
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98, "arm64": 98}
MAX_THREADS = 256
_SC_NPROCESSORS_ONLN = 84  # glibc's value


def futex_syscall(triple: str) -> int | None:
    return _FUTEX_SYSCALL.get(triple.split("-", 1)[0])


class _Globals:
    def __init__(self, module: ir.Module) -> None:
        def g(name: str, t: ir.Type, init=0):
            var = ir.GlobalVariable(module, t, f"irtool.pool.{name}")
            var.initializer = ir.Constant(t, init)
            var.linkage = "internal"
            return var

        self.lock, self.gen, self.sleepers = g("lock", I32), g("gen", I32), g("sleepers", I32)
        self.started, self.want = g("started", I32), g("want", I32, 0)  # 0: every online CPU
        self.task, self.ctx = g("task", PTR, None), g("ctx", PTR, None)
        self.n, self.chunks, self.chunk = g("n", I64), g("chunks", I64), g("chunk", I64)
        self.done, self.status = g("done", I64), g("status", I32)
        claims_t = ir.ArrayType(I64, MAX_THREADS)
        self.claims = ir.GlobalVariable(module, claims_t, "irtool.pool.claims")
        self.claims.initializer = ir.Constant(claims_t, [0] * MAX_THREADS)
        self.claims.linkage = "internal"

    def claim(self, b: ir.IRBuilder, c: ir.Value) -> ir.Value:
        return b.gep(self.claims, [I64(0), c], inbounds=True)


def build_runtime(module: ir.Module, triple: str) -> None:
    """Define the pool's functions in `module` (once per module)."""
    if "irtool_parallel_for" in module.globals:
        return
    g = _Globals(module)
    arch = triple.split("-", 1)[0]
    syscall = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
    pause = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause") if arch == "x86_64" \
        else None
    futex = futex_syscall(triple)

    def spin_hint(b: ir.IRBuilder) -> None:
        if pause is not None:
            b.call(pause, [])

    def atomic_load(b, ptr, t):
        return b.load_atomic(ptr, "acquire", t.width // 8 if isinstance(t, ir.IntType) else 8, typ=t)

    # ---- claim and run chunks of generation `gen`, chunk `me` first; returns when none is left
    run = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64]), "irtool.pool.run_chunks")
    run.linkage = "internal"
    b = ir.IRBuilder(run.append_basic_block("entry"))
    my_gen, me = run.args
    free, taken = b.shl(my_gen, I64(1)), b.add(b.shl(my_gen, I64(1)), I64(1))
    chunks = b.load(g.chunks, typ=I64)
    next_c = b.alloca(I64)  # the next chunk to try after `me`: 0, 1, ... (skipping me)
    b.store(I64(0), next_c)
    own, scan, try_c, work, out = (run.append_basic_block(n) for n in ("own", "scan", "try", "work", "out"))
    current = b.alloca(I64)
    b.cbranch(b.icmp_unsigned("<", me, chunks), own, scan)
    b.position_at_end(own)
    b.store(me, current)
    b.branch(try_c)
    b.position_at_end(scan)
    c = b.load(next_c, typ=I64)
    b.store(b.add(c, I64(1)), next_c)
    b.store(c, current)
    b.cbranch(b.icmp_unsigned("<", c, chunks), try_c, out)
    b.position_at_end(try_c)
    c = b.load(current, typ=I64)
    pair = b.cmpxchg(g.claim(b, c), free, taken, "acq_rel", "acquire")
    b.cbranch(b.extract_value(pair, 1), work, scan)
    b.position_at_end(work)
    chunk = b.load(g.chunk, typ=I64)
    begin = b.mul(c, chunk)
    n = b.load(g.n, typ=I64)
    end = b.select(b.icmp_signed("<", b.add(begin, chunk), n), b.add(begin, chunk), n)
    status = _call_task(b, b.load(g.task, typ=PTR), [b.load(g.ctx, typ=PTR), begin, end])
    failed = b.icmp_signed("!=", status, I32(0))
    with b.if_then(failed):
        b.cmpxchg(g.status, I32(0), status, "acq_rel", "acquire")
    b.atomic_rmw("add", g.done, I64(1), "acq_rel")
    b.branch(scan)
    b.position_at_end(out)
    b.ret_void()

    # ---- worker: wait for a new generation, run its chunks, repeat
    worker = ir.Function(module, ir.FunctionType(PTR, [PTR]), "irtool.pool.worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    my_id = b.ptrtoint(worker.args[0], I64)  # its index, 1.. (the caller is 0)
    seen = b.alloca(I32)
    count = b.alloca(I32)
    b.store(atomic_load(b, g.gen, I32), seen)
    wait, spin, sleep, got = (worker.append_basic_block(n) for n in ("wait", "spin", "sleep", "got"))
    b.branch(wait)
    b.position_at_end(wait)
    b.store(I32(0), count)
    b.branch(spin)
    b.position_at_end(spin)
    now = atomic_load(b, g.gen, I32)
    changed = b.icmp_unsigned("!=", now, b.load(seen, typ=I32))
    keep_spinning = worker.append_basic_block("keep_spinning")
    b.cbranch(changed, got, keep_spinning)
    b.position_at_end(keep_spinning)
    spin_hint(b)
    k = b.add(b.load(count, typ=I32), I32(1))
    b.store(k, count)
    b.cbranch(b.icmp_unsigned("<", k, I32(SPIN)), spin, sleep)
    b.position_at_end(sleep)
    if futex is not None:
        # Dekker-style with the caller's `gen = new; if sleepers: wake`: both sides seq_cst
        b.atomic_rmw("add", g.sleepers, I32(1), "seq_cst")
        timeout = b.alloca(I64, size=I64(2))  # {0 s, 50 ms}: a safety net only
        b.store(I64(0), b.gep(timeout, [I64(0)], source_etype=I64))
        b.store(I64(50_000_000), b.gep(timeout, [I64(1)], source_etype=I64))
        still = b.icmp_unsigned("==", b.load_atomic(g.gen, "seq_cst", 4, typ=I32), b.load(seen, typ=I32))
        with b.if_then(still):
            b.call(syscall, [I64(futex), g.gen, I32(FUTEX_WAIT_PRIVATE), b.load(seen, typ=I32), timeout,
                             ir.Constant(PTR, None), I32(0)])
        b.atomic_rmw("sub", g.sleepers, I32(1), "seq_cst")
    b.branch(wait)
    b.position_at_end(got)
    b.store(now, seen)
    with b.if_then(b.icmp_signed("<", my_id, b.zext(atomic_load(b, g.want, I32), I64))):  # within the limit
        b.call(run, [b.zext(now, I64), my_id])
    b.branch(wait)

    # ---- irtool_set_num_threads / irtool_get_num_threads
    setter = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32]), "irtool_set_num_threads")
    b = ir.IRBuilder(setter.append_basic_block("entry"))
    wanted = b.select(b.icmp_signed("<", setter.args[0], I32(1)), I32(1), setter.args[0])
    wanted = b.select(b.icmp_signed(">", wanted, I32(MAX_THREADS)), I32(MAX_THREADS), wanted)
    b.store_atomic(wanted, g.want, "release", 4)
    b.ret_void()
    getter = ir.Function(module, ir.FunctionType(I32, []), "irtool_get_num_threads")
    b = ir.IRBuilder(getter.append_basic_block("entry"))
    b.ret(atomic_load(b, g.want, I32))

    # ---- irtool_parallel_for
    pthread_create = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]), "pthread_create")
    pthread_detach = ir.Function(module, ir.FunctionType(I32, [I64]), "pthread_detach")
    sysconf = ir.Function(module, ir.FunctionType(I64, [I32]), "sysconf")
    pfor = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, I64]), "irtool_parallel_for")
    task, ctx, total = pfor.args
    b = ir.IRBuilder(pfor.append_basic_block("entry"))
    serial, locked, go = (pfor.append_basic_block(n) for n in ("serial", "locked", "go"))
    want = atomic_load(b, g.want, I32)
    with b.if_then(b.icmp_signed("==", want, I32(0))):  # first use, nobody chose: the online CPUs
        online = b.trunc(b.call(sysconf, [I32(_SC_NPROCESSORS_ONLN)]), I32)
        online = b.select(b.icmp_signed("<", online, I32(1)), I32(1), online)
        online = b.select(b.icmp_signed(">", online, I32(MAX_THREADS)), I32(MAX_THREADS), online)
        b.cmpxchg(g.want, I32(0), online, "acq_rel", "acquire")
    want = atomic_load(b, g.want, I32)
    few = b.or_(b.icmp_signed("<=", want, I32(1)), b.icmp_signed("<=", total, I64(1)))
    try_lock = pfor.append_basic_block("try_lock")
    b.cbranch(few, serial, try_lock)
    b.position_at_end(try_lock)
    pair = b.cmpxchg(g.lock, I32(0), I32(1), "acquire", "monotonic")
    b.cbranch(b.extract_value(pair, 1), locked, serial)
    b.position_at_end(serial)
    b.ret(_call_task(b, task, [ctx, I64(0), total]))
    b.position_at_end(locked)
    # start the missing workers (want - 1 of them: the caller is a thread too)
    start_loop, start_one, started = (pfor.append_basic_block(n) for n in ("start_loop", "start_one", "started"))
    b.branch(start_loop)
    b.position_at_end(start_loop)
    have = b.load(g.started, typ=I32)
    b.cbranch(b.icmp_signed("<", have, b.sub(want, I32(1))), start_one, started)
    b.position_at_end(start_one)
    tid = b.alloca(I64)
    worker_id = b.inttoptr(b.zext(b.add(have, I32(1)), I64), PTR)
    rc = b.call(pthread_create, [tid, ir.Constant(PTR, None), worker, worker_id])
    ok = b.icmp_signed("==", rc, I32(0))
    created = pfor.append_basic_block("created")
    b.cbranch(ok, created, started)  # no more threads: go with those we have
    b.position_at_end(created)
    b.call(pthread_detach, [b.load(tid, typ=I64)])
    b.store(b.add(have, I32(1)), g.started)
    b.branch(start_loop)
    b.position_at_end(started)
    threads = b.add(b.load(g.started, typ=I32), I32(1))  # (more were started for an earlier, larger limit)
    threads = b.select(b.icmp_signed("<", want, threads), want, threads)
    threads64 = b.zext(threads, I64)
    chunks = b.select(b.icmp_signed("<", total, threads64), total, threads64)
    chunk = b.sdiv(b.add(total, b.sub(chunks, I64(1))), chunks)
    b.store(task, g.task)
    b.store(ctx, g.ctx)
    b.store(total, g.n)
    b.store(chunks, g.chunks)
    b.store(chunk, g.chunk)
    b.store(I32(0), g.status)
    b.store(I64(0), g.done)
    new_gen = b.add(b.load(g.gen, typ=I32), I32(1))
    free = b.shl(b.zext(new_gen, I64), I64(1))
    reset, reset_one, reset_done = (pfor.append_basic_block(n) for n in ("reset", "reset_one", "reset_done"))
    k = b.alloca(I64)
    b.store(I64(0), k)
    b.branch(reset)
    b.position_at_end(reset)
    kv = b.load(k, typ=I64)
    b.cbranch(b.icmp_signed("<", kv, chunks), reset_one, reset_done)
    b.position_at_end(reset_one)
    b.store_atomic(free, g.claim(b, kv), "release", 8)
    b.store(b.add(kv, I64(1)), k)
    b.branch(reset)
    b.position_at_end(reset_done)
    b.store_atomic(new_gen, g.gen, "seq_cst", 4)
    if futex is not None:
        sleeping = b.icmp_signed(">", b.load_atomic(g.sleepers, "seq_cst", 4, typ=I32), I32(0))
        with b.if_then(sleeping):
            b.call(syscall, [I64(futex), g.gen, I32(FUTEX_WAKE_PRIVATE), I32(MAX_THREADS)])
    b.branch(go)
    b.position_at_end(go)
    b.call(run, [b.zext(new_gen, I64), I64(0)])
    wait_all, waiting, finished = (pfor.append_basic_block(n) for n in ("wait_all", "waiting", "finished"))
    b.branch(wait_all)
    b.position_at_end(wait_all)
    done = atomic_load(b, g.done, I64)
    b.cbranch(b.icmp_signed("<", done, chunks), waiting, finished)
    b.position_at_end(waiting)
    spin_hint(b)
    b.branch(wait_all)
    b.position_at_end(finished)
    result = atomic_load(b, g.status, I32)
    b.store_atomic(I32(0), g.lock, "release", 4)
    b.ret(result)


def _call_task(b: ir.IRBuilder, fn_ptr: ir.Value, args: list) -> ir.Value:
    return b.call(_TypedCallee(fn_ptr), args)


class _TypedCallee:
    """An indirect callee of the task type (llvmlite needs a function type for `call ptr`)."""

    def __init__(self, ptr: ir.Value) -> None:
        self.ptr = ptr
        self.type = PTR
        self.function_type = TASK_TYPE

    def get_reference(self) -> str:
        return self.ptr.get_reference()

    def __str__(self) -> str:
        return str(self.ptr)
