"""Host (NumPy) arrays through the cuda backend's pinned staging pipeline:
sizes around its piece and thread boundaries, both directions, against
NumPy; the same with staging switched off; every histogram strategy on a
host input."""
import numpy as np
import pytest

import gpusync as gs

from conftest import strategies_for

MB = 1 << 20
SIZES = [256 * 1024 - 1, 256 * 1024, 2 * MB - 1, pytest.param(2 * MB + 1, marks=pytest.mark.sanitizer),
         16 * MB + 3, 37 * MB + 5]


@pytest.mark.gpu
@pytest.mark.parametrize("nbytes", SIZES)
def test_staged_inputs_and_outputs(nbytes):
    rng = np.random.default_rng(nbytes)
    a = rng.integers(0, 256, nbytes, dtype=np.uint8)
    with gs.use_backend("cuda"):
        np.testing.assert_array_equal(gs.bincount(a, minlength=256), np.bincount(a, minlength=256))
        assert gs.sum(a) == a.sum()
        f = rng.random(nbytes // 4, dtype=np.float32)
        assert gs.dot(f, f) == pytest.approx(np.dot(f.astype(np.float64), f.astype(np.float64)), rel=1e-6)
        i = a[: nbytes // 2].astype(np.int32)  # cumsum: staged in (4 B) and out (8 B)
        np.testing.assert_array_equal(gs.cumsum(i), np.cumsum(i))
        np.testing.assert_array_equal(gs.packbits(a), np.packbits(a != 0))


@pytest.mark.gpu
def test_staging_off_gives_the_same(monkeypatch):
    a = np.random.default_rng(1).integers(0, 1000, 5 * MB, dtype=np.int32)
    with gs.use_backend("cuda"):
        on = (gs.bincount(a), gs.cumsum(a), gs.sum(a))
        monkeypatch.setenv("GPUSYNC_NO_STAGING", "1")
        off = (gs.bincount(a), gs.cumsum(a), gs.sum(a))
    for x, y in zip(on, off):
        np.testing.assert_array_equal(x, y)


@pytest.mark.gpu
def test_more_than_one_stage_chunk():
    # beyond GS_STAGE_BYTES (256 MiB): several staged chunks, chained carries
    a = np.ones((300 * MB) // 4, np.int32)
    with gs.use_backend("cuda"):
        assert gs.sum(a) == a.size
        c = gs.cumsum(a)
        assert c[-1] == a.size and c[12345] == 12346


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [1, 3, 8, 13])
@pytest.mark.parametrize("nt", ["1", "0"])
def test_misaligned_host_memory(monkeypatch, offset, nt):
    """Sources at every alignment (the staged copy's head, 64-byte body and
    tail), with plain memcpy (the default) and streaming stores; cumsum's
    output comes back through the device -> host pipeline."""
    monkeypatch.setenv("GPUSYNC_STAGE_NT", nt)
    base = np.random.default_rng(offset).integers(0, 256, 9 * MB + 77, dtype=np.uint8)
    a = base[offset:]  # the source starts `offset` bytes past an allocation
    with gs.use_backend("cuda"):
        np.testing.assert_array_equal(gs.bincount(a, minlength=256), np.bincount(a, minlength=256))
        np.testing.assert_array_equal(gs.cumsum(a), np.cumsum(a, dtype=np.uint64))
        f = base[offset: offset + 4 * (a.size // 4 - 1)].view(np.uint8)
        np.testing.assert_array_equal(gs.packbits(f), np.packbits(f != 0))


@pytest.mark.gpu
def test_host_input_on_gpu_matches(cuda):
    a = np.random.default_rng(3).integers(0, 256, 3_000_001).astype(np.uint8)
    for s in strategies_for("cuda"):
        np.testing.assert_array_equal(gs.bincount(a, strategy=s), np.bincount(a))
    assert gs.backend() == "cuda"
