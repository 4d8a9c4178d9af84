"""Caller cost of a launch from Python on a ruda device, beside a NumPy
operation of the same size (what `y += a * x` costs NumPy).

    python python/bench/bench_launch.py [device] [n]     (default cpu:0, 1024)

Per repetition: 2000 launches of saxpy over n floats, timed in batches of
50 back to back (the work is queued; the sync that drains each batch is
not timed), and
2000 NumPy `y += a * x` on arrays of n floats. Prints median [min .. max] of
the repetitions in microseconds per call, and also the launch + sync round
trip.
"""
import os
import statistics
import sys
import time

import numpy as np

import ruda

KERNEL = os.path.join(os.path.dirname(__file__), "..", "tests", "kernels", "saxpy.c")


def stats(samples):
    return "%.3f [%.3f .. %.3f]" % (statistics.median(samples), min(samples), max(samples))


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "cpu:0"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    dev = ruda.device(name)
    k = ruda.kernel_from_file(KERNEL)
    x = dev.tensor(np.ones(n, dtype=np.float32))
    y = dev.tensor(np.zeros(n, dtype=np.float32))
    xa, ya = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    count = ((n + 63) // 64, 1, 1)
    inner, reps = 2000, 15
    for _ in range(200):  # warm-up: compile, pools, caches
        dev.launch(k, count, x, y, n, 0.5)
    dev.sync()
    caller, numpy_op, roundtrip = [], [], []
    batch = 50
    for _ in range(reps):
        # Batches of launches, each drained by an untimed sync (as `ruda bench
        # launch` does in C): a long queue would time the worker's backlog.
        spent = 0.0
        for _ in range(inner // batch):
            t0 = time.perf_counter()
            for _ in range(batch):
                dev.launch(k, count, x, y, n, 0.5)
            spent += time.perf_counter() - t0
            dev.sync()
        caller.append(spent / inner * 1e6)
        t0 = time.perf_counter()
        for _ in range(inner):
            ya += np.float32(0.5) * xa
        numpy_op.append((time.perf_counter() - t0) / inner * 1e6)
        t0 = time.perf_counter()
        for _ in range(inner // 10):
            dev.launch(k, count, x, y, n, 0.5)
            dev.sync()
        roundtrip.append((time.perf_counter() - t0) / (inner // 10) * 1e6)
    print("python launch on %s, saxpy over %d floats; us per call, median [min .. max] of %d "
          "repetitions" % (name, n, reps))
    print("  ruda launch (caller cost)      %s" % stats(caller))
    print("  numpy y += a * x (same size)   %s" % stats(numpy_op))
    print("  ruda launch + sync round trip  %s" % stats(roundtrip))


if __name__ == "__main__":
    main()
