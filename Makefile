# Two set-up commands: `make demo` and `make test`. Both create .venv with the system python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo examples test lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[plot]"
	touch $@

# every user extra plus the development tools (the `dev` dependency group; pip >= 25.1)
$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[all]" --group dev
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/treedp demo

# the input files the README's recipes read (people.csv, flights.parquet, ...), in examples/
examples: $(VENV)/.installed-test
	$(BIN)/python -c "import treedp.examples as e; print(e.write_examples('examples'))"

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

# the API reference from the numpydoc docstrings (Sphinx, warnings are errors): docs/_build/html
docs: $(VENV)/.installed-test
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs/api docs/_build/html

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis docs/_build examples
