"""`release_free_memory`: what a big build freed goes back to the system (glibc)."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import pytest

_SCRIPT = """
import gc
from mcp_code_mode.memory import release_free_memory

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

junk = [f"{i:08d}" + "x" * 2000 for i in range(100_000)]  # 200 MB from malloc's heap
keep = junk[::1000]  # a few survivors keep the heap from shrinking at its top
del junk
gc.collect()
before = rss_mb()
release_free_memory()
print(before, rss_mb())
"""


@pytest.mark.skipif(ctypes.util.find_library("c") is None, reason="needs a C library")
def test_freed_heap_goes_back_to_the_system() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True
    )
    before, after = map(int, out.stdout.split())
    assert before - after >= 50, (before, after)
