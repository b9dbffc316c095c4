"""One-off measurements behind a tuning decision or a note in the docs, kept
so that they can be repeated.  Run each from the repository root on a GPU
machine, e.g. ``python -m benchmarks.probes.host_probe``; none writes outside
its ``--out`` folder (only auto_probe writes at all)."""
