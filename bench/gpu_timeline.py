"""Where the cuda staging ring's time goes (a lent GPU machine only): per
batch of bench_load's model, the decode (worker thread), the copies' issue
(main thread), the copies on the GPU (CUDA events, ms since the ring
started) and the waits for a buffer (on the worker, one ahead); three
loads for each of five setups (the default ring, whose worker decodes
the batches back to back since session 62: between its decodes the H200
lost ~0.25 ms a batch to handing each batch from thread to thread, which
kept the ring at 124.7 ms where its decodes took 107; 3 x 64 MiB with
that worker up to two batches ahead of the copies; 3 x 64 MiB with two
batches decoded ahead at once, whose decodes may cover each other's
joins; the default with the carved tensors made while the first batches
decode), the last of each batch by batch.

First (decide()), the loads whose defaults wait for a lent GPU, timed
side by side against the pinned floor: the ring, its carving during the
first batches, and the registered pages on 4, 8 and 16 threads.

usage: gpu_timeline.py [SCALE]   (bench_load's model scale, default 1;
ZT_BENCH_DIR: where the file goes; ZT_TIMELINE_SETUPS: the setups, as
BUFFERSxMIB:AHEAD[:carve] separated by commas; the default below adds
3 x 32 MiB, one ahead: buffers that more surely stay in the host's
last-level cache, now that a batch costs the ring less between decodes)"""
import os
import sys
import tempfile
import time

import torch

import bench_load
from ztensor import _staging
from ztensor import torch as zt

path = os.path.join(os.environ.get("ZT_BENCH_DIR") or tempfile.gettempdir(), f"timeline-{os.getpid()}.zt")
state = bench_load.llm_model(float(sys.argv[1]) if len(sys.argv) > 1 else 1)
zt.save_file(state, path)
size = sum(t.numel() * t.element_size() for t in state.values())
del state
torch.empty(1, device="cuda")


def decide(reps=5):
    """The loads whose defaults wait for a GPU's figures, first, so that a
    device call cut short still brings them: the pinned floor, the ring
    (the default), the ring with its carving during the first batches
    (zt._CARVE_DURING_RING), and raw tensors from the file's pages pinned
    where they lie (zt._REGISTERED_LOADS) on 4, 8 and 16 registering
    threads; interleaved, medians. A registered load that falls back to the
    ring (its warning) is reported as failed, not timed."""
    import statistics
    import warnings
    from ztensor import _registered
    pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    target = torch.empty(size, dtype=torch.uint8, device="cuda")

    def registered(threads):
        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                return bench_load.with_attribute(_registered, "THREADS", threads, lambda: bench_load.with_attribute(
                    zt, "_REGISTERED_LOADS", True, lambda: zt.load_file(path, device="cuda")))
        return run

    cases = {"pinned floor": lambda: target.copy_(pinned, non_blocking=True),
             "ring (default)": lambda: zt.load_file(path, device="cuda"),
             "ring, carving during": lambda: bench_load.with_attribute(
                 zt, "_CARVE_DURING_RING", True, lambda: zt.load_file(path, device="cuda")),
             "registered, 4 threads": registered(4),
             "registered, 8 threads": registered(8),
             "registered, 16 threads": registered(16)}
    times = {name: [] for name in cases}
    for rep in range(reps + 1):  # the first round warms up (allocator, pinning)
        for name, fn in cases.items():
            if times[name] is None:
                continue
            torch.cuda.synchronize()
            t = time.perf_counter()
            try:
                out = fn()
                torch.cuda.synchronize()
            except Exception as e:
                print(f"decide {name}: FAILED {type(e).__name__}: {e}", flush=True)
                times[name] = None
                continue
            if rep:
                times[name].append(time.perf_counter() - t)
            del out
    floor = statistics.median(times["pinned floor"])
    for name, ts in times.items():
        if ts:
            m = statistics.median(ts)
            print(f"decide {name}: median {m * 1e3:.1f} ms (best {min(ts) * 1e3:.1f}; {size / m / 1e9:.1f} GB/s), "
                  f"{floor / m:.2f} of the pinned floor", flush=True)
    del pinned, target


decide()


class Timed(_staging.CudaCopies):
    def __init__(self, dev):
        super().__init__(dev)
        self.log, self.decodes = [], []

    def start(self):
        super().start()
        self.ref = torch.cuda.Event(enable_timing=True)
        self.ref.record(self.stream)
        self.t0 = time.perf_counter()

    def copy_many(self, d, s):
        e0 = torch.cuda.Event(enable_timing=True)
        e0.record(self.stream)
        a = time.perf_counter()
        super().copy_many(d, s)
        self.issued = ["issue", a - self.t0, time.perf_counter() - self.t0, e0, len(d)]
        self.log.append(self.issued)

    def record(self):
        e = torch.cuda.Event(enable_timing=True)
        e.record(self.stream)
        self.issued.append(e)  # not log[-1]: the worker logs its waits meanwhile
        return e

    def wait(self, token):
        a = time.perf_counter()
        token.synchronize()
        self.log.append(["wait", a - self.t0, time.perf_counter() - self.t0])


real_load = _staging.load


def load(decode, items, engine, *a, **k):
    def timed(*columns):
        x = time.perf_counter()
        decode(*columns)
        engine.decodes.append((x - engine.t0, time.perf_counter() - engine.t0, len(columns[0])))
    return real_load(timed, items, engine, *a, **k)


_staging.load = load


def setup(text):
    """(buffers, bytes each, carving during the ring, ahead) of
    BUFFERSxMIB:AHEAD[:carve]."""
    ring, ahead, *carve = text.split(":")
    buffers, mib = ring.lower().split("x")
    return int(buffers), int(mib) << 20, carve == ["carve"], int(ahead)


default = f"{_staging.DEFAULT_BUFFERS}x{_staging.DEFAULT_BUFFER_BYTES >> 20}"
setups = os.environ.get("ZT_TIMELINE_SETUPS") or f"{default}:1,3x64:1,3x64:2,{default}:1:carve,3x32:1"
for buffers, nbytes, during, ahead in map(setup, setups.split(",")):
    # during: the carved tensors made while the first batches decode
    # (zt._CARVE_DURING_RING), which shortens the time before the first decode.
    zt._CARVE_DURING_RING = during
    for rep in range(3):
        eng = Timed(torch.device("cuda"))
        torch.cuda.synchronize()
        segments = bench_load.device_segments()
        t = time.perf_counter()
        out = zt._load_all(zt._File(path), "cuda", zt._Staging(eng, buffers, nbytes, ahead))
        torch.cuda.synchronize()
        total = time.perf_counter() - t
        segments = bench_load.device_segments() - segments  # cudaMallocs in the load
        del out
        issues = [x for x in eng.log if x[0] == "issue"]
        waits = [x for x in eng.log if x[0] == "wait"]
        gpu = [(eng.ref.elapsed_time(x[3]), eng.ref.elapsed_time(x[5])) for x in issues]
        eng.decodes.sort()  # two ahead: decodes end out of order
        dec = sum(b - a for a, b, _ in eng.decodes)  # overlapping ones counted each
        busy = sum(b - a for a, b in gpu)
        print(f"ring {buffers}x{nbytes >> 20}M, {ahead} ahead{', carving during' if during else ''} rep {rep}: {total * 1e3:.1f} ms ({size / total / 1e9:.1f} GB/s); "
              f"t0 after {(eng.t0 - t) * 1e3:.1f} ms; decode sum {dec * 1e3:.1f} ms over {len(eng.decodes)}; "
              f"copy busy {busy:.1f} ms, last copy ends {gpu[-1][1]:.1f} ms; waits {sum(b - a for _, a, b in waits) * 1e3:.1f} ms; "
              f"issue sum {sum(x[2] - x[1] for x in issues) * 1e3:.1f} ms; new device segments {segments}", flush=True)
        if rep == 2:
            for k, ((da, db, n), x, (ga, gb)) in enumerate(zip(eng.decodes, issues, gpu)):
                print(f"  {k:2d} decode {da * 1e3:7.1f}-{db * 1e3:7.1f} ({n:4d})  issue {x[1] * 1e3:7.1f}-{x[2] * 1e3:7.1f} ({x[4]:4d})"
                      f"  gpu {ga:7.1f}-{gb:7.1f}")
os.remove(path)
