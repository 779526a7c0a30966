# lit configuration: runs with the venv's lit (`.venv/bin/lit lit_tests`), no activation needed.
import os
import sys

import lit.formats

config.name = "irtool"
# lit's internal shell: portable, and it provides `not` (LLVM's `not` binary is not
# installed with the PyPI lit). Tests that need an exit status use `sh -c '...; echo $?'`.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Output", "Inputs"]

# The tools live next to the Python that runs lit (the venv's bin directory).
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

config.substitutions.append(("%python", sys.executable))
# print -> parse -> print must be a fixed point and re-parse structurally equal.
config.substitutions.append(("%roundtrip", "irtool-opt --verify-roundtrip"))
config.substitutions.append(("FileCheck", "filecheck"))
# TVM 0.27's printouts, kept once in tests/data; TVM's script() ends without a newline, a file
# written with -o with one: %ref-text FILE prints FILE with it, to diff against.
config.substitutions.append(("%tvm-ref", os.path.join(os.path.dirname(config.test_source_root), "tests", "data",
                                                      "tvm-0.27")))
config.substitutions.append(("%ref-text", sys.executable + " -c \"import sys; t = open(sys.argv[1]).read(); "
                             "sys.stdout.write(t if t.endswith(chr(10)) else t + chr(10))\""))

# `IRTOOL_PARSER_ENGINE=compiled make lit` runs the whole suite through the compiled Lark engine
# that large inputs take (see irtool/text/relay_parser.py); both engines must pass.
if "IRTOOL_PARSER_ENGINE" in os.environ:
    config.environment["IRTOOL_PARSER_ENGINE"] = os.environ["IRTOOL_PARSER_ENGINE"]
