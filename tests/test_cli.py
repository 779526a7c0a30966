"""irtool-opt: in process through `irtool.cli.opt.run`, and as the installed console script."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli.opt import run
from irtool.text import parse, to_text
from irtool.transform import FunctionPass, register

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed000_fused.ir"
SMALL = "def @main(%x: Tensor[(3), float32]) {\n  %0 = exp(%x);\n  add(%0, %0)\n}\n"
SMALL_OUT = '#[version = "0.0.5"]\n' + SMALL
LETS = "def @main(%x: Tensor[(3), float32]) {\n  let %a = exp(%x);\n  let %b = log(%x);\n  negative(%a)\n}\n"
BAD = "def @main(%x) {\n  add(%x, %y)\n}\n"


@dataclasses.dataclass
class Result:
    code: int
    out: str
    err: str


def opt(*argv, stdin: str = "") -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


def assert_user_error(r: Result, *expected: str) -> None:
    assert r.code == 1
    assert "Traceback" not in r.err and "internal error" not in r.err
    for text in expected:
        assert text in r.err, r.err


def script() -> str:
    path = shutil.which("irtool-opt", path=os.path.dirname(sys.executable))
    if path is None:
        pytest.skip("the irtool-opt console script is not installed next to this Python")
    return path


# --------------------------------------------------------------------------- input and output


def test_stdin_dash():
    r = opt("-", stdin=SMALL)
    assert (r.code, r.out, r.err) == (0, SMALL_OUT, "")


def test_stdin_is_the_default_input():
    assert opt(stdin=SMALL).out == SMALL_OUT


def test_file_input(tmp_path):
    f = tmp_path / "in.ir"
    f.write_text(SMALL)
    assert opt(str(f)).out == SMALL_OUT


def test_output_file(tmp_path):
    out = tmp_path / "out.ir"
    r = opt("-", "-o", str(out), stdin=SMALL)
    assert (r.code, r.out) == (0, "")
    assert out.read_text() == SMALL_OUT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ir"]  # no temporary left behind


def test_output_dash_is_stdout(tmp_path):
    assert opt("-", "-o", "-", stdin=SMALL).out == SMALL_OUT


def test_failed_run_leaves_existing_output_untouched(tmp_path):
    out = tmp_path / "out.ir"
    out.write_text("precious\n")
    out.chmod(0o640)
    r = opt("-", "-o", str(out), stdin=BAD)
    assert_user_error(r, "undefined variable `%y`")
    assert out.read_text() == "precious\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ir"]
    assert r.out == ""


def test_failed_run_creates_no_output(tmp_path):
    out = tmp_path / "out.ir"
    assert_user_error(opt("-", "-o", str(out), "-p", "nope", stdin=SMALL), "unknown pass `nope`")
    assert_user_error(opt("-", "-o", str(out), stdin=BAD))
    assert list(tmp_path.iterdir()) == []


def test_successful_overwrite_keeps_the_file_mode(tmp_path):
    out = tmp_path / "out.ir"
    out.write_text("old\n")
    out.chmod(0o640)
    assert opt("-", "-o", str(out), stdin=SMALL).code == 0
    assert out.read_text() == SMALL_OUT
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_unwritable_output_is_a_user_error(tmp_path):
    r = opt("-", "-o", str(tmp_path / "missing" / "out.ir"), stdin=SMALL)
    assert_user_error(r, "cannot write output")
    assert not (tmp_path / "missing").exists()


def test_missing_input_file(tmp_path):
    r = opt(str(tmp_path / "nope.ir"))
    assert_user_error(r, "nope.ir: error: cannot read input")


# --------------------------------------------------------------------------- exit codes and diagnostics


def test_parse_error_is_reported_with_location(tmp_path):
    f = tmp_path / "bad.ir"
    f.write_text(BAD)
    r = opt(str(f))
    assert_user_error(r)
    assert r.err.splitlines()[:3] == [f"{f}:2:11: error: undefined variable `%y`", "  add(%x, %y)", "          ^~"]
    assert r.out == ""


@pytest.mark.parametrize(("argv", "stdin", "message"), [
    (["-p", "nope"], SMALL, "unknown pass `nope`"),
    (["--pass=dead-code-elimination{inline-once=maybe}"], SMALL, "expected a boolean"),
    (["-"], "def @main(%x) { %x(\n", "unexpected end of input"),
    (["-"], "def @main(%x) { 70000i16 }", "unrepresentable in width 16"),
    (["-"], "def @main(%x) { no_such_op(%x) }", "unknown operator `no_such_op`"),
    (["-"], "def @main(%x) { @nope(%x) }", "undefined global function `@nope`"),
    (["-"], "def @f(%x) { %x }\ndef @f(%y) { %y }", "duplicate definition of `@f`"),
    (["-"], "@R.function\ndef main(x: R.Tensor((1,), dtype=\"float32\")):\n    return R.frob(x)\n",
     "unknown name `R.frob`"),
    (["-"], "@R.function\ndef main(x: R.Tensor((1,), dtype=\"float32\")):\n  y = x\n    return y\n",
     "unexpected indent"),
    (["-"], "def @main() { meta[relay.Constant][0] }\n#[metadata]\n{\"root\": 1}", "metadata"),
    (["-"], '#[version = "0.0.4"]\ndef @main(%x) { %x }', "0.0.5"),
])
def test_user_errors_exit_1_without_traceback(argv, stdin, message):
    assert_user_error(opt(*argv, stdin=stdin), message, "error:")


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        run(["--no-such-flag"], stdin=io.StringIO(SMALL), stdout=io.StringIO(), stderr=io.StringIO())
    assert exc.value.code == 2
    assert "usage: irtool-opt" in capsys.readouterr().err


@register
@dataclasses.dataclass(frozen=True)
class _CrashPass(FunctionPass):
    name = "test-crash"
    tvm_name = "TestCrash"
    opt_level = 0

    def transform_function(self, fn, mod, ctx):
        raise RuntimeError("boom")


def test_internal_error_says_so_without_traceback():
    r = opt("-p", "test-crash", stdin=SMALL)
    assert r.code == 1
    assert "internal error: RuntimeError: boom" in r.err and "--debug" in r.err
    assert "Traceback" not in r.err


def test_debug_shows_the_internal_error():
    with pytest.raises(RuntimeError, match="boom"):
        opt("--debug", "-p", "test-crash", stdin=SMALL)


def test_version_header_before_a_bare_expression():
    r = opt(stdin='#[version = "0.0.5"]\nfn (%x: float32) {\n  %x\n}\n')
    assert r.code == 0, r.err
    assert r.out == '#[version = "0.0.5"]\ndef @main(%x: float32) {\n  %x\n}\n'


# --------------------------------------------------------------------------- passes


def test_pass_pipeline():
    r = opt("-p", "to-a-normal-form,dead-code-elimination", stdin=LETS)
    assert r.code == 0, r.err
    assert r.out == ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(3), float32]) {\n'
                     "  let %a = exp(%x);\n  let %x1 = negative(%a);\n  %x1\n}\n")


def test_pass_flags_run_in_command_line_order():
    both = opt("--pass=to-a-normal-form", "-p", "to-graph-normal-form", stdin=LETS)
    reverse = opt("-p", "to-graph-normal-form", "--pass=to-a-normal-form", stdin=LETS)
    assert "let" not in both.out and "let %" in reverse.out


def test_print_ir_and_timing_go_to_stderr():
    r = opt("-p", "to-a-normal-form,dead-code-elimination", "--print-ir-before=ToANormalForm",
            "--print-ir-after=dead-code-elimination", "--time-passes", stdin=LETS)
    assert r.code == 0
    assert "// -----// IR Dump Before ToANormalForm (to-a-normal-form) //----- //" in r.err
    assert "// -----// IR Dump After DeadCodeElimination (dead-code-elimination) //----- //" in r.err
    assert "IR Dump After ToANormalForm" not in r.err
    assert "Execution time report" in r.err and "to-a-normal-form" in r.err
    assert "IR Dump" not in r.out and r.out.startswith('#[version = "0.0.5"]')


@pytest.mark.parametrize("flag", ["--print-ir-before", "--print-ir-after", "--disabled-pass"])
def test_unknown_pass_names_in_pass_flags_are_errors(flag):
    """Regression: a misspelt name silently matched no pass (nothing printed, nothing disabled)."""
    r = opt("-p", "dead-code-elimination", f"{flag}=dead-code-elimnation", stdin=LETS)
    assert_user_error(r, "<command line>:1:", "error: unknown pass `dead-code-elimnation`")
    assert r.out == ""


def test_pass_flags_take_aliases():
    r = opt("-p", "cse", "--print-ir-after=cse", stdin=LETS)
    assert r.code == 0 and "IR Dump After EliminateCommonSubexpr" in r.err


def test_print_ir_after_change():
    r = opt("-p", "dead-code-elimination,dead-code-elimination", "--print-ir-after-change", stdin=LETS)
    assert r.err.count("IR Dump After DeadCodeElimination") == 1  # the second run changes nothing


def test_list_passes():
    r = opt("--list-passes")
    assert r.code == 0
    for name, tvm_name in [("to-a-normal-form", "ToANormalForm"), ("to-graph-normal-form", "ToGraphNormalForm"),
                           ("dead-code-elimination", "DeadCodeElimination")]:
        assert re.search(rf"^  {name} .*\[{tvm_name}, opt_level=1\]$", r.out, re.M), r.out
    assert "inline-once=0" in r.out


# --------------------------------------------------------------------------- split input files

SPLIT = ("def @main(%x: float32) {\n"      # 1
         "  add(%x, 1f)\n"                  # 2
         "}\n"                              # 3
         "// -----\n"                       # 4
         "def @f(%y) {\n"                   # 5
         "  %y(\n"                          # 6
         "}\n"                              # 7
         "// -----\n"                       # 8
         "\n"                               # 9
         "\n"                               # 10
         "fn (%z) { %q }\n")                # 11


def test_split_input_file_keeps_line_numbers(tmp_path):
    f = tmp_path / "cases.ir"
    f.write_text(SPLIT)
    r = opt("--split-input-file", str(f))
    assert_user_error(r)
    errors = [line for line in r.err.splitlines() if ": error: " in line]
    assert errors == [f"{f}:7:1: error: " + errors[0].split(": error: ", 1)[1],
                      f"{f}:11:11: error: undefined variable `%q`"]
    assert "fn (%z) { %q }\n          ^~" in r.err
    assert r.out == '#[version = "0.0.5"]\ndef @main(%x: float32) {\n  add(%x, 1f)\n}\n'  # the part that worked


def test_split_input_file_output_joins_parts(tmp_path):
    r = opt("--split-input-file", stdin=SMALL + "// -----\n" + LETS)
    assert r.code == 0
    parts = r.out.split("// -----\n")
    assert parts == [SMALL_OUT, '#[version = "0.0.5"]\n' + LETS]


def test_without_split_the_marker_is_a_comment():
    r = opt(stdin=SMALL + "// -----\n")
    assert (r.code, r.out) == (0, SMALL_OUT)


# --------------------------------------------------------------------------- --verify-roundtrip


def test_verify_roundtrip_passes_on_good_input():
    r = opt("--verify-roundtrip", "-p", "to-a-normal-form", stdin=LETS)
    assert r.code == 0 and r.err == ""
    assert r.out == opt("-p", "to-a-normal-form", stdin=LETS).out


def test_verify_roundtrip_reports_a_different_module(monkeypatch):
    import irtool.ir.structural as structural

    monkeypatch.setattr(structural, "structural_equal", lambda *a, **k: False)
    assert_user_error(opt("--verify-roundtrip", "--no-verify-each", stdin=SMALL),
                      "round trip failed: the printed module parses to a different module")


def test_verify_roundtrip_reports_a_printer_that_is_not_a_fixed_point(monkeypatch):
    import irtool.text as text

    calls = []
    real = text.to_text

    def unstable(node, *args, **kw):
        calls.append(node)
        return real(node, *args, **kw) + f"// print {len(calls)}\n"

    monkeypatch.setattr(text, "to_text", unstable)
    r = opt("--verify-roundtrip", "--no-verify-each", stdin=SMALL)
    assert_user_error(r, "round trip failed: printing is not a fixed point (line 6 differs)")


def test_verify_roundtrip_with_free_var_used_in_branches():
    r = opt("--verify-roundtrip", "--no-verify-each",
            stdin="def @main(%c: bool) {\n  free_var %a: float32;\n  if (%c) { %a } else { negative(%a) }\n}\n")
    assert r.code == 0, r.err


# --------------------------------------------------------------------------- the seed example


def _without_comments(text: str) -> str:
    text = re.sub(r"[ \t]*/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for line in text.split("\n"):
        stripped = re.sub(r"//.*", "", line).rstrip()
        if stripped or not line.strip():  # drop lines that held only a comment
            lines.append(stripped)
    return "\n".join(lines)


def test_seed_example_prints_back_identically_apart_from_comments():
    source = SEED.read_text()
    r = opt(str(SEED))
    assert r.code == 0, r.err
    assert r.out == _without_comments(source)
    assert r.out == to_text(parse(r.out))


# --------------------------------------------------------------------------- the console script


def test_console_script_stdin():
    p = subprocess.run([script(), "-"], input=SMALL, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, SMALL_OUT, "")


def test_console_script_exit_codes(tmp_path):
    exe = script()
    bad = subprocess.run([exe, "-"], input=BAD, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "<stdin>:2:11: error: undefined variable `%y`" in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""
    usage = subprocess.run([exe, "--no-such-flag"], input=SMALL, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "usage: irtool-opt" in usage.stderr and "Traceback" not in usage.stderr
    out = tmp_path / "o.ir"
    ok = subprocess.run([exe, str(SEED), "-o", str(out), "--verify-roundtrip"], capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert out.read_text() == _without_comments(SEED.read_text())


# --------------------------------------------------------------------------- pass context flags


CHAIN = "def @main(%x: Tensor[(3), float32]) {\n  %0 = exp(%x);\n  %1 = negative(%0);\n  sqrt(%1)\n}\n"


def test_opt_level_sets_fuse_ops_level():
    assert opt("-p", "fuse-ops", stdin=CHAIN).out.count("Primitive=1") == 1
    assert opt("--opt-level=0", "-p", "fuse-ops", stdin=CHAIN).out.count("Primitive=1") == 3


def test_pass_config_reaches_the_pass():
    r = opt("--pass-config", "relay.FuseOps.max_depth=2", "-p", "fuse-ops", stdin=CHAIN)
    assert r.code == 0 and r.out.count("Primitive=1") == 2


@pytest.mark.parametrize("item,message,caret", [
    ("relay.FuseOps.max_dept=2", "unknown pass config option `relay.FuseOps.max_dept`", "^~~~"),
    ("relay.FuseOps.max_depth=deep", "expected an integer, got `deep`", "^~~~"),
    ("relay.FuseOps.link_params=maybe", "expected a boolean", "^~~~~"),
    ("novalue", "expected KEY=VALUE", "^~~~"),
])
def test_bad_pass_config_is_a_diagnostic(item, message, caret):
    r = opt("--pass-config", item, "-p", "fuse-ops", stdin=CHAIN)
    assert_user_error(r, "<command line>:1:", message, f"--pass-config={item}", caret)


def test_named_passes_run_whatever_the_opt_level():
    # DeadCodeElimination is opt level 1, above 0; named on the command line it runs anyway
    r = opt("-p", "dead-code-elimination", "--opt-level=0", stdin=LETS)
    assert r.code == 0 and "log" not in r.out


def test_disabled_pass_does_not_run():
    r = opt("-p", "dead-code-elimination", "--disabled-pass=DeadCodeElimination", stdin=LETS)
    assert r.code == 0 and "log" in r.out


# --------------------------------------------------------------------------- --verify-numerics


@pytest.mark.parametrize("tolerance", ["-1", "nan"])
def test_verify_numerics_tolerance_below_zero_is_a_usage_error(tolerance, capsys):
    """Regression: a negative tolerance was taken, and then every pass "changed the results"."""
    with pytest.raises(SystemExit) as exc:
        opt("--verify-numerics", f"--verify-numerics-tolerance={tolerance}", "-p", "fuse-ops", stdin=CHAIN)
    assert exc.value.code == 2
    assert "a tolerance is a number >= 0" in capsys.readouterr().err


@register
@dataclasses.dataclass(frozen=True)
class _BrokenPass(FunctionPass):
    """Deliberately wrong: turns every `negative` into `abs`."""

    name = "test-broken"
    tvm_name = "TestBroken"

    def transform_function(self, fn, mod, ctx):
        from irtool.ir.expr import Call, Op
        from irtool.ir.visitor import ExprMutator

        class Swap(ExprMutator):
            def visit_call(self, e):
                new = super().visit_call(e)
                if type(new.op) is Op and new.op.name == "negative":
                    return Call(Op.get("abs"), new.args, new.attrs)
                return new

        return Swap().visit(fn)


def test_verify_numerics_names_the_broken_pass():
    r = opt("--verify-numerics", "-p", "fuse-ops,test-broken,dead-code-elimination", stdin=CHAIN)
    assert_user_error(r, "pass `test-broken` changed the results of @main", "result[0] was")
    assert "fuse-ops" not in r.err


def test_verify_numerics_passes_correct_pipelines():
    r = opt("--verify-numerics", "-p", "to-a-normal-form,fuse-ops,to-graph-normal-form", stdin=CHAIN)
    assert r.code == 0, r.err


def test_verify_numerics_reports_an_unrunnable_input():
    # the seed as TVM printed it has no data for its constant
    r = opt("--verify-numerics", "-p", "fuse-ops", str(SEED))
    assert_user_error(r, "--verify-numerics: cannot run @main before the passes")


_HALF_MATMUL = """@R.function
def main(x: R.Tensor((4, 64), dtype="DT"), w: R.Tensor((64, 8), dtype="DT")) -> R.Tensor((4, 8), dtype="DT"):
    with R.dataflow():
        lv: R.Tensor((4, 8), dtype="DT") = R.matmul(x, w)
        gv: R.Tensor((4, 8), dtype="DT") = R.nn.softmax(lv, axis=1)
        R.output(gv)
    return gv
"""


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_verify_numerics_of_16_bit_floats_through_the_zero_pipeline(dtype):
    """Regression: the legalized PrimFuncs compute in the 16-bit type (as TVM's) and the
    references round a float32 result, so --verify-numerics failed legalize-ops at its default
    tolerance (float16), or crashed making the random bfloat16 inputs."""
    r = opt("--verify-numerics", "-p", "zero-pipeline", stdin=_HALF_MATMUL.replace("DT", dtype))
    assert r.code == 0, r.err


def test_verify_numerics_of_float16_still_finds_a_changed_result():
    text = CHAIN.replace("float32", "float16")
    assert "float16" in text
    r = opt("--verify-numerics", "-p", "test-broken", stdin=text)
    assert_user_error(r, "pass `test-broken` changed the results of @main", "rtol = atol = 0.015625")


# --------------------------------------------------------------------------- --dump-graph


def test_dump_graph_writes_one_cluster_per_fused_group(tmp_path):
    out = tmp_path / "g.dot"
    r = opt("--opt-level=0", "-p", "fuse-ops", "--dump-graph", str(out), stdin=CHAIN)
    assert r.code == 0, r.err
    assert out.read_text().count("subgraph cluster_") - 1 == 3  # @main's cluster plus one per group


def test_dump_graph_unknown_format(tmp_path):
    r = opt("--dump-graph", str(tmp_path / "g.jpeg"), stdin=CHAIN)
    assert_user_error(r, ".dot")
    assert not (tmp_path / "g.jpeg").exists()


# --------------------------------------------------------------------------- TVMScript input

RELAX_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "relax_call_tir.ir")


@pytest.mark.parametrize("flags", [["-p", "fuse-ops"], ["-p", "infer-type,cse,fold-scale-axis"], ["--print-types"],
                                   ["--verify-numerics", "-p", "dead-code-elimination"]])
def test_relay_passes_and_flags_leave_tvmscript_alone(flags):
    """Regression: Relay-only passes (and their required infer-type) crashed on Relax
    functions; they must leave a Relax/TIR module as it is."""
    text = open(RELAX_EXAMPLE).read()
    plain = opt("-", stdin=text)
    r = opt("-", *flags, stdin=text)
    assert r.code == 0 and r.err == "", r.err
    assert r.out == plain.out and r.out.startswith("# from tvm.script import ir as I")


def test_tvmscript_split_input_file():
    text = open(RELAX_EXAMPLE).read()
    r = opt("--split-input-file", "-", stdin=text + "# -----\n" + text)
    assert r.code == 0, r.err
    first, second = r.out.split("# -----\n")
    assert first == second == opt("-", stdin=text).out
