# isrlab: two commands matter — `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/isrlab run default --out out/demo/trace.jsonl
	$(BIN)/isrlab analyze out/demo/trace.jsonl --out out/demo/analysis
	$(BIN)/isrlab report out/demo/trace.jsonl -o out/demo/report.html
	@echo "report: out/demo/report.html"
	@# once per JDK and Spark: the driver JVM's class archive (spark_analysis/class_archive.py)
	@$(BIN)/python -m cli.class_archive out/demo/trace.jsonl || true

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/runtime.py
	$(BIN)/python bench/report.py

clean:
	rm -rf out .venv build *.egg-info
