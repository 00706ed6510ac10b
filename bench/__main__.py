"""`python -m bench`: run every benchmark and write BENCHMARKS.md (see `bench/run_all.py`)."""

from bench.run_all import cli

cli()
