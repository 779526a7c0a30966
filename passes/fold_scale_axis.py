"""fold-scale-axis: fold per-channel scaling into conv2d / dense weights (TVM's FoldScaleAxis).

A multiply by a per-channel factor next to a conv2d or dense is moved into the weights,
where FoldConstant can compute it once (relay/transforms/fold_scale_axis.cc):

    backward:  conv2d(x, w) -> relu -> multiply by s[c]      conv2d(x, w * s[o]) -> relu
    forward:   multiply x by s[c] -> relu -> conv2d(., w)    relu(x) -> conv2d(., w * s[i])

Each direction has a prepare phase and a transform phase, and on the way the scale may
cross relu/leaky_relu (the scale must then be a non-negative constant), add/subtract (the
other operand is scaled by s or divided by it, when it broadcasts along the scaled axes
only) and, backward, bias_add (its bias is scaled):

    backward-fold-scale-axis  prepare, children first: conv2d/dense announce that their
        output channel axis can absorb a scale; relu, add, subtract, bias_add pass that on
        if they are their value's only use. Transform: a multiply whose operand carries the
        announcement and whose other operand broadcasts along exactly those axes is
        dropped, and its factor pushed down to the weight (`w * expand_dims(s)`).
    forward-fold-scale-axis  prepare, users first: conv2d/dense ask for a scale on their
        input channel axis; relu, add, subtract pass the request to their inputs; every
        user of a value must agree (the requests are intersected, anything else asks for
        nothing). Transform, children first: a requested multiply becomes a pending
        "value scaled by s" that relu/add/subtract carry along and the conv2d/dense
        consumes into its weight.
    fold-scale-axis  both, then fold-constant (the Sequential TVM registers).

A scalar factor is first made a vector (expand_dims + repeat) and a (C, 1, 1) one is
squeezed to (C,), as TVM does. Only `groups=1` or depthwise conv2d fold. Deviations:
dense folds only with 2-D data (TVM assumes it; for N-D data it would scale the wrong
axis); a pending scale that a consumer cannot take after all is applied as a multiply
(TVM aborts with "outstanding scale"; with this registry's ops it does not happen);
requests that intersect to no axis ask for nothing (TVM would fail a check). Blocked
layouts (NCHW4c) are not in the operator registry, so only plain layouts are handled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from irtool.ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple
from irtool.ir.types import ANY, TensorType
from irtool.ir.visitor import ExprMutator, post_order, sub_exprs
from irtool.ops.registry import make_call
from irtool.transform import FunctionPass, Pass, PassContext, get_pass, register

from ._pattern_utils import expand_bias_to_match_axis


class Message(NamedTuple):
    """A scaling the prepare phase allows: along `axes` (sorted), maybe positive only."""

    axes: tuple[int, ...]
    positive: bool


def intersect(a: Message | None, b: Message | None) -> Message | None:
    if a is None or b is None:
        return None
    axes = tuple(x for x in a.axes if x in b.axes)
    return Message(axes, a.positive or b.positive) if axes else None


def _shape(e: Expr) -> tuple:
    return e.checked_type.shape


def match_broadcast_to_left_axes(lhs: TensorType, rhs: TensorType, axes: tuple, rhs_value: Expr | None = None):
    """TVM's MatchBroadcastToLeftAxes: does `rhs` broadcast against `lhs` along `axes` only
    (its other dimensions 1)? With `rhs_value`, also returns it reshaped to the vector over
    `axes` (squeezed; a scalar is expanded and repeated). Returns (matches, rhs_value)."""
    ls, rs = lhs.shape, rhs.shape
    if len(ls) < len(rs):
        return False, rhs_value
    base = len(ls) - len(rs)
    if not rs and rhs_value is not None and axes:
        if ls[axes[0]] is ANY:
            return False, rhs_value
        value = make_call("expand_dims", rhs_value, axis=0, num_newaxis=len(axes))
        for i in range(len(axes)):
            value = make_call("repeat", value, repeats=ls[axes[0]], axis=i)  # axes[0]: as TVM
        return True, value
    squeeze, j = [], 0
    for i, d in enumerate(ls):
        if j < len(axes) and i == axes[j]:
            if i < base or d != rs[i - base]:
                return False, rhs_value
            j += 1
        elif i >= base:
            if rs[i - base] != 1 or rs[i - base] is ANY:
                return False, rhs_value
            squeeze.append(i - base)
    if rhs_value is not None and squeeze:
        rhs_value = make_call("squeeze", rhs_value, axis=tuple(squeeze))
    return True, rhs_value


_PEEL = {"expand_dims", "reshape", "transpose", "squeeze", "repeat"}
_POSITIVE_DTYPES = {"float32", "float64", "int8", "int32", "uint8", "uint32"}


def is_all_positive_constant(e: Expr) -> bool:
    """A constant (maybe reshaped) with no negative element, in a dtype TVM checks."""
    while type(e) is Call and type(e.op) is Op and e.op.name in _PEEL:
        e = e.args[0]
    return (type(e) is Constant and e.data is not None and str(e.data.dtype) in _POSITIVE_DTYPES
            and bool((e.data >= 0).all()))


def reshape_to_match_axis(scale: Expr, shape: tuple, axes: tuple) -> Expr | None:
    dims = []
    for i, d in enumerate(shape):
        if i in axes:
            if d is ANY:
                return None
            dims.append(d)
        else:
            dims.append(1)
    return make_call("reshape", scale, newshape=tuple(dims))


def reshape_or_expand_to_match_axis(scale: Expr, shape: tuple, axes: tuple) -> Expr | None:
    if len(axes) > 1:
        return reshape_to_match_axis(scale, shape, axes)
    return expand_bias_to_match_axis(scale, len(shape), list(axes))


def _conv_axes(call: Call, layout_attr: str) -> tuple[int, int, int, bool] | None:
    """(channel axis in `layout_attr`'s layout, kernel O axis, kernel I axis, depthwise),
    or None when TVM does not fold through this conv2d (grouped, not depthwise)."""
    attrs = call.attrs
    layout = attrs[layout_attr] or attrs["data_layout"]
    kernel = attrs["kernel_layout"]
    wshape = _shape(call.args[1])
    o, i = kernel.index("O"), kernel.index("I")
    depthwise = wshape[o] == attrs["groups"] and wshape[i] == 1
    if attrs["groups"] != 1 and not depthwise:
        return None
    return layout.index("C"), o, i, depthwise


def _two_d_dense(call: Call) -> bool:
    return len(_shape(call.args[0])) == 2


# --------------------------------------------------------------------------- forward


def _add_sub_forward_prep(call: Call, out: Message | None):
    tl, tr = call.args[0].checked_type, call.args[1].checked_type
    if out is not None:
        if match_broadcast_to_left_axes(tl, tr, out.axes)[0]:
            return [out, None]
        if match_broadcast_to_left_axes(tr, tl, out.axes)[0]:
            return [None, out]
    return [None, None]


def _conv_forward_prep(call: Call, out):
    axes = _conv_axes(call, "data_layout")
    return [Message((axes[0],), False) if axes else None, None]


FORWARD_PREP = {
    "nn.relu": lambda call, out: [Message(out.axes, True) if out else None],
    "nn.leaky_relu": lambda call, out: [Message(out.axes, True) if out else None],
    "add": _add_sub_forward_prep,
    "subtract": _add_sub_forward_prep,
    "nn.conv2d": _conv_forward_prep,
    "nn.dense": lambda call, out: [Message((1,), False) if _two_d_dense(call) else None, None],
}


class Scaled:
    """A value still to be multiplied by `scale` along `axes` (TVM's ScaledExpr)."""

    __slots__ = ("value", "scale", "axes", "shape", "realized")

    def __init__(self, value: Expr, scale: Expr, axes: tuple, shape: tuple) -> None:
        self.value, self.scale, self.axes, self.shape, self.realized = value, scale, axes, shape, None


def _relu_forward(call, args, message):
    (x,) = args
    if type(x) is not Scaled:
        return None
    return Scaled(Call(call.op, [x.value], call.attrs, call.span), x.scale, x.axes, _shape(call))


def _add_sub_forward(call, args, message):
    sl, sr = (type(a) is Scaled for a in args)
    if not sl and not sr:
        return None
    scaled, other = (args[0], args[1]) if sl else (args[1], args[0])
    shape = _shape(call.args[0] if sl else call.args[1])
    scale = reshape_or_expand_to_match_axis(scaled.scale, shape, scaled.axes)
    if scale is None:
        return None
    other = make_call("divide", other, scale)
    new_args = [scaled.value, other] if sl else [other, scaled.value]
    return Scaled(Call(call.op, new_args, call.attrs, call.span), scaled.scale, scaled.axes, _shape(call))


def _multiply_forward(call, args, message):
    if message is None:
        return None
    lhs, rhs = args
    tl, tr = call.args[0].checked_type, call.args[1].checked_type
    ok, scale = match_broadcast_to_left_axes(tl, tr, message.axes, rhs)
    if ok and (not message.positive or is_all_positive_constant(scale)):
        return Scaled(lhs, scale, message.axes, _shape(call))
    ok, scale = match_broadcast_to_left_axes(tr, tl, message.axes, lhs)
    if ok and (not message.positive or is_all_positive_constant(scale)):
        return Scaled(rhs, scale, message.axes, _shape(call))
    return None


def _conv_forward(call, args, message):
    data, weight = args
    axes = _conv_axes(call, "data_layout")
    if type(data) is not Scaled or type(weight) is Scaled or axes is None:
        return None
    _, o, i, depthwise = axes
    scale = expand_bias_to_match_axis(data.scale, 4, [o if depthwise else i])
    return Call(call.op, [data.value, make_call("multiply", weight, scale)], call.attrs, call.span)


def _dense_forward(call, args, message):
    data, weight = args
    if type(data) is not Scaled or type(weight) is Scaled:
        return None
    return Call(call.op, [data.value, make_call("multiply", weight, data.scale)], call.attrs, call.span)


FORWARD_REWRITE = {
    "nn.relu": _relu_forward,
    "nn.leaky_relu": _relu_forward,
    "add": _add_sub_forward,
    "subtract": _add_sub_forward,
    "multiply": _multiply_forward,
    "nn.conv2d": _conv_forward,
    "nn.dense": _dense_forward,
}


def forward_prepare(fn: Function) -> dict:
    """id(node) -> the scaling every user of the node allows (None: none), users first."""
    messages: dict = {}

    def update(e: Expr, m: Message | None) -> None:
        key = id(e)
        messages[key] = intersect(messages[key], m) if key in messages else m

    update(fn, None)
    for node in reversed(post_order(fn)):
        cls = type(node)
        if cls is Call:
            prep = FORWARD_PREP.get(node.op.name) if type(node.op) is Op else None
            out = messages.get(id(node))
            ins = prep(node, out) if prep is not None else [None] * len(node.args)
            for a, m in zip(node.args, ins):
                update(a, m)
        elif cls is Tuple:
            for f in node.fields:
                update(f, None)
        elif cls is Let:
            update(node.value, None)
            update(node.body, None)
        elif cls is If:
            for c in (node.cond, node.true_branch, node.false_branch):
                update(c, None)
        elif cls is Function:
            update(node.body, None)
    return messages


class _Forward(ExprMutator):
    """Children first; a call may produce a Scaled, which only calls read (raw, from
    the memo); anything else sees it realized."""

    def __init__(self, messages: dict) -> None:
        super().__init__()
        self.messages = messages

    def visit(self, expr: Expr):
        out = super().visit(expr)
        return self.realize(out) if type(out) is Scaled else out

    @staticmethod
    def realize(s: Scaled) -> Expr:
        if s.realized is None:  # TVM would stop here ("outstanding scale")
            s.realized = make_call("multiply", s.value, reshape_or_expand_to_match_axis(s.scale, s.shape, s.axes))
        return s.realized

    def visit_call(self, e: Call):
        op = self.visit(e.op)
        raw = [super(_Forward, self).visit(a) for a in e.args]
        rewrite = FORWARD_REWRITE.get(e.op.name) if type(e.op) is Op else None
        if rewrite is not None:
            out = rewrite(e, raw, self.messages.get(id(e)))
            if out is not None:
                return out
        args = [self.realize(a) if type(a) is Scaled else a for a in raw]
        if op is e.op and all(a is b for a, b in zip(args, e.args)):
            return e
        return Call(op, args, e.attrs, e.span)


def forward_fold_scale_axis(fn: Function) -> Function:
    messages = forward_prepare(fn)
    if all(m is None for m in messages.values()):
        return fn
    return _Forward(messages).visit(fn)


# --------------------------------------------------------------------------- backward


def _add_sub_backward_prep(call: Call, ins: list) -> Message | None:
    tl, tr = call.args[0].checked_type, call.args[1].checked_type
    if ins[0] is not None and match_broadcast_to_left_axes(tl, tr, ins[0].axes)[0]:
        return ins[0]
    if ins[1] is not None and match_broadcast_to_left_axes(tr, tl, ins[1].axes)[0]:
        return ins[1]
    if ins[0] is not None and ins[1] is not None and ins[0].axes == ins[1].axes and tl.shape == tr.shape:
        return ins[0]
    return None


def _conv_backward_prep(call: Call, ins: list) -> Message | None:
    axes = _conv_axes(call, "out_layout")
    return Message((axes[0],), False) if axes else None


def _bias_add_backward_prep(call: Call, ins: list) -> Message | None:
    m = ins[0]
    # TVM compares the axis attribute as written: axis=-1 does not match
    return m if m is not None and len(m.axes) == 1 and call.attrs["axis"] == m.axes[0] else None


BACKWARD_PREP = {
    "nn.relu": lambda call, ins: Message(ins[0].axes, True) if ins[0] else None,
    "nn.leaky_relu": lambda call, ins: Message(ins[0].axes, True) if ins[0] else None,
    "add": _add_sub_backward_prep,
    "subtract": _add_sub_backward_prep,
    "nn.conv2d": _conv_backward_prep,
    "nn.bias_add": _bias_add_backward_prep,
    "nn.dense": lambda call, ins: Message((1,), False) if _two_d_dense(call) else None,
}


def backward_prepare(fn: Function) -> dict:
    """id(call) -> the scaling its output can absorb, children first; only for calls
    used exactly once (a scale pushed into a shared value would reach its other users)."""
    uses: dict = {id(fn): 1}
    nodes = post_order(fn)
    for n in nodes:
        for c in sub_exprs(n):
            uses[id(c)] = uses.get(id(c), 0) + 1
    messages: dict = {}
    for n in nodes:
        if type(n) is not Call or type(n.op) is not Op or uses.get(id(n)) != 1:
            continue
        prep = BACKWARD_PREP.get(n.op.name)
        if prep is not None:
            m = prep(n, [messages.get(id(a)) for a in n.args])
            if m is not None:
                messages[id(n)] = m
    return messages


_PENDING = object()


class _Backward(ExprMutator):
    """Rebuilds every call through `transform`. A scale is pushed down a path of
    single-use calls; the handlers are generators that `yield (expr, message, scale)`
    to have an operand transformed, so long paths need no recursion."""

    def __init__(self, messages: dict) -> None:
        super().__init__()
        self.messages = messages
        self.done: dict = {}

    def visit_call(self, e: Call) -> Expr:
        return self.transform(e, None, None)

    def normal(self, call: Call) -> Expr:
        return super().visit_call(call)

    def message(self, e: Expr) -> Message | None:
        return self.messages.get(id(e))

    def _begin(self, expr: Expr, message, scale, stack: list):
        if type(expr) is not Call:
            return self.visit(expr)
        if message is None and expr in self.done:
            return self.done[expr]
        handler = BACKWARD_TRANSFORM.get(expr.op.name) if type(expr.op) is Op else None
        if handler is None:
            value = self.done[expr] = self.normal(expr)
            return value
        stack.append((handler(self, expr, message, scale), expr))
        return _PENDING

    def transform(self, expr: Expr, message, scale) -> Expr:
        stack: list = []
        value = self._begin(expr, message, scale, stack)
        while stack:
            gen, call = stack[-1]
            try:
                request = next(gen) if value is _PENDING else gen.send(value)
            except StopIteration as stop:
                stack.pop()
                value = self.done[call] = stop.value
                continue
            value = self._begin(*request, stack)
        return value


def _relu_backward(t: _Backward, call, message, scale):
    if message is None:
        return t.normal(call)
    x = yield call.args[0], message, scale
    return Call(call.op, [x], call.attrs, call.span)


def _add_sub_backward(t: _Backward, call, message, scale):
    if message is None:
        return t.normal(call)
    lm, rm = t.message(call.args[0]), t.message(call.args[1])
    if lm is not None and rm is not None:
        lhs = yield call.args[0], message, scale
        rhs = yield call.args[1], message, scale
        return Call(call.op, [lhs, rhs], call.attrs, call.span)
    scaled = 0 if lm is not None else 1
    other_scale = reshape_or_expand_to_match_axis(scale, _shape(call.args[scaled]), message.axes)
    assert other_scale is not None, "a single-axis scale always expands"
    new = [None, None]
    new[scaled] = yield call.args[scaled], message, scale
    other = yield call.args[1 - scaled], None, None
    new[1 - scaled] = make_call("multiply", other, other_scale)
    return Call(call.op, new, call.attrs, call.span)


def _multiply_backward(t: _Backward, call, message, scale):
    lhs, rhs = call.args
    lm, rm = t.message(lhs), t.message(rhs)
    if lm is not None:
        ok, factor = match_broadcast_to_left_axes(lhs.checked_type, rhs.checked_type, lm.axes, rhs)
        if ok and (not lm.positive or is_all_positive_constant(factor)):
            return (yield lhs, lm, factor)
    elif rm is not None:
        ok, factor = match_broadcast_to_left_axes(rhs.checked_type, lhs.checked_type, rm.axes, lhs)
        if ok and (not rm.positive or is_all_positive_constant(factor)):
            return (yield rhs, rm, factor)
    return t.normal(call)


def _conv_backward(t: _Backward, call, message, scale):
    if message is None:
        return t.normal(call)
    data = yield call.args[0], None, None
    weight = yield call.args[1], None, None
    _, o, _, _ = _conv_axes(call, "out_layout")
    weight = make_call("multiply", weight, expand_bias_to_match_axis(scale, 4, [o]))
    return Call(call.op, [data, weight], call.attrs, call.span)


def _bias_add_backward(t: _Backward, call, message, scale):
    if message is None:
        return t.normal(call)
    lhs = yield call.args[0], message, scale
    bias = yield call.args[1], None, None
    return Call(call.op, [lhs, make_call("multiply", bias, scale)], call.attrs, call.span)


def _dense_backward(t: _Backward, call, message, scale):
    if message is None:
        return t.normal(call)
    data = yield call.args[0], None, None
    weight = yield call.args[1], None, None
    weight = make_call("multiply", weight, expand_bias_to_match_axis(scale, 2, [0]))
    return Call(call.op, [data, weight], call.attrs, call.span)


BACKWARD_TRANSFORM = {  # each is a generator function (see _Backward)
    "nn.relu": _relu_backward,
    "nn.leaky_relu": _relu_backward,
    "add": _add_sub_backward,
    "subtract": _add_sub_backward,
    "multiply": _multiply_backward,
    "nn.conv2d": _conv_backward,
    "nn.bias_add": _bias_add_backward,
    "nn.dense": _dense_backward,
}


def backward_fold_scale_axis(fn: Function) -> Function:
    messages = backward_prepare(fn)
    if not messages:
        return fn
    return _Backward(messages).visit(fn)


# --------------------------------------------------------------------------- passes


@register
@dataclass(frozen=True)
class BackwardFoldScaleAxis(FunctionPass):
    name = "backward-fold-scale-axis"
    tvm_name = "BackwardFoldScaleAxis"
    opt_level = 3
    required = ("infer-type",)
    summary = "Fold a per-channel multiply after conv2d/dense into the weights"

    def transform_function(self, fn, mod, ctx):
        return backward_fold_scale_axis(fn)


@register
@dataclass(frozen=True)
class ForwardFoldScaleAxis(FunctionPass):
    name = "forward-fold-scale-axis"
    tvm_name = "ForwardFoldScaleAxis"
    opt_level = 3
    required = ("infer-type",)
    summary = "Fold a per-channel multiply before conv2d/dense into the weights"

    def transform_function(self, fn, mod, ctx):
        return forward_fold_scale_axis(fn)


@register
@dataclass(frozen=True)
class FoldScaleAxis(Pass):
    """TVM's FoldScaleAxis: Sequential(BackwardFoldScaleAxis, ForwardFoldScaleAxis,
    FoldConstant). Once this pass runs, its three parts run (a disabled one excepted),
    whatever the opt level: in TVM each part would be gated by it again."""

    name = "fold-scale-axis"
    tvm_name = "FoldScaleAxis"
    opt_level = 3
    summary = "Fold per-channel multiplies into conv2d/dense weights, then fold constants"

    def transform_module(self, mod, ctx: PassContext):
        parts: list = [BackwardFoldScaleAxis, ForwardFoldScaleAxis]
        try:
            parts.append(get_pass("fold-constant"))
        except KeyError:  # without it the scales stay as multiplies of the weights
            pass
        for cls in parts:
            if {cls.name, cls.tvm_name} & ctx.disabled_pass:
                continue
            for required in cls.required:
                mod = ctx.run(get_pass(required)(), mod)
            mod = ctx.run(cls(), mod)
        return mod
