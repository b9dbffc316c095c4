"""Device bincount of 16-bit identifiers near and far from 0 (issue 14: "16-bit
and other integers whose values occupy a small range: at histogram speed").

    python -m benchmarks.probes.bincount16

CuPy int16 / uint16 arrays of N values drawn from lo .. lo + span - 1: the
synchronized wall time of gs.bincount (its result's length needs the host's
wait) against torch.bincount (the same bytes as a torch tensor), median of
rounds, and gs.bincount's road (GPUSYNC_DEBUG's histogram lines: the bins
each count took).  Values far from 0 past the first count's 4,096 bins took
max + 1 bins before a min/max read found their smallest (2.57 ms for uint16
40,000 .. 40,999 at 128M, r153-r156)."""
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

N = 128 * 2**20


def fd2_of(fn):
    """What fn writes to file descriptor 2 (the C library's debug lines bypass sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as f:
        os.dup2(f.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return f.read()


def wall(fn, reps=20):
    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        cp.cuda.Device().synchronize()
        out.append((time.perf_counter() - t) / reps * 1e3)
    return statistics.median(out), min(out)


def main():
    print(f"{gs.device_info()['name']}: bincount of {N} 16-bit values, ms per call (median / min of 5 rounds)")
    for dtype in ("uint16", "int16"):
        for lo, span in ((0, 1000), (5_000, 1000), (30_000, 1000), (30_000, 1), (4_096, 28_000)):
            x = cp.random.randint(lo, lo + span, N, dtype=np.int32).astype(dtype)
            ref = np.bincount(x.get())
            got = gs.bincount(x)
            assert np.array_equal(got.get(), ref), (dtype, lo, span)
            os.environ["GPUSYNC_DEBUG"] = "1"
            text = fd2_of(lambda: (gs.bincount(x), cp.cuda.Device().synchronize()))
            os.environ.pop("GPUSYNC_DEBUG", None)
            bins = [w.split("=")[1] for line in text.splitlines() if line.startswith("[gpusync] histogram n=")
                    for w in line.split() if w.startswith("nbins=")]
            g = wall(lambda: gs.bincount(x))
            row = f"  {dtype} {lo}..{lo + span - 1}: gpusync {g[0]:8.3f} {g[1]:8.3f}"
            if torch is not None:
                tx = torch.as_tensor(x, device="cuda")
                try:
                    t = wall(lambda: torch.bincount(tx))
                    row += f"   torch {t[0]:8.3f} {t[1]:8.3f}"
                except RuntimeError as e:  # (a dtype torch.bincount does not take)
                    tx = tx.to(torch.int32)
                    t = wall(lambda: torch.bincount(tx))
                    row += f"   torch(int32 copy made beforehand) {t[0]:8.3f} {t[1]:8.3f}  ({str(e)[:40]})"
            print(row + f"   bins counted: {', '.join(bins) or '(the first count alone)'}", flush=True)
            del x


if __name__ == "__main__":
    main()
