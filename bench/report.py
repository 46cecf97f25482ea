#!/usr/bin/python3
"""Turns the JSON of one bench/run_report.sh run into the Markdown report.

Every figure is a ratio of two medians measured in the same run on the same
bytes: baseline time / our time, so 1.0 means as fast as the baseline and
higher is better. Goals are those of issue 7 (>= unless said otherwise).

usage: report.py OUT_DIR [--update BENCHMARKS.md]
"""
import json
import os
import re
import statistics
import sys


def load_gbench(path):
    """{normalized name: {"real": median s, "cpu": median s, "n": repetitions, "spread": (max-min)/median}}"""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        doc = json.load(f)
    runs = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = re.sub(r"/(min_time:[0-9.]+|iterations:[0-9]+|repeats:[0-9]+|real_time|process_time)", "", b["run_name"])
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        runs.setdefault(name, []).append((b["real_time"] * scale, b["cpu_time"] * scale, b.get("ratio")))
    out = {}
    for name, xs in runs.items():
        real = [x[0] for x in xs]
        med = statistics.median(real)
        out[name] = {
            "real": med,
            "min": min(real),
            "cpu": statistics.median([x[1] for x in xs]),
            "n": len(xs),
            "spread": (max(real) - min(real)) / med if med else 0.0,
            "ratio": xs[0][2],  # a counter the benchmark reports (bench_planes: decoded / stored)
        }
    out["_context"] = doc.get("context", {})
    return out


def load_json(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


class Table:
    def __init__(self):
        self.rows = []
        self.missed = []

    def ratio(self, area, what, runs, baseline, ours, goal, note="", cpu=False):
        b, o = runs.get(baseline), runs.get(ours)
        if not b or not o:
            self.rows.append((area, what, "n/a", goal_text(goal), "not run", note))
            return None
        r = b["real"] / o["real"]
        # Other jobs on the machine only ever add time: the best runs of
        # each side are the least disturbed, and decide the verdict.
        judged = b["min"] / o["min"]
        extras = [f"best {judged:.2f}"]
        if cpu and o["cpu"] > 0:
            extras.append(f"cpu {b['cpu'] / o['cpu']:.2f}")
        spread = max(b["spread"], o["spread"])
        if spread > 0.25:
            extras.append(f"±{spread * 100:.0f}%")
        figure = f"{r:.2f} ({', '.join(extras)})"
        status = verdict(judged, goal)
        if status == "missed":
            self.missed.append(f"{area}: {what}")
        self.rows.append((area, what, figure, goal_text(goal), status, note))
        return r

    def fact(self, area, what, figure, goal="", status="", note=""):
        if status == "missed":
            self.missed.append(f"{area}: {what}")
        self.rows.append((area, what, figure, goal, status, note))

    def markdown(self):
        lines = ["| area | measurement | ratio: median (best runs, cpu, spread) | goal | | baseline, notes |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            lines.append("| " + " | ".join(str(c) for c in r) + " |")
        return "\n".join(lines)


def load_gotest(path):
    """bench_go.sh's `go test -bench` output in load_gbench's form: one
    iteration a line ("BenchmarkLoadLLMFloor-2   1   201822628 ns/op"),
    the name without its GOMAXPROCS suffix. Go gives no CPU time."""
    if not os.path.exists(path):
        return {}
    runs = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"(Benchmark\w+?)(-\d+)?\s+(\d+)\s+([0-9.]+) ns/op", line)
            if m:
                runs.setdefault(m.group(1), []).append(float(m.group(4)) * 1e-9)
    out = {}
    for name, real in runs.items():
        med = statistics.median(real)
        out[name] = {"real": med, "min": min(real), "cpu": 0.0, "n": len(real),
                     "spread": (max(real) - min(real)) / med if med else 0.0, "ratio": None}
    return out


def goal_text(goal):
    return "" if goal is None else f"≥ {goal}"


def verdict(r, goal):
    if goal is None:
        return ""
    return "met" if r >= goal else "missed"


def gbps(run, nbytes):
    return f"{nbytes / run['real'] / 1e9:.2f} GB/s" if run else "n/a"


def main():
    out_dir = sys.argv[1]
    update = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--update" else None
    op = load_gbench(os.path.join(out_dir, "bench_open.json"))
    raw = load_gbench(os.path.join(out_dir, "bench_raw.json"))
    zs = load_gbench(os.path.join(out_dir, "bench_zstd.json"))
    wr = load_gbench(os.path.join(out_dir, "bench_write.json"))
    cv = load_gbench(os.path.join(out_dir, "bench_convert.json"))
    pt = load_gbench(os.path.join(out_dir, "bench_torch.json"))
    rm = load_gbench(os.path.join(out_dir, "bench_remote.json"))
    ld = load_gbench(os.path.join(out_dir, "bench_load.json"))
    ld_facts = (load_json(os.path.join(out_dir, "bench_load.json")) or {}).get("facts") or {}
    rm_facts = (load_json(os.path.join(out_dir, "bench_remote.json")) or {}).get("facts")
    go = load_gotest(os.path.join(out_dir, "bench_go.txt"))
    rs = load_gotest(os.path.join(out_dir, "bench_rust.txt"))
    cpp = load_gotest(os.path.join(out_dir, "bench_cpp.txt"))
    pages = load_json(os.path.join(out_dir, "pages.json"))
    mem = load_json(os.path.join(out_dir, "memory.json"))
    machine = load_json(os.path.join(out_dir, "machine.json"))
    t = Table()
    GiB, MiB = 1 << 30, 1 << 20

    # ---- open ----
    per_object = {}
    for n in (1000, 10000, 100000):
        t.ratio("open", f"open + enumerate, {n // 1000}k objects", op, f"BM_CborLoadWalk/{n}",
                f"BM_ZtOpenEnumerate/{n}", 0.5, "pread + cbor_load + walk of the same manifest", cpu=True)
        if op.get(f"BM_ZtOpenEnumerate/{n}") and op.get(f"BM_CborLoadWalk/{n}"):
            per_object[n] = (op[f"BM_ZtOpenEnumerate/{n}"]["real"] / n * 1e9,
                             op[f"BM_CborLoadWalk/{n}"]["real"] / n * 1e9)
    for n in (10000, 100000):
        t.ratio("open", f"open + enumerate, zTensor v2, {n // 1000}k objects", op, f"BM_ZtOpenEnumerate/{n}",
                f"BM_ZtOpenEnumerateV2/{n}", 0.67,
                "the same objects in 1.2 (v2 adds the deterministic-CBOR check and the manifest's XXH3-64)",
                cpu=True)
    if len(per_object) == 3:
        ours = " / ".join(f"{per_object[n][0]:.0f}" for n in (1000, 10000, 100000))
        floor = " / ".join(f"{per_object[n][1]:.0f}" for n in (1000, 10000, 100000))
        g_ours = per_object[100000][0] / per_object[1000][0]
        g_floor = per_object[100000][1] / per_object[1000][1]
        t.fact("open", "ns per object at 1k / 10k / 100k", f"{ours} (floor {floor})", "linear",
               "met" if g_ours <= max(1.5, 1.25 * g_floor) else "missed",
               f"per-object cost grows ×{g_ours:.2f} from 1k to 100k (floor ×{g_floor:.2f})")
    stages = [op.get("BM_Stage_CborTape/100000"), op.get("BM_Stage_TapeAndModel/100000"),
              op.get("BM_Stage_TapeModelValidate/100000"), op.get("BM_ZtOpenEnumerate/100000")]
    if all(stages):
        tape, model, valid, total = (s["real"] * 1e3 for s in stages)
        t.fact("open", "where the time goes, 100k objects (ms)",
               f"CBOR tape {tape:.0f}, manifest model {model - tape:.0f}, validation {max(0.0, valid - model):.0f}, "
               f"map/close/enumerate {max(0.0, total - valid):.0f}", "", "", "stage benchmarks on the same bytes")
    if pages:
        a = pages["reader_mapping"]
        pc = pages["page_cache"]
        ok = a["data_pages_mapped_far"] == 0 and pc["data_resident_far"] == 0
        ctl = pages["control_after_reading_one_component"]["data_pages_mapped_far"]
        t.fact("open", "data pages touched by zt_open + enumerate (10k objects, 1.25 GiB sparse data)",
               f"{a['data_pages_mapped_far']} of {pages['data_pages']}", "0", "met" if ok and ctl > 0 else "missed",
               f"reader mapping has {a['mapped_pages']} pages mapped for a {pages['manifest_bytes'] / MiB:.2f} MiB "
               f"manifest; page cache outside the kernel's readahead windows: {pc['data_resident_far']} data pages; "
               f"control (one 128 KiB component read): {ctl} pages seen")

    # ---- raw ----
    for cold, label in ((0, "hot"), (1, "cold")):
        t.ratio("raw 1 GiB", f"touch every byte via zt_component_map, {label}", raw, f"BM_Touch_Mmap/cold:{cold}",
                f"BM_Touch_ZtMap/cold:{cold}", 0.95,
                f"same loop over a plain mmap ({gbps(raw.get(f'BM_Touch_Mmap/cold:{cold}'), GiB)})", cpu=cold == 0)
        t.ratio("raw 1 GiB", f"… after zt_prefetch, {label}", raw, f"BM_Touch_Mmap/cold:{cold}",
                f"BM_Touch_ZtMapPrefetch/cold:{cold}", None, "madvise WILLNEED first")
    for cold, label in ((0, "hot"), (1, "cold")):
        base = f"BM_Read_Pread/cold:{cold}"
        t.ratio("raw 1 GiB", f"zt_component_read (mapped), {label}", raw, base, f"BM_Read_ZtRead/cold:{cold}", 0.95,
                f"pread into the same buffer ({gbps(raw.get(base), GiB)})", cpu=cold == 0)
        t.ratio("raw 1 GiB", f"zt_component_read (ZT_IO_COPY), {label}", raw, base,
                f"BM_Read_ZtReadCopyMode/cold:{cold}", 0.95, "pread into the same buffer", cpu=cold == 0)
        for th in (1, 2):
            t.ratio("raw 1 GiB", f"zt_decode_many, {th} thread{'s' if th > 1 else ''}, {label}", raw, base,
                    f"BM_Read_ZtDecodeMany/cold:{cold}/threads:{th}", None, "pread into the same buffer")
        # zt_component_read shares large raw data out on every core as
        # zt_decode_many does (since 2026-12-06): one thread alone is ~0.5 here.
        t.ratio("raw 1 GiB", f"zt_component_read (mapped) against zt_decode_many on 2 threads, {label}", raw,
                f"BM_Read_ZtDecodeMany/cold:{cold}/threads:2", f"BM_Read_ZtRead/cold:{cold}", 0.9,
                "zt_decode_many of the same component, 2 threads")
        t.ratio("raw 1 GiB", f"zt_component_map (ZT_IO_COPY): read into the reader's cache, {label}", raw,
                f"BM_Cache_PreadFresh/cold:{cold}", f"BM_Cache_ZtMapCopyMode/cold:{cold}", 0.9,
                "pread into fresh memory (4 KiB pages); the cache's is advised for huge pages", cpu=cold == 0)
        t.ratio("raw 1 GiB", f"… against fresh memory in huge pages, {label}", raw,
                f"BM_Cache_PreadFreshHuge/cold:{cold}", f"BM_Cache_ZtMapCopyMode/cold:{cold}", None,
                "pread into fresh memory advised for huge pages")

    t.ratio("raw 20,000 x 1 KiB", "zt_decode_many of every tensor (2 threads), fresh reader, hot", raw,
            "BM_Tiny_PreadSpan", "BM_Tiny_ZtDecodeMany/threads:2", 0.5,
            f"one pread of the span holding them + a copy of each out of it ({gbps(raw.get('BM_Tiny_PreadSpan'), 20000 * 1024)}); "
            "the goal leaves room for decode_many's bookkeeping (~100 ns a tensor); "
            "small reads are gathered, one preadv per run (a copy each out of the mapping: ~0.1)")
    t.ratio("raw 20,000 x 1 KiB", "… against a pread a tensor", raw, "BM_Tiny_PreadEach",
            "BM_Tiny_ZtDecodeMany/threads:2", None, "20,000 preads into the same places")
    one_call, read_each = raw.get("BM_Tiny_OneRangeACall"), raw.get("BM_Tiny_ComponentReadEach")
    if one_call and read_each:
        per = one_call["min"] / 20000 * 1e6
        t.fact("raw 20,000 x 1 KiB", "one zt_decode_ranges call a tensor, hot: time a call", f"{per:.1f} us",
               "≤ 5 us", "met" if per <= 5 else "missed",
               f"zt_component_read of each: {read_each['min'] / 20000 * 1e6:.2f} us; the fixed cost of a decode "
               "call (18.5 us until 2026-11-29: hardware_concurrency read /sys each time, a madvise a tensor)")
    else:
        t.fact("raw 20,000 x 1 KiB", "one zt_decode_ranges call a tensor, hot: time a call", "n/a", "≤ 5 us",
               "not run")
    t.ratio("raw 1 GiB", "an eighth of the columns of the [16384, 16384] f32 matrix (zt_dense_slice), hot",
            raw, "BM_Slice_Whole/cold:0", "BM_Slice_EighthOfColumns/cold:0", 4,
            "zt_component_read of the whole matrix (8 if reading 8 KiB of every 64 KiB row cost 1/8)")

    # ---- zstd ----
    ctx = zs.get("_context", {})
    ratio_txt = f"stored/decoded {float(ctx['stored_over_decoded']):.2f}" if "stored_over_decoded" in ctx else ""
    t.ratio("zstd 256 MiB", "1 thread, one frame: zt_component_read", zs, "BM_ST_ZstdDCtx_OneFrame",
            "BM_ST_ZtRead_OneFrame", 0.95, f"ZSTD_decompressDCtx, same bytes ({gbps(zs.get('BM_ST_ZstdDCtx_OneFrame'), 256 * MiB)}; {ratio_txt})", cpu=True)
    t.ratio("zstd 256 MiB", "1 thread, 1 MiB frames: core decoder", zs, "BM_ST_ZstdDCtx_Frames",
            "BM_ST_ZtCoreDecode_Frames", 0.95, "ZSTD_decompressDCtx over the same frames", cpu=True)
    mt = "ZSTD_decompressDCtx, 1 thread; cpu = total work of all threads vs 1 thread"
    t.ratio("zstd 256 MiB", "one multi-frame component, zt_component_read (2 threads)", zs, "BM_ST_ZstdDCtx_Frames",
            "BM_MT_ZtRead_Frames", 1.8, mt, cpu=True)
    t.ratio("zstd 256 MiB", "one multi-frame component, zt_decode_many", zs, "BM_ST_ZstdDCtx_Frames",
            "BM_MT_ZtDecodeMany_Frames", 1.8, mt, cpu=True)
    t.ratio("zstd 256 MiB", "whole file, 256 components: zt_decode_many", zs, "BM_Many_ZstdDCtx_Loop",
            "BM_Many_ZtDecodeMany", 1.8, mt.replace("1 thread", "loop, 1 thread", 1), cpu=True)
    t.ratio("zstd 256 MiB", "whole file, 256 components: zt_component_read loop", zs, "BM_Many_ZstdDCtx_Loop",
            "BM_Many_ZtRead_Loop", 0.95, "ZSTD_decompressDCtx loop, 1 thread", cpu=True)

    t.ratio("zstd 256 MiB", "v2 seekable: an eighth of the rows (zt_dense_rows) against the whole part", zs,
            "BM_V2_SeekableWhole", "BM_V2_SeekableEighthOfRows", 3,
            "zt_component_read of the whole zt.zstd-seekable/1 part, 1 MiB frames (8 if both ran on one thread; the whole part decodes on 2)",
            cpu=True)

    # ---- byte planes (issue #46) ----
    pl = load_gbench(os.path.join(out_dir, "bench_planes.json"))
    for ti, tname in enumerate(["bf16", "f16", "f32", "fp8"]):
        for di, dname in enumerate(["normal σ 0.02", "heavy-tailed", "0.1% outliers"]):
            base = f"type:{ti}/dist:{di}/all_cores:0/level:3"
            p, z = pl.get(f"BM_Planes_Encode/{base}"), pl.get(f"BM_Zstd_Encode/{base}")
            z19 = pl.get(f"BM_Zstd_Decode/type:{ti}/dist:{di}/all_cores:0/level:19")
            if not p or not z or not p.get("ratio") or not z.get("ratio"):
                t.fact("byte planes 16 MiB", f"{tname}, {dname}: size", "n/a", "", "not run")
                continue
            rel = p["ratio"] / z["ratio"]
            # Never more than 1% larger than zstd; bf16 weights like trained ones: 1.45x.
            ok = rel >= 0.99 and (ti != 0 or di != 0 or p["ratio"] >= 1.45)
            goal = "1.45x; ≥ 0.99 of zstd" if (ti, di) == (0, 0) else "≥ 0.99 of zstd"
            high = f", zstd -19 {z19['ratio']:.3f}x" if z19 and z19.get("ratio") else ""
            t.fact("byte planes 16 MiB", f"{tname}, {dname}: ratio {p['ratio']:.3f}x",
                   f"zstd's size / planes' {rel:.3f}", goal, "met" if ok else "missed",
                   f"zstd -3 {z['ratio']:.3f}x{high}; encode {gbps(p, 16 * MiB)} (zstd {gbps(z, 16 * MiB)})")
        base = f"type:{ti}/dist:0/all_cores:0/level:3"
        t.ratio("byte planes 16 MiB", f"{tname}: decode, 1 thread", pl, f"BM_Zstd_Decode/{base}",
                f"BM_Planes_Decode/{base}", None,
                f"zstd -3 of the same weights, 1 MiB frames ({gbps(pl.get(f'BM_Zstd_Decode/{base}'), 16 * MiB)}); "
                f"planes {gbps(pl.get(f'BM_Planes_Decode/{base}'), 16 * MiB)}", cpu=True)
        base_all = f"type:{ti}/dist:0/all_cores:1/level:3"
        t.ratio("byte planes 16 MiB", f"{tname}: decode, all cores against 1 thread", pl, f"BM_Planes_Decode/{base}",
                f"BM_Planes_Decode/{base_all}", None,
                f"planes on all cores {gbps(pl.get(f'BM_Planes_Decode/{base_all}'), 16 * MiB)}")
        t.ratio("byte planes 16 MiB", f"{tname}: encode, all cores against 1 thread", pl, f"BM_Planes_Encode/{base}",
                f"BM_Planes_Encode/{base_all}", None,
                f"planes encoded on all cores {gbps(pl.get(f'BM_Planes_Encode/{base_all}'), 16 * MiB)}, "
                f"1 thread {gbps(pl.get(f'BM_Planes_Encode/{base}'), 16 * MiB)}")

    # ---- write ----
    t.ratio("write 512 MiB", "raw, durable (finish: fsync + rename)", wr, "BM_Durable_WriteLoop", "BM_Durable_ZtRaw",
            0.9, f"write(2) loop + fsync + rename + dir fsync ({gbps(wr.get('BM_Durable_WriteLoop'), 512 * MiB)})")
    t.ratio("write 512 MiB", "raw + xxh3, durable", wr, "BM_Durable_WriteLoop", "BM_Durable_ZtRawXxh3", 0.8,
            "same")
    t.ratio("write 512 MiB", "raw, write path only (no fsync)", wr, "BM_Path_WriteLoop", "BM_Path_ZtRaw", 0.9,
            f"write(2) loop ({gbps(wr.get('BM_Path_WriteLoop'), 512 * MiB)})", cpu=True)
    t.ratio("write 512 MiB", "raw + xxh3, write path only", wr, "BM_Path_WriteLoop", "BM_Path_ZtRawXxh3", 0.8,
            "write(2) loop", cpu=True)
    t.ratio("write 512 MiB", "raw + sha256, write path only", wr, "BM_Path_WriteLoop", "BM_Path_ZtRawSha256", None,
            "write(2) loop", cpu=True)
    t.ratio("write 512 MiB", "canonical zTensor v2 (raw + xxh3 at 64 KiB), write path only", wr, "BM_Path_ZtRawXxh3",
            "BM_Path_ZtCanonicalV2", 0.9, "the 1.2 writer with xxh3 on the same bytes", cpu=True)
    for level in (1, 3):
        for th in (1, 2):
            key = f"BM_Zstd_Zt/level:{level}/threads:{th}"
            lib = f"BM_Zstd_Lib/level:{level}/threads:{th}"
            t.ratio("write 256 MiB zstd", f"level {level}, {th} thread{'s' if th > 1 else ''}: {gbps(wr.get(key), 256 * MiB)}",
                    wr, lib, key, None,
                    "libzstd: ZSTD_compressCCtx per 1 MiB frame" if th == 1 else "libzstd's own multithreading (nbWorkers=2)")
        one, two = wr.get(f"BM_Zstd_Zt/level:{level}/threads:1"), wr.get(f"BM_Zstd_Zt/level:{level}/threads:2")
        if one and two:
            t.fact("write 256 MiB zstd", f"level {level}: 2 threads vs 1", f"{one['real'] / two['real']:.2f}", "", "",
                   "speed-up of our writer")
    for th in (1, 2):
        key = f"BM_ZstdStream_Zt/level:3/threads:{th}"
        t.ratio("write 256 MiB zstd", f"level 3, streamed in 1 MiB pieces, {th} thread{'s' if th > 1 else ''}: "
                f"{gbps(wr.get(key), 256 * MiB)}", wr, f"BM_Zstd_Lib/level:3/threads:{th}", key, None,
                "libzstd: ZSTD_compressCCtx per 1 MiB frame" if th == 1 else "libzstd's own multithreading (nbWorkers=2)")
    one, two = wr.get("BM_ZstdStream_Zt/level:3/threads:1"), wr.get("BM_ZstdStream_Zt/level:3/threads:2")
    if one and two:
        t.fact("write 256 MiB zstd", "level 3, streamed: 2 threads vs 1", f"{one['real'] / two['real']:.2f}", "", "",
               "speed-up of our writer on zt_writer_write pieces")

    # ---- digests ----
    for algo, label in (("Xxh3", "xxh3"), ("Sha256", "sha256")):
        t.ratio("digest", f"{label}, one call (zt::digest_hex)", wr, f"BM_Digest_{algo}_Direct", f"BM_Digest_{algo}_Zt",
                0.95, "XXH3_64bits" if algo == "Xxh3" else "EVP_Digest", cpu=True)
        t.ratio("digest", f"{label}, 1 MiB pieces (zt::Hasher)", wr, f"BM_Digest_{algo}Pieces_Direct",
                f"BM_Digest_{algo}Pieces_Zt", 0.95, "XXH3 state" if algo == "Xxh3" else "EVP_DigestUpdate", cpu=True)

    # ---- ztensor.torch ----
    t.ratio("torch 1 GiB", "load_file, 256 f32 tensors (copies)", pt, "Torch_Readinto", "Torch_LoadFile", 0.9,
            "readinto of the same bytes into preallocated torch tensors")
    t.ratio("torch 1 GiB", "load_file against torch.load", pt, "Torch_TorchLoad", "Torch_LoadFile", None,
            "torch.load of the same tensors saved by torch.save")
    t.ratio("torch 1 GiB", "load_file(mmap=True), copy-on-write", pt, "Torch_Readinto", "Torch_LoadFileMmap", None,
            "readinto into preallocated tensors (nothing is read until used)")
    t.ratio("torch 1 GiB", "save_file (raw + xxh3, durable: fsync + rename)", pt, "Torch_TorchSave", "Torch_SaveFile",
            None, "torch.save (no fsync)")

    # ---- loading a model (bench_load.py) ----
    llm = f"bf16 model, {ld_facts.get('bytes', 0) / GiB:.2f} GiB"
    cores = f"{ld_facts.get('threads', '?')}-thread pread"
    t.ratio("load", f"load_file, {llm} (copies)", ld, "Load_Pread_llm", "Load_LoadFile_llm", 0.9,
            f"{cores} of the same bytes into fresh torch memory")
    t.ratio("load", f"load_file, {llm}, against pread into huge-page memory", ld, "Load_PreadHuge_llm",
            "Load_LoadFile_llm", None, f"{cores} into memory advised for huge pages, as load_file's is")
    t.ratio("load", f"floor check: {ld_facts.get('threads', '?')} threads copying out of a fresh mapping of the file",
            ld, "Load_PreadHuge_llm", "Load_CopyFromMap_llm", None,
            f"{cores} (both into huge-page memory): under 1, pread (what the library's copies of 64 KiB or more "
            "use) is the faster way on this machine")
    t.ratio("load", "load_file against torch.load (mmap=True + touch on torch >= 2.1)", ld, "Load_TorchLoad",
            "Load_LoadFile_llm", 1.5, f"torch {ld_facts.get('torch', '?')}")
    t.ratio("load", "load_file(mmap=True) + touch, against torch.load(mmap=True) + touch", ld, "Load_TorchLoad",
            "Load_Mmap_llm", None, "the goal's comparison with both sides mapped (the row above copies)")
    t.ratio("load", "load_file of the torch.save file (allow_foreign), against torch.load", ld, "Load_TorchLoad",
            "Load_ForeignPt", None, "the row above's torch.load; the library checks each member's CRC-32")
    t.ratio("load", "load_file(mmap=True) + touch of the torch.save file, against torch.load", ld, "Load_TorchLoad",
            "Load_ForeignPtMmap", None, "torch.load (mmap=True + touch on torch >= 2.1), which checks no CRC")
    t.ratio("load", "decode_many of an np.savez_compressed file (1,024 x 64 KiB)", ld, "Load_NumpyNpzDeflated",
            "Load_NpzDeflated", None, "dict(numpy.load(...)): one member at a time")
    t.ratio("load", "load_file, 4,096 tensors of 64 KiB (copies)", ld, "Load_Pread_small", "Load_LoadFile_small",
            0.9, f"{cores} into fresh torch memory")
    t.ratio("load", "load_file, 4,096 tensors of 64 KiB, against pread into huge-page memory", ld,
            "Load_PreadHuge_small", "Load_LoadFile_small", None,
            f"{cores} into fresh memory advised for huge pages, as the load's blocks are (the goal's floor is the row above's)")
    many = ld_facts.get("many_tensors")
    tiny = f"{many or 20000:,} tensors of 1 KiB"
    if many and "Load_LoadFile_many" in ld:
        per = {k: ld[k]["real"] / many * 1e6 for k in ("Load_LoadFile_many", "Load_TorchLoad_many",
                                                          "Load_Safetensors_many", "Load_Mmap_many") if k in ld}
        peers = ", ".join(f"{who} {per[k]:.1f} us" for who, k in (("mmap=True + touch", "Load_Mmap_many"),
                                                                 ("torch.load", "Load_TorchLoad_many"),
                                                                 ("safetensors", "Load_Safetensors_many")) if k in per)
        t.fact("load", f"load_file, {tiny}: time a tensor", f"{per['Load_LoadFile_many']:.1f} us",
               "", "", f"in the same run: {peers or 'none'}")
    if many and "Load_GetTensor_many" in ld:
        per = {k: ld[k]["real"] / many * 1e6 for k in ("Load_GetTensor_many", "Load_GetSlice_many",
                                                          "Load_GetTensorMapped_many",
                                                          "Load_SafetensorsGetTensor_many") if k in ld}
        also = ", ".join(f"{who} {per[k]:.1f} us" for who, k in (
            ("get_slice(name)[...]", "Load_GetSlice_many"),
            ("mapped (mmap=True) + touch", "Load_GetTensorMapped_many"),
            ("safetensors' get_tensor (+ touch)", "Load_SafetensorsGetTensor_many")) if k in per)
        t.fact("load", f"safe_open(...).get_tensor, {tiny}: time a tensor", f"{per['Load_GetTensor_many']:.1f} us",
               "", "", f"a loop over the names, as transformers loads; in the same run: {also}")
    t.ratio("load", f"mapped get_tensor loop + touch, {tiny}, names from the last, against in order", ld,
            "Load_GetTensorMapped_many", "Load_GetTensorMappedReversed_many", 0.75,
            "the same loop in the file's order (a mapping's hand-outs kept in runs; 0.65 when one "
            "sorted list took every claim, 2026-12-06)")
    t.ratio("load", f"safe_open(...).get_tensor loop, {llm}, against load_file", ld, "Load_LoadFile_llm",
            "Load_GetTensor_llm", None, "load_file of the same file (all tensors in one call)")
    t.ratio("load", f"safe_open(...).get_tensor loop, {llm}, against safetensors' (+ touch)", ld,
            "Load_SafetensorsGetTensor_llm", "Load_GetTensor_llm", None,
            "safetensors' safe_open get_tensor loop (where importable)")
    t.ratio("load", f"load_file, {tiny}, against torch.load", ld, "Load_TorchLoad_many",
            "Load_LoadFile_many", None, "torch.load of the same tensors saved by torch.save")
    t.ratio("load", f"load_file, {tiny}, against safetensors (+ touch)", ld, "Load_Safetensors_many",
            "Load_LoadFile_many", None, "safetensors.torch.load_file (where importable)")
    t.ratio("load", f"load_file, {tiny} (copies)", ld, "Load_Pread_many", "Load_LoadFile_many", None,
            f"{cores} of the same bytes (back to back: one range) into fresh torch memory: all the rest is per-tensor work")
    t.ratio("load", f"load_file, {llm}, against its tensors each allocated on its own", ld,
            "Load_LoadFileUncarved", "Load_LoadFile_llm", None,
            "load_file with no tensor carved out of a block (the 256 KiB ones: an mmap each)")
    t.ratio("load", f"load_file, {llm}, its carved tensors' blocks advised for huge pages", ld,
            "Load_LoadFileBlocks4k", "Load_LoadFile_llm", None,
            "the same with the blocks in 4 KiB pages (the way of 2026-12-05)")
    fresh = "in a fresh process (a user's first load: all memory fresh)"
    for m, what in (("llm", llm), ("small", "4,096 tensors of 64 KiB"), ("many", tiny)):
        t.ratio("load", f"load_file, {what}, {fresh}", ld, f"First_Pread_{m}", f"First_LoadFile_{m}", None,
                f"{cores} of the same bytes into fresh torch memory, in a fresh process")
    t.ratio("load", f"load_file, 4,096 tensors of 64 KiB carved out of huge-page blocks, {fresh}", ld,
            "First_LoadFileUncarved_small", "First_LoadFile_small", None,
            "the same with each allocated on its own (the way until 2026-12-06)")
    t.ratio("load", f"load_file, {llm}, its carved tensors' blocks advised for huge pages, {fresh}", ld,
            "First_LoadFileBlocks4k_llm", "First_LoadFile_llm", None,
            "the same with the blocks in 4 KiB pages (the way of 2026-12-05)")
    t.ratio("load", f"load_file against torch.load (mmap=True + touch on torch >= 2.1), {fresh}", ld,
            "First_TorchLoad", "First_LoadFile_llm", None, f"torch {ld_facts.get('torch', '?')}, in a fresh process")
    t.ratio("load", f"load_file against safetensors' load_file (+ touch), {fresh}", ld, "First_Safetensors",
            "First_LoadFile_llm", None, "safetensors.torch.load_file, in a fresh process (where importable)")
    t.ratio("load", "load_file, 4,096 tensors of 64 KiB carved out of huge-page blocks", ld,
            "Load_LoadFileUncarved_small", "Load_LoadFile_small", None,
            "the same with each allocated on its own (the way until 2026-12-06)")
    t.ratio("load", f"load_file, {llm}, its carved tensors made while a worker decodes", ld,
            "Load_LoadFileCarveFirst", "Load_LoadFile_llm", None, "load_file with them made before the decode starts")
    t.ratio("load", "load_model into a model built first", ld, "Load_LoadStateDict", "Load_LoadModel", None,
            "load_file + load_state_dict (a second copy of the model, then a copy into it)")
    t.ratio("load", "load_file(mmap=True) + reading a byte a page", ld, "Load_Pread_llm", "Load_Mmap_llm", None,
            f"{cores}")
    t.ratio("load", f"load_file of the zstd twin (ratio {ld_facts.get('zstd_ratio', 0):.2f})", ld,
            "Load_LoadFile_llm", "Load_LoadFileZstd", None, "load_file of the raw file")
    t.ratio("load", "File.decode_many (numpy arrays)", ld, "Load_PreadHuge_llm", "Load_DecodeMany", 0.9,
            f"{cores} into huge-page memory (numpy's arrays are)")
    t.ratio("load", "File.decode_many, file opened copy=True (pread)", ld, "Load_PreadHuge_llm", "Load_DecodeManyCopy",
            None, f"{cores} into huge-page memory")
    t.ratio("load", "load_file of a rank's share: a quarter of every tensor's rows (rank 1 of 4)", ld,
            "Load_PreadRank", "Load_RankRows", None, f"{cores} of the share's bytes into fresh torch memory")
    t.ratio("load", "load_file of a rank's share: a quarter of every tensor's columns", ld, "Load_PreadRank",
            "Load_RankColumns", None, f"{cores} of as many bytes (the rows' share: one range a tensor)")
    t.ratio("load", "load_file of the model as a v2 model in 4 shard files", ld, "Load_LoadFile_llm",
            "Load_LoadFileShards", None, "load_file of the one-file model")
    t.ratio("load", "load_file of the model as a safetensors index of 4 files (allow_foreign)", ld,
            "Load_LoadFile_llm", "Load_LoadFileIndex", None, "load_file of the one-file model")
    t.ratio("load", "load_file(mmap=True) + touch of the model as a v2 model in 4 shard files", ld,
            "Load_Mmap_llm", "Load_MmapShards", None, "load_file(mmap=True) + touch of the one-file model")
    t.ratio("load", "load_file(mmap=True) + touch of the model as a safetensors index of 4 files", ld,
            "Load_Mmap_llm", "Load_MmapIndex", None, "load_file(mmap=True) + touch of the one-file model")
    t.ratio("load", "load_file, the file read by pread instead of mapped", ld, "Load_LoadFile_llm",
            "Load_LoadFilePread", None, "load_file (through the mapping)")
    t.ratio("load", "load_file against safetensors' load_file (+ touch)", ld, "Load_Safetensors", "Load_LoadFile_llm", None,
            "safetensors.torch.load_file (where importable)")
    t.ratio("load", "save_file (raw + xxh3, durable)", ld, "Save_Floor", "Save_SaveFile", 0.9,
            "write + fsync + rename of the same bytes")
    t.ratio("load", "save_file against safetensors' save_file", ld, "Save_Safetensors", "Save_SaveFile", None,
            "safetensors.torch.save_file (where importable)")
    if many and "Save_SaveFile_many" in ld:
        per = {k: ld[k]["real"] / many * 1e6 for k in ("Save_SaveFile_many", "Save_TorchSave_many",
                                                          "Save_Safetensors_many", "Save_Floor_many") if k in ld}
        peers = ", ".join(f"{who} {per[k]:.1f} us" for who, k in (
            ("the durable write of the bytes", "Save_Floor_many"), ("torch.save", "Save_TorchSave_many"),
            ("safetensors", "Save_Safetensors_many")) if k in per)
        t.fact("load", f"save_file, {tiny}: time a tensor", f"{per['Save_SaveFile_many']:.1f} us",
               "", "", f"in the same run: {peers}")
    t.ratio("load", f"save_file, {tiny}, against torch.save", ld, "Save_TorchSave_many", "Save_SaveFile_many", None,
            "torch.save of the same tensors (not durable: no fsync)")
    t.ratio("load", f"save_file, {tiny}, against safetensors' save_file", ld, "Save_Safetensors_many",
            "Save_SaveFile_many", None, "safetensors.torch.save_file (where importable)")
    cold = f"page cache dropped ({ld_facts.get('cold_by', '?')})"
    t.ratio("load", f"load_file, {cold}", ld, "Cold_Read", "Cold_LoadFile", 0.9, "one plain read of the file, cold")
    t.ratio("load", f"zstd twin against raw, {cold}", ld, "Cold_LoadFile", "Cold_LoadFileZstd", None,
            "raw load_file, cold (the goal, 1.2, is for a disk slower than decoding: the throttled rows below)")
    t.ratio("load", f"load_file(device='cuda'), {cold}", ld, "Cold_Read", "Cold_GpuLoadFile", None,
            "one plain read of the file, cold")
    t.ratio("load", f"zstd twin to cuda against raw to cuda, {cold}", ld, "Cold_GpuLoadFile", "Cold_GpuLoadFileZstd",
            None, "raw load_file(device='cuda'), cold")
    t.ratio("load", f"load_file(device='cuda') against safetensors, {cold}", ld, "Cold_GpuSafetensors",
            "Cold_GpuLoadFile", None, "safetensors load_file(device='cuda:0'), cold")
    pr = ld_facts.get("planes_ratio")
    t.ratio("load", f"byte-planes twin against raw, {cold}", ld, "Cold_LoadFile", "Cold_LoadFilePlanes", None,
            f"raw load_file, cold (planes ratio {pr:.2f}; issue #46: beats raw where the disk reads slower than "
            "all-core decoding)" if pr else "raw load_file, cold")
    rate = ld_facts.get("slow_disk_bytes_per_s")
    slow = f"disk throttled to {rate / 1e6:.0f} MB/s (a cgroup), page cache dropped" if rate else \
        "disk throttled (not run: " + str(ld_facts.get("slow_disk_not_run", "no figures")) + ")"
    t.ratio("load", f"load_file, {slow}", ld, "Slow_Read", "Slow_LoadFile", 0.9,
            "one plain read of the file through the same throttle")
    t.ratio("load", f"zstd twin against raw, {slow}", ld, "Slow_LoadFile", "Slow_LoadFileZstd", 1.2,
            "raw load_file through the same throttle: a disk slower than decoding")
    t.ratio("load", f"byte-planes twin against raw, {slow}", ld, "Slow_LoadFile", "Slow_LoadFilePlanes", None,
            "raw load_file through the same throttle")
    t.ratio("load", "byte-planes twin against raw, hot", ld, "Load_LoadFile_llm", "Load_LoadFilePlanes", None,
            "load_file of the raw file")
    gpu = ld_facts.get("gpu") or "no GPU in this run"
    t.ratio("load", f"load_file(device='cuda') ({gpu})", ld, "Gpu_Pinned", "Gpu_LoadFile", 0.8,
            "one pinned host->device copy of the same bytes")
    t.ratio("load", "load_file(device='cuda') against the host side's ceiling", ld, "Gpu_PreadPinned", "Gpu_LoadFile",
            None, f"{cores} into pinned memory already allocated")
    t.ratio("load", "a rank's share (a quarter of every tensor's rows) to cuda, against the whole model's",
            ld, "Gpu_LoadFile", "Gpu_RankRows", None, "load_file(device='cuda') of the whole model (ideal: 4)")
    t.ratio("load", "a rank's columns (a quarter of every tensor's) to cuda, through the ring", ld,
            "Gpu_RankColumnsOnHost", "Gpu_RankColumns", None,
            "each box read whole on the CPU, then a pageable copy (the way before 2026-12-05)")
    t.ratio("load", "load_file of the zstd twin to cuda", ld, "Gpu_Pinned", "Gpu_LoadFileZstd", None,
            "one pinned host->device copy")
    t.ratio("load", "load_file(device='cuda') against safetensors", ld, "Gpu_Safetensors", "Gpu_LoadFile", 7.0,
            "safetensors load_file(device='cuda:0')")
    t.ratio("load", "load_file(device='cuda') against torch.load + .to", ld, "Gpu_TorchLoad", "Gpu_LoadFile", None,
            "torch.load(mmap=True) + .to('cuda')")
    for m, what in (("small", "4,096 tensors of 64 KiB"), ("many", tiny)):
        t.ratio("load", f"load_file(device='cuda'), {what}, small tensors carved out of device blocks", ld,
                f"Gpu_LoadFileUncarved_{m}", f"Gpu_LoadFile_{m}", None,
                "the same with each tensor allocated and copied on its own")
    t.ratio("load", "cuda ring with the carved tensors made while the first batches decode", ld, "Gpu_LoadFile",
            "Gpu_LoadFileCarveDuringRing", None, "load_file(device='cuda') (made before the ring starts)")
    t.ratio("load", "load_file(device='cuda') from the file's pages, pinned where they lie (no ring)", ld,
            "Gpu_Pinned", "Gpu_LoadFileRegistered", 0.8,
            "one pinned host->device copy (the ring's row: load_file(device='cuda') above)")
    t.ratio("load", f"safe_open(device='cuda').get_tensor loop, {tiny}, against safetensors'", ld,
            "Gpu_SafetensorsGetTensor_many", "Gpu_GetTensor_many", None,
            "safetensors' safe_open(device='cuda:0') get_tensor loop")
    t.ratio("load", f"load_file(device='cuda'), {tiny}, against safetensors", ld, "Gpu_Safetensors_many",
            "Gpu_LoadFile_many", None, "safetensors load_file(device='cuda:0')")
    t.ratio("load", "load_model(device='cuda') into a model on the GPU", ld, "Gpu_Pinned", "Gpu_LoadModel", None,
            "one pinned host->device copy")
    t.ratio("load", "cuda ring with the file opened copy=True (no mapping)", ld, "Gpu_LoadFile", "Gpu_LoadFilePread",
            None, "load_file(device='cuda') (mapped; copies of 64 KiB or more use pread in both)")
    t.ratio("load", "cuda ring without decoding ahead on a worker thread", ld, "Gpu_LoadFile", "Gpu_LoadFileSerial",
            None, "load_file(device='cuda')")
    t.ratio("load", "cuda ring of 3x64M, two batches decoded ahead at once", ld, "Gpu_LoadFile",
            "Gpu_LoadFileAhead2", None, "load_file(device='cuda') (2x64M, one ahead)")
    t.ratio("load", "cuda ring of 4x64M, three batches decoded ahead at once", ld, "Gpu_LoadFile",
            "Gpu_LoadFileAhead3x64M", None, "load_file(device='cuda') (2x64M, one ahead)")
    for ring in ("3x64M", "2x256M", "4x64M", "8x16M", "2x1G"):
        t.ratio("load", f"cuda ring of {ring} instead of 2x64M", ld, "Gpu_LoadFile", f"Gpu_LoadFileRing{ring}", None,
                "load_file(device='cuda')")
    firsts = ld_facts.get("gpu_first_load_s_zt"), ld_facts.get("gpu_first_load_s_st")
    if all(isinstance(x, list) and all(isinstance(v, float) for v in x) for x in firsts):
        zt_s, st_s = min(firsts[0]), min(firsts[1])
        t.fact("load", "first cuda load in a fresh process, against safetensors'",
               f"{st_s / zt_s:.2f} ({zt_s:.2f} s against {st_s:.2f} s, best of 2)", "", "")
    large = ld_facts.get("gpu_first_load_s_zt_2x256M")
    if isinstance(large, list) and large and all(isinstance(v, float) for v in large):
        t.fact("load", "first cuda load in a fresh process, ring of 2 x 256 MiB (the default until 2026-12-04)",
               f"{min(large):.2f} s (best of 2)", note="pins 512 MiB instead of 128 before the first copy")
    if ld_facts.get("gpu_peak_rss_above_start") is not None:
        peak = ld_facts["gpu_peak_rss_above_start"]
        limit = ld_facts["gpu_staging_bytes"] + 64 * MiB
        t.fact("load", "peak host RSS above the start during a cuda load", f"{peak / MiB:.0f} MiB",
               f"<= staging + 64 MiB ({limit / MiB:.0f} MiB)", "met" if peak <= limit else "missed")
        peak = ld_facts.get("gpu_peak_rss_above_start_rank_columns")
        if peak is not None:
            t.fact("load", "peak host RSS above the start during a cuda load of a rank's columns",
                   f"{peak / MiB:.0f} MiB", f"<= staging + 64 MiB ({limit / MiB:.0f} MiB)",
                   "met" if peak <= limit else "missed")

    # ---- the Go module (bench_go.sh) ----
    go_floor = ("a goroutine a core ReadAt of the file into one new make([]byte); each load a process of its own "
                "(a program's first load)")
    t.ratio("go 1.1 GiB model", "Reader.DecodeMany: open + every tensor (32 x 32 MiB, 500 x 256 KiB bf16) "
            "into new Go slices", go, "BenchmarkLoadLLMFloor", "BenchmarkLoadLLMDecodeMany", 0.9, go_floor)
    t.ratio("go 4,096 x 64 KiB", "Reader.DecodeMany: open + every tensor into new Go slices", go,
            "BenchmarkLoadSmallFloor", "BenchmarkLoadSmallDecodeMany", None,
            go_floor + "; the load's open and per-tensor work (~10 ms) included")

    # ---- the Rust crate (bench_rust.sh) ----
    rs_floor = ("a thread a core read_at of the file into one new vec![0; n]; each load a process of its own "
                "(a program's first load)")
    t.ratio("rust 1.1 GiB model", "Reader::decode_many_to_vecs: open + every tensor (32 x 32 MiB, "
            "500 x 256 KiB bf16) into new vectors", rs, "BenchmarkRustLoadLLMFloor", "BenchmarkRustLoadLLMToVecs",
            0.9, rs_floor + " (its 4 KiB pages: the library's vectors of 4 MiB or more are in huge pages)")
    t.ratio("rust 1.1 GiB model", "Reader::decode_many_to_vecs, against reading into huge pages", rs,
            "BenchmarkRustLoadLLMFloorHuge", "BenchmarkRustLoadLLMToVecs", None,
            "the same read into one vec![0; n] advised for huge pages first")
    t.ratio("rust 1.1 GiB model", "decode_many_to_vecs against decode_many into vec![0; n]s", rs,
            "BenchmarkRustLoadLLMByHand", "BenchmarkRustLoadLLMToVecs", None,
            "Reader::decode_many into vectors the caller allocates")
    t.ratio("rust 4,096 x 64 KiB", "Reader::decode_many_to_vecs: open + every tensor into new vectors", rs,
            "BenchmarkRustLoadSmallFloor", "BenchmarkRustLoadSmallToVecs", None,
            rs_floor + "; the load's open and per-tensor work included")
    t.ratio("rust 4,096 x 64 KiB", "decode_many_to_vecs against decode_many into vec![0; n]s", rs,
            "BenchmarkRustLoadSmallByHand", "BenchmarkRustLoadSmallToVecs", None,
            "Reader::decode_many into vectors the caller allocates (calloc: the heap's are zeroed)")

    # ---- the C++ wrapper (bench_cpp.sh) ----
    cpp_floor = ("a thread a core pread of the file into one new buffer (new std::byte[n]); each load a process "
                 "of its own (a program's first load)")
    t.ratio("c++ 1.1 GiB model", "Reader::read_many: open + every tensor (32 x 32 MiB, 500 x 256 KiB bf16) "
            "into new Bytes", cpp, "BenchmarkCppLoadLLMFloor", "BenchmarkCppLoadLLMReadMany", 0.9,
            cpp_floor + " (its 4 KiB pages: read_many's memory is in huge pages)")
    t.ratio("c++ 1.1 GiB model", "Reader::read_many, against reading into huge pages", cpp,
            "BenchmarkCppLoadLLMFloorHuge", "BenchmarkCppLoadLLMReadMany", None,
            "the same read into one Bytes (a mapping advised for huge pages)")
    t.ratio("c++ 1.1 GiB model", "read_many against decode_many into std::vector<std::byte>s", cpp,
            "BenchmarkCppLoadLLMByHand", "BenchmarkCppLoadLLMReadMany", None,
            "Reader::decode_many into vectors the caller sizes (zero-filled first, 4 KiB pages)")
    t.ratio("c++ 4,096 x 64 KiB", "Reader::read_many: open + every tensor into new Bytes", cpp,
            "BenchmarkCppLoadSmallFloor", "BenchmarkCppLoadSmallReadMany", 0.9,
            cpp_floor + "; the load's open and per-tensor work included")
    t.ratio("c++ 4,096 x 64 KiB", "Reader::read_many, against reading into huge pages", cpp,
            "BenchmarkCppLoadSmallFloorHuge", "BenchmarkCppLoadSmallReadMany", None,
            "the same read into one Bytes (a mapping advised for huge pages)")
    t.ratio("c++ 4,096 x 64 KiB", "read_many against decode_many into std::vector<std::byte>s", cpp,
            "BenchmarkCppLoadSmallByHand", "BenchmarkCppLoadSmallReadMany", None,
            "Reader::decode_many into vectors the caller sizes")

    # ---- remote reads (loopback nginx) ----
    t.ratio("remote 1 GiB", f"zt_component_read over HTTP ({gbps(rm.get('Remote_ZtRead'), GiB)}; "
            "4 parallel range requests)", rm, "Remote_Curl", "Remote_ZtRead", 0.9,
            "curl -r of the same range to /dev/null (one connection, no copy)")
    t.ratio("remote 1 GiB", "4 row blocks by zt_dense_slice on 4 threads", rm, "Remote_Curl", "Remote_ZtRead4", None,
            "the same curl")
    model_note = "one GET of the whole file read into fresh memory (http.client readinto, one connection)"
    requests = (rm_facts or {}).get("model_requests")
    if requests:
        model_note += f"; the load: {requests} requests"
    t.ratio("remote 193 MiB model", "File.decode_many over HTTP: open + every tensor (16 x 8 MiB, "
            "1,024 x 64 KiB, 1,000 x 1 KiB bf16) into fresh arrays", rm, "Remote_ReadintoModel",
            "Remote_DecodeManyModel", 0.9, model_note)
    t.ratio("remote 193 MiB model", "ztensor.torch.load_file(url)", rm, "Remote_ReadintoModel",
            "Remote_LoadFileModel", 0.9, "the same GET into fresh memory")
    t.ratio("remote 193 MiB model", "File.decode_many against curl of the file to /dev/null", rm,
            "Remote_CurlModel", "Remote_DecodeManyModel", None, "curl -o /dev/null (no copy, no memory)")
    if rm_facts:
        f = rm_facts
        bound = f["manifest_10k"] + 16 + 64 * 1024
        t.fact("remote", "open a 10k-object file", f"{f['open_10k_requests']} requests, {f['open_10k_bytes']} B",
               "≤ 2, ≤ manifest + footer + 64 KiB",
               "met" if f["open_10k_requests"] <= 2 and f["open_10k_bytes"] <= bound else "missed",
               f"manifest {f['manifest_10k']} B")
        if "decode_10k_requests" in f:
            t.fact("remote", "every tensor of the 10k-object file (16 B each), File.decode_many",
                   f"{f['decode_10k_requests']} requests, {f['decode_10k_bytes']} B, {f['decode_10k_ms']:.0f} ms",
                   "≤ 1 request per 1,024 tensors",
                   "met" if f["decode_10k_requests"] <= -(-10000 // 1024) else "missed",
                   "small raw reads gathered in file order (one request a tensor until 2026-11-29)")
        t.fact("remote", "one 64 KiB tensor of a 1 GiB file", f"{f['small_requests']} request, {f['small_bytes']} B",
               "≤ 64 KiB", "met" if f["small_bytes"] <= 64 * 1024 else "missed", "after the open")
        eighth = GiB // 8
        t.fact("remote", "columns 1/8 of a [16384, 16384] f32 matrix (16384 runs)",
               f"{f['slice_bytes'] / eighth:.3f} × 1/8, {f['slice_requests']} requests",
               "≤ 1/8 + per-run overhead", "met" if f["slice_bytes"] <= eighth + 200 * f["slice_runs"] else "missed",
               f"{(f['slice_bytes'] - eighth) / f['slice_runs']:.0f} B of multipart framing per run")
        if "zstd_stored" in f:
            stored = f["zstd_stored"]
            t.fact("remote", "first 1/8 of the rows of a 256 MiB 1.2 zstd matrix (no frame index)",
                   f"{f['zstd_rows_first_bytes'] / stored:.3f} of the stored bytes, "
                   f"{f['zstd_rows_first_requests']} request(s)",
                   "≤ 1/8 + a frame + 1/16 + 256 KiB",
                   "met" if f["zstd_rows_first_bytes"] <= stored / 8 * (1 + 1 / 16) + (1 << 20) + (256 << 10)
                   else "missed",
                   f"the last 1/8: {f['zstd_rows_last_bytes'] / stored:.3f} in {f['zstd_rows_last_requests']}")

        if "weights_raw_bytes" in f:
            raw = f["weights_raw_bytes"]
            t.fact("remote", "64 MiB of bf16 weights (N(0, 0.02)) loaded whole over HTTP: bytes fetched",
                   f"raw {raw / f['weights_decoded']:.3f}, zstd {f['weights_zstd_bytes'] / raw:.3f}, "
                   f"byte planes {f['weights_planes_bytes'] / raw:.3f} of raw",
                   "planes < zstd", "met" if f["weights_planes_bytes"] < f["weights_zstd_bytes"] else "missed",
                   f"requests {f['weights_raw_requests']} / {f['weights_zstd_requests']} / "
                   f"{f['weights_planes_requests']}; 1/8 of one tensor's rows: "
                   f"{f['weights_raw_rows_bytes']} / {f['weights_zstd_rows_bytes']} / "
                   f"{f['weights_planes_rows_bytes']} B (issue #46)")

    # ---- converting foreign checkpoints ----
    for name, what in (("Zip", "zip format (members viewed in place after their CRC-32)"),
                       ("Legacy", "legacy format (storages viewed in place)")):
        t.ratio("convert 1 GiB", f"PyTorch checkpoint, {what}: zt convert", cv, "BM_Convert_CopyFile",
                f"BM_Convert_Pytorch{name}", 0.8,
                f"durable copy of the same file, 4 MiB pieces ({gbps(cv.get(f'BM_Convert_Pytorch{name}'), 1 << 30)})")

    # ---- memory ----
    if mem:
        def delta(mode):
            m = mem[mode]
            return (m["hwm_kib"] - m["rss_start_kib"]) * 1024

        def anon(mode):
            return (mem[mode]["anon_kib"] - mem["idle"]["anon_kib"]) * 1024

        t.fact("memory", "open a 1 GiB file (1 component)",
               f"+{delta('open') / 1024:.0f} KiB peak, +{anon('open') / 1024:.0f} KiB anonymous", "≈ manifest", "",
               f"manifest {mem['manifest_bytes_1g']} B; the rest is code pages and the 64 KiB fault-around at header and footer")
        t.fact("memory", "… map its component", f"+{delta('map') / 1024:.0f} KiB peak", "no copy", "", "")
        t.fact("memory", "… and touch every byte", f"+{anon('map_touch') / 1024:.0f} KiB anonymous, "
               f"{mem['map_touch']['file_kib'] / 1024:.0f} MiB file-backed", "no copy", "", "pages belong to the page cache")
        ours, floor = delta("open_many"), delta("cbor_load_many")
        manifest = mem["manifest_bytes_100k"]
        t.fact("memory", "open a 100k-object file", f"{floor / ours:.2f}: +{ours / MiB:.0f} MiB peak = "
               f"{ours / manifest:.1f} × manifest", "≥ 1.0", "met" if ours <= floor else "missed",
               f"pread + cbor_load + walk of the same manifest: +{floor / MiB:.0f} MiB peak = "
               f"{floor / manifest:.1f} × manifest ({manifest / MiB:.1f} MiB)")
        bound = 1 * MiB * 2
        for mode, label in (("write_raw", "raw"), ("write_zstd", "zstd, 2 threads, 1 MiB frames")):
            d = delta(mode)
            t.fact("memory", f"stream-write a 1 GiB component, {label}", f"+{d / MiB:.1f} MiB peak = "
                   f"{d / bound:.1f} × frame × threads", "bounded", "met" if d < 16 * bound else "missed",
                   "1 MiB pieces through zt_writer_write")
        t.fact("memory", "write a 100k-object file", f"+{delta('write_many') / MiB:.0f} MiB peak", "", "",
               "the writer keeps the manifest model until finish")

    # ---- output ----
    lines = []
    if machine:
        lines += [f"Machine: {machine.get('cpu', '?')}, {machine.get('nproc', '?')} cores, kernel "
                  f"{machine.get('kernel', '?')}, {machine.get('mem', '?')} RAM; load average at start "
                  f"{machine.get('load_start', '?')}, at end {machine.get('load_end', '?')} "
                  f"(shared with other jobs); {machine.get('date', '')}; "
                  f"{machine.get('reps', '?')} repetitions (11 for the write path).", ""]
    loads = []
    for prog in ("bench_pages", "bench_memory", "bench_open", "bench_raw", "bench_zstd", "bench_write"):
        path = os.path.join(out_dir, f"load-{prog}.txt")
        if os.path.exists(path):
            with open(path) as f:
                loads.append(f"{prog} {f.read().strip()}")
    if loads:
        lines += ["Load average (1, 5, 15 min) around each program: " + "; ".join(loads) + ".", ""]
    lines.append(t.markdown())
    lines.append("")
    lines.append("Goals missed in this run: " + ("; ".join(t.missed) if t.missed else "none") + ".")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if update:
        with open(update) as f:
            doc = f.read()
        begin, end = "<!-- report:begin -->", "<!-- report:end -->"
        if begin in doc and end in doc:
            doc = doc[: doc.index(begin) + len(begin)] + "\n" + text + doc[doc.index(end):]
            with open(update, "w") as f:
                f.write(doc)


if __name__ == "__main__":
    main()
