#!/usr/bin/python3
"""ztensor.torch against its floors and against torch itself, on a 1 GiB
state dict of 256 f32 tensors (4 MiB each, shapes [1024, 1024]), hot page
cache, everything in one run:

  Torch_Readinto    the floor: the .zt file's tensor bytes read with readinto
                    straight into preallocated torch tensors
  Torch_LoadFile    ztensor.torch.load_file (copies)
  Torch_LoadFileMmap  load_file(mmap=True) (copy-on-write mappings)
  Torch_TorchLoad   torch.load of the same tensors saved by torch.save
  Torch_SaveFile    ztensor.torch.save_file (raw + xxh3, durable)
  Torch_TorchSave   torch.save of the same dict

Writes Google Benchmark's JSON (one "iteration" run per repetition) for
bench/report.py:  bench_torch.py OUT.json [REPETITIONS]
Needs ZTENSOR_LIBRARY (or an installed library) and PYTHONPATH=bindings/python.
"""

import json
import os
import sys
import tempfile
import time

import torch

import ztensor
from ztensor import torch as zt

TENSORS = 256
SHAPE = (1024, 1024)  # 4 MiB of f32


def timed(fn):
    start_real, start_cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start_real, time.process_time() - start_cpu


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def main():
    out_path = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    directory = os.environ.get("ZT_BENCH_DIR") or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    state = {f"layers.{i}.weight": torch.randn(SHAPE, generator=g) for i in range(TENSORS)}
    zt_path = os.path.join(directory, f"bench-torch-{os.getpid()}.zt")
    pt_path = os.path.join(directory, f"bench-torch-{os.getpid()}.pt")
    try:
        zt.save_file(state, zt_path)
        torch.save(state, pt_path)
        with ztensor.open(zt_path) as f:
            m = f.manifest["objects"]
            places = [(name, m[name]["components"]["data"]["offset"]) for name in state]

        def readinto():
            out = {name: torch.empty(SHAPE) for name, _ in places}
            with open(zt_path, "rb", buffering=0) as fh:
                for name, offset in places:
                    fh.seek(offset)
                    view = memoryview(out[name].numpy()).cast("B")
                    if fh.readinto(view) != len(view):
                        raise SystemExit("short read")
            return out

        got = zt.load_file(zt_path)
        if any(not torch.equal(got[k], state[k]) for k in state):
            raise SystemExit("load_file returned other values than were saved")
        del got
        cases = {
            "Torch_Readinto": (readinto, zt_path),
            "Torch_LoadFile": (lambda: zt.load_file(zt_path), zt_path),
            "Torch_LoadFileMmap": (lambda: zt.load_file(zt_path, mmap=True), zt_path),
            "Torch_TorchLoad": (lambda: torch.load(pt_path), pt_path),
            "Torch_SaveFile": (lambda: zt.save_file(state, zt_path + ".out"), None),
            "Torch_TorchSave": (lambda: torch.save(state, pt_path + ".out"), None),
        }
        runs = []
        for rep in range(reps):
            # Interleaved, so that a disturbance hits every case alike.
            for name, (fn, warm_path) in cases.items():
                if warm_path:
                    warm(warm_path)
                real, cpu = timed(fn)
                runs.append({"name": name, "run_name": name, "run_type": "iteration",
                             "repetitions": reps, "repetition_index": rep, "iterations": 1,
                             "real_time": real * 1e3, "cpu_time": cpu * 1e3, "time_unit": "ms"})
                print(f"{name:22s} {real * 1e3:9.1f} ms", file=sys.stderr)
        doc = {"context": {"bytes": TENSORS * SHAPE[0] * SHAPE[1] * 4, "tensors": TENSORS,
                           "torch": torch.__version__, "ztensor": ztensor.library_version()},
               "benchmarks": runs}
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=1)
    finally:
        for p in (zt_path, pt_path, zt_path + ".out", pt_path + ".out"):
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    main()
