"""Comparing printed modules with TVM 0.27's printout."""

from __future__ import annotations

import re


def _suffix(name: str) -> int:
    m = re.search(r"_(\d+)$", name)
    return int(m.group(1)) if m else 0


def canonical_type_vars(text: str) -> str:
    """`text` with the module-level TypeVars of one base name renumbered, in each PrimFunc, in the
    order it first uses them. Several distinct variables of one name (R.dynamic_strided_slice's
    fresh sizes `s`) get their suffixes from TVM's printer in an order that changes from run to
    run (a hash of their addresses), so which is `s` and which `s_1` is not compared."""
    declared = re.findall(r"^(\w+) = TypeVar\(", text, flags=re.M)
    groups: dict[str, list[str]] = {}
    for name in declared:
        groups.setdefault(re.sub(r"_\d+$", "", name), []).append(name)
    groups = {base: names for base, names in groups.items() if len(names) > 1}
    if not groups:
        return text
    chunks = re.split(r"(?=^    @T\.prim_func|^    @R\.function)", text, flags=re.M)
    out = []
    for chunk in chunks:
        if not chunk.startswith("    @T.prim_func"):
            out.append(chunk)
            continue
        signature = chunk.split("\n", 2)[1]
        local = set(re.findall(r"(\w+): T\.", signature))  # parameters that reuse a TypeVar's name
        mapping = {}
        for names in groups.values():
            used = [n for n in names if n not in local and re.search(rf"\b{n}\b", chunk)]
            used.sort(key=lambda n: re.search(rf"\b{n}\b", chunk).start())
            mapping.update(zip(used, sorted(used, key=_suffix)))
        if mapping:
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")
            chunk = pattern.sub(lambda m, renamed=mapping: renamed[m.group(1)], chunk)
        out.append(chunk)
    return "".join(out)


def canonical_elem_offsets(text: str) -> str:
    """TVM 0.27 numbers the `elem_offset` TypeVars of an extern PrimFunc in an order that varies
    from run to run (a hash of pointers), and independently in each PrimFunc of a module (two
    `searchsorted` PrimFuncs of one module: `A, x, out` are `_2, _1, elem_offset` in one and
    `_2, elem_offset, _1` in the other): rename them, in each PrimFunc, in order of first use in
    its signature. The module's TypeVar declarations are left as printed."""
    def rename(chunk: str) -> str:
        names: dict[str, str] = {}
        for m in re.finditer(r"elem_offset=(elem_offset(?:_\d+)?)", chunk):
            names.setdefault(m.group(1), f"EO{len(names)}")
        return re.sub(r"\belem_offset(?:_\d+)?\b(?!=)", lambda m: names.get(m.group(0), m.group(0)), chunk)

    chunks = re.split(r"(?=^[ \t]*@(?:T\.prim_func|R\.function))", text, flags=re.M)
    return "".join(rename(chunk) if chunk.lstrip().startswith("@T.prim_func") else chunk for chunk in chunks)
