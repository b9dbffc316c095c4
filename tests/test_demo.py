"""``python -m gpusync demo``'s tour: every capability once, checked against
NumPy (small sizes here)."""
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
