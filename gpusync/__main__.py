"""python -m gpusync demo | info | calibrate"""
import sys

from . import _backend, demo


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "demo"
    if cmd == "demo":
        res = demo.text_histogram()
        tour = demo.tour()
        return 0 if all(r["matches_numpy"] for r in res["rows"] + tour["rows"]) else 1
    if cmd == "info":
        print("backend:", _backend.backend())
        for k, v in _backend.device_info().items():
            print(f"  {k}: {v}")
        return 0
    if cmd == "calibrate":
        from . import _calibrate

        _calibrate.calibrate(save_cache="--no-save" not in argv[1:], verbose=True)
        return 0
    print("usage: python -m gpusync [demo|info|calibrate [--no-save]]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
