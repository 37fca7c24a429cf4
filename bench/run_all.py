"""Run every benchmark in bench/ one after another (same machine, one run) and print each
one's figures. `make bench`. Each script also runs on its own: `python bench/bench_X.py`."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    scripts = sorted(Path(__file__).resolve().parent.glob("bench_*.py"))
    failed = []
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)])
        print(f"--- {script.name}: exit {code}, {time.perf_counter() - start:.1f} s", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
