"""The package's 8-bit, 256-bin histogram by distribution and size (issue 14: >= 90 % of read at 32 MiB, >= 95 %
from 256 MiB): graph replay of 5 calls (device time) and CUDA events around 5 back-to-back calls, checked against
CuPy's bincount.  A quick A/B companion of benchmarks/probes/u8_pipe.cu (the kernels alone); the benchmark rows are
`python3 benchmarks/histogram.py --dist`.

    python3 -m benchmarks.probes.u8_package
"""
import cupy as cp
import numpy as np

import gpusync as gs
from benchmarks.common import Timer


def main():
    t = Timer(cp)
    rs = cp.random.RandomState(3)
    for dist in ("uniform", "same", "zipf"):
        for mib in (32, 64, 256, 1024):
            n = (mib << 20) - 5  # not a multiple of 16: the tail runs too
            if dist == "uniform":
                x = rs.randint(0, 256, n, dtype=cp.uint8)
            elif dist == "same":
                x = cp.full(n, 101, cp.uint8)
            else:
                x = cp.minimum(rs.zipf(1.3, n) - 1, 255).astype(cp.uint8)

            def f():
                return gs.histogram(x, 256, (0, 256))

            ms = t.graph(f, reps=9, inner=5)
            me = t.gpu(f, reps=9, inner=5)
            ok = np.array_equal(cp.asnumpy(f()[0]), cp.asnumpy(cp.bincount(x, minlength=256)))
            print(f"package u8 256 bins {dist} {mib} MiB: graph {ms * 1e3:.1f} us, events {me * 1e3:.1f} us, ok={ok}",
                  flush=True)
            del x


if __name__ == "__main__":
    main()
