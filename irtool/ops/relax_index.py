"""Relations and NumPy references of TVM 0.27's Relax index and layout operators
(src/relax/op/tensor/manipulate.cc): R.layout_transform, R.index_tensor, R.reverse_sequence,
R.slice_scatter, R.index_put.

R.layout_transform(x, index_map, pad_value) writes x[i...] to out[index_map(i...)]; the
output's shape is the range of the map over x's shape (TVM's IndexMap::MapShape) and the
elements no input maps to are padding (pad_value; LegalizeOps writes 0 when it is None).
The maps this module analyses are TVM's common layout forms, per output index:

    var     `i`                 extent N
    div     `i // c`            extent ceil(N / c)  (TVM writes `(n - n % -c) // c` for a symbol)
    mod     `i % c`             extent c            (with the `i // c` of the same i: a split)
    fuse    `i * c + j`         extent N_i * c      (where j's extent is c: no padding; `i + j` for c = 1)

each input index used by one var or fuse or by one split pair. A split pads where c does not
divide N (always, for a symbolic N). Other maps keep TVM's struct info where the shape is
static (the range evaluated point by point) and ndim only otherwise.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.expr import TypedScalar
from ..ir.types import ANY, TensorType
from .common import np, tensor_arg
from .registry import AttrError, TypeRelError

_MAX_POINTS = 1 << 22  # the largest input whose map's range is evaluated point by point


# ----------------------------------------------------------------------------- index maps


def _const(e) -> int | None:
    return e.value if isinstance(e, tir.IntImm) else None


def index_map_forms(m: tir.IndexMap) -> list[tuple] | None:
    """Per final index ("var", k) | ("div", k, c) | ("mod", k, c) | ("fuse", k, c, k2), k the
    position of an initial index; None when the map is another form (see the module doc)."""
    pos = {id(v): k for k, v in enumerate(m.initial_indices)}
    forms: list[tuple] = []
    for e in m.final_indices:
        if isinstance(e, tir.Var) and id(e) in pos:
            forms.append(("var", pos[id(e)]))
        elif isinstance(e, tir.BinOp) and e.op in ("floordiv", "floormod") and isinstance(e.a, tir.Var) \
                and id(e.a) in pos and (_const(e.b) or 0) > 0:
            forms.append(("div" if e.op == "floordiv" else "mod", pos[id(e.a)], e.b.value))
        elif isinstance(e, tir.BinOp) and e.op == "add" and isinstance(e.b, tir.Var) and id(e.b) in pos \
                and isinstance(e.a, tir.BinOp) and e.a.op == "mul" and isinstance(e.a.a, tir.Var) \
                and id(e.a.a) in pos and (_const(e.a.b) or 0) > 0:
            forms.append(("fuse", pos[id(e.a.a)], e.a.b.value, pos[id(e.b)]))
        elif isinstance(e, tir.BinOp) and e.op == "add" and isinstance(e.a, tir.Var) and isinstance(e.b, tir.Var) \
                and id(e.a) in pos and id(e.b) in pos and e.a is not e.b:  # `i * 1 + j`, as TVM folds it
            forms.append(("fuse", pos[id(e.a)], 1, pos[id(e.b)]))
        else:
            return None
    uses: dict[int, list] = {}
    for f in forms:
        uses.setdefault(f[1], []).append(f)
        if f[0] == "fuse":
            uses.setdefault(f[3], []).append(f)
    for k in range(len(m.initial_indices)):
        used = uses.get(k, [])
        kinds = sorted(f[0] for f in used)
        if kinds == ["div", "mod"] and used[0][2] == used[1][2]:
            continue
        if kinds not in (["var"], ["fuse"]):
            return None
    return forms


def _ceil_div(n, c: int):
    if isinstance(n, int):
        return -(-n // c)
    i64 = tir.IntImm
    return tir.BinOp("floordiv", tir.BinOp("sub", n, tir.BinOp("floormod", n, i64(-c, "int64"))), i64(c, "int64"))


def map_shape(forms: list[tuple], dims: list):
    """The output shape (ints or TIR expressions) of a map of `index_map_forms` over `dims`;
    None where a fuse's inner extent is not its factor (TVM then bounds it otherwise)."""
    out = []
    for f in forms:
        n = dims[f[1]]
        if f[0] == "var":
            out.append(n)
        elif f[0] == "div":
            out.append(_ceil_div(n, f[2]))
        elif f[0] == "mod":
            out.append(f[2])
        else:
            if dims[f[3]] != f[2]:
                return None
            if isinstance(n, int) or f[2] == 1:
                out.append(n * f[2] if isinstance(n, int) else n)
            else:
                out.append(tir.BinOp("mul", n, tir.IntImm(f[2], "int64")))
    return out


def padded_splits(forms: list[tuple], dims: list) -> list[tuple[int, int, int]]:
    """(outer position, inner position, factor) of each split that pads, in the order of the
    first output index either gives (as TVM's simplified predicate lists them)."""
    out = []
    for k, n in enumerate(dims):
        div = [i for i, f in enumerate(forms) if f[0] == "div" and f[1] == k]
        if div:
            mod = next(i for i, f in enumerate(forms) if f[0] == "mod" and f[1] == k)
            c = forms[div[0]][2]
            if not isinstance(n, int) or n % c:
                out.append((div[0], mod, c))
    return sorted(out, key=lambda s: min(s[0], s[1]))


def eval_index(e, env: dict):
    """A final index over NumPy arrays of the initial indices (int64 arithmetic, floor division)."""
    if isinstance(e, tir.Var):
        return env[id(e)]
    if isinstance(e, tir.IntImm):
        return np.int64(e.value)
    if isinstance(e, tir.BinOp):
        a, b = eval_index(e.a, env), eval_index(e.b, env)
        ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
               "floormod": np.mod, "min": np.minimum, "max": np.maximum}
        if e.op in ops:
            return ops[e.op](a, b)
    raise TypeRelError(f"an index map with `{type(e).__name__}` is not supported")


def _mapped(m: tir.IndexMap, shape: tuple) -> list:
    grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), dtype=np.int64)
    env = {id(v): grid[k] for k, v in enumerate(m.initial_indices)}
    return [np.broadcast_to(eval_index(e, env), shape) for e in m.final_indices]


def _affine_extent(e, extents: dict) -> int | None:
    """TVM's MapShape where DetectIterMap reads `e` as a sum of scaled splits of the initial
    indices (`i`, `i // c`, `i % c`, times a constant) fused in order (each scale the one below
    times its extent): the largest term's extent times its scale. None for another form."""
    terms, stack = [], [e]
    while stack:
        t = stack.pop()
        if isinstance(t, tir.BinOp) and t.op == "add":
            stack += [t.a, t.b]
        else:
            terms.append(t)
    parts = []  # (scale, extent) of each term
    for t in terms:
        if isinstance(t, tir.IntImm):
            if t.value:
                raise TypeRelError("an index map's output must start at 0 (TVM's MapShape "
                                   f"checks it), got an offset of {t.value}")
            continue
        scale = 1
        if isinstance(t, tir.BinOp) and t.op == "mul" and isinstance(t.b, tir.IntImm) and t.b.value > 0:
            t, scale = t.a, t.b.value
        if isinstance(t, tir.Var) and id(t) in extents:
            size = extents[id(t)]
        elif isinstance(t, tir.BinOp) and t.op in ("floordiv", "floormod") and isinstance(t.a, tir.Var) \
                and id(t.a) in extents and (_const(t.b) or 0) > 0:
            size = -(-extents[id(t.a)] // t.b.value) if t.op == "floordiv" else t.b.value
        else:
            return None
        parts.append((scale, size))
    parts.sort()
    for (scale, size), (next_scale, _) in zip(parts, parts[1:]):
        if next_scale != scale * size:  # not a fuse of orthogonal splits: DetectIterMap fails
            return None
    return max((scale * size for scale, size in parts), default=1)


def _range_shape(m: tir.IndexMap, shape: tuple) -> list[int]:
    """MapShape of a static shape: TVM's affine extents where every index is such a sum, else
    (TVM's EvalSet) max - min + 1 of each final index, evaluated point by point."""
    if any(d == 0 for d in shape):
        return [0] * len(m.final_indices)
    extents = {id(v): n for v, n in zip(m.initial_indices, shape, strict=True)}
    affine = [_affine_extent(e, extents) for e in m.final_indices]
    if None not in affine:
        return affine
    mapped = _mapped(m, shape)
    if any(v.min() != 0 for v in mapped):
        raise TypeRelError("an index map's output must start at 0 (TVM's MapShape checks it)")
    return [int(v.max() + 1) for v in mapped]


def is_bijection(m: tir.IndexMap, shape, out_shape) -> bool:
    """A static map that sends the input's points one to one onto the output's box (TVM's
    inverse then has no padding), checked point by point."""
    if not all(isinstance(d, int) for d in tuple(shape) + tuple(out_shape)) or len(out_shape) != len(
            m.final_indices) or np.prod(shape, dtype=np.float64) > _MAX_POINTS:
        return False
    if np.prod(shape) != np.prod(out_shape) or not all(shape):
        return False
    try:
        mapped = _mapped(m, tuple(shape))
    except TypeRelError:
        return False
    if any(v.min() < 0 or v.max() >= d for v, d in zip(mapped, out_shape)):
        return False
    flat = np.ravel_multi_index(tuple(v.reshape(-1) for v in mapped), tuple(out_shape))
    return len(np.unique(flat)) == flat.size


# ----------------------------------------------------------------------------- layout_transform


def layout_transform_call(values: list, kw: dict):
    """TVM's Python API: a Python pad value takes the input's dtype (an int only for an integer
    input); `T.float16(1)` keeps its own. The value is kept as a TypedScalar."""
    pad = kw.get("pad_value")
    dtype = getattr(getattr(values[0], "struct_info", None), "dtype", "") if values else ""
    if isinstance(pad, (tir.IntImm, tir.FloatImm)):
        kw["pad_value"] = TypedScalar(pad.value, pad.dtype)
    elif isinstance(pad, bool):
        kw["pad_value"] = TypedScalar(pad, "bool")
    elif isinstance(pad, int) and dtype.startswith(("int", "uint")):
        kw["pad_value"] = TypedScalar(pad, dtype)
    elif isinstance(pad, (int, float)) and dtype.startswith(("float", "bfloat")):
        kw["pad_value"] = TypedScalar(float(pad), dtype)
    elif isinstance(pad, (int, float)):  # relax.prim_value's dtypes
        kw["pad_value"] = TypedScalar(pad, "int64" if isinstance(pad, int) else "float64")
    return values, kw


def check_index_map(value):
    if not isinstance(value, tir.IndexMap):
        raise AttrError("index_map must be a `T.index_map(lambda ...)`")
    return value


def check_pad_value(value):
    if value is not None and not isinstance(value, TypedScalar):
        raise AttrError("pad_value must be a number or a TIR constant")
    return value


def _layout_transform_checks(x: TensorType, at: dict) -> tir.IndexMap:
    m, pad = at["index_map"], at["pad_value"]
    if pad is not None and (not x.dtype or pad.dtype != x.dtype):
        raise TypeRelError(f"layout_transform pad_value dtype ({pad.dtype}) and input dtype ({x.dtype}) "
                           "must be the same")
    if len(m.initial_indices) != len(x.shape):
        raise TypeRelError("number of dimensions in input must match the number of source dimensions in "
                           f"index map, but got {len(x.shape)} != {len(m.initial_indices)}")
    return m


def layout_transform_rel(args, at):
    x = tensor_arg(args, 0, "x")
    m = _layout_transform_checks(x, at)
    if any(d is ANY for d in x.shape):
        return TensorType((ANY,) * len(m.final_indices), x.dtype)
    forms = index_map_forms(m)
    shape = map_shape(forms, list(x.shape)) if forms is not None else None
    if shape is None:
        if np.prod(x.shape, dtype=np.float64) > _MAX_POINTS:
            return TensorType((ANY,) * len(m.final_indices), x.dtype)
        shape = _range_shape(m, tuple(x.shape))
    return TensorType(tuple(shape), x.dtype)


def layout_transform_sym(args, at):
    """Symbolic sizes: the analysed forms as TVM writes them; ndim only for other maps."""
    x = args[0]
    m = _layout_transform_checks(x, at)
    forms = index_map_forms(m)
    shape = map_shape(forms, list(x.shape)) if forms is not None else None
    if shape is None:
        return TensorType((ANY,) * len(m.final_indices), x.dtype)
    return TensorType(tuple(shape), x.dtype)


def layout_transform_ref(x, index_map, pad_value=None):
    m = index_map
    shape = layout_transform_rel([TensorType(x.shape, str(x.dtype))], {"index_map": m, "pad_value": None}).shape
    fill = 0 if pad_value is None else pad_value.value
    out = np.full(shape, fill, dtype=x.dtype)
    if x.size:
        out[tuple(_mapped(m, x.shape))] = x
    return out


# ----------------------------------------------------------------------------- index_tensor


def _dim_value(d):
    return d.value if isinstance(d, tir.IntImm) else d


def _same_dim(a, b) -> bool:
    """TVM's CanProveEqual on the forms a shape holds: equal ints, the same variable, the same
    expression of the same variables."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    if isinstance(a, tir.Var) or isinstance(b, tir.Var):
        return a is b
    if isinstance(a, tir.BinOp) and isinstance(b, tir.BinOp):
        return a.op == b.op and _same_dim(_dim_value(a.a), _dim_value(b.a)) and _same_dim(_dim_value(a.b),
                                                                                         _dim_value(b.b))
    return False


def index_tensor_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's InferTypeIndexTensor: the index shapes broadcast (a 1 gives way; two dims it
    cannot prove equal leave the result's rank unknown), then data's dims past the indexed ones."""
    from ..ir.relax import TensorStructInfo, TupleStructInfo

    data, indices = args_sinfo
    if not isinstance(data, TensorStructInfo):
        raise TypeRelError("index_tensor requires the input data to be a Tensor")
    if not isinstance(indices, TupleStructInfo) or not all(isinstance(f, TensorStructInfo) for f in indices):
        raise TypeRelError("index_tensor requires the indices to be a tuple of tensors")
    fields = list(indices)
    if not fields:
        raise TypeRelError("index_tensor expects a non-empty tuple of index tensors")
    for i, f in enumerate(fields):
        if f.dtype and not (f.dtype.startswith("int") and "x" not in f.dtype):
            raise TypeRelError(f"index_tensor requires every index tensor to have an integer dtype; index {i} "
                               f"has dtype {f.dtype}")
    if data.ndim != -1 and len(fields) > data.ndim:
        raise TypeRelError(f"index_tensor received {len(fields)} index tensors, but data has only {data.ndim} "
                           "dimensions")
    shapes = [f.shape for f in fields if isinstance(f.shape, tuple)]
    unknown = len(shapes) < len(fields)
    rank = max([len(sh) for sh in shapes] + [f.ndim for f in fields if f.ndim != -1] + [0])
    out: list = [1] * rank
    if not unknown:
        for sh in shapes:
            for k in range(1, len(sh) + 1):
                have, new = _dim_value(out[rank - k]), _dim_value(sh[len(sh) - k])
                if have == 1:
                    out[rank - k] = new
                elif new == 1:
                    continue
                elif isinstance(have, int) and isinstance(new, int) and have != new:
                    raise TypeRelError(f"index_tensor: cannot broadcast index shapes. Mismatch at axis {rank - k}: "
                                       f"{have} vs {new}")
                elif not _same_dim(have, new):
                    unknown = True
                    break
            if unknown:
                break
    if not unknown and isinstance(data.shape, tuple):
        return TensorStructInfo(tuple(out) + tuple(data.shape[len(fields):]), data.dtype, vdevice=data.vdevice)
    ndim = -1 if unknown or data.ndim == -1 else rank + data.ndim - len(fields)
    return TensorStructInfo(None, data.dtype, ndim=ndim, vdevice=data.vdevice)


def index_tensor_rel(args, at):
    data, indices = tensor_arg(args, 0, "data"), args[1]
    shapes = [tuple(f.shape) for f in indices.fields]
    try:
        common = np.broadcast_shapes(*shapes)
    except ValueError:
        raise TypeRelError(f"index_tensor: cannot broadcast index shapes {shapes}") from None
    if len(shapes) > len(data.shape):
        raise TypeRelError(f"index_tensor received {len(shapes)} index tensors, but data has only "
                           f"{len(data.shape)} dimensions")
    return TensorType(tuple(common) + tuple(data.shape[len(shapes):]), data.dtype)


def index_tensor_ref(data, indices):
    """NumPy's advanced indexing data[I0, I1, ...]: the indices broadcast, the other axes kept."""
    return data[tuple(np.asarray(i) for i in indices)]


# ----------------------------------------------------------------------------- reverse_sequence


def reverse_sequence_rel(args, at):
    """TVM 0.27's InferTypeReverseSequence: data's type, after its checks."""
    data, lengths = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "seq_lengths")
    if len(lengths.shape) != 1:
        raise TypeRelError(f"ReverseSequence requires seq_lengths to be 1-D. However, seq_lengths has ndim "
                           f"{len(lengths.shape)}")
    if lengths.dtype and lengths.dtype not in ("int32", "int64"):
        raise TypeRelError(f"ReverseSequence requires seq_lengths to have dtype int32 or int64. However, "
                           f"seq_lengths has dtype {lengths.dtype}")
    ndim = len(data.shape)
    for name in ("seq_axis", "batch_axis"):
        if not -ndim <= at[name] < ndim:
            raise TypeRelError(f"ReverseSequence requires {name} to belong to range [-ndim, ndim). However, the "
                               f"axis is {at[name]}, while ndim is {ndim}")
    batch = at["batch_axis"] % ndim
    n, b = lengths.shape[0], data.shape[batch]
    if n is not ANY and b is not ANY and n != b:
        raise TypeRelError(f"ReverseSequence requires seq_lengths.shape[0] to equal the batch axis extent. "
                           f"However, seq_lengths.shape[0] is {n}, while data.shape[{batch}] is {b}")
    return TensorType(data.shape, data.dtype)


def reverse_sequence_ref(data, seq_lengths, seq_axis=1, batch_axis=0):
    """Along seq_axis, the first seq_lengths[b] elements of batch b reversed (a length past the
    axis reverses all of it; a length of 1 or less nothing)."""
    out = data.copy()
    seq, batch = seq_axis % data.ndim, batch_axis % data.ndim
    size = data.shape[seq]
    for b, length in enumerate(np.asarray(seq_lengths).tolist()):
        length = min(int(length), size)
        if length <= 1:
            continue
        index = [slice(None)] * data.ndim
        index[batch] = b
        index[seq] = slice(0, length)
        source = list(index)
        source[seq] = slice(length - 1, None, -1) if length < size else slice(None, None, -1)
        out[tuple(index)] = data[tuple(source)]
    return out


# ----------------------------------------------------------------------------- slice_scatter


def _slice_scatter_checks(data_shape, src_shape, dtypes, axis: int, bounds) -> None:
    """TVM 0.27's InferTypeSliceScatter checks (what it can prove: constants here)."""
    ndim = len(data_shape)
    if not -ndim <= axis < ndim:
        raise TypeRelError(f"SliceScatter requires the input axis to be in the range [{-ndim}, {ndim - 1}]. "
                           f"However, the input axis is {axis}, while ndim is {ndim}")
    if src_shape is not None and len(src_shape) != ndim:
        raise TypeRelError("SliceScatter op requires the data tensor to have the same rank as the src tensor. "
                           f"However, the given dimensions are src: {len(src_shape)}, data: {ndim}")
    if all(dtypes) and dtypes[0] != dtypes[1]:
        raise TypeRelError("SliceScatter op requires the input data to have the same type as src. However, "
                           f"the given types are data: {dtypes[0]}, src: {dtypes[1]}")
    start, end, step = bounds
    if isinstance(step, int) and step < 1:
        raise TypeRelError(f"SliceScatter op requires the step ({step}) to be >= 1.")
    if isinstance(start, int) and isinstance(end, int) and end < start:
        raise TypeRelError(f"SliceScatter op requires start ({start}) <= end ({end}).")
    if src_shape is None:
        return
    axis %= ndim
    for i, (d, e) in enumerate(zip(data_shape, src_shape)):
        if i != axis and isinstance(d, int) and isinstance(e, int) and d != e:
            raise TypeRelError("SliceScatter op requires the data tensor to have the same shape as the src tensor "
                               f"except at the scatter axis ({axis}). Mismatch at dimension {i}.")
    if all(isinstance(v, int) for v in bounds) and isinstance(src_shape[axis], int):
        count = (end - start + step - 1) // step
        if src_shape[axis] != count:
            raise TypeRelError(f"SliceScatter op requires the src tensor's dimension at scatter axis ({axis}) to "
                               f"match the number of elements in the slice. Actual src dimension at axis {axis}: "
                               f"{src_shape[axis]}, Expected elements in slice (num_elem): {count}")


def slice_scatter_deduce(args_sinfo: list, attrs: dict):
    """data's struct info after TVM's checks (start, end, step integer PrimValues)."""
    from ..ir.relax import PrimStructInfo, TensorStructInfo

    data, src = args_sinfo[:2]
    for name, s in (("data", data), ("src", src)):
        if not isinstance(s, TensorStructInfo):
            raise TypeRelError(f"SliceScatter requires the input {name} to be a Tensor")
    bounds = []
    for name, s in zip(("start", "end", "step"), args_sinfo[2:], strict=True):
        if not isinstance(s, PrimStructInfo) or not s.dtype.startswith(("int", "uint")):
            raise TypeRelError(f"SliceScatter expects `{name}` to be an integer PrimExpr")
        bounds.append(_dim_value(s.value) if s.value is not None else None)
    if data.ndim == -1:
        return TensorStructInfo(None, data.dtype, ndim=-1, vdevice=data.vdevice)
    data_shape = [_dim_value(d) for d in data.shape] if isinstance(data.shape, tuple) else [None] * data.ndim
    src_shape = [_dim_value(d) for d in src.shape] if isinstance(src.shape, tuple) else None
    if src_shape is None and src.ndim not in (-1, data.ndim):
        src_shape = [None] * src.ndim
    _slice_scatter_checks(data_shape, src_shape, (data.dtype, src.dtype), attrs["axis"], bounds)
    return TensorStructInfo(data.shape, data.dtype, ndim=data.ndim, vdevice=data.vdevice)


def slice_scatter_rel(args, at):
    data, src = tensor_arg(args, 0, "input_tensor"), tensor_arg(args, 1, "src")
    _slice_scatter_checks(list(data.shape), list(src.shape), (data.dtype, src.dtype), at["axis"], args[2:5])
    return TensorType(data.shape, data.dtype)


def slice_scatter_ref(data, src, start, end, step, axis=0):
    """data with data[..., start:end:step, ...] (along axis) replaced by src."""
    out = data.copy()
    index = [slice(None)] * data.ndim
    index[axis % data.ndim] = slice(int(start), int(end), int(step))
    out[tuple(index)] = src
    return out


# ----------------------------------------------------------------------------- index_put


def index_put_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's InferTypeIndexPut: data's struct info after its checks (one integer index
    tensor of rank 1 or more per data dimension; values of data's dtype)."""
    from ..ir.relax import TensorStructInfo, TupleStructInfo

    data, indices, values = args_sinfo
    for name, s in (("data", data), ("values", values)):
        if not isinstance(s, TensorStructInfo):
            raise TypeRelError(f"IndexPut requires the input {name} to be a Tensor")
    fields = list(indices) if isinstance(indices, TupleStructInfo) else [indices]
    for i, f in enumerate(fields):
        if not isinstance(f, TensorStructInfo):
            raise TypeRelError(f"IndexPut requires each index in the indices tuple to be a Tensor. However, "
                               f"element {i} is not")
    if data.ndim == -1:
        return TensorStructInfo(None, data.dtype, ndim=-1, vdevice=data.vdevice)
    for i, f in enumerate(fields):
        if f.ndim != -1 and f.ndim < 1:
            raise TypeRelError(f"IndexPut requires each index tensor to have at least 1 dimension. However, "
                               f"index tensor {i} has ndim={f.ndim}")
        if f.dtype and not f.dtype.startswith(("int", "uint")):
            raise TypeRelError(f"IndexPut requires each index tensor to have integer dtype. However, index "
                               f"tensor {i} has dtype={f.dtype}")
    if len(fields) != data.ndim:
        raise TypeRelError(f"IndexPut requires the number of index tensors ({len(fields)}) to match the data "
                           f"tensor dimensions ({data.ndim})")
    if data.dtype and values.dtype and data.dtype != values.dtype:
        raise TypeRelError("IndexPut requires the input data to have the same type as values. However, the given "
                           f"types are data: {data.dtype}, values: {values.dtype}")
    return TensorStructInfo(data.shape, data.dtype, ndim=data.ndim, vdevice=data.vdevice)


def index_put_rel(args, at):
    data = tensor_arg(args, 0, "data")
    fields = args[1].fields
    if len(fields) != len(data.shape):
        raise TypeRelError(f"IndexPut requires the number of index tensors ({len(fields)}) to match the data "
                           f"tensor dimensions ({len(data.shape)})")
    return TensorType(data.shape, data.dtype)


def index_put_ref(data, indices, values, accumulate=False):
    """data with data[I0[k], I1[k], ...] (the indices broadcast, k in row-major order) set to
    values' k-th element (values read flat), or increased by it with accumulate."""
    spread = np.broadcast_arrays(*[np.asarray(i) for i in indices])
    flat = np.asarray(values).reshape(-1)
    if flat.size < spread[0].size:
        raise ValueError(f"index_put puts {spread[0].size} values, got {flat.size}")
    update = flat[:spread[0].size].reshape(spread[0].shape)
    out = data.copy()
    if accumulate:
        np.add.at(out, tuple(spread), update)
    else:
        out[tuple(spread)] = update
    return out
