"""Benchmark suite of openclaw-fts: every figure next to plain ``sqlite3`` doing the same work.

Run ``python -m bench.run --size 10k`` (see ``bench/README.md``). Nothing here is imported by the
library or its tests.
"""
