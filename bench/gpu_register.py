"""Can a load DMA straight from the page cache? (a lent GPU machine only)

The staging ring moves every byte through host memory three times (the page
cache read, the pinned buffer written, the pinned buffer read by the copy
engine), and on an H200 it decoded at 43 - 45 GB/s against a pinned copy's
55 (BENCHMARKS.md, session 60): the 0.8 goal is at its edge. The file's
pages can instead be pinned where they lie (cudaHostRegister of a read-only
mapping) and copied from there, one pass; issue #41 measured 55 GB/s once
registered, but 0.64 s to register 4.8 GB on one thread. This measures
whether registering scales over threads, and a pipeline of it: chunks of
the mapping registered on T threads, each copied to the device as soon as
it is pinned, unregistered once its copy is done.

Prints one line per measurement (GB/s of the file's bytes, and against the
pinned floor measured in the same run). usage: gpu_register.py [SCALE]
(bench_load's model scale, default 1; ZT_BENCH_DIR: where the file goes).
ZT_REGISTER_DRY=1 runs the same steps on the CPU with no-op registration
(to check the script, not to measure)."""
import mmap
import os
import statistics
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

import bench_load
from ztensor import torch as zt

DRY = os.environ.get("ZT_REGISTER_DRY") == "1"
REGISTER_READ_ONLY = 0x08  # cudaHostRegisterReadOnly (CUDA 11.1+): the mapping is PROT_READ
MiB = 1 << 20

if DRY:
    class _Cudart:
        def cudaHostRegister(self, ptr, size, flags):
            return 0

        def cudaHostUnregister(self, ptr):
            return 0
    cudart, device = _Cudart(), torch.device("cpu")

    def synchronize():
        pass
else:
    if not torch.cuda.is_available():
        sys.exit("gpu_register.py: no CUDA device (ZT_REGISTER_DRY=1 checks the script on the CPU)")
    cudart, device = torch.cuda.cudart(), torch.device("cuda")

    def synchronize():
        torch.cuda.synchronize()


def check(err, what):
    if int(err) != 0:
        raise RuntimeError(f"{what}: cudaError {int(err)}")


path = os.path.join(os.environ.get("ZT_BENCH_DIR") or tempfile.gettempdir(), f"register-{os.getpid()}.zt")
zt.save_file(bench_load.llm_model(float(sys.argv[1]) if len(sys.argv) > 1 else 1), path)
size = os.path.getsize(path) // mmap.PAGESIZE * mmap.PAGESIZE  # whole pages: what is registered
bench_load.warm(path)
fd = os.open(path, os.O_RDONLY)
mapping = mmap.mmap(fd, size, prot=mmap.PROT_READ)
base = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
with warnings.catch_warnings():  # a read-only buffer: never written here
    warnings.simplefilter("ignore")
    host = torch.from_numpy(np.frombuffer(mapping, dtype=np.uint8))
dst = torch.empty(size, dtype=torch.uint8, device=device)
stream = torch.cuda.Stream() if not DRY else None


def copy(a, b):
    """Bytes [a, b) of the mapping to the device, asynchronously."""
    if DRY:
        dst[a:b].copy_(host[a:b])
        return None
    with torch.cuda.stream(stream):
        dst[a:b].copy_(host[a:b], non_blocking=True)
        event = torch.cuda.Event()
        event.record(stream)
    return event


def timed(fn, reps=3):
    times = []
    for _ in range(reps):
        synchronize()
        t0 = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def show(what, seconds, floor=None):
    gbps = size / seconds / 1e9
    against = f"  {floor / seconds:.2f} of the pinned floor" if floor else ""
    print(f"{what:58s} {seconds * 1e3:8.1f} ms {gbps:6.1f} GB/s{against}", flush=True)


def pinned_floor():
    chunk = 256 * MiB
    buf = torch.empty(chunk, dtype=torch.uint8, pin_memory=not DRY)

    def run():
        for a in range(0, size, chunk):
            b = min(size, a + chunk)
            if DRY:
                dst[a:b].copy_(buf[:b - a])
            else:
                with torch.cuda.stream(stream):
                    dst[a:b].copy_(buf[:b - a], non_blocking=True)
    return timed(run)


def register(a, b):
    check(cudart.cudaHostRegister(base + a, b - a, REGISTER_READ_ONLY), f"cudaHostRegister [{a}, {b})")


def unregister(a):
    check(cudart.cudaHostUnregister(base + a), f"cudaHostUnregister at {a}")


def chunks(n):
    return [(a, min(size, a + n)) for a in range(0, size, n)]


floor = pinned_floor()
show("floor: pinned host->device copies of 256 MiB", floor)

# The whole mapping at once (the measurement), then its copy alone.
t0 = time.perf_counter()
register(0, size)
t_reg = time.perf_counter() - t0
t_copy = timed(lambda: copy(0, size))
t0 = time.perf_counter()
unregister(0)
t_unreg = time.perf_counter() - t0
show("register the whole mapping (one call)", t_reg)
show("copy from the registered mapping", t_copy, floor)
show("unregister it", t_unreg)

for chunk_mib in (16, 64):
    parts = chunks(chunk_mib * MiB)
    for threads in (1, 4, 16):
        with ThreadPoolExecutor(threads) as pool:
            t0 = time.perf_counter()
            list(pool.map(lambda p: register(*p), parts))
            t_reg = time.perf_counter() - t0
            t0 = time.perf_counter()
            list(pool.map(lambda p: unregister(p[0]), parts))
            t_unreg = time.perf_counter() - t0
        show(f"register {chunk_mib} MiB chunks on {threads} threads", t_reg)
        show(f"unregister them on {threads} threads", t_unreg)

    # The pipeline a load would be: chunks registered ahead on threads,
    # each copied once pinned, unregistered once its copy is done.
    for threads in (4, 16):
        def pipeline():
            with ThreadPoolExecutor(threads) as pool, ThreadPoolExecutor(threads) as release:
                pinned = [pool.submit(register, a, b) for a, b in parts]
                done = []
                for (a, b), f in zip(parts, pinned):
                    f.result()
                    event = copy(a, b)

                    def free(a=a, event=event):
                        if event is not None:
                            event.synchronize()
                        unregister(a)
                    done.append(release.submit(free))
                for f in done:
                    f.result()
        show(f"pipeline: {chunk_mib} MiB chunks, {threads} threads register", timed(pipeline), floor)

os.unlink(path)  # the mapping lives on until the process ends (tensors view it)
