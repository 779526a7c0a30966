"""ONNX recurrent networks: RNN, GRU and LSTM, unrolled over the sequence.

As TVM v0.19's frontend does (`rnn_cell` / `gru_cell` / `lstm_cell` in
relay/frontend/common.py), a node becomes plain Relay: the sequence is split into
steps, each step is `nn.dense` + gate activations, and the step outputs are stacked.

    X ─unbind─> x_0 .. x_{T-1}          (T must be static: it is the unroll count)
    per direction:  h, c ──cell(x_t)──> h', c'   (reversed steps for the backward one)
    Y   = stack(step outputs)            [T, num_directions, batch, hidden]
    Y_h = last h, Y_c = last c           [num_directions, batch, hidden]

Where this differs from TVM v0.19, it follows the ONNX spec (TVM's result is wrong there):
- `layout=1` (batch first) permutes 3-D and 4-D tensors correctly (TVM transposes with
  two axes and fails);
- `direction="reverse"` runs the single direction backwards (TVM ignores it);
- `sequence_lens` masks steps past each batch row's length for all three ops (TVM does so
  for GRU only, as `gru_cell` does): outputs there are 0 and Y_h/Y_c hold the last valid
  step. Constant lengths equal to T need no mask and add no ops;
- `clip` bounds the gates' inputs to [-clip, clip] before their activations.
Weights are reordered to the cell's gate order (LSTM i-o-f-c -> i-f-c-o, GRU z-r-h ->
r-z-h) with split + concatenate, as TVM does; the LSTM's input and recurrent weights are
concatenated once, not at every step.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Tuple
from ...ir.types import ANY
from . import converter, converters
from .nn import _call
from .nn import _dense as _dense_nobias

# ONNX activations that take `activation_alpha` / `activation_beta` values, in order
_NEEDS_ALPHA = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"}
_NEEDS_BETA = {"Affine", "ScaledTanh", "HardSigmoid"}


def _parts(ctx, x, count: int, axis: int = 0) -> list:
    from ...ir.expr import TupleGetItem

    out = _call(ctx, "split", x, indices_or_sections=count, axis=axis)
    return [ctx.typed(TupleGetItem(out, i)) for i in range(count)]


def _squeeze0(ctx, x):
    return _call(ctx, "squeeze", x, axis=[0])


def _stack(ctx, items: list, axis: int = 0):
    return _call(ctx, "stack", Tuple(items), axis=axis)


def _concat(ctx, items: list, axis: int = 0):
    return _call(ctx, "concatenate", Tuple(items), axis=axis)


def _unbind(ctx, x) -> list:
    """The slices of `x` along axis 0, that axis removed (TVM's `unbind`)."""
    return [_squeeze0(ctx, p) for p in _parts(ctx, x, ctx.shape_of(x)[0])]


def _activations(ctx, attrs, defaults: list[str], num_directions: int) -> list:
    """One function per gate activation and direction, from `activations` (with their
    alpha/beta values consumed in order, as TVM does) or the op's defaults."""
    names = attrs.get("activations") or defaults * num_directions
    if len(names) != len(defaults) * num_directions:
        raise ctx.error(f"`activations` must name {len(defaults)} * num_directions = "
                        f"{len(defaults) * num_directions} functions, got {len(names)}")
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    table = converters()
    acts = []
    for name in names:
        op = table.get(name)
        impl = op.implementation(ctx.opset) if op is not None else None
        if impl is None:
            raise ctx.error(f"activation `{name}` is not supported")
        act_attrs = {}
        if name in _NEEDS_ALPHA and alphas:
            act_attrs["alpha"] = alphas.pop(0)
        if name in _NEEDS_BETA and betas:
            act_attrs["beta"] = betas.pop(0)
        acts.append(lambda x, impl=impl, act_attrs=act_attrs: impl(ctx, [x], act_attrs))
    return acts


class _Recurrence:
    """The parts of an RNN/GRU/LSTM node every cell uses: the steps of X, per-direction
    weights, initial states, the length masks, and the assembly of Y / Y_h / Y_c."""

    def __init__(self, ctx, inputs, attrs, gates: int):
        self.ctx = ctx
        inputs = list(inputs) + [None] * (8 - len(inputs))
        x, w, r, b, lengths, h0 = inputs[:6]
        self.batch_first = bool(attrs.get("layout", 0))
        if self.batch_first:
            x = _call(ctx, "transpose", x, axes=[1, 0, 2])
        w_shape, r_shape = ctx.shape_of(w), ctx.shape_of(r)
        self.num_directions = int(w_shape[0])
        direction = attrs.get("direction", "forward")
        expected = 2 if direction == "bidirectional" else 1
        if direction not in ("forward", "reverse", "bidirectional") or self.num_directions != expected:
            raise ctx.error(f"direction `{direction}` does not match the weights' {w_shape[0]} directions")
        self.backwards = [direction == "reverse"] if expected == 1 else [False, True]
        self.hidden = int(r_shape[-1])
        if w_shape[1] is ANY or int(w_shape[1]) != gates * self.hidden:
            raise ctx.error(f"W must have {gates} * hidden_size = {gates * self.hidden} rows, got {w_shape[1]}")
        seq_len, batch = ctx.shape_of(x)[:2]
        if seq_len is ANY:
            raise ctx.error("the sequence length must be static (the network is unrolled over it)")
        self.seq_len, self.batch = int(seq_len), batch
        self.dtype = ctx.type_of(x).dtype
        self.steps = _unbind(ctx, x)
        self.clip = attrs.get("clip")
        self.w = [_squeeze0(ctx, p) for p in _parts(ctx, w, self.num_directions)]
        self.r = [_squeeze0(ctx, p) for p in _parts(ctx, r, self.num_directions)]
        self.b = None
        if b is not None:  # [W_b, R_b] per direction
            self.b = [[_squeeze0(ctx, half) for half in _parts(ctx, p, 2, axis=-1)]
                      for p in _parts(ctx, b, self.num_directions)]
        self.h0 = self._initial_state(h0)
        self.masks = self._masks(lengths)

    def _initial_state(self, state) -> list:
        """Per direction, [batch, hidden]: the given state or zeros."""
        ctx = self.ctx
        if state is None:
            if self.batch is ANY:
                zeros = _call(ctx, "zeros_like", _call(ctx, "take", self.steps[0], ctx.const(np.zeros(
                    self.hidden, "int32")), axis=1))
                return [zeros] * self.num_directions
            return [ctx.const(np.zeros((self.batch, self.hidden), self.dtype))] * self.num_directions
        if self.batch_first:
            state = _call(ctx, "transpose", state, axes=[1, 0, 2])
        return [_squeeze0(ctx, p) for p in _parts(ctx, state, self.num_directions)]

    def _masks(self, lengths):
        """(valid, past_end, at_end) step masks [batch, 1], or None when every row has
        all T steps."""
        ctx = self.ctx
        if lengths is None:
            return None
        known = ctx.value(lengths)
        if known is not None and np.all(np.asarray(known) == self.seq_len):
            return None
        steps = ctx.const(np.arange(self.seq_len).reshape(-1, 1), ctx.type_of(lengths).dtype)

        def per_step(compare: str) -> list:
            mask = _call(ctx, "cast", _call(ctx, compare, steps, lengths), dtype=self.dtype)
            return _unbind(ctx, _call(ctx, "expand_dims", mask, axis=2))
        return per_step("less"), per_step("greater_equal"), per_step("equal")

    def gate_input(self, x):
        ctx = self.ctx
        if self.clip is None:
            return x
        return _call(ctx, "clip", x, a_min=-float(self.clip), a_max=float(self.clip))

    def run(self, direction: int, step_fn, states: list) -> tuple[list, list]:
        """Apply `step_fn(x_t, states) -> new states` over the steps (backwards for the
        reverse direction), masking by the lengths. Returns the per-step first state (the
        hidden state) in time order, and the final states."""
        ctx = self.ctx
        backwards = self.backwards[direction]
        initial = list(states)
        finals = [None] * len(states)
        outputs = [None] * self.seq_len
        order = range(self.seq_len - 1, -1, -1) if backwards else range(self.seq_len)
        for t in order:
            states = step_fn(self.steps[t], states)
            if self.masks is not None:
                valid, past_end, at_end = (m[t] for m in self.masks)
                states = [_call(ctx, "multiply", s, valid) for s in states]
                finals = [s if f is None else _call(ctx, "add", _call(ctx, "multiply", f, past_end), s)
                          for f, s in zip(finals, states, strict=True)]
            outputs[t] = states[0]
            if self.masks is not None and backwards:  # restart from the initial state at the row's end
                states = [_call(ctx, "add", s, _call(ctx, "multiply", s0, at_end))
                          for s, s0 in zip(states, initial, strict=True)]
        if self.masks is None:
            finals = states
        return outputs, finals

    def each_direction(self, step_for, initial_for) -> tuple:
        """Run `step_for(d)` from `initial_for(d)` in every direction and assemble Y and
        the final states."""
        outputs, finals = [], []
        for d in range(self.num_directions):
            outs, fin = self.run(d, step_for(d), initial_for(d))
            outputs.append(outs)
            finals.append(fin)
        return self.assemble(outputs, finals)

    def assemble(self, outputs_per_direction: list[list], finals_per_direction: list[list]) -> tuple:
        """Y [T, D, batch, hidden] and each final state [D, batch, hidden] (batch first
        with layout=1)."""
        ctx = self.ctx
        y = _stack(ctx, [_stack(ctx, [outs[t] for outs in outputs_per_direction])
                         for t in range(self.seq_len)])
        finals = [_stack(ctx, [f[i] for f in finals_per_direction]) for i in range(len(finals_per_direction[0]))]
        if self.batch_first:
            y = _call(ctx, "transpose", y, axes=[2, 0, 1, 3])
            finals = [_call(ctx, "transpose", f, axes=[1, 0, 2]) for f in finals]
        return (y, *finals)


def _dense(ctx, x, w, bias=None):
    y = _dense_nobias(ctx, x, w)
    return y if bias is None else _call(ctx, "add", y, bias)


def _reorder(ctx, x, count: int, order: list[int]):
    """Gate blocks of `x` (axis 0) in the cell's order."""
    parts = _parts(ctx, x, count)
    return _concat(ctx, [parts[i] for i in order])


@converter("RNN", 7, 14)
def _rnn(ctx, inputs, attrs):
    rec = _Recurrence(ctx, inputs, attrs, gates=1)
    acts = _activations(ctx, attrs, ["Tanh"], rec.num_directions)

    def step_for(d):
        w, r = rec.w[d], rec.r[d]
        wb, rb = rec.b[d] if rec.b is not None else (None, None)

        def step(x, states):
            pre = _call(ctx, "add", _dense(ctx, x, w, wb), _dense(ctx, states[0], r, rb))
            return [acts[d](rec.gate_input(pre))]
        return step
    return rec.each_direction(step_for, lambda d: [rec.h0[d]])


@converter("GRU", 7, 14)
def _gru(ctx, inputs, attrs):
    rec = _Recurrence(ctx, inputs, attrs, gates=3)
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh"], rec.num_directions)
    linear_before_reset = bool(attrs.get("linear_before_reset", 0))
    order = [1, 0, 2]  # ONNX z-r-h -> r-z-h

    def step_for(d):
        rz_act, n_act = acts[2 * d], acts[2 * d + 1]
        w, r = _reorder(ctx, rec.w[d], 3, order), _reorder(ctx, rec.r[d], 3, order)
        wb = rb = None
        if rec.b is not None:
            wb, rb = (_reorder(ctx, half, 3, order) for half in rec.b[d])

        def step(x, states):
            h = states[0]
            i_r, i_z, i_n = _parts(ctx, _dense(ctx, x, w, wb), 3, axis=-1)
            if linear_before_reset:
                h_r, h_z, h_n = _parts(ctx, _dense(ctx, h, r, rb), 3, axis=-1)
                r_gate = rz_act(rec.gate_input(_call(ctx, "add", i_r, h_r)))
                z_gate = rz_act(rec.gate_input(_call(ctx, "add", i_z, h_z)))
                n_in = _call(ctx, "add", i_n, _call(ctx, "multiply", r_gate, h_n))
            else:
                r_r, r_z, r_n = _parts(ctx, r, 3)
                rb_r, rb_z, rb_n = _parts(ctx, rb, 3, axis=-1) if rb is not None else (None,) * 3
                r_gate = rz_act(rec.gate_input(_call(ctx, "add", i_r, _dense(ctx, h, r_r, rb_r))))
                z_gate = rz_act(rec.gate_input(_call(ctx, "add", i_z, _dense(ctx, h, r_z, rb_z))))
                n_in = _call(ctx, "add", i_n, _dense(ctx, _call(ctx, "multiply", r_gate, h), r_n, rb_n))
            n_gate = n_act(rec.gate_input(n_in))
            # (1 - z) * n + z * h, written as TVM's gru_cell writes it
            return [_call(ctx, "add", _call(ctx, "multiply", _call(ctx, "subtract", h, n_gate), z_gate), n_gate)]
        return step
    return rec.each_direction(step_for, lambda d: [rec.h0[d]])


@converter("LSTM", 7, 14)
def _lstm(ctx, inputs, attrs):
    if attrs.get("input_forget", 0):
        raise ctx.error("`input_forget=1` (coupled input and forget gates) is not supported")
    rec = _Recurrence(ctx, inputs, attrs, gates=4)
    inputs = list(inputs) + [None] * (8 - len(inputs))
    c0, peepholes = inputs[6], inputs[7]
    if c0 is None:
        c_init = [_call(ctx, "zeros_like", h) for h in rec.h0]
    else:
        if rec.batch_first:
            c0 = _call(ctx, "transpose", c0, axes=[1, 0, 2])
        c_init = [_squeeze0(ctx, p) for p in _parts(ctx, c0, rec.num_directions)]
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh", "Tanh"], rec.num_directions)
    order = [0, 2, 3, 1]  # ONNX i-o-f-c -> i-f-c-o

    def step_for(d):
        f_act, g_act, h_act = acts[3 * d: 3 * d + 3]
        weights = _concat(ctx, [_reorder(ctx, rec.w[d], 4, order), _reorder(ctx, rec.r[d], 4, order)], axis=1)
        biases = [] if rec.b is None else [_reorder(ctx, half, 4, order) for half in rec.b[d]]
        p_i = p_o = p_f = None
        if peepholes is not None:  # [D, 3 * hidden], ONNX order i-o-f
            p_i, p_o, p_f = (_squeeze0(ctx, _parts(ctx, p, rec.num_directions)[d])
                             for p in _parts(ctx, peepholes, 3, axis=1))

        def step(x, states):
            h, c = states
            gates = _dense(ctx, _concat(ctx, [x, h], axis=1), weights)
            for bias in biases:
                gates = _call(ctx, "add", gates, bias)
            i_gate, f_gate, c_gate, o_gate = _parts(ctx, gates, 4, axis=-1)
            if p_i is not None:
                i_gate = _call(ctx, "add", i_gate, _call(ctx, "multiply", p_i, c))
                f_gate = _call(ctx, "add", f_gate, _call(ctx, "multiply", p_f, c))
            i_gate, f_gate = f_act(rec.gate_input(i_gate)), f_act(rec.gate_input(f_gate))
            c = _call(ctx, "add", _call(ctx, "multiply", f_gate, c),
                      _call(ctx, "multiply", i_gate, g_act(rec.gate_input(c_gate))))
            if p_o is not None:
                o_gate = _call(ctx, "add", o_gate, _call(ctx, "multiply", p_o, c))
            h = _call(ctx, "multiply", f_act(rec.gate_input(o_gate)), h_act(c))
            return [h, c]
        return step
    return rec.each_direction(step_for, lambda d: [rec.h0[d], c_init[d]])
