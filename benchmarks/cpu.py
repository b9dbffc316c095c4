"""CPU backend vs NumPy (host timings, best of 5): bincount / histogram on one
thread and on all cores.  Writes benchmarks/results/cpu.md.

    python benchmarks/cpu.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpusync as gs  # noqa: E402
from gpusync.demo import best_of as best  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    cases = [
        ("bincount u8 64M", lambda: rng.integers(0, 256, 1 << 26, dtype=np.uint8), "bincount", {}),
        ("bincount i64 16M (1000 values)", lambda: rng.integers(0, 1000, 1 << 24), "bincount", {}),
        ("bincount i32 16M (65536 values)", lambda: rng.integers(0, 65536, 1 << 24).astype(np.int32), "bincount", {}),
        ("histogram f32 16M 100 bins range", lambda: rng.random(1 << 24, dtype=np.float32), "histogram",
         {"bins": 100, "range": (0, 1)}),
        ("histogram f64 16M 100 bins", lambda: rng.standard_normal(1 << 24), "histogram", {"bins": 100}),
    ]
    lines = [f"# CPU backend vs NumPy ({gs.device_info()['name'] if gs.backend() == 'cpu' else 'host'}, "
             f"{os.cpu_count()} cores)", "",
             "| case | numpy ms | gpusync 1 thread ms | gpusync all cores ms | 1 thread vs numpy |",
             "|---|---:|---:|---:|---:|"]
    with gs.use_backend("cpu"):
        for name, make, op, kw in cases:
            x = make()
            npf = (lambda: np.bincount(x)) if op == "bincount" else (lambda: np.histogram(x, **kw))
            gsf = (lambda: gs.bincount(x)) if op == "bincount" else (lambda: gs.histogram(x, **kw))
            t_np = best(npf)
            os.environ["GPUSYNC_NUM_THREADS"] = "1"
            t1 = best(gsf)
            del os.environ["GPUSYNC_NUM_THREADS"]
            tn = best(gsf)
            lines.append(f"| {name} | {t_np:.1f} | {t1:.1f} | {tn:.1f} | {t_np / t1:.1f}x |")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "cpu.md")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
