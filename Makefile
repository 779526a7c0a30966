# irtool — the commands a developer and CI use (in the style of xDSL's Makefile).
#   make demo   create .venv, install, run irtool-opt on an example
#   make test   pytest, then the lit suite
#   make lint   ruff
#   make bench  the benchmarks (figures, not assertions)

VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Apache TVM 0.27 in a separate venv, for the optional `tvm` tests and the benchmarks:
# `IRTOOL_TVM_PYTHON=/path/to/tvm-venv/bin/python make test` (without it those tests skip)
TVM_PYTHON ?= $(IRTOOL_TVM_PYTHON)

.PHONY: venv test pytest lit demo lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: lint pytest lit

# Relay text is read by Lark's compiled engine (lark-cython) when installed; the lit suite
# and the parser's property tests run through the pure-Python engine as well
# (IRTOOL_PARSER_ENGINE, relay_parser.py; tests/test_fused_tokens.py compares the reference grammar).
# TVMScript is read with its fused bindings (tvmscript/fused.py); IRTOOL_PARSER_ENGINE=reference
# reads both syntaxes with their reference grammars, for the lit suite, the TVMScript tests and the fuzz test.
PROPERTY_TESTS := tests/test_roundtrip.py tests/test_literals.py tests/test_passes.py tests/test_relay_infix.py
REFERENCE_TESTS := tests/test_tvmscript_roundtrip.py tests/test_tvmscript_parser.py tests/test_tvmscript_gaps.py \
	tests/test_fuzz.py tests/test_fused_tokens.py

pytest: venv
	IRTOOL_TVM_PYTHON=$(TVM_PYTHON) $(BIN)/python -m pytest -q -n 2 tests
	IRTOOL_PARSER_ENGINE=python $(BIN)/python -m pytest -q -n 2 $(PROPERTY_TESTS)
	IRTOOL_PARSER_ENGINE=reference $(BIN)/python -m pytest -q -n 2 $(REFERENCE_TESTS)

lit: venv
	$(BIN)/lit -sv lit_tests
	IRTOOL_PARSER_ENGINE=python $(BIN)/lit -s lit_tests
	IRTOOL_PARSER_ENGINE=reference $(BIN)/lit -s lit_tests

demo: venv
	@echo '$$ irtool-opt examples/seed000.ir --print-types     # (metadata section not shown)'
	@$(BIN)/irtool-opt examples/seed000.ir --print-types | sed -n '1,/^}/p'
	@echo
	@echo '$$ irtool-run examples/seed000.ir --random-inputs --seed 0'
	@$(BIN)/irtool-run examples/seed000.ir --random-inputs --seed 0
	@echo
	@echo '$$ irtool-opt examples/conv_block.ir -p to-a-normal-form,dead-code-elimination'
	@$(BIN)/irtool-opt examples/conv_block.ir -p to-a-normal-form,dead-code-elimination
	@echo
	@echo '$$ irtool-opt examples/seed000.ir -p "fuse-ops{opt-level=4}" --verify-numerics --print-types'
	@$(BIN)/irtool-opt examples/seed000.ir -p 'fuse-ops{opt-level=4}' --verify-numerics --print-types | sed -n '1,/^}/p'
	@echo
	@echo '$$ irtool-run examples/relax_call_tir.ir --random-inputs     # Relax + TIR (TVMScript)'
	@$(BIN)/irtool-run examples/relax_call_tir.ir --random-inputs
	@echo
	@echo '$$ irtool-opt examples/seed000.ir -p relay-to-relax,zero-pipeline     # lowered to TIR as TVM 0.27 does (metadata not shown)'
	@$(BIN)/irtool-opt examples/seed000.ir -p relay-to-relax,zero-pipeline | sed -n '/^@I.ir_module/,$$p' | grep -v '^ *T.reads\|^ *T.writes'
	@echo
	@echo '$$ irtool-run examples/seed000.ir --random-inputs --seed 0 --backend native --repeat 10     # compiled with LLVM'
	@$(BIN)/irtool-run examples/seed000.ir --random-inputs --seed 0 --backend native --repeat 10

lint: venv
	$(BIN)/ruff check .

bench: venv
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python benchmarks/text_throughput.py
	$(BIN)/python benchmarks/fuse_ops.py $(if $(TVM_PYTHON),--tvm-python $(TVM_PYTHON))
	$(BIN)/python benchmarks/matmul.py
	$(BIN)/python benchmarks/native_models.py

clean:
	rm -rf $(VENV) build *.egg-info lit_tests/relay/Output .pytest_cache .hypothesis
