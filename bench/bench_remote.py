#!/usr/bin/python3
"""Remote reads (zt_open_url) from a loopback nginx, everything in one run:
what each operation fetches (nginx's access log: requests and body bytes)
and the throughput of reading a whole 1 GiB component against curl
downloading the same byte range.

  files: a 10k-object file (4 f32 each, a manifest far beyond the 64 KiB
         tail), a 1 GiB file: "m" f32 [16384, 16384] plus a 64 KiB
         tensor "small", and a 256 MiB f32 [8192, 8192] of noise as 1.2
         writes zstd (1 MiB frames, no frame index), whose first and last
         eighths of rows are read (facts zstd_rows_*); 64 MiB of bf16
         weights raw, zstd and byte planes (v2), loaded whole and 1/8 of
         one tensor's rows (facts weights_*: issue #46's bytes over HTTP)
  Remote_Curl        curl -r FIRST-LAST -o /dev/null of the component's range
                     (the baseline: no copy at all on its side)
  Remote_ZtRead      zt_component_read of "m" into a preallocated, touched
                     buffer, over a reader opened beforehand
  Remote_ZtRead4     the same as 4 row blocks read by zt_dense_slice on 4
                     threads (4 connections)
  Remote_CurlModel   curl -o /dev/null of a whole 193 MiB model file (16 x
                     8 MiB, 1,024 x 64 KiB and 1,000 x 1 KiB bf16 tensors)
  Remote_ReadintoModel     the floor a load is held to: the file's bytes in
                     fresh memory, one GET on one connection read into an
                     np.empty buffer (http.client's readinto; curl's figure
                     writes nowhere)
  Remote_DecodeManyModel   ztensor.open(url).decode_many() of it: the open
                     (2 requests) and every tensor into fresh numpy arrays
  Remote_LoadFileModel     ztensor.torch.load_file(url), where torch imports

Writes Google Benchmark-style JSON with an extra "facts" object for
bench/report.py:  bench_remote.py OUT.json [REPETITIONS]
Needs nginx (Debian nginx-light), ZTENSOR_LIBRARY and PYTHONPATH=bindings/python.
"""

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from ctypes import byref, c_uint64, c_void_p

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "remote"))
import servers  # noqa: E402

import ztensor  # noqa: E402
from ztensor import _lib  # noqa: E402

SIDE = 16384  # [SIDE, SIDE] f32 = 1 GiB
ZSIDE = 8192  # [ZSIDE, ZSIDE] f32 = 256 MiB


def build_many(path):
    with ztensor.Writer(path) as w:
        for i in range(10000):
            w.add(f"layer.{i}.bias", np.full(4, i, np.float32))


def build_big(path):
    rows = 1024
    with ztensor.Writer(path) as w:
        w.add("small", np.arange(16384, dtype=np.float32))  # 64 KiB
        w.begin_object("m", "dense", (SIDE, SIDE))
        comp = w.begin_component("data", "f32", SIDE * SIDE * 4)
        block = np.empty((rows, SIDE), np.float32)
        for r in range(0, SIDE, rows):
            block[:] = np.arange(r, r + rows, dtype=np.float32)[:, None]
            comp.write(block)
        comp.end()
        w.end_object()


def build_zstd(path):
    rng = np.random.default_rng(3)
    with ztensor.Writer(path) as w:
        w.add("z", rng.standard_normal((ZSIDE, ZSIDE), dtype=np.float32), encoding="zstd")


def build_weights(path, encoding):
    """64 MiB of bf16 weights drawn like trained ones (normal, sigma 0.02) in
    8 tensors [2048, 2048], as v2 writes them with `encoding`."""
    rng = np.random.default_rng(5)
    with ztensor.Writer(path, file_version=2) as w:
        for i in range(8):
            bits = (rng.standard_normal((2048, 2048), dtype=np.float32) * 0.02).view(np.uint32)
            w.add(f"w.{i}", ((bits + 0x8000) >> 16).astype(np.uint16), dtype="bf16", encoding=encoding)


def weights_over_http(nginx, facts):
    """Issue #46's end-to-end figure: the bytes a whole load and a slice of
    rows fetch over HTTP for the same weights raw, zstd and byte planes."""
    for encoding in ("raw", "zstd", "planes"):
        path = os.path.join(nginx.www, f"weights_{encoding}.zt")
        build_weights(path, encoding)
        with ztensor.open(nginx.url + f"/weights_{encoding}.zt") as f:
            mark = nginx.mark()
            got = f.decode_many()
            facts[f"weights_{encoding}_requests"], facts[f"weights_{encoding}_bytes"] = fetched(nginx, mark)
            assert sorted(got) == [f"w.{i}" for i in range(8)]
        with ztensor.open(nginx.url + f"/weights_{encoding}.zt") as f:  # a cache of its own
            mark = nginx.mark()
            assert f.get_slice("w.3")[:256].shape == (256, 2048)
            facts[f"weights_{encoding}_rows_bytes"] = fetched(nginx, mark)[1]
        os.remove(path)
    facts["weights_decoded"] = 8 * 2048 * 2048 * 2


def build_model(path):
    """A model as a user loads one over HTTP: 16 x 8 MiB, 1,024 x 64 KiB and
    1,000 x 1 KiB bf16 tensors (193 MiB)."""
    rng = np.random.default_rng(7)
    with ztensor.Writer(path) as w:
        for count, shape in ((16, (2048, 2048)), (1024, (128, 256)), (1000, (512,))):
            for i in range(count):
                w.add(f"{shape[0]}.{i}", rng.integers(0, 1 << 16, shape, dtype=np.uint16), dtype="bf16")


def model_cases(nginx, facts):
    """Remote_CurlModel, Remote_DecodeManyModel and Remote_LoadFileModel
    (where torch imports) over a model file in nginx's folder."""
    path = os.path.join(nginx.www, "model.zt")
    build_model(path)
    url = nginx.url + "/model.zt"
    facts["model_bytes"] = os.path.getsize(path)

    def curl_model():
        subprocess.run(["curl", "-s", "-f", "-o", "/dev/null", url], check=True)

    def readinto_model():
        buf = np.empty(facts["model_bytes"], np.uint8)  # fresh: its pages are faulted in as it fills
        view, got = memoryview(buf), 0
        conn = http.client.HTTPConnection(nginx.url.split("//", 1)[1])
        try:
            conn.request("GET", "/model.zt")
            response = conn.getresponse()
            while got < len(buf):
                n = response.readinto(view[got:])
                if not n:
                    raise SystemExit("Remote_ReadintoModel: the body ended early")
                got += n
        finally:
            conn.close()

    def decode_many_model():
        with ztensor.open(url) as f:
            got = f.decode_many()
        assert len(got) == 2040

    cases = {"Remote_CurlModel": curl_model, "Remote_ReadintoModel": readinto_model,
             "Remote_DecodeManyModel": decode_many_model}
    try:
        from ztensor import torch as zt
        cases["Remote_LoadFileModel"] = lambda: zt.load_file(url)
    except ImportError:
        print("Remote_LoadFileModel: not run (torch does not import)", file=sys.stderr)
    mark = nginx.mark()
    decode_many_model()
    facts["model_requests"] = fetched(nginx, mark)[0]
    return cases


def fetched(nginx, mark):
    entries = nginx.since(mark)
    return len(entries), sum(e[2] for e in entries)


def main():
    out_path = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    base = os.environ.get("ZT_BENCH_DIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zt_bench_remote_", dir=base) as d:
        nginx = servers.Nginx(d).start()
        try:
            many, big = os.path.join(nginx.www, "many.zt"), os.path.join(nginx.www, "big.zt")
            build_many(many)
            build_big(big)
            facts = {}
            with open(many, "rb") as f:
                f.seek(-16, os.SEEK_END)
                facts["manifest_10k"] = int.from_bytes(f.read(8), "little")
            mark = nginx.mark()
            ztensor.open(nginx.url + "/many.zt").close()
            facts["open_10k_requests"], facts["open_10k_bytes"] = fetched(nginx, mark)
            with ztensor.open(nginx.url + "/many.zt") as f:  # every tensor: small reads gathered
                mark = nginx.mark()
                start = time.perf_counter()
                got = f.decode_many()
                facts["decode_10k_ms"] = (time.perf_counter() - start) * 1e3
                facts["decode_10k_requests"], facts["decode_10k_bytes"] = fetched(nginx, mark)
                assert len(got) == 10000 and got["layer.9999.bias"][0] == 9999

            packed = os.path.join(nginx.www, "packed.zt")
            build_zstd(packed)
            with ztensor.open(nginx.url + "/packed.zt") as z:
                facts["zstd_stored"] = z.manifest["objects"]["z"]["components"]["data"]["length"]
                for name, rows in (("first", slice(0, ZSIDE // 8)), ("last", slice(ZSIDE - ZSIDE // 8, ZSIDE))):
                    mark = nginx.mark()
                    assert z.get_slice("z")[rows].shape == (ZSIDE // 8, ZSIDE)
                    facts[f"zstd_rows_{name}_requests"], facts[f"zstd_rows_{name}_bytes"] = fetched(nginx, mark)
            os.remove(packed)

            weights_over_http(nginx, facts)

            f = ztensor.open(nginx.url + "/big.zt")
            mark = nginx.mark()
            assert f["small"].nbytes == 64 << 10
            facts["small_requests"], facts["small_bytes"] = fetched(nginx, mark)
            mark = nginx.mark()
            cols = f.get_slice("m")[:, SIDE // 8:SIDE // 4]
            facts["slice_requests"], facts["slice_bytes"] = fetched(nginx, mark)
            facts["slice_runs"] = SIDE
            assert cols[5, 0] == 5.0 and cols[SIDE - 1, 7] == SIDE - 1
            del cols
            m = f.manifest["objects"]["m"]["components"]["data"]
            first, length = m["offset"], m["length"]
            r = f._r()
            index = list(f).index("m")
            dst = np.ones(length, np.uint8)  # touched: page faults are not measured
            written = c_uint64()

            def zt_read():
                _lib.check(_lib.lib.zt_component_read(r, index, b"data", c_void_p(dst.ctypes.data),
                                                      length, byref(written)))

            def zt_read4():
                # four row blocks as four zt_dense_slice calls on four threads
                quarter = SIDE // 4
                errors = []

                def one(k):
                    begin = (c_uint64 * 2)(k * quarter, 0)
                    end = (c_uint64 * 2)((k + 1) * quarter, SIDE)
                    part = dst[k * quarter * SIDE * 4:(k + 1) * quarter * SIDE * 4]
                    got = c_uint64()
                    status = _lib.lib.zt_dense_slice(r, index, 2, begin, end, c_void_p(part.ctypes.data),
                                                     part.nbytes, byref(got))
                    if status != 0:
                        errors.append(status)
                threads = [threading.Thread(target=one, args=(k,)) for k in range(4)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if errors:
                    raise SystemExit(f"zt_dense_slice failed: {errors}")

            def curl():
                subprocess.run(["curl", "-s", "-f", "-r", f"{first}-{first + length - 1}", "-o", "/dev/null",
                                nginx.url + "/big.zt"], check=True)

            cases = {"Remote_Curl": curl, "Remote_ZtRead": zt_read, "Remote_ZtRead4": zt_read4}
            cases.update(model_cases(nginx, facts))
            runs = []
            for served in (big, os.path.join(nginx.www, "model.zt")):  # hot page cache on the server's side
                with open(served, "rb") as fh:
                    while fh.read(64 << 20):
                        pass
            for fn in cases.values():  # connections made, caches warm: not measured
                fn()
            for rep in range(reps):
                for name, fn in cases.items():
                    start_real, start_cpu = time.perf_counter(), time.process_time()
                    fn()
                    real, cpu = time.perf_counter() - start_real, time.process_time() - start_cpu
                    runs.append({"name": name, "run_name": name, "run_type": "iteration",
                                 "repetitions": reps, "repetition_index": rep, "iterations": 1,
                                 "real_time": real * 1e3, "cpu_time": cpu * 1e3, "time_unit": "ms"})
                    print(f"{name:16s} {real * 1e3:9.1f} ms", file=sys.stderr)
            assert written.value == length and dst[:4].view(np.float32)[0] == 0.0
            f.close()
            print(json.dumps(facts), file=sys.stderr)
            with open(out_path, "w") as out:
                json.dump({"context": {"bytes": length}, "facts": facts, "benchmarks": runs}, out, indent=1)
        finally:
            nginx.stop()


if __name__ == "__main__":
    main()
