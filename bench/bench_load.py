#!/usr/bin/python3
"""Loading a model, every figure against a floor measured in the same run.

Models (bf16, as models are made): "llm" has the shape of the issue's 4.8 GB
model scaled by ZT_LOAD_SCALE (default 0.25 here: 8 tensors of 128 MiB and
500 of 256 KiB, 1.06 GiB; 1 gives 32 and 2,000), written raw and zstd;
"small" is 4,096 tensors of 64 KiB (256 MiB, raw); "many" is 20,000
tensors of 1 KiB (20 MiB, raw: what the library and Python do per tensor,
against the peers' per-tensor work). Hot page cache unless said. Rows
(Google Benchmark's JSON, one "iteration" per repetition):

  CPU, hot
  Load_Pread_<m>         floor: N threads (N = cores) pread the file's tensor
                         bytes into fresh memory (one torch.empty buffer)
  Load_PreadHuge_<m>     the same into memory advised for huge pages (as
                         load_file's tensors and numpy's arrays are)
  Load_CopyFromMap_llm   N threads copy the same bytes out of a fresh
                         mapping of the file into huge-page memory (is
                         pread, which the library's copies use, the faster
                         way here?)
  Load_LoadFile_<m>      ztensor.torch.load_file (copies, one zt_decode_ranges)
  Load_LoadFilePread     load_file with the file read by pread, not mapped
  Load_LoadFileZstd      load_file of the zstd twin
  Load_Mmap_<m>          load_file(mmap=True) + touching one byte per page
  Load_Pread_many, Load_LoadFile_many, Load_Mmap_many   the same for "many"
                         (its tensors lie back to back: the floor reads them
                         as one range)
  Load_PreadRank         floor: N threads pread rank 1 of 4's share of "llm"
                         (a quarter of every tensor's rows) into fresh memory
  Load_RankRows          load_file(slices=) of that share (whole rows: one
                         range of each tensor)
  Load_RankColumns       load_file(slices=) of a quarter of every tensor's
                         columns (as many bytes, a run a row)
  Load_LoadFileShards    "llm" as a v2 model in 4 shard files, load_file
  Load_LoadFileIndex     "llm" as a safetensors index of 4 files (what
                         checkpoints on the Hugging Face hub are), load_file
                         with allow_foreign=True
  Load_MmapShards, Load_MmapIndex   the same two, load_file(mmap=True) +
                         touching one byte per page (each tensor mapped in
                         its shard file)
  Load_TorchLoad_many    torch.load of the "many" tensors (torch.save'd)
  Load_Safetensors_many  safetensors.torch.load_file of them + touch
  Load_GetTensor_<m>     a loop of safe_open(...).get_tensor(name) over "many"
                         or "llm" (as transformers loads a checkpoint)
  Load_GetSlice_many     the same with get_slice(name)[...]
  Load_GetTensorMapped_many   the same loop mapped (safe_open(..., mmap=True))
  Load_GetTensorMappedReversed_many   that loop over the names from the last
                         + touch, as safetensors' is
  Load_SafetensorsGetTensor_<m>   safetensors' safe_open get_tensor loop
                         + touch, where importable
  Load_LoadFileUncarved  load_file of "llm" with its 256 KiB tensors each
                         allocated on its own, none carved out of a block
  Load_LoadFileUncarved_small   load_file of "small" with its 64 KiB
                         tensors each allocated on its own (the CPU carved
                         from 128 KiB until 2026-12-06; from 4 KiB now)
  Load_LoadFileBlocks4k  load_file of "llm" with the blocks its small
                         tensors are carved out of in 4 KiB pages (the way
                         of 2026-12-05; advised for huge pages by default)
  Load_LoadFileCarveFirst   load_file of "llm" with its carved tensors made
                         before the decode starts (the way until 2026-12-04),
                         not on this thread while a worker decodes
  Load_DecodeMany        File.decode_many (numpy, the same bytes)
  Load_DecodeManyCopy    the same with the file opened copy=True (pread, no
                         mapping: which is faster on many cores is open)
  Load_TorchLoad         torch.load(mmap=True) + touch (torch >= 2.1; else
                         plain torch.load) of the same tensors
  Load_Safetensors       safetensors.torch.load_file + touch (it maps the
                         file: untouched, nothing would be read)
  Load_ForeignPt         load_file(allow_foreign=True) of the torch.save file
                         (members viewed in place, CRC-32s checked)
  Load_ForeignPtMmap     the same with mmap=True, + touch
  Load_NpzDeflated       decode_many of an np.savez_compressed file of 1,024
                         of the small model's tensors (deflated members)
  Load_NumpyNpzDeflated  dict(numpy.load(...)) of the same file
  First (each in a Python process of its own, as a user's program loads:
  every allocation fresh memory; page cache hot; imports not timed)
  First_Pread_<m>        floor: N threads pread the tensor bytes into fresh
                         memory (Load_Pread_<m> in a fresh process)
  First_LoadFile_<m>     load_file
  First_LoadFileUncarved_small   the same with its 64 KiB tensors each
                         allocated on its own (the way until 2026-12-06)
  First_LoadFileBlocks4k_llm   load_file of "llm" with the blocks its
                         small tensors are carved out of in 4 KiB pages
                         (the way of 2026-12-05)
  First_TorchLoad        torch.load(mmap=True) + touch of "llm" (plain
                         torch.load before torch 2.1)
  First_Safetensors      safetensors.torch.load_file + touch of "llm"
  Saving
  Save_Floor             writev + fsync + rename of the same bytes
  Save_SaveFile          ztensor.torch.save_file (raw, xxh3, durable)
  Save_Safetensors       safetensors.torch.save_file, where importable
  Save_Floor_many, Save_SaveFile_many, Save_TorchSave_many, Save_Safetensors_many
                         the same for "many" (torch.save: not durable)
  Cold (page cache dropped before each: /proc/sys/vm/drop_caches as root,
  else posix_fadvise DONTNEED on the file)
  Cold_Read              floor: one plain sequential read of the file
  Cold_LoadFile          load_file, raw
  Cold_LoadFileZstd      load_file of the zstd twin
  Cold_GpuLoadFile, Cold_GpuLoadFileZstd, Cold_GpuSafetensors   (with a GPU)
                         load_file(device="cuda") of the raw file and of its
                         zstd twin, safetensors' load_file(device="cuda:0")
  Slow_Read, Slow_LoadFile, Slow_LoadFileZstd, Slow_LoadFilePlanes
                         the cold rows with this process's reads from the
                         disk limited to ZT_SLOW_DISK_MBPS (default 500 MB/s;
                         0: not run) by a cgroup of its own (root, a block
                         device: else "not run", the reason in the facts)
  GPU (when torch.cuda.is_available())
  Gpu_Pinned             floor: one pinned host->device copy of the bytes
  Gpu_Pageable           one pageable host->device copy
  Gpu_PreadPinned        N threads pread the file's tensor bytes into pinned
                         memory already allocated (the host side's ceiling)
  Gpu_LoadFile           load_file(device="cuda") (its default ring, 2 x 64 MiB)
  Gpu_LoadFileZstd       load_file of the zstd twin to cuda
  Gpu_RankRows           load_file(device="cuda", slices=) of rank 1 of 4's rows
  Gpu_RankColumns        the same for a quarter of every tensor's columns
                         (boxes, through the ring a piece a buffer)
  Gpu_RankColumnsOnHost  the same as it was: each box read whole on the
                         CPU, then a pageable copy
  Gpu_LoadFilePread      the same ring with the file opened copy=True (no
                         mapping: raw reads are pread either way; zstd
                         frames could not be shared out without one)
  Gpu_LoadFileSerial     the ring with no decode on a worker thread while
                         the batch before is copied (what it was)
  Gpu_LoadFileRing3x64M  3 x 64 MiB, one ahead: the worker that decodes the
                         batches back to back may run two ahead of the
                         copies, so a slow copy or decode does not stall
                         the other
  Gpu_LoadFileRing2x256M, Gpu_LoadFileRing4x64M, Gpu_LoadFileRing8x16M,
  Gpu_LoadFileRing2x1G   other ring shapes (2 x 256 MiB: the default until 2026-12-04)
  Gpu_LoadFileAhead2     3 x 64 MiB, two batches decoded ahead at once
  Gpu_LoadFileAhead3x64M 4 x 64 MiB, three ahead
  Gpu_Safetensors        safetensors load_file(device="cuda:0")
  Gpu_LoadFile_small, Gpu_LoadFile_many   "small" and "many" to cuda
  Gpu_LoadFileUncarved_small, Gpu_LoadFileUncarved_many   the same with each
                         tensor allocated and copied on its own, none carved
                         out of a device block (ztensor._blocks)
  Gpu_Safetensors_many   safetensors load_file of "many" to cuda
  Gpu_GetTensor_many, Gpu_SafetensorsGetTensor_many   a get_tensor loop over
                         "many" with safe_open(device="cuda"): ztensor's, the peer's
  Gpu_LoadFileCarveDuringRing   Gpu_LoadFile with the carved tensors made
                         while the ring's first batches decode
  Gpu_LoadFileRegistered   Gpu_LoadFile with raw tensors copied from the
                         file's pages, pinned where they lie a chunk at a
                         time (ztensor._registered), not through the ring
  Gpu_TorchLoad          torch.load(mmap=True) + .to("cuda")
  and, as facts: peak host RSS above the process's before a GPU load (of
  the whole model, and of a rank's columns), and
  the first load in a fresh process (ztensor with its default ring and with
  2 x 256 MiB, safetensors), twice each.

usage: bench_load.py OUT.json [REPETITIONS]   (ZT_BENCH_DIR: where files go;
ZT_LOAD_SKIP: comma-separated row-name prefixes not to run, e.g. Save;
ZT_LOAD_ONLY: the prefixes of the only rows to run)
A row that raises is recorded under facts["failed"] and the others go on.
Needs ZTENSOR_LIBRARY (or an installed library) and PYTHONPATH=bindings/python.
"""

import json
import os
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import torch

import ztensor
from ztensor import _block_places, _staging
from ztensor import torch as zt

try:
    import safetensors
    import safetensors.torch as st
except ImportError:
    safetensors = st = None

MiB = 1 << 20


def llm_model(scale):
    big, small = max(1, round(32 * scale)), max(1, round(2000 * scale))
    g = torch.Generator().manual_seed(0)
    # Real weights compress (bf16 exponents repeat): about 1.28 as the model.
    t = {f"layers.{i}.mlp.weight": torch.randn(8192, 8192, generator=g).to(torch.bfloat16) for i in range(big)}
    t.update({f"layers.{i}.norm.weight": torch.randn(128, 1024, generator=g).to(torch.bfloat16)
              for i in range(small)})
    return t


def with_attribute(module, name, value, fn):
    """fn() with module.name set to value (restored after)."""
    kept = getattr(module, name)
    setattr(module, name, value)
    try:
        return fn()
    finally:
        setattr(module, name, kept)


def uncarved(fn):
    """fn() with every tensor of a load allocated on its own, none carved
    out of a shared block (ztensor._block_places): what loads did until
    2026-12-04."""
    return with_attribute(_block_places, "PACK_BELOW", 0, fn)


def small_model():
    g = torch.Generator().manual_seed(1)
    return {f"t.{i}": torch.randn(32, 1024, generator=g).to(torch.bfloat16) for i in range(4096)}


def many_model():
    """20,000 bf16 tensors of 1 KiB: a load of it is all per-tensor work."""
    g = torch.Generator().manual_seed(2)
    return {f"blocks.{i // 8}.p{i % 8}": torch.randn(512, generator=g).to(torch.bfloat16) for i in range(20000)}


def merged(extents):
    """Extents with the ones that follow each other back to back joined."""
    out = []
    for off, n in sorted(extents):
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((off, n))
    return out


def module_of(state, device="cpu"):
    """A module whose parameters have the names, shapes and dtypes of
    `state` (values not set): what a model built before loading is."""
    root = torch.nn.Module()
    for name, t in state.items():
        *path, leaf = name.split(".")
        m = root
        for part in path:
            if not hasattr(m, part):
                m.add_module(part, torch.nn.Module())
            m = getattr(m, part)
        m.register_parameter(leaf, torch.nn.Parameter(torch.empty_like(t, device=device), requires_grad=False))
    return root


def nbytes(state):
    return sum(t.numel() * t.element_size() for t in state.values())


def one_at_a_time(opener, path, sliced=False, device="cpu", reverse=False, **options):
    """Every tensor of the file through opener(path, "pt", device=device,
    **options) (ztensor.torch's or safetensors' safe_open), one
    get_tensor(name) (or, sliced, get_slice(name)[...]) a name, in the
    file's order (or, reverse, from its last name)."""
    with opener(path, "pt", device=device, **options) as f:
        names = list(f.keys())[::-1] if reverse else f.keys()
        if sliced:
            return {k: f.get_slice(k)[...] for k in names}
        return {k: f.get_tensor(k) for k in names}


def synced(result):
    """`result`, once the current CUDA device's work is done."""
    torch.cuda.synchronize()
    return result


def touch(tensors):
    """Reads one byte of every page (what using mapped weights costs)."""
    s = 0
    for t in tensors.values():
        b = t.reshape(-1).view(torch.uint8)
        if b.numel():
            s += int(b[::4096].sum())
    return s


def write_safetensors_index(state, folder, files):
    """`state` as a Hugging Face sharded checkpoint in `folder`: `files`
    safetensors files (every files-th tensor in each) and
    model.safetensors.index.json; returns the index's path."""
    os.makedirs(folder, exist_ok=True)
    names, weight_map = list(state), {}
    for k in range(files):
        file = f"model-{k + 1:05d}-of-{files:05d}.safetensors"
        chosen, header, at = names[k::files], {}, 0
        for name in chosen:
            t = state[name]
            n = t.numel() * t.element_size()
            header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [at, at + n]}
            weight_map[name] = file
            at += n
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(folder, file), "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text)
            for name in chosen:
                f.write(memoryview(state[name].contiguous().view(torch.uint8).reshape(-1).numpy()))
    index = os.path.join(folder, "model.safetensors.index.json")
    with open(index, "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return index


def rank_share(state, path, world, rank):
    """Rank `rank` of `world`'s share of every tensor's rows: the slices for
    load_file, and the file extents they are (the floor's reads)."""
    with ztensor.open(path) as f:
        objects = f.manifest["objects"]
        at = {n: objects[n]["components"]["data"] for n in objects}
    slices, extents = {}, []
    for name, t in state.items():
        rows = t.shape[0] // world
        slices[name] = (slice(rank * rows, (rank + 1) * rows),)
        row_bytes = at[name]["length"] // t.shape[0]
        extents.append((at[name]["offset"] + rank * rows * row_bytes, rows * row_bytes))
    return slices, extents


def warm_folder(folder):
    for name in sorted(os.listdir(folder)):
        warm(os.path.join(folder, name))


def places(path):
    with ztensor.open(path) as f:
        m = f.manifest["objects"]
        return [(c["offset"], c["length"]) for c in (m[n]["components"]["data"] for n in m)]


def copy_jobs(extents):
    """(file offset, buffer offset, bytes) pieces of at most 64 MiB that
    lay the extents back to back in one buffer."""
    jobs, at = [], 0
    for off, n in extents:
        for k in range(0, n, 64 * MiB):
            jobs.append((off + k, at + k, min(64 * MiB, n - k)))
        at += n
    return jobs


def on_threads(threads, jobs, copy):
    """copy(job) for every job, the jobs dealt out to N threads."""
    def work(i):
        for job in jobs[i::threads]:
            copy(*job)
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for p in pool:
        p.start()
    for p in pool:
        p.join()


def pread_floor(path, extents, threads, huge=False, into=None):
    """N threads pread the extents into one fresh buffer (huge: with
    transparent huge pages asked for, as load_file and numpy do), or into
    the buffer `into` (memory already there: pinned, say)."""
    total = sum(n for _, n in extents)
    out = torch.empty(total, dtype=torch.uint8) if into is None else into
    if huge:
        zt._advise_huge_pages(out)
    view = memoryview(out.numpy())
    fd = os.open(path, os.O_RDONLY)
    try:
        def copy(off, dst, m):
            done = 0
            while done < m:
                got = os.preadv(fd, [view[dst + done:dst + m]], off + done)
                if got <= 0:
                    raise SystemExit("short read")
                done += got
        on_threads(threads, copy_jobs(extents), copy)
    finally:
        os.close(fd)
    return out


def mmap_floor(path, extents, threads):
    """What copying from the file's mapping would give: N threads copy the
    extents from a fresh read-only mapping of the file into one fresh
    buffer advised for huge pages (numpy's copy releases the GIL). Against
    Load_PreadHuge it says whether pread, which the library uses for copies
    of 64 KiB or more, or the mapping is faster on this machine."""
    import mmap
    total = sum(n for _, n in extents)
    out = torch.empty(total, dtype=torch.uint8)
    zt._advise_huge_pages(out)
    dst = out.numpy()
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        src = np.frombuffer(m, dtype=np.uint8)

        def copy(off, d, n):
            dst[d:d + n] = src[off:off + n]
        on_threads(threads, copy_jobs(extents), copy)
        src = None  # the mapping closes only with no view of it left (copy's too)
    finally:
        m.close()
    return out


def drop_cache(path):
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return "drop_caches"
    except OSError:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return "fadvise"


def disk_of(path):
    """The "major:minor" of the whole disk that holds `path` (a partition's
    disk); OSError where it is no block device (tmpfs, overlay, btrfs)."""
    st = os.stat(path)
    block = os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if os.path.exists(os.path.join(block, "partition")):
        block = os.path.dirname(block)
    with open(os.path.join(block, "dev")) as f:
        return f.read().strip()


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


class SlowDisk:
    """This process's reads from the disk that holds a file, limited to
    `rate` bytes a second while inside `with`: a disk slower than decoding,
    on a machine whose own disk is not (issue #41's zstd goal is for such a
    disk). A cgroup of its own (root only): v1's blkio.throttle.read_bps_device
    or v2's io.max. The constructor raises OSError where it cannot be made."""

    def __init__(self, path, rate):
        self.rate = rate
        device = disk_of(path)
        homes = dict(line.rstrip("\n").split(":", 2)[1:] for line in open("/proc/self/cgroup"))
        name = f"ztensor-bench-{os.getpid()}"
        if os.path.isdir("/sys/fs/cgroup/blkio") and "blkio" in homes:
            root = "/sys/fs/cgroup/blkio"
            self.home = root + homes["blkio"]
            self.group = os.path.join(root, name)
            os.mkdir(self.group)
            limit = (os.path.join(self.group, "blkio.throttle.read_bps_device"), f"{device} {rate}\n")
        else:
            root = next(r for r in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
                        if os.path.exists(os.path.join(r, "cgroup.controllers")))
            self.home = root + homes[""]
            write_text(os.path.join(root, "cgroup.subtree_control"), "+io\n")
            self.group = os.path.join(root, name)
            os.mkdir(self.group)
            limit = (os.path.join(self.group, "io.max"), f"{device} rbps={rate}\n")
        try:
            write_text(*limit)
        except OSError:
            self.close()
            raise

    def __enter__(self):
        write_text(os.path.join(self.group, "cgroup.procs"), f"{os.getpid()}\n")

    def __exit__(self, *exc):
        # Staying throttled would slow every row after: stop the run instead.
        try:
            write_text(os.path.join(self.home, "cgroup.procs"), f"{os.getpid()}\n")
        except OSError as e:
            raise SystemExit(f"cannot leave the throttled cgroup {self.group}: {e}")

    def run(self, fn):
        with self:
            return fn()

    def close(self):
        try:
            os.rmdir(self.group)
        except OSError:
            pass


def warm(path):
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(64 * MiB)
        while f.readinto(buf):
            pass


def plain_read(path):
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(64 * MiB)
        while f.readinto(buf):
            pass


def tensor_bytes(state):
    """The tensors' bytes as byte memoryviews of their own memory."""
    return [memoryview(t.reshape(-1).view(torch.uint8).numpy()) for t in state.values()]


def durable_write(buffers, path):
    """The floor of a save: the bytes from where they lie to the disk, durably
    (writev, up to 1,024 buffers a call, a short write resumed; fsync,
    rename): no Python work a tensor, which a model of many small tensors
    would otherwise measure."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        fd = f.fileno()
        for k in range(0, len(buffers), 1024):
            chunk = buffers[k:k + 1024]
            while chunk:
                n = os.writev(fd, chunk)
                while chunk and n >= len(chunk[0]):
                    n -= len(chunk[0])
                    chunk = chunk[1:]
                if chunk and n:
                    chunk = [chunk[0][n:]] + chunk[1:]
        os.fsync(fd)
    os.rename(tmp, path)


class Timed(float):
    """Seconds a row's function measured itself (in a process of its own):
    record() takes them instead of the call's own time. cpu: the CPU
    seconds of that process over the same span."""

    def __new__(cls, real, cpu):
        t = super().__new__(cls, real)
        t.cpu = cpu
        return t


def in_fresh_process(code, setup="", cuda=False, imports=True):
    """Timed: what the statement `code` takes in a fresh Python that has
    imported torch (with imports, also ztensor.torch as zt and this file
    as b) and run `setup`, with CUDA started first when asked: a load as a
    user's program makes it, its allocations all fresh memory.
    RuntimeError with the process's last words where it fails."""
    import subprocess
    sync = "torch.cuda.synchronize()" if cuda else "None"
    prog = (f"import sys, time; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import torch\n"
            + ("from ztensor import torch as zt; import bench_load as b\n" if imports else "")
            + ("torch.empty(1, device='cuda'); torch.cuda.synchronize()\n" if cuda else "")
            + f"{setup}\n"
            f"t, c = time.perf_counter(), time.process_time()\n{code}\n{sync}\n"
            "print(time.perf_counter() - t, time.process_time() - c)")
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-300:])
    real, cpu = r.stdout.split()[-2:]
    return Timed(float(real), float(cpu))


def device_segments():
    """How many segments torch's CUDA caching allocator has taken from the
    driver so far (each a cudaMalloc)."""
    return torch.cuda.memory_stats().get("segment.all.allocated", 0)


def first_load(code):
    """Seconds `code` takes in a fresh Python with CUDA up, or the error."""
    try:
        return float(in_fresh_process(code, cuda=True, imports=False))
    except RuntimeError as e:
        return str(e)


def peak_rss_during(fn):
    """(peak RSS above the RSS before, in bytes) of fn(): VmHWM reset first."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5\n")
    except OSError:
        return None

    def field(name):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
        return 0
    before = field("VmRSS:")
    result = fn()
    peak = field("VmHWM:")
    del result
    return peak - before


def main():
    out_path = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    scale = float(os.environ.get("ZT_LOAD_SCALE", "0.25"))
    directory = os.environ.get("ZT_BENCH_DIR") or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    threads = os.cpu_count() or 1
    gpu = torch.cuda.is_available()
    torch_mmap = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 1)
    base = os.path.join(directory, f"bench-load-{os.getpid()}")
    paths = {}
    slow_disk = None
    runs, facts = [], {}

    skip = tuple(x for x in os.environ.get("ZT_LOAD_SKIP", "").split(",") if x)
    only = tuple(x for x in os.environ.get("ZT_LOAD_ONLY", "").split(",") if x)

    def row_runs(name):
        return not (skip and name.startswith(skip)) and not (only and not name.startswith(only))

    def record(name, fn, rep, before=None):
        if not row_runs(name):
            return
        if before:
            before()
        if gpu:
            torch.cuda.synchronize()
            segments = device_segments()
        start = time.perf_counter()
        start_cpu = time.process_time()
        try:
            result = fn()
        except Exception as e:  # one row's failure must not lose the others' figures
            facts.setdefault("failed", {})[name] = f"{type(e).__name__}: {e}"
            print(f"{name:24s} FAILED {type(e).__name__}: {e}", file=sys.stderr)
            return
        if gpu:
            torch.cuda.synchronize()
        real, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        # Device memory the caching allocator had to get (cudaMalloc) inside
        # the timed span: a cost the row's later runs, or a script that
        # repeats one load, do not pay.
        grown = device_segments() - segments if gpu else 0
        if isinstance(result, Timed):  # measured in a process of its own
            real, cpu = float(result), result.cpu
        elif grown:
            facts.setdefault("gpu_new_segments", {}).setdefault(name, []).append(grown)
        del result
        runs.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps,
                     "repetition_index": rep, "iterations": 1, "real_time": real * 1e3,
                     "cpu_time": cpu * 1e3, "time_unit": "ms"})
        print(f"{name:24s} {real * 1e3:9.1f} ms", file=sys.stderr)

    try:
        models = {"llm": llm_model(scale), "small": small_model(), "many": many_model()}
        for m, state in models.items():
            paths[m] = base + f"-{m}.zt"
            zt.save_file(state, paths[m])
        paths["zstd"] = base + "-llm-zstd.zt"
        zt.save_file(models["llm"], paths["zstd"], encoding="zstd")
        # The byte-planes twin (v2, libztensor.byte_planes/1: issue #46).
        paths["planes"] = base + "-llm-planes.zt"
        zt.save_file(models["llm"], paths["planes"], encoding="planes", file_version=2, canonical=False)
        paths["pt"] = base + "-llm.pt"
        torch.save(models["llm"], paths["pt"])
        if st:
            paths["st"] = base + "-llm.safetensors"
            st.save_file(models["llm"], paths["st"])
        got = zt.load_file(paths["zstd"])
        if any(not torch.equal(got[k], models["llm"][k]) for k in models["llm"]):
            raise SystemExit("load_file returned other values than were saved")
        del got
        extents = {m: places(paths[m]) for m in models}
        extents["many"] = merged(extents["many"])  # else the floor is 20,000 Python calls
        # np.savez_compressed of 1,024 of the small model's tensors (64 MiB;
        # numpy has no bf16: their bytes as int16): deflated members.
        if row_runs("Load_NpzDeflated") or row_runs("Load_NumpyNpzDeflated"):
            paths["npz"] = base + "-small-deflated.npz"
            np.savez_compressed(paths["npz"], **{k: v.view(torch.int16).numpy()
                                                 for k, v in list(models["small"].items())[:1024]})
        paths["many_pt"] = base + "-many.pt"
        torch.save(models["many"], paths["many_pt"])
        if st:
            paths["many_st"] = base + "-many.safetensors"
            st.save_file(models["many"], paths["many_st"])
        total = nbytes(models["llm"])
        facts.update(bytes=total, small_bytes=nbytes(models["small"]), many_bytes=nbytes(models["many"]),
                     many_tensors=len(models["many"]), threads=threads,
                     zstd_ratio=os.path.getsize(paths["llm"]) / os.path.getsize(paths["zstd"]),
                     planes_ratio=os.path.getsize(paths["llm"]) / os.path.getsize(paths["planes"]),
                     torch=torch.__version__, ztensor=ztensor.library_version(),
                     safetensors=st is not None, gpu=torch.cuda.get_device_name() if gpu else None)

        def torch_load():
            if torch_mmap:
                t = torch.load(paths["pt"], mmap=True)
                touch(t)
                return t
            return torch.load(paths["pt"])

        hot = {}
        for m in models:
            if m == "many":  # its rows are the per-tensor ones below
                continue
            hot[f"Load_Pread_{m}"] = (lambda m=m: pread_floor(paths[m], extents[m], threads), paths[m])
            hot[f"Load_PreadHuge_{m}"] = (lambda m=m: pread_floor(paths[m], extents[m], threads, True),
                                          paths[m])
            hot[f"Load_LoadFile_{m}"] = (lambda m=m: zt.load_file(paths[m]), paths[m])
            hot[f"Load_Mmap_{m}"] = (lambda m=m: touch(zt.load_file(paths[m], mmap=True)), paths[m])
        hot["Load_Pread_many"] = (lambda: pread_floor(paths["many"], extents["many"], threads), paths["many"])
        hot["Load_LoadFile_many"] = (lambda: zt.load_file(paths["many"]), paths["many"])
        hot["Load_Mmap_many"] = (lambda: touch(zt.load_file(paths["many"], mmap=True)), paths["many"])
        hot["Load_TorchLoad_many"] = (lambda: torch.load(paths["many_pt"]), paths["many_pt"])
        if st:
            hot["Load_Safetensors_many"] = (lambda: touch(st.load_file(paths["many_st"])), paths["many_st"])
        # A tensor at a time, as transformers loads a checkpoint (a loop of
        # safe_open(...).get_tensor, or get_slice(name)[...]).
        hot["Load_GetTensor_many"] = (lambda: one_at_a_time(zt.safe_open, paths["many"]), paths["many"])
        hot["Load_GetSlice_many"] = (lambda: one_at_a_time(zt.safe_open, paths["many"], True), paths["many"])
        hot["Load_GetTensorMapped_many"] = (
            lambda: touch(one_at_a_time(zt.safe_open, paths["many"], mmap=True)), paths["many"])
        hot["Load_GetTensorMappedReversed_many"] = (
            lambda: touch(one_at_a_time(zt.safe_open, paths["many"], reverse=True, mmap=True)), paths["many"])
        hot["Load_GetTensor_llm"] = (lambda: one_at_a_time(zt.safe_open, paths["llm"]), paths["llm"])
        if st:
            hot["Load_SafetensorsGetTensor_many"] = (
                lambda: touch(one_at_a_time(safetensors.safe_open, paths["many_st"])), paths["many_st"])
            hot["Load_SafetensorsGetTensor_llm"] = (
                lambda: touch(one_at_a_time(safetensors.safe_open, paths["st"])), paths["st"])
        # The 256 KiB tensors each allocated on its own (an mmap apiece)
        # instead of carved out of blocks.
        hot["Load_LoadFileUncarved"] = (lambda: uncarved(lambda: zt.load_file(paths["llm"])), paths["llm"])
        # The small model's 64 KiB tensors each allocated on its own (the
        # CPU carved from 128 KiB until 2026-12-06).
        hot["Load_LoadFileUncarved_small"] = (lambda: with_attribute(
            _block_places, "CPU_PACK_FROM", 128 << 10, lambda: zt.load_file(paths["small"])), paths["small"])
        # Its carved tensors' blocks in 4 KiB pages (advised for huge pages
        # by default).
        hot["Load_LoadFileBlocks4k"] = (lambda: with_attribute(
            _block_places, "BLOCK_HUGE_PAGES", False, lambda: zt.load_file(paths["llm"])), paths["llm"])
        # Its carved tensors made before the decode starts, not while it runs.
        hot["Load_LoadFileCarveFirst"] = (lambda: with_attribute(
            zt, "_CARVE_DURING_DECODE_FROM", float("inf"), lambda: zt.load_file(paths["llm"])), paths["llm"])
        hot["Load_CopyFromMap_llm"] = (lambda: mmap_floor(paths["llm"], extents["llm"], threads), paths["llm"])
        # A tensor-parallel rank's share (rank 1 of 4), and the same model as
        # the sharded checkpoints models come as.
        rows, rank_extents = rank_share(models["llm"], paths["llm"], 4, 1)
        columns = {name: (slice(None), slice(t.shape[1] // 4, t.shape[1] // 2)) for name, t in models["llm"].items()}
        hot["Load_PreadRank"] = (lambda: pread_floor(paths["llm"], rank_extents, threads), paths["llm"])
        hot["Load_RankRows"] = (lambda: zt.load_file(paths["llm"], slices=rows), paths["llm"])
        hot["Load_RankColumns"] = (lambda: zt.load_file(paths["llm"], slices=columns), paths["llm"])
        shards = base + "-shards"  # the copies written only where their rows run
        if row_runs("Load_LoadFileShards") or row_runs("Load_MmapShards"):
            os.makedirs(os.path.join(shards, "v2"))
            paths["shards_v2"] = os.path.join(shards, "v2", "model.zt")
            zt.save_file(models["llm"], paths["shards_v2"], file_version=2, shard_bytes=total // 4 + 1)
            hot["Load_LoadFileShards"] = (lambda: zt.load_file(paths["shards_v2"]),
                                          os.path.dirname(paths["shards_v2"]))
            hot["Load_MmapShards"] = (lambda: touch(zt.load_file(paths["shards_v2"], mmap=True)),
                                      os.path.dirname(paths["shards_v2"]))
        if row_runs("Load_LoadFileIndex") or row_runs("Load_MmapIndex"):
            paths["index"] = write_safetensors_index(models["llm"], os.path.join(shards, "hub"), 4)
            hot["Load_LoadFileIndex"] = (lambda: zt.load_file(paths["index"], allow_foreign=True),
                                         os.path.dirname(paths["index"]))
            hot["Load_MmapIndex"] = (lambda: touch(zt.load_file(paths["index"], allow_foreign=True, mmap=True)),
                                     os.path.dirname(paths["index"]))
        # Does reading with pread instead of through the mapping pay on the CPU?
        hot["Load_LoadFilePread"] = (lambda: zt._load_all(zt._File(paths["llm"], copy=True), "cpu"),
                                     paths["llm"])
        hot["Load_LoadFileZstd"] = (lambda: zt.load_file(paths["zstd"]), paths["zstd"])
        hot["Load_LoadFilePlanes"] = (lambda: zt.load_file(paths["planes"]), paths["planes"])
        hot["Load_DecodeMany"] = (lambda: ztensor.open(paths["llm"]).decode_many(), paths["llm"])
        hot["Load_DecodeManyCopy"] = (lambda: ztensor.open(paths["llm"], copy=True).decode_many(), paths["llm"])
        # Into a model built first: load_model decodes into its parameters;
        # the usual way loads a state dict, then copies it in.
        model = module_of(models["llm"])
        hot["Load_LoadModel"] = (lambda: zt.load_model(model, paths["llm"]), paths["llm"])
        hot["Load_LoadStateDict"] = (lambda: model.load_state_dict(zt.load_file(paths["llm"])), paths["llm"])
        hot["Load_TorchLoad"] = (torch_load, paths["pt"])
        # The torch.save file read by the library (its zip members viewed in
        # place, their CRC-32s checked), copied and mapped.
        hot["Load_ForeignPt"] = (lambda: zt.load_file(paths["pt"], allow_foreign=True), paths["pt"])
        hot["Load_ForeignPtMmap"] = (lambda: touch(zt.load_file(paths["pt"], allow_foreign=True, mmap=True)),
                                     paths["pt"])
        if "npz" in paths:
            hot["Load_NpzDeflated"] = (lambda: ztensor.open(paths["npz"], allow_foreign=True).decode_many(),
                                       paths["npz"])
            hot["Load_NumpyNpzDeflated"] = (lambda: dict(np.load(paths["npz"])), paths["npz"])
        if st:
            hot["Load_Safetensors"] = (lambda: touch(st.load_file(paths["st"])), paths["st"])
        # The first load in a fresh process, as a user's program makes it:
        # every allocation fresh memory, nothing reused from a load before
        # (the rows above repeat loads in one process, whose C heap hands
        # the memory of the last load's small tensors back already mapped).
        first = {}
        for m in models:
            where = f"p = {paths[m]!r}; e = " + ("b.merged(b.places(p))" if m == "many" else "b.places(p)")
            first[f"First_Pread_{m}"] = (lambda where=where: in_fresh_process(
                f"b.pread_floor(p, e, {threads})", where), paths[m])
            first[f"First_LoadFile_{m}"] = (lambda m=m: in_fresh_process(f"zt.load_file({paths[m]!r})"), paths[m])
        # Its 64 KiB tensors each allocated on its own (the way until
        # 2026-12-06: the CPU carved from 128 KiB, since in loops in one
        # process the heap's reused memory won).
        first["First_LoadFileUncarved_small"] = (lambda: in_fresh_process(
            f"zt.load_file({paths['small']!r})", "from ztensor import _block_places; _block_places.CPU_PACK_FROM = 128 << 10"),
            paths["small"])
        # The 256 KiB tensors' blocks in 4 KiB pages (the way of
        # 2026-12-05, when fresh processes on the 2-core VM, a Firecracker
        # guest that reports freed memory to its host, filled huge-page
        # blocks slowly; on 2026-12-06 they filled them faster).
        first["First_LoadFileBlocks4k_llm"] = (lambda: in_fresh_process(
            f"zt.load_file({paths['llm']!r})", "from ztensor import _block_places; _block_places.BLOCK_HUGE_PAGES = False"),
            paths["llm"])
        first["First_TorchLoad"] = (lambda: in_fresh_process(
            f"b.touch(torch.load({paths['pt']!r}, mmap=True))" if torch_mmap else f"torch.load({paths['pt']!r})"),
            paths["pt"])
        if st:
            first["First_Safetensors"] = (lambda: in_fresh_process(
                f"b.touch(st.load_file({paths['st']!r}))", "import safetensors.torch as st"), paths["st"])
        llm_bytes, many_bytes = tensor_bytes(models["llm"]), tensor_bytes(models["many"])
        saves = {"Save_Floor": lambda: durable_write(llm_bytes, base + "-out.bin"),
                 "Save_SaveFile": lambda: zt.save_file(models["llm"], base + "-out.zt")}
        if st:
            saves["Save_Safetensors"] = lambda: st.save_file(models["llm"], base + "-out.safetensors")
        # Many tiny tensors: the per-tensor work of a save (a model's norms
        # and biases; here all of it), against the same durable write.
        saves["Save_Floor_many"] = lambda: durable_write(many_bytes, base + "-many-out.bin")
        saves["Save_SaveFile_many"] = lambda: zt.save_file(models["many"], base + "-many-out.zt")
        saves["Save_TorchSave_many"] = lambda: torch.save(models["many"], base + "-many-out.pt")
        if st:
            saves["Save_Safetensors_many"] = lambda: st.save_file(models["many"], base + "-many-out.safetensors")
        cold = {"Cold_Read": (lambda: plain_read(paths["llm"]), paths["llm"]),
                "Cold_LoadFile": (lambda: zt.load_file(paths["llm"]), paths["llm"]),
                "Cold_LoadFileZstd": (lambda: zt.load_file(paths["zstd"]), paths["zstd"]),
                "Cold_LoadFilePlanes": (lambda: zt.load_file(paths["planes"]), paths["planes"])}
        facts["cold_by"] = drop_cache(paths["llm"])
        # The cold rows again on a disk slower than decoding (ZT_SLOW_DISK_MBPS,
        # default 500 MB/s: a SATA SSD, a cloud volume), where one can be made.
        rate = int(float(os.environ.get("ZT_SLOW_DISK_MBPS", "500")) * 1e6)
        try:
            slow_disk = SlowDisk(paths["llm"], rate) if rate > 0 else None
            facts["slow_disk_bytes_per_s"] = rate if slow_disk else None
        except (OSError, KeyError, StopIteration) as e:
            slow_disk = None
            facts["slow_disk_bytes_per_s"] = None
            facts["slow_disk_not_run"] = f"{type(e).__name__}: {e}"
        slow = {} if slow_disk is None else {
            name.replace("Cold_", "Slow_"): (lambda fn=fn: slow_disk.run(fn), path) for name, (fn, path) in cold.items()}
        gpus = {}
        if gpu:
            pinned = torch.empty(total, dtype=torch.uint8, pin_memory=True)
            pageable = torch.empty(total, dtype=torch.uint8)
            pageable.fill_(1)
            target = torch.empty(total, dtype=torch.uint8, device="cuda")
            gpus = {"Gpu_Pinned": (lambda: target.copy_(pinned, non_blocking=True), None),
                    "Gpu_Pageable": (lambda: target.copy_(pageable), None),
                    # What the host side of a ring can reach: the file's
                    # bytes pread into pinned memory that is already there.
                    "Gpu_PreadPinned": (lambda: pread_floor(paths["llm"], extents["llm"], threads, into=pinned),
                                        paths["llm"]),
                    "Gpu_LoadFile": (lambda: zt.load_file(paths["llm"], device="cuda"), paths["llm"]),
                    "Gpu_LoadFileZstd": (lambda: zt.load_file(paths["zstd"], device="cuda"), paths["zstd"]),
                    "Gpu_TorchLoad": (lambda: {k: v.to("cuda") for k, v in torch.load(
                        paths["pt"], **({"mmap": True} if torch_mmap else {})).items()}, paths["pt"])}
            # The ring's shape, and the file opened without a mapping.
            gpus["Gpu_LoadFilePread"] = (lambda: zt._load_all(zt._File(paths["llm"], copy=True), "cuda",
                                                               zt._staging_for("cuda", _staging.DEFAULT_BUFFERS,
                                                                               _staging.DEFAULT_BUFFER_BYTES)),
                                         paths["llm"])
            gpus["Gpu_LoadFileSerial"] = (lambda: zt._load_all(zt._File(paths["llm"], copy=True), "cuda", zt._Staging(
                _staging.CudaCopies(torch.device("cuda")), ahead=0)), paths["llm"])
            # Two or three batches decoded ahead at once: one decode call's
            # last slices overlap the next one's first (is the ring's loss
            # against decode + copy at once in the joins between batches?).
            gpus["Gpu_LoadFileAhead2"] = (lambda: zt._load_all(zt._File(paths["llm"]), "cuda", zt._Staging(
                _staging.CudaCopies(torch.device("cuda")), 3, 64 * MiB, ahead=2)), paths["llm"])
            gpus["Gpu_LoadFileAhead3x64M"] = (lambda: zt._load_all(zt._File(paths["llm"]), "cuda", zt._Staging(
                _staging.CudaCopies(torch.device("cuda")), 4, 64 * MiB, ahead=3)), paths["llm"])
            gpus["Gpu_LoadFileRing3x64M"] = (lambda: zt.load_file(
                paths["llm"], device="cuda", staging_buffers=3, staging_bytes=64 * MiB), paths["llm"])
            gpus["Gpu_LoadFileRing2x256M"] = (lambda: zt.load_file(
                paths["llm"], device="cuda", staging_buffers=2, staging_bytes=256 * MiB), paths["llm"])
            gpus["Gpu_LoadFileRing4x64M"] = (lambda: zt.load_file(
                paths["llm"], device="cuda", staging_buffers=4, staging_bytes=64 * MiB), paths["llm"])
            # Buffers a host's last-level cache can hold: the copy engine
            # may then read them from the cache rather than from memory.
            gpus["Gpu_LoadFileRing8x16M"] = (lambda: zt.load_file(
                paths["llm"], device="cuda", staging_buffers=8, staging_bytes=16 * MiB), paths["llm"])
            gpus["Gpu_LoadFileRing2x1G"] = (lambda: zt.load_file(
                paths["llm"], device="cuda", staging_buffers=2, staging_bytes=1024 * MiB), paths["llm"])
            # Many small tensors to the GPU: carved out of device blocks and
            # copied a buffer's run at a time, against each allocated and
            # copied on its own (_block_places.PACK_BELOW = 0); the peer's way.
            for m in ("small", "many"):
                gpus[f"Gpu_LoadFile_{m}"] = (lambda m=m: zt.load_file(paths[m], device="cuda"), paths[m])
                gpus[f"Gpu_LoadFileUncarved_{m}"] = (lambda m=m: uncarved(
                    lambda: zt.load_file(paths[m], device="cuda")), paths[m])
            # The carved tensors made while the ring's first batches decode
            # rather than before it starts (zt._CARVE_DURING_RING).
            gpus["Gpu_LoadFileCarveDuringRing"] = (lambda: with_attribute(
                zt, "_CARVE_DURING_RING", True, lambda: zt.load_file(paths["llm"], device="cuda")), paths["llm"])
            # Raw tensors from the file's own pages, pinned a chunk at a time
            # (zt._REGISTERED_LOADS): one pass over host memory, where the
            # ring makes three.
            gpus["Gpu_LoadFileRegistered"] = (lambda: with_attribute(
                zt, "_REGISTERED_LOADS", True, lambda: zt.load_file(paths["llm"], device="cuda")), paths["llm"])
            if st:
                gpus["Gpu_Safetensors_many"] = (lambda: st.load_file(paths["many_st"], device="cuda:0"),
                                                paths["many_st"])
            # A tensor at a time to the GPU (safe_open(device="cuda")), and the peer's.
            gpus["Gpu_GetTensor_many"] = (lambda: synced(one_at_a_time(zt.safe_open, paths["many"], device="cuda")),
                                          paths["many"])
            if st:
                gpus["Gpu_SafetensorsGetTensor_many"] = (lambda: synced(one_at_a_time(
                    safetensors.safe_open, paths["many_st"], device="cuda:0")), paths["many_st"])
            # A tensor-parallel rank's share straight to its GPU, through the ring.
            gpus["Gpu_RankRows"] = (lambda: zt.load_file(paths["llm"], device="cuda", slices=rows), paths["llm"])
            # A rank's columns: boxes of raw data, through the ring a piece a
            # buffer; and as they went before 2026-12-05 (each box read
            # whole into host memory, then a pageable copy).
            gpus["Gpu_RankColumns"] = (lambda: zt.load_file(paths["llm"], device="cuda", slices=columns),
                                       paths["llm"])
            selections = zt._File._selections
            gpus["Gpu_RankColumnsOnHost"] = (lambda: with_attribute(
                zt._File, "_selections", lambda self, slices, ring: selections(self, slices, False),
                lambda: zt.load_file(paths["llm"], device="cuda", slices=columns)), paths["llm"])
            gpu_model = module_of(models["llm"], "cuda")
            gpus["Gpu_LoadModel"] = (lambda: zt.load_model(gpu_model, paths["llm"], device="cuda"), paths["llm"])
            if st:
                gpus["Gpu_Safetensors"] = (lambda: st.load_file(paths["st"], device="cuda:0"), paths["st"])
            # Cold to the GPU (the cold rows were measured so): the
            # page cache dropped before each, as the cold rows above.
            cold["Cold_GpuLoadFile"] = (lambda: zt.load_file(paths["llm"], device="cuda"), paths["llm"])
            cold["Cold_GpuLoadFileZstd"] = (lambda: zt.load_file(paths["zstd"], device="cuda"), paths["zstd"])
            if st:
                cold["Cold_GpuSafetensors"] = (lambda: st.load_file(paths["st"], device="cuda:0"), paths["st"])
        for rep in range(reps):
            # Interleaved, so that a disturbance hits every case alike.
            for name, (fn, path) in {**hot, **first, **gpus}.items():
                record(name, fn, rep, (lambda p=path: (warm_folder if os.path.isdir(p) else warm)(p))
                       if path else None)
            # Writes are at the mercy of the previous write's writeback:
            # the order alternates so that neither side always goes second.
            for name, fn in (list(saves.items()) if rep % 2 == 0 else list(saves.items())[::-1]):
                record(name, fn, rep)
            for name, (fn, path) in {**cold, **slow}.items():
                record(name, fn, rep, lambda p=path: drop_cache(p))
        if gpu:
            warm(paths["llm"])
            try:
                facts["gpu_peak_rss_above_start"] = peak_rss_during(
                    lambda: zt.load_file(paths["llm"], device="cuda"))
            except Exception as e:
                facts.setdefault("failed", {})["gpu_peak_rss"] = f"{type(e).__name__}: {e}"
            try:
                facts["gpu_peak_rss_above_start_rank_columns"] = peak_rss_during(
                    lambda: zt.load_file(paths["llm"], device="cuda", slices=columns))
            except Exception as e:
                facts.setdefault("failed", {})["gpu_peak_rss_rank_columns"] = f"{type(e).__name__}: {e}"
            facts["gpu_staging_bytes"] = _staging.DEFAULT_BUFFERS * _staging.DEFAULT_BUFFER_BYTES
            # What a user sees: the first load in a fresh process (CUDA
            # initialised first, page cache hot), which pays for pinning the
            # ring and for growing torch's device allocator.
            firsts = {"zt": f"from ztensor import torch as m; m.load_file({paths['llm']!r}, device='cuda')",
                      # A larger ring pins more before the first byte moves
                      # (the H200, 2026-12-04: 0.53 s against 0.30 - 0.33).
                      "zt_2x256M": f"from ztensor import torch as m; m.load_file({paths['llm']!r}, device='cuda', "
                                   "staging_buffers=2, staging_bytes=256 << 20)"}
            if st:
                firsts["st"] = f"import safetensors.torch as m; m.load_file({paths['st']!r}, device='cuda:0')"
            for who, code in firsts.items():
                warm(paths["st" if who == "st" else "llm"])
                facts[f"gpu_first_load_s_{who}"] = [first_load(code) for _ in range(2)]
        doc = {"context": facts, "facts": facts, "benchmarks": runs}
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=1)
        summarize(runs, facts)
    finally:
        if slow_disk is not None:
            slow_disk.close()
        for p in list(paths.values()) + [base + s for s in ("-out.bin", "-out.zt", "-out.safetensors", "-many-out.bin",
                                                            "-many-out.zt", "-many-out.pt", "-many-out.safetensors")]:
            if os.path.exists(p):
                os.remove(p)
        shutil.rmtree(base + "-shards", ignore_errors=True)


def summarize(runs, facts):
    """Medians as GB/s and as ratios to their floors, on stderr."""
    by = {}
    for r in runs:
        by.setdefault(r["name"], []).append(r["real_time"] / 1e3)
    med = {k: float(np.median(v)) for k, v in by.items()}
    size = {"small": facts["small_bytes"], "many": facts["many_bytes"]}

    def show(name, floor):
        if name not in med:
            return
        n = size.get(name.rsplit("_", 1)[-1], facts["bytes"])
        line = f"{name:28s} {n / med[name] / 1e9:7.2f} GB/s"
        if floor in med and floor != name:
            line += f"  {med[floor] / med[name]:5.2f} of {floor}"
        print(line, file=sys.stderr)
    for name in med:
        if name.startswith(("Load", "First")):
            m = name.rsplit("_", 1)[-1] if name.endswith(("_small", "_many")) else "llm"
            kind = name.split("_", 1)[0]
            show(name, f"{kind}_Pread_{m}")
            if f"{kind}_PreadHuge_{m}" in med:
                show(name, f"{kind}_PreadHuge_{m}")
            continue
        floor = ("Save_Floor_many" if name.endswith("_many") else "Save_Floor") if name.startswith("Save") \
            else "Cold_Read" if name.startswith("Cold") \
            else "Slow_Read" if name.startswith("Slow") else "Gpu_Pinned"
        show(name, floor)
    for k in ("gpu_peak_rss_above_start", "gpu_first_load_s_zt", "gpu_first_load_s_zt_2x256M", "gpu_first_load_s_st",
              "zstd_ratio", "gpu_new_segments",
              "cold_by", "slow_disk_bytes_per_s", "slow_disk_not_run", "failed"):
        if k in facts:
            print(f"{k}: {facts[k]}", file=sys.stderr)


if __name__ == "__main__":
    main()
