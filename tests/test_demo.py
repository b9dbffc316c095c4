"""``python -m gpusync demo``'s tour: every capability once, checked against
NumPy (small sizes here); the counter demos on the GPU."""
import pytest

import gpusync as gs
from gpusync import demo


def test_tour_matches_numpy(backend):
    res = demo.tour(n=100_003, reps=1, verbose=False)
    assert res["backend"] == gs.backend()
    assert [r["case"] for r in res["rows"]][:2] == ["bincount u8", "histogram f32, 100 bins"]
    for r in res["rows"]:
        assert r["matches_numpy"], r["case"]
        assert r["ms"] > 0


def test_tour_prints(backend, capsys):
    demo.tour(n=10_000, reps=1)
    out = capsys.readouterr().out
    assert "gpusync tour" in out and "cumsum i32" in out and "MISMATCH" not in out


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
@pytest.mark.sanitizer
def test_counters_on_gpu_lose_updates_only_when_racing(cuda):
    r = demo.race_counter(1024, 256)
    assert r["lost"] > 0  # thousands of threads interleave their load-add-store
    assert demo.atomic_counter(1024, 256)["lost"] == 0
    assert demo.mutex_counter(64, 256)["lost"] == 0
