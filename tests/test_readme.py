"""The README stays true to the code: its operator counts are the registries' sizes, and its
Python example runs as written (with arrays for its `...` placeholders)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_operator_counts_are_the_registries():
    from irtool.ops import registry
    from irtool.ops import relax as relax_ops

    assert int(re.search(r"(\d+) Relay operators", README).group(1)) == len(registry.all_ops())
    assert int(re.search(r"the (\d+) Relax operators", README).group(1)) == len(relax_ops._OPS)


def test_python_example_runs(tmp_path, monkeypatch):
    """Regression: the example built the Relay-fused module, which relay-to-relax refuses."""
    example = README.split("```python\n", 1)[1].split("```", 1)[0]
    placeholder = '{"data": ..., "weight": ..., "bias": ...}'
    assert placeholder in example
    example = example.replace(placeholder, '{"data": data, "weight": weight, "bias": bias}')
    rng = np.random.default_rng(0)
    arrays = {name: rng.standard_normal(shape).astype("float32")
              for name, shape in (("data", (1, 3, 32, 32)), ("weight", (8, 3, 3, 3)), ("bias", (8,)))}
    monkeypatch.chdir(ROOT)  # it opens examples/conv_block.ir
    namespace = dict(arrays, print=lambda *args: None)
    exec(compile(example, "README.md", "exec"), namespace)
    expected = namespace["irtool"].interpret(namespace["fused"], arrays)
    np.testing.assert_allclose(np.asarray(namespace["y"]), np.asarray(expected), rtol=1e-4, atol=1e-5)
