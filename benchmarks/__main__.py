"""Every benchmark in one run: ``python -m benchmarks [--out DIR] [--only a,b]``.

Runs histogram, reduce, warp, barrier (with cumsum) and host in turn on the
GPU (each writes its markdown table, PNG plot and rows of latest.json under
--out, peers side by side: NumPy, CuPy, PyTorch, CUB, cuBLAS, SciPy where
installed), shows a progress bar, and writes REPORT.md: the tables in one file.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ("histogram", "reduce", "warp", "barrier", "host")
TABLES = {"histogram": ["histogram.md"], "reduce": ["reduce.md"], "warp": ["warp.md"],
          "barrier": ["barrier.md", "cumsum.md"], "host": ["host.md"]}


def main():
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", default=",".join(ORDER), help="comma-separated subset of " + ", ".join(ORDER))
    ap.add_argument("--quick", action="store_true", help="smaller sizes where a benchmark supports it")
    ap.add_argument("--report-only", action="store_true", help="only rebuild REPORT.md from the tables in --out")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    bad = [n for n in names if n not in ORDER]
    if bad:
        ap.error(f"unknown benchmark(s): {', '.join(bad)}")
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is a nicety
        def tqdm(x, **k):
            return x
    os.makedirs(args.out, exist_ok=True)
    failed = []
    bar = tqdm([] if args.report_only else names, desc="benchmarks", unit="bench")
    for name in bar:
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(name)
        cmd = [sys.executable, os.path.join(HERE, f"{name}.py"), "--out", args.out]
        if args.quick and name in ("histogram", "reduce", "warp", "barrier"):
            cmd.append("--quick")
        t0 = time.time()
        with open(os.path.join(args.out, f"bench-{name}.log"), "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        if rc:
            failed.append(name)
        print(f"  {name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {time.time() - t0:.0f} s "
              f"(log: bench-{name}.log)", flush=True)
    parts = ["# gpusync benchmark report", ""]
    for name in ORDER:
        for md in TABLES[name]:
            path = os.path.join(args.out, md)
            if os.path.exists(path):
                with open(path) as f:
                    parts += [f.read().replace("\n# ", "\n## ").replace("# ", "## ", 1), ""]
    with open(os.path.join(args.out, "REPORT.md"), "w") as f:
        f.write("\n".join(parts))
    print(f"report: {os.path.join(args.out, 'REPORT.md')}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
