"""ONNX ops defined by an ONNX function: imported by expanding the function body in place.

An op with no converter whose schema (at the model's opset) carries a function body, plain
or context-dependent (Attention, RotaryEmbedding, CenterCropPad, the window functions...),
becomes the body's nodes, as onnx's own `function_expand_helper` builds the `_expanded`
backend tests: the body's inputs and outputs are the node's, its other names get a prefix
unique to the node, and attributes that refer to the node's (`ref_attr_name`) take their
values, the schema's defaults filling the ones the node leaves out. A context-dependent body
is asked for with the node's input types. The body's nodes are converted at the opset the
function declares for the default domain. TVM's frontend does not do this; it converts only
the ops it has converters for.
"""

from __future__ import annotations

import itertools

_DEFAULT_DOMAINS = ("", "ai.onnx")
# other domains whose function ops are expanded: ai.onnx.preview's FlexAttention (its
# schema is looked up at the model's default opset, which covers the domain's version 1)
_FUNCTION_DOMAINS = _DEFAULT_DOMAINS + ("ai.onnx.preview",)
_counter = itertools.count()


def _schema(op_type: str, opset: int, domain: str = ""):
    import onnx

    try:
        return onnx.defs.get_schema(op_type, opset, "" if domain in _DEFAULT_DOMAINS else domain)
    except onnx.defs.SchemaError:
        return None


def is_function_op(op_type: str, opset: int, domain: str = "") -> bool:
    """Whether the op at `opset` has an ONNX function body irtool can expand."""
    if domain not in _FUNCTION_DOMAINS:
        return False
    schema = _schema(op_type, opset, domain)
    return schema is not None and bool(_versions(schema, opset))


def _versions(schema, opset: int) -> list[tuple[int, bool]]:
    """(function opset version, context-dependent) pairs usable at `opset`, newest first."""
    plain = [(v, False) for v in schema.function_opset_versions if v <= opset]
    dependent = [(v, True) for v in schema.context_dependent_function_opset_versions if v <= opset]
    return sorted(plain + dependent, reverse=True)


def expand(node, opset: int, input_types: list) -> list[tuple[object, int]]:
    """The nodes of `node`'s function body, renamed into the graph, each with the opset its
    default-domain ops are converted at. `input_types`: one onnx TypeProto per input."""
    import onnx

    schema = _schema(node.op_type, opset, node.domain)
    version, dependent = _versions(schema, opset)[0]
    call = onnx.NodeProto()
    call.CopyFrom(node)
    given = {a.name for a in call.attribute}
    for name, spec in schema.attributes.items():
        if name not in given and spec.default_value.name:
            call.attribute.append(spec.default_value)
    function = onnx.FunctionProto()
    if dependent:
        function.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            version, call.SerializeToString(), [t.SerializeToString() for t in input_types]))
    else:
        function.ParseFromString(schema.get_function_with_opset_version(version))
    body_opset = next((o.version for o in function.opset_import if o.domain in _DEFAULT_DOMAINS), opset)
    prefix = f"{node.op_type}_{next(_counter)}_"
    names = {formal: (node.input[i] if i < len(node.input) else "") for i, formal in enumerate(function.input)}
    names.update({formal: node.output[i] for i, formal in enumerate(function.output)
                  if i < len(node.output) and node.output[i]})
    attrs = {a.name: a for a in call.attribute}

    def rename(name: str) -> str:
        return names.get(name, prefix + name if name else "")

    return [(_renamed(inner, rename, attrs, prefix), body_opset) for inner in function.node]


def _renamed(inner, rename, attrs: dict, prefix: str):
    """A copy of a body node with its names renamed and its attribute references resolved;
    subgraphs (an If's branches inside the body) are renamed the same way, so the body's
    values they use stay connected."""
    import onnx

    copy = onnx.NodeProto()
    copy.CopyFrom(inner)
    copy.input[:] = [rename(n) for n in inner.input]
    copy.output[:] = [rename(n) for n in inner.output]
    copy.name = prefix + (inner.name or inner.op_type)
    del copy.attribute[:]
    for a in inner.attribute:
        if a.ref_attr_name:
            if a.ref_attr_name in attrs:
                value = onnx.AttributeProto()
                value.CopyFrom(attrs[a.ref_attr_name])
                value.name = a.name
                copy.attribute.append(value)
            continue
        value = onnx.AttributeProto()
        value.CopyFrom(a)
        if value.type == onnx.AttributeProto.GRAPH:
            _rename_graph(value.g, rename, attrs, prefix)
        for g in value.graphs:
            _rename_graph(g, rename, attrs, prefix)
        copy.attribute.append(value)
    return copy


def _rename_graph(graph, rename, attrs: dict, prefix: str) -> None:
    for v in (*graph.input, *graph.output, *graph.value_info):
        v.name = rename(v.name)
    for init in graph.initializer:
        init.name = rename(init.name)
    nodes = [_renamed(n, rename, attrs, prefix) for n in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
