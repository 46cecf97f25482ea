"""How ztensor.torch loads: every tensor filled by one zt_decode_ranges
(CPU), mmap=True zero-copy for bf16 too, packed types decoded, and the
staging pipeline to a device (its ring, splitting, batching and ordering
driven by a CPU copy engine that copies late, and by CUDA where present)."""

import ctypes
import math
import mmap
import threading
import time
import os
import struct

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # Debian's python3-torch (scripts/setup.sh)

import ztensor  # noqa: E402
from ztensor import _cbor, _staging  # noqa: E402
from ztensor._lib import lib  # noqa: E402
from ztensor import torch as zt  # noqa: E402


def model(seed=0):
    """A small model of the shapes real ones have: a few large tensors and
    many small ones, in several dtypes."""
    g = torch.Generator().manual_seed(seed)
    t = {f"big.{i}": torch.randn(300, 257, generator=g).to(torch.bfloat16) for i in range(3)}
    t.update({f"small.{i}": torch.randn(7 + i, generator=g) for i in range(40)})
    t["ids"] = torch.arange(1000, dtype=torch.int64)
    t["mask"] = torch.arange(33) % 3 == 0
    t["c"] = torch.complex(torch.ones(5), -torch.ones(5))
    t["scalar"] = torch.tensor(2.5, dtype=torch.float16)
    t["empty"] = torch.zeros(0, 4)
    return t


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def counted_decodes(monkeypatch):
    """The number of tensors of each File._decode_columns call from here on."""
    calls = []
    real = ztensor.File._decode_columns

    def counting(self, objects, *rest, **kw):
        calls.append(len(objects))
        return real(self, objects, *rest, **kw)

    monkeypatch.setattr(ztensor.File, "_decode_columns", counting)
    return calls


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("version", [None, 2])
def test_cpu_load_fills_every_tensor_at_once(tmp_path, monkeypatch, encoding, version):
    t = model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, file_version=version, frame_size=4096)
    calls = counted_decodes(monkeypatch)
    got = zt.load_file(p)
    monkeypatch.undo()
    assert sorted(got) == sorted(t)
    assert all(same(got[k], t[k]) for k in t)
    assert calls == [len(t) - 1]  # one call for every non-empty tensor
    with zt.safe_open(p, framework="pt") as f:
        assert same(f.get_tensor("big.1"), t["big.1"])


def many_tensors(n=300):
    """Many tensors: sizes from empty to a few KiB, several dtypes."""
    g = torch.Generator().manual_seed(7)
    dtypes = (torch.float32, torch.bfloat16, torch.int8, torch.float64)
    return {f"t{i}": torch.randn(i % 23, 3 + i % 5, generator=g).to(dtypes[i % 4]) for i in range(n)}


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_many_tensors_are_filled_by_one_decode_call(tmp_path, monkeypatch, encoding):
    # Whatever the core count: decoding chunks on a worker while the next
    # tensors were allocated made a 4.5 GiB load 1.45x slower on 16 cores.
    t = many_tensors()
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding)
    monkeypatch.setattr(zt, "cpu_count", lambda: 64)
    calls = counted_decodes(monkeypatch)
    got = zt.load_file(p)
    assert list(got) == list(t) and all(same(got[k], t[k]) for k in t)
    assert calls == [sum(1 for v in t.values() if v.numel())]


def test_many_tensors_fill_into_and_map(tmp_path):
    t = many_tensors(100)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    mapped = zt.load_file(p, mmap=True)
    assert all(same(mapped[k], t[k]) for k in t)
    into = {k: torch.empty_like(v) for k, v in t.items() if k != "t7"}
    f = zt._File(p)
    try:
        got = f.load(list(t), "cpu", into=into)  # load_model's way: its parameters filled in place
    finally:
        f.close()
    assert list(got) == list(t) and all(same(got[k], t[k]) for k in t)
    assert all(got[k] is into[k] for k in into)


def damaged(p, name):
    """A copy of file p beside it ("bad.zt") with a byte in the middle of
    object `name`'s stored data flipped."""
    f = ztensor.open(p)
    offset, length = ctypes.c_uint64(), ctypes.c_uint64()
    assert lib.zt_component_extent(f._r(), f._index(name), b"data", ctypes.byref(offset),
                                   ctypes.byref(length)) == 0
    f.close()
    data = bytearray(p.read_bytes())
    data[offset.value + length.value // 2] ^= 0xFF
    bad = p.parent / "bad.zt"
    bad.write_bytes(bytes(data))
    return bad


def test_a_broken_frame_among_many_tensors_is_refused_by_name(tmp_path):
    t = {f"t{i}": torch.full((64,), float(i)) for i in range(300)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding="zstd")
    with pytest.raises(ztensor.Error) as e:
        zt.load_file(damaged(p, "t250"))
    assert "t250" in str(e.value)


def test_requests_built_as_ctypes_structs_load_the_same(tmp_path, monkeypatch):
    # Where zt_decode_range has no numpy record layout (not 64-bit
    # little-endian), the requests are ctypes structs.
    from ztensor import _reader
    t = model(5)
    zt.save_file(t, tmp_path / "m.zt", encoding="zstd", frame_size=4096)
    monkeypatch.setattr(_reader, "_RANGE_DTYPE", None)
    got = zt.load_file(tmp_path / "m.zt")
    assert all(same(got[k], t[k]) for k in t)


@pytest.mark.parametrize("ctypes_rows", [False, True])
def test_object_summaries_say_what_the_manifest_says(tmp_path, monkeypatch, ctypes_rows):
    # zt_object_summaries, read as numpy records (or ctypes structs where
    # their layout differs), against the manifest's JSON object by object.
    from ztensor import _reader
    if ctypes_rows:
        monkeypatch.setattr(_reader, "_SUMMARY_DTYPE", None)
    p = tmp_path / "m.zt"
    with ztensor.Writer(p) as w:
        for name, v in model(6).items():
            w.add(name, v.numpy() if v.dtype != torch.bfloat16 else v.view(torch.int16).numpy().view(np.uint16),
                  dtype="bf16" if v.dtype == torch.bfloat16 else None)
        w.add("f8", np.arange(6, dtype=np.uint8), type="f8_e4m3fn", attributes={"scale": 0.5})
        w.add("ünïcode.3d", np.zeros((2, 3, 4), np.float32))
        w.add_csr("sparse", np.ones(3, np.float32), np.arange(3, dtype=np.uint64),
                  np.arange(4, dtype=np.uint64), (3, 3))
    with ztensor.open(p) as f:
        summaries = f._summaries()
        objects = f.manifest["objects"]
        assert [s.name for s in summaries] == list(objects)
        for i, (s, (name, o)) in enumerate(zip(summaries, objects.items())):
            c = o["components"].get("data")
            assert (s.index, s.format, s.shape, s.dtype, s.type, s.has_attributes) == (
                i, o["format"], tuple(o["shape"]), c and c["dtype"], c and c.get("type"), "attributes" in o)
        assert {s.type for s in summaries} == {"complex64", "f8_e4m3fn", None}
        assert [s.name for s in summaries if s.has_attributes] == ["f8"]
        assert {s.format for s in summaries} == {"dense", "sparse_csr"}
        assert f._dense_layouts(f._columns()) == f._dense_layouts()


def test_shapes_are_gathered_from_the_readers_arrays():
    # _shapes_at reads ndims[i] uint64 at addresses[i] (the reader's shape
    # arrays) by numpy gathers: shapes of mixed ranks, of one rank, and
    # arrays at unaligned addresses (read one at a time) give the same.
    from ztensor._reader import _shapes_at
    values = np.arange(1, 21, dtype=np.uint64)
    at = values.ctypes.data
    addresses = np.array([0, at, at + 8 * 3, at + 8 * 10, at + 8 * 19], dtype=np.uint64)
    assert _shapes_at(addresses, np.array([0, 2, 3, 1, 1], np.uint32)) == [(), (1, 2), (4, 5, 6), (11,), (20,)]
    assert _shapes_at(addresses[1:], np.array([2, 2, 2, 1], np.uint32)) == [(1, 2), (4, 5), (11, 12), (20,)]
    assert _shapes_at(addresses[1:4], np.array([3, 3, 3], np.uint32)) == [(1, 2, 3), (4, 5, 6), (11, 12, 13)]
    assert _shapes_at(addresses[:1], np.array([0], np.uint32)) == [()]
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)
    raw[1:].view(np.uint64)[:] = [7, 8, 9, 10]  # a copy through an aligned view
    odd = raw.ctypes.data + 1
    assert _shapes_at(np.array([odd, odd + 16], np.uint64), np.array([2, 2], np.uint32)) == [(7, 8), (9, 10)]


def test_loads_plan_without_the_manifests_json(tmp_path, monkeypatch):
    # The plan comes from zt_object_summaries: building and parsing the
    # manifest's JSON cost ~9 us a tensor on a model of small tensors.
    t = model(8)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)

    def refused(self):
        raise AssertionError("a load read the manifest's JSON")

    monkeypatch.setattr(ztensor.File, "manifest", property(refused))
    from ztensor import _reader
    if _reader._SUMMARY_DTYPE is not None:  # and a field at a time, not a ctypes struct an object
        monkeypatch.setattr(ztensor.File, "_columns_of_structs", lambda *a: pytest.fail("struct rows"))
    assert all(same(v, t[k]) for k, v in zt.load_file(p).items())
    with ztensor.open(p) as f:
        assert sorted(f.decode_many()) == sorted(t)


def test_a_load_drops_its_plan_before_the_collector_comes_back(tmp_path, monkeypatch):
    # The first collection after a load walks what is alive then: the
    # tensors, not a summary and a layout per object (measured on 20,000
    # tensors: that collection took 8.5 ms with the plan alive, 4.3 without).
    import contextlib
    import gc
    from ztensor import _reader
    p = tmp_path / "m.zt"
    zt.save_file(model(7), p)
    plans_alive = []
    real = _reader.collector_paused

    @contextlib.contextmanager
    def watching():
        with real():
            yield
            plans_alive.append(sum(type(o) is _reader._Summary for o in gc.get_objects()))

    monkeypatch.setattr(_reader, "collector_paused", watching)
    assert len(zt.load_file(p)) == len(model(7))
    assert plans_alive == [0]


@pytest.mark.parametrize("gc_on", [True, False])
def test_a_load_holds_the_collector_off_and_gives_it_back(tmp_path, monkeypatch, gc_on):
    # A model of many small tensors loads without the cyclic collector
    # walking the process's objects every few hundred allocations; after
    # the load (or its failure) the collector is as it was.
    import gc
    t = model(7)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    seen = []
    real = ztensor.File._decode_columns

    def watching(self, *args, **kw):
        seen.append(gc.isenabled())
        return real(self, *args, **kw)

    monkeypatch.setattr(ztensor.File, "_decode_columns", watching)
    (gc.enable if gc_on else gc.disable)()
    try:
        assert all(same(v, t[k]) for k, v in zt.load_file(p).items())
        assert seen == [False] and gc.isenabled() == gc_on

        def failing(self, *args, **kw):
            raise ztensor.Error(5, "planted")

        monkeypatch.setattr(ztensor.File, "_decode_columns", failing)
        with pytest.raises(ztensor.Error, match="planted"):
            zt.load_file(p)
        assert gc.isenabled() == gc_on
    finally:
        gc.enable()


def test_mmap_maps_bf16_and_copies_only_on_write(tmp_path):
    t = {"w": torch.arange(4096, dtype=torch.float32).to(torch.bfloat16), "f": torch.ones(1024)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    m = zt.load_file(p, mmap=True)
    assert same(m["w"], t["w"]) and same(m["f"], t["f"])
    # Mapped, not copied: bytes changed in the file show through (a private
    # mapping sees the file until a page is written).
    with ztensor.open(p) as f:
        offset = f.manifest["objects"]["w"]["components"]["data"]["offset"]
    fd = os.open(p, os.O_WRONLY)
    try:
        os.pwrite(fd, torch.tensor([7.0], dtype=torch.bfloat16).view(torch.int16).numpy().tobytes(), offset)
    finally:
        os.close(fd)
    assert m["w"][0].item() == 7.0
    before = p.read_bytes()
    m["w"][1] = 3.0  # copy-on-write: the file keeps its bytes
    assert m["w"][1].item() == 3.0 and p.read_bytes() == before


def test_mmap_finds_each_tensor_without_the_manifest_json(tmp_path, monkeypatch):
    # Where the tensors lie comes from one zt_component_extents call for the
    # file: the whole manifest as JSON cost ~10 us an object, so a mapped
    # load of many small tensors was 2.5x slower than a copying one, and
    # zt_component_extent through ctypes, an object at a time, still 2x;
    # dlpack() of one tensor paid for every object of the file.
    t = {f"t{i}": torch.full((16,), float(i)) for i in range(40)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)

    def no_json(*args):
        raise AssertionError("the manifest JSON was built")

    def not_one_by_one(*args):
        raise AssertionError("an extent was asked an object at a time")

    monkeypatch.setattr(ztensor._lib.lib, "zt_manifest_json", no_json)
    one_by_one = ztensor._lib.lib.zt_component_extent
    monkeypatch.setattr(ztensor._lib.lib, "zt_component_extent", not_one_by_one)
    asked = []
    real_extents = ztensor._lib.lib.zt_component_extents

    def extents(r, role, first, count, *out):
        asked.append((role, first, count))
        return real_extents(r, role, first, count, *out)

    monkeypatch.setattr(ztensor._lib.lib, "zt_component_extents", extents)
    m = zt.load_file(p, mmap=True)
    assert list(m) == list(t) and all(same(m[k], t[k]) for k in t)
    assert asked == [(b"data", 0, 40)]
    # Each tensor's storage is exactly its own bytes, none shared.
    assert all(storage_bytes(m[k]) == 64 and m[k].storage_offset() == 0 for k in t)
    assert len({m[k].data_ptr() for k in t}) == 40
    monkeypatch.setattr(ztensor._lib.lib, "zt_component_extent", one_by_one)  # dlpack's, below
    m["t3"][0] = -1.0  # mapped copy-on-write: writable, the file unchanged
    assert zt.load_file(p)["t3"][0].item() == 3.0
    counts = []
    real = ztensor._lib.lib.zt_object_summaries

    def summaries(r, first, array, count):
        counts.append(count)
        return real(r, first, array, count)

    monkeypatch.setattr(ztensor._lib.lib, "zt_object_summaries", summaries)
    with ztensor.open(p) as f:
        assert torch.equal(torch.from_dlpack(f.dlpack("t5")), t["t5"])
    assert counts == [1]  # the one object's summary, not the file's


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="this torch has no float8 types")
def test_mmap_maps_fp8(tmp_path):
    p = tmp_path / "f8.zt"
    with ztensor.Writer(p) as w:
        w.add("q", np.array([0x38, 0xC0] * 2048, np.uint8), type="f8_e4m3fn")  # 1.0, -2.0, ...
    copied, mapped = zt.load_file(p)["q"], zt.load_file(p, mmap=True)["q"]
    assert copied.dtype == mapped.dtype == torch.float8_e4m3fn
    assert mapped.float()[:2].tolist() == [1.0, -2.0]
    assert torch.equal(mapped.view(torch.uint8), copied.view(torch.uint8))


def test_mmap_decodes_packed_and_converted_types(tmp_path):
    p = tmp_path / "v2.zt"
    u8 = lambda *v: np.array(v, dtype=np.uint8)  # noqa: E731
    with ztensor.Writer(p, file_version=2) as w:
        w.add_object("fp4", "dense", (3,), {"data": (u8(0x21, 0x03), "u8", "f4_e2m1")})
        w.add_object("flags", "dense", (3,), {"data": (u8(0, 1, 1), "u8", "bool")})
    for mmap in (False, True):
        with zt.safe_open(p, "pt", mmap=mmap) as s:
            one_at_a_time = {name: s.get_tensor(name) for name in ("fp4", "flags")}
        for got in (zt.load_file(p, mmap=mmap), one_at_a_time):
            assert got["fp4"].tolist() == [0.5, 1.0, 1.5]  # values, not packed bytes
            assert got["flags"].dtype == torch.bool and got["flags"].tolist() == [False, True, True]


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_slices_load_a_ranks_share(tmp_path, encoding):
    t = model(4)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096)
    world, rank = 4, 1
    cols = t["big.0"].shape[1] // world
    share = {"big.0": (slice(None), slice(rank * cols, (rank + 1) * cols)),
             "ids": slice(rank * 250, (rank + 1) * 250), "scalar": ()}
    got = zt.load_file(p, slices=share)
    assert same(got["big.0"], t["big.0"][:, rank * cols:(rank + 1) * cols].contiguous())
    assert same(got["ids"], t["ids"][250:500])
    assert same(got["scalar"], t["scalar"])
    assert same(got["big.1"], t["big.1"])  # the others whole
    with pytest.raises(KeyError, match="nope"):
        zt.load_file(p, slices={"nope": 0})


def test_one_run_tells_a_run_of_row_major_order_from_a_box():
    shape = (4, 6, 5)

    def run(key, shape):  # (shape, first element, element count) of one run, else None
        s = zt._selection(key, shape)
        return None if s is None or s.first is None else (s.shape, s.first, s.count)

    assert run((slice(1, 3),), shape) == ((2, 6, 5), 30, 60)  # whole rows
    assert run(2, shape) == ((6, 5), 60, 30)  # an int drops its dimension
    assert run((1, slice(2, 4)), shape) == ((2, 5), 40, 10)  # one index, then a partial dimension
    assert run((1, 3, slice(1, 4)), shape) == ((3,), 46, 3)
    assert run((Ellipsis, 4), (3, 1, 7)) is None  # last dimension partial after a whole one
    assert run((slice(0, 3), slice(0, 1)), (3, 1, 7)) == ((3, 1, 7), 0, 21)  # size-1 dims are whole
    assert run((), ()) == ((), 0, 1)  # a scalar
    assert run((slice(3, 3),), shape) == ((0, 6, 5), 0, 0)  # nothing selected
    assert run((slice(None), slice(0, 3)), shape) is None  # columns: a box of runs
    assert run((slice(0, 4, 2),), shape) is None  # steps
    assert run((slice(2, 0, -1),), shape) is None


# Selections as tensor-parallel loaders ask for them: whole rows (one run
# of the bytes: loaded with the whole tensors, on every core or through the
# ring) and the others (zt_dense_slice), each compared with torch's indexing.
_KEYS = {"big.0": (slice(75, 150),), "big.1": 299, "big.2": (slice(None), slice(64, 128)),
         "ids": slice(250, 500), "mask": slice(1, 32, 3), "scalar": (), "empty": slice(0, 0),
         "small.3": slice(9, 3, -2), "c": (Ellipsis, slice(1, 4))}


@pytest.mark.parametrize("version", [None, 2])
@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("how", ["copy", "mmap", "late"])
def test_slices_load_as_torch_indexes(tmp_path, monkeypatch, encoding, version, how):
    t = model(5)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096, file_version=version)
    sliced = []  # what went through zt_dense_slice: selections that are not one run
    through_slice = zt._File.slice
    monkeypatch.setattr(zt._File, "slice", lambda f, name, key: sliced.append(name) or through_slice(f, name, key))
    if how == "late":  # the staging ring, runs split across 3,000-byte buffers
        engine = LateCopies()
        got = zt._load_all(zt._File(p), "cpu", zt._Staging(engine, 2, 3000, 1), _KEYS)
        assert len(engine.buffers) == 2 and engine.bytes > 10 * 3000  # many batches went through the ring
    else:
        got = zt.load_file(p, mmap=how == "mmap", slices=_KEYS)
    assert sorted(got) == sorted(t)
    # Through the ring, a box (big.2's columns) is read piece by piece into
    # the staging buffers, not whole on the CPU first.
    assert sorted(sliced) == (["mask", "small.3"] if how == "late" else ["big.2", "mask", "small.3"])
    for name, want in t.items():
        if name in _KEYS:
            key = _KEYS[name]  # torch takes no negative steps: numpy's indexing (float32)
            want = want[key] if name != "small.3" else torch.from_numpy(want.numpy()[key].copy())
        assert same(got[name], want.contiguous()), name
        assert got[name].is_contiguous()
    # A run's tensor is its own memory, not a view of the whole one.
    storage = getattr(got["big.0"], "untyped_storage", got["big.0"].storage)()  # torch < 2: storage()
    assert storage.nbytes() == 75 * 257 * 2


def test_a_box_in_pieces_is_the_boxes_that_hold_them():
    # Every piece of every box of random shapes, at whole elements as the
    # ring cuts them: the boxes Box.parts gives, at most two a dimension,
    # fill the piece once, with the bytes numpy's indexing selects.
    rng = np.random.default_rng(3)
    for _ in range(1500):
        shape = [int(x) for x in rng.integers(1, 6, rng.integers(1, 5))]
        begin = [int(rng.integers(0, n)) for n in shape]
        end = [int(rng.integers(b + 1, n + 1)) for b, n in zip(begin, shape)]
        size = int(rng.choice([1, 2, 8]))
        data = np.arange(math.prod(shape) * size).reshape(shape + [size])
        want = data[tuple(map(slice, begin, end))].reshape(-1)
        box = _staging.Box(begin, end, size)
        elements = want.size // size
        for _ in range(4):
            first = int(rng.integers(0, elements))
            count = int(rng.integers(1, elements - first + 1))
            got = np.full(count * size, -1)
            parts = box.parts(first * size, count * size)
            assert len(parts) <= 2 * len(shape)
            for lo, hi, place, nbytes in parts:
                part = data[tuple(map(slice, lo, hi))].reshape(-1)
                assert part.size == nbytes and (got[place:place + nbytes] == -1).all()
                got[place:place + nbytes] = part
            assert (got == want[first * size:(first + count) * size]).all(), (shape, begin, end, size, first, count)


# Boxes through the ring, with N-d shapes and indexes that drop dimensions,
# cut across buffers of a few hundred bytes at every place.
_BOX_KEYS = {"w3": (slice(1, 4), slice(2, 5), slice(0, 6)), "w4": (slice(None), 1, slice(1, 3), slice(2, 7)),
             "cols": (slice(None), slice(30, 70)), "one": (slice(None), 5), "edge": (slice(3, 4), slice(0, 9))}


@pytest.mark.parametrize("version,encoding", [(None, "raw"), (2, "raw"), (None, "zstd"), (2, "zstd"),
                                              (2, "planes")])
@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("buffer_bytes", [64, 320, 1000, 1 << 20])
def test_boxes_load_through_the_ring_as_torch_indexes(tmp_path, monkeypatch, version, encoding, copy, buffer_bytes):
    g = torch.Generator().manual_seed(5)
    t = {"w3": torch.randn(5, 6, 7, generator=g), "w4": torch.randn(3, 4, 5, 9, generator=g).to(torch.bfloat16),
         "cols": torch.arange(40 * 100, dtype=torch.int16).reshape(40, 100), "one": torch.randn(20, 8, generator=g),
         "edge": torch.randn(6, 9, generator=g).to(torch.float64), "whole": torch.randn(50, generator=g)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p, file_version=version, encoding=encoding, frame_size=1024)  # zstd: several frames a box
    monkeypatch.setattr(zt._File, "slice", lambda *a: pytest.fail("a box read whole on the CPU"))
    engine = LateCopies()
    got = zt._load_all(zt._File(p, copy=copy), "cpu", zt._Staging(engine, 2, buffer_bytes, 1), _BOX_KEYS)
    assert sorted(got) == sorted(t)
    for name, want in t.items():
        want = want[_BOX_KEYS[name]] if name in _BOX_KEYS else want
        assert same(got[name], want.contiguous()), name
    # The ring held the selections' bytes, not their objects' (the padding
    # between tensors carved out of one block goes along with them).
    assert engine.bytes <= sum(zt._block_places.aligned(v.numel() * v.element_size()) for v in got.values())


@pytest.mark.parametrize("version", [0, 2])
@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_a_tensor_at_a_time_loads_as_load_file_does(tmp_path, monkeypatch, version, encoding):
    # get_tensor(name) and get_slice(name)[...] (transformers' way: a loop
    # over the names) take _File.one, not load(): the same tensors, every
    # dtype, empty and 0-d ones too, mapped or read (copy=True).
    t = model(5)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096, file_version=version)
    through_load = []
    real_load = zt._File.load
    monkeypatch.setattr(zt._File, "load", lambda f, names, *a, **k: through_load.append(names) or real_load(f, names, *a, **k))
    for copy in (False, True):
        with zt.safe_open(p, "pt", copy=copy) as f:
            for name, want in t.items():
                assert same(f.get_tensor(name), want), name
                assert same(f.get_slice(name)[...], want), name
                if want.dim():
                    assert same(f.get_slice(name)[:], want), name
                else:
                    with pytest.raises(IndexError):  # as numpy: a 0-d array has no rows
                        f.get_slice(name)[:]
                if name.startswith("big."):  # a rank's rows (one run), its columns, an int, steps
                    for key in ((slice(100, 200),), 7, (slice(None), slice(5, 9)), (slice(1, 9, 3), -1)):
                        assert same(f.get_slice(name)[key], want[key].contiguous()), (name, key)
    assert through_load == []
    with zt.safe_open(p, "pt", device="meta") as f:  # another device: load() as before
        assert f.get_tensor("big.0").device.type == "meta" and through_load == [["big.0"]]


def test_keys_of_plain_slices_make_the_box_the_general_path_makes():
    # Keys of slices without steps (a rank's rows or columns) take a short
    # path to their box (get_slice(name)[key], numpy's f.slice): the same
    # box, and the same index into it, as the general parse (_box_of_any)
    # for every such key, and none (the general path's) for anything else.
    import random
    from ztensor import _reader
    rnd = random.Random(1)
    ends = [None, 0, 1, 2, 3, 5, -1, -3, 7, 100, -100]
    compared = refused = 0
    for shape in [(), (0,), (5,), (4, 6), (3, 0, 2), (2, 3, 4)]:
        for _ in range(2000):
            key = tuple(slice(rnd.choice(ends), rnd.choice(ends), rnd.choice([None, 1]))
                        for _ in range(rnd.randint(1, len(shape) + 1)))
            if len(key) == 1 and rnd.random() < 0.5:
                key = key[0]
            short = _reader._box_of_slices(key, shape)
            try:
                begin, end, post = _reader._box_of_any(key, shape)
            except IndexError:
                assert short is None, (key, shape)
                refused += 1
                continue
            assert short == (begin, end), (key, shape)
            assert _reader._box_of(key, shape) == (begin, end, post), (key, shape)  # numpy's slice() too
            compared += 1
    assert compared > 5000 and refused > 1000
    for key in (Ellipsis, 3, (slice(None), 2), (slice(0, 4, 2),), (slice(None), Ellipsis), [0, 1]):
        assert _reader._box_of_slices(key, (4, 6)) is None, key


def test_a_ranks_rows_and_columns_take_the_short_box_path(tmp_path, monkeypatch):
    # get_slice(name)[rows] and [:, columns], and numpy's f.slice, never
    # reach the general parse (the ~6 us a call the short path saves).
    from ztensor import _reader
    t = {"w": torch.arange(48, dtype=torch.float32).reshape(6, 8)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)

    def general(*a):
        raise AssertionError("the general parse")

    monkeypatch.setattr(_reader, "_box_of_any", general)
    with zt.safe_open(p, "pt") as f:
        assert same(f.get_slice("w")[1:4], t["w"][1:4])
        assert same(f.get_slice("w")[:, 2:5], t["w"][:, 2:5].contiguous())
    with ztensor.open(p) as f:
        assert np.array_equal(f.slice("w", (slice(None), slice(2, 5))), t["w"].numpy()[:, 2:5])


def test_a_tensor_at_a_time_from_many_threads_and_from_within_a_call(tmp_path):
    # get_tensor's request struct is kept per thread and taken out while in
    # use: threads loading from one File at once, and a get_tensor made on
    # this thread between the request's setting and the library's reading
    # of it (a signal handler's, say), each get their own tensors.
    t = {f"w.{i}": torch.full((64,), float(i)) for i in range(200)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    with zt.safe_open(p, "pt") as f:
        wrong = []

        def run(names):
            for _ in range(5):
                wrong.extend(n for n in names if not same(f.get_tensor(n), t[n]))

        names = list(t)
        workers = [threading.Thread(target=run, args=(names[k::4],)) for k in range(4)]
        for w in workers:
            w.start()
        run(names)
        for w in workers:
            w.join()
        assert wrong == []

        from ztensor import _reader
        nested, real_lib = [], _reader.lib

        class Interrupting:  # a get_tensor runs after the request is set, before the library reads it
            def __getattr__(self, name):
                return getattr(real_lib, name)

            def zt_decode_ranges(self, *args):
                if not nested:
                    nested.append(None)  # once: the nested call comes here too
                    nested[0] = f.get_tensor("w.7")
                return real_lib.zt_decode_ranges(*args)

        try:
            _reader.lib = Interrupting()
            got = f.get_tensor("w.3")
        finally:
            _reader.lib = real_lib
        assert same(got, t["w.3"]) and len(nested) == 1 and same(nested[0], t["w.7"])

        # One struct a thread, not one a call: the loop's per-tensor saving.
        made, real_one = [], _reader._one_request
        _reader.__dict__["_one_request"] = lambda: made.append(1) or real_one()
        try:
            _reader._ONE_REQUEST.__dict__.pop("q", None)
            assert all(same(f.get_tensor(n), t[n]) for n in names)
        finally:
            _reader.__dict__["_one_request"] = real_one
        assert len(made) == 1


@pytest.mark.parametrize("buffer_bytes", [64, 4096, 1 << 20])
def test_a_tensor_at_a_time_to_a_device_takes_one_buffer_and_one_copy(tmp_path, buffer_bytes):
    # get_tensor to a CUDA device: _File.one with the device's staging (here
    # a copy engine that copies only when waited on: a tensor handed back
    # before its copy was waited for is wrong). A tensor larger than a
    # buffer is left to the ring (None).
    t = model(6)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding="zstd", frame_size=4096)
    ring = zt._File.load
    f = zt._File(p)
    for name, want in t.items():
        engine = LateCopies()
        got = f.one(name, "cpu", staging=zt._Staging(engine, 2, buffer_bytes))
        nbytes = want.numel() * want.element_size()
        if nbytes > buffer_bytes:
            assert got is None and engine.buffers == [], name
            assert same(ring(f, [name], "cpu", zt._Staging(engine, 2, buffer_bytes))[name], want), name
            continue
        assert same(got, want), name
        assert (engine.buffers, engine.copies, engine.done) == (([nbytes], 1, 1) if nbytes else ([], 0, 0)), name
    # A rank's rows (one run of the bytes) and its columns (a box of runs)
    # the same way; steps are load()'s.
    for key in ((slice(100, 110),), 7, (slice(None), slice(5, 9)), (slice(None), slice(0, 9, 2))):
        engine = LateCopies()
        got = f.one("big.1", "cpu", key, zt._Staging(engine, 2, buffer_bytes))
        want = t["big.1"][key].contiguous()
        if (type(key) is tuple and key[-1].step) or want.numel() * 2 > buffer_bytes:
            assert got is None and engine.buffers == [], key
        else:
            assert same(got, want) and engine.copies == 1, key
    # Refused as the CPU load refuses: a reader's cap under a zstd tensor's size.
    with pytest.raises(ztensor.Error) as e:
        zt._File(p, max_decoded_bytes=1024).one("big.0", "cpu", staging=zt._Staging(LateCopies(), 2, 1 << 20))
    assert e.value.status_name == "ZT_ERR_LIMIT"


def test_a_tensor_at_a_time_refuses_as_load_file_does(tmp_path):
    # A bool byte of 7 (1.1 and later refuse it), and a reader's cap under
    # the tensor's size (zstd: the cap is on what a component decodes to).
    p = tmp_path / "b.zt"
    with ztensor.Writer(p, digest="none") as w:
        w.add("flags", np.arange(24) % 2 == 1)
    with ztensor.open(p) as f:
        at = f.manifest["objects"]["flags"]["components"]["data"]["offset"]
    data = bytearray(p.read_bytes())
    data[at + 5] = 7
    p.write_bytes(bytes(data))
    with pytest.raises(ztensor.Error) as whole:
        zt.load_file(p)
    for one in (lambda f: f.get_tensor("flags"), lambda f: f.get_slice("flags")[...]):
        with zt.safe_open(p, "pt") as f, pytest.raises(ztensor.Error) as e:
            one(f)
        assert (e.value.status_name, str(e.value)) == (whole.value.status_name, str(whole.value))
    assert "bool byte 0x07" in str(whole.value)
    # Columns (a box of runs: zt_dense_slice into the tensor), with the bad
    # byte at [3, 1] inside the box and outside it.
    with ztensor.Writer(p, digest="none") as w:
        w.add("flags", np.arange(24).reshape(4, 6) % 2 == 1)
    with ztensor.open(p) as f:
        at = f.manifest["objects"]["flags"]["components"]["data"]["offset"]
    data = bytearray(p.read_bytes())
    data[at + 19] = 7
    p.write_bytes(bytes(data))
    for key in ((slice(None), slice(1, 3)), (slice(None), slice(2, 4))):
        try:
            want = zt.load_file(p, slices={"flags": key})["flags"]
        except ztensor.Error as refused:
            with zt.safe_open(p, "pt") as f, pytest.raises(ztensor.Error) as e:
                f.get_slice("flags")[key]
            assert (e.value.status_name, str(e.value)) == (refused.status_name, str(refused))
            assert key[1].start == 1 and "bool byte 0x07" in str(refused)
            continue
        assert key[1].start == 2
        with zt.safe_open(p, "pt") as f:
            assert same(f.get_slice("flags")[key], want)
    # In 0.1 files any non-zero byte is true: the tensor holds 1 there.
    index = _cbor.dumps([{"name": "flags", "offset": 64, "size": 4, "dtype": "bool", "shape": [4],
                          "encoding": "raw"}])
    p.write_bytes(b"ZTEN0001".ljust(64, b"\0") + bytes([0, 7, 1, 0]) + index + struct.pack("<Q", len(index)))
    assert zt.load_file(p)["flags"].view(torch.uint8).tolist() == [0, 1, 1, 0]
    with zt.safe_open(p, "pt") as f:
        assert same(f.get_tensor("flags"), zt.load_file(p)["flags"])
        assert same(f.get_slice("flags")[...], zt.load_file(p)["flags"])
    zt.save_file({"w": torch.randn(512, 1024)}, p, encoding="zstd")
    for cap in (65536, 4 << 20):
        with zt.safe_open(p, "pt", max_decoded_bytes=cap) as f:
            if cap < 2 << 20:
                with pytest.raises(ztensor.Error) as e:
                    f.get_tensor("w")
                assert e.value.status_name == "ZT_ERR_LIMIT"
            else:
                assert same(f.get_tensor("w"), zt.load_file(p)["w"])


@pytest.mark.parametrize("buffer_bytes", [64, 4096])
def test_a_box_in_the_ring_refuses_as_the_cpu_load_does(tmp_path, buffer_bytes):
    # A bool byte of 7 at [3, 1] (as test_torch.py makes one), inside one
    # box and outside the other.
    p = tmp_path / "m.zt"
    with ztensor.Writer(p, digest="none") as w:
        w.add("flags", np.arange(24).reshape(4, 6) % 2 == 1)
    with ztensor.open(p) as f:
        part = f.manifest["objects"]["flags"]["components"]["data"]
    data = bytearray(p.read_bytes())
    data[part["offset"] + 19] = 7
    p.write_bytes(bytes(data))
    key = {"flags": (slice(None), slice(2, 4))}
    got = zt._load_all(zt._File(p), "cpu", zt._Staging(LateCopies(), 2, buffer_bytes, 1), key)
    assert same(got["flags"], zt.load_file(p, slices=key)["flags"])  # the bad byte lies outside the box
    key = {"flags": (slice(None), slice(1, 3))}
    with pytest.raises(ztensor.Error) as cpu:
        zt.load_file(p, slices=key)
    with pytest.raises(ztensor.Error) as ring:
        zt._load_all(zt._File(p), "cpu", zt._Staging(LateCopies(), 2, buffer_bytes, 1), key)
    assert ring.value.status_name == cpu.value.status_name == "ZT_ERR_INVALID"
    assert "bool byte 0x07" in str(ring.value) and "bool byte 0x07" in str(cpu.value)
    # Under a reader's cap below the tensor's size, small and large boxes
    # (from 1 MiB on a load asks the library before it allocates) read the
    # same through the ring as on the CPU: raw bytes are the file's own.
    t = torch.randn(1024, 512)
    zt.save_file({"w": t}, p)
    for key in ({"w": (slice(None), slice(8, 16))}, {"w": (slice(None), slice(0, 384))}):
        cpu = zt.load_file(p, slices=key, max_decoded_bytes=65536)
        ring = zt._load_all(zt._File(p, max_decoded_bytes=65536), "cpu",
                            zt._Staging(LateCopies(), 2, buffer_bytes, 1), key)
        assert same(ring["w"], cpu["w"]) and same(cpu["w"], t[key["w"]].contiguous())
    # zstd over the cap: what a box would decode is refused both ways.
    zt.save_file({"w": t}, p, encoding="zstd")
    for key in ({"w": (slice(None), slice(8, 16))}, {"w": (slice(None), slice(0, 384))}):
        with pytest.raises(ztensor.Error) as cpu:
            zt.load_file(p, slices=key, max_decoded_bytes=65536)
        with pytest.raises(ztensor.Error) as ring:
            zt._load_all(zt._File(p, max_decoded_bytes=65536), "cpu",
                         zt._Staging(LateCopies(), 2, buffer_bytes, 1), key)
        assert ring.value.status_name == cpu.value.status_name == "ZT_ERR_LIMIT"


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_get_slice_reads_rows_as_load_file_does(tmp_path, monkeypatch, encoding):
    t = model(7)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096)
    sliced = []
    through_slice = zt._File.slice
    monkeypatch.setattr(zt._File, "slice", lambda f, name, key: sliced.append(name) or through_slice(f, name, key))
    boxes = []
    into = ztensor.File._slice_into
    monkeypatch.setattr(ztensor.File, "_slice_into", lambda f, i, *a: boxes.append(i) or into(f, i, *a))
    with zt.safe_open(p, framework="pt") as f:
        assert same(f.get_slice("big.1")[100:200], t["big.1"][100:200])  # one run: zt_decode_ranges
        assert same(f.get_slice("big.1")[7], t["big.1"][7])
        assert sliced == [] and boxes == []
        assert same(f.get_slice("big.1")[:, 5:9], t["big.1"][:, 5:9].contiguous())  # a box of runs
        assert sliced == [] and len(boxes) == 1  # zt_dense_slice straight into the tensor
        assert same(f.get_slice("big.1")[::2, 5:9], t["big.1"][::2, 5:9].contiguous())  # steps
        assert sliced == ["big.1"]


def test_slices_read_side_by_side_raise_the_first_error(tmp_path):
    # Boxes that are not one run (columns; a packed FP4 object, which loads
    # as values) are read on threads of their own; the first one's error
    # (in the order of the names) is raised.
    t = model(6)
    p = tmp_path / "m.zt"
    with ztensor.Writer(p, file_version=2) as w:
        for k in ("big.0", "big.1", "big.2"):
            w.add(k, t[k].view(torch.int16).numpy().view(np.uint16), dtype="bf16")
        w.add_object("fp4", "dense", (4,), {"data": (np.array([0x21, 0x43], np.uint8), "u8", "f4_e2m1")})
    columns = {f"big.{i}": (slice(None), slice(3, 9)) for i in range(3)}
    got = zt.load_file(p, slices={**columns, "fp4": slice(1, 4)})
    assert all(same(got[k], t[k][key].contiguous()) for k, key in columns.items())
    assert got["fp4"].tolist() == [1.0, 1.5, 2.0]
    with pytest.raises(IndexError, match="too many indices"):
        zt.load_file(p, slices={**columns, "fp4": (0, 0)})


class LateCopies:
    """A copy engine that copies only when waited on (a slow device): a
    buffer refilled before its copies were waited for gives wrong bytes.
    Records what the pipeline asked of it."""

    def __init__(self):
        self.buffers, self.queue, self.done, self.copies, self.bytes = [], [], 0, 0, 0
        self.started = False

    def start(self):
        assert self.buffers and not self.queue  # after the ring, before any copy
        self.started = True

    def buffer(self, nbytes):
        self.buffers.append(nbytes)
        return torch.empty(nbytes, dtype=torch.uint8)

    def copy(self, dst, src):
        assert self.started and dst.numel() == src.numel() > 0
        self.queue.append((dst, src))
        self.copies += 1
        self.bytes += dst.numel()

    def record(self):
        return len(self.queue)

    def wait(self, token):
        for dst, src in self.queue[self.done:token]:
            dst.copy_(src)
        self.done = max(self.done, token)

    def finish(self):
        self.wait(len(self.queue))


@pytest.mark.parametrize("version", [None, 2])
@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("buffers,buffer_bytes,ahead", [(2, 4096, 1), (3, 10_000, 1), (1, 64, 1), (2, 1 << 20, 1),
                                                       (3, 4096, 2), (4, 3000, 3), (2, 4096, 5), (3, 4096, 0)])
@pytest.mark.parametrize("copy", [True, False])
def test_staged_load_through_a_late_engine(tmp_path, encoding, buffers, buffer_bytes, ahead, version, copy):
    t = model(1)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096, file_version=version)
    engine = LateCopies()
    f = zt._File(p, copy=copy)
    got = zt._load_all(f, "cpu", zt._Staging(engine, buffers, buffer_bytes, ahead))
    assert sorted(got) == sorted(t)
    bad = [k for k in t if not same(got[k], t[k])]
    assert not bad
    # Host memory: the ring, never more buffers than asked, none larger.
    assert 1 <= len(engine.buffers) <= buffers
    assert all(n <= buffer_bytes for n in engine.buffers)
    total = sum(v.numel() * v.element_size() for v in t.values())
    if buffer_bytes < total:
        assert len(engine.buffers) == buffers  # the ring was used whole


def mapped_resident_bytes(path):
    """Resident bytes of this process's mappings of `path` (smaps Rss)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                inside = len(head) >= 6 and head[5] == str(path)
            elif inside and head and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total


class RssWatchingCopies(LateCopies):
    """LateCopies noting, at each copy, how much of the file is mapped in."""

    def __init__(self, path):
        super().__init__()
        self.path, self.most = path, 0

    def copy(self, dst, src):
        self.most = max(self.most, mapped_resident_bytes(self.path))
        super().copy(dst, src)


def test_a_staged_load_maps_no_page_of_raw_data(tmp_path, monkeypatch):
    # Through the ring every byte is copied anyway: raw tensors of 64 KiB or
    # more are read with pread, so none of their pages counts in the
    # process's resident memory, though the file is mapped (for zstd frames).
    g = torch.Generator().manual_seed(3)
    t = {f"w.{i}": torch.randn(256, 256, generator=g) for i in range(16)}  # 16 x 256 KiB
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    engine = RssWatchingCopies(p)
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=1 << 20)
    assert all(same(got[k], t[k]) for k in t)
    assert engine.bytes >= 16 * 256 * 1024  # every tensor went through the ring
    # The header and manifest pages only (17 pages here), not the 4 MiB of data.
    assert engine.most <= 256 * 1024, f"{engine.most} bytes of the file mapped in during the load"


def test_a_staged_load_shares_out_a_zstd_files_frames(tmp_path, monkeypatch):
    # The ring's pieces of a zstd tensor are ranges of it: with the file
    # mapped they decode frame by frame on every core (opened copy=True, a
    # piece decoded its whole component on one thread).
    from ztensor import _reader
    g = torch.Generator().manual_seed(4)
    t = {f"w.{i}": torch.randn(1024, 700, generator=g).to(torch.bfloat16) for i in range(3)}  # 1.4 MiB each
    p = tmp_path / "z.zt"
    zt.save_file(t, p, encoding="zstd")
    opened = []
    real_open = _reader.open

    def recording_open(path, **kw):
        opened.append(kw.get("copy", False))
        return real_open(path, **kw)

    monkeypatch.setattr(_reader, "open", recording_open)
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(LateCopies(), b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=300 * 1024)  # pieces cut inside frames
    assert opened == [False] and all(same(got[k], t[k]) for k in t)


class LateManyCopies(LateCopies):
    """The same engine, taking a batch's copies in one call (as CudaCopies
    does with torch._foreach_copy_)."""

    def copy_many(self, dsts, srcs):
        assert len(dsts) == len(srcs) > 0
        for d, s in zip(dsts, srcs):
            self.copy(d, s)


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("buffers", [1, 2, 3])
def test_staged_load_with_batched_copies(tmp_path, encoding, buffers):
    t = model(7)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096)
    engine = LateManyCopies()
    got = zt._load_all(zt._File(p, copy=True), "cpu", zt._Staging(engine, buffers, 4096))
    assert all(same(got[k], t[k]) for k in t) and engine.copies > len(t) - 1


def test_the_next_batch_decodes_while_this_ones_copies_are_issued(tmp_path):
    import threading
    t = model(8)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    f = zt._File(p, copy=True)
    real, calls = f.f._decode_columns, []
    second_started = threading.Event()

    def decode(*columns, threads=0):
        calls.append(threading.get_ident())
        if len(calls) == 2:
            second_started.set()
        return real(*columns, threads)

    class Waiting(LateCopies):
        def copy(self, dst, src):
            # Batch 0's copies are issued only after batch 1's decode began.
            assert second_started.wait(5), "batch 1 was not decoding while batch 0's copies were issued"
            super().copy(dst, src)

    f.f._decode_columns = decode
    engine = Waiting()
    got = zt._load_all(f, "cpu", zt._Staging(engine, 2, 4096))
    assert all(same(got[k], t[k]) for k in t)
    # Every batch on one worker, none on this thread.
    assert len(calls) > 2 and len(set(calls)) == 1 and calls[0] != threading.get_ident()


def test_one_ahead_a_worker_decodes_the_batches_back_to_back():
    # ahead=1: the worker goes on to the next batch by itself, as soon as
    # its buffer is free, one decode at a time: with 3 buffers, batches 1
    # and 2 are decoded while this thread is still issuing batch 0's copies.
    items = [_staging.Item(i, 4096, torch.empty(4096, dtype=torch.uint8)) for i in range(8)]
    started = [threading.Event() for _ in items]
    lock, inside, most, order = threading.Lock(), [0], [0], []

    def decode(objects, role, offsets, addresses, lengths):
        k = int(objects[0])
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        order.append(k)
        started[k].set()
        with lock:
            inside[0] -= 1

    class Waiting(LateCopies):
        def copy(self, dst, src):
            if self.copies == 0:
                assert started[2].wait(5), "batch 2 waited for batch 0's copies to be issued"
            super().copy(dst, src)

    engine = Waiting()
    _staging.load(decode, items, engine, 3, 4096, ahead=1)
    assert order == list(range(8)) and most[0] == 1 and engine.copies == 8
    assert engine.done == len(engine.queue)


def test_one_ahead_the_worker_waits_for_its_buffers_copies():
    # A batch goes into the buffer of the batch `buffers` before it only
    # once that batch's copies are done: the late engine gives wrong bytes
    # otherwise, and the waits happen on the worker.
    items = [_staging.Item(i, 4096, torch.empty(4096, dtype=torch.uint8)) for i in range(6)]

    def decode(objects, role, offsets, addresses, lengths):
        for index, address, n in zip(objects.tolist(), addresses.tolist(), lengths.tolist()):
            ctypes.memset(address, index + 1, n)

    class Watched(LateCopies):
        def __init__(self):
            super().__init__()
            self.waiters = set()

        def wait(self, token):
            self.waiters.add(threading.get_ident())
            super().wait(token)

        def finish(self):
            LateCopies.wait(self, len(self.queue))

    engine = Watched()
    _staging.load(decode, items, engine, 2, 4096, ahead=1)
    assert all(bool((it.dst == k + 1).all()) for k, it in enumerate(items))
    assert len(engine.waiters) == 1 and threading.get_ident() not in engine.waiters


def test_one_ahead_a_failure_on_either_thread_ends_the_load():
    # The worker's own failure (waiting for a buffer) reaches the caller,
    # and a failure of this thread's (issuing copies) stops the worker
    # before its next batch: no decode runs once load() has returned.
    items = [_staging.Item(i, 4096, torch.empty(4096, dtype=torch.uint8)) for i in range(8)]
    decodes = []

    class FailingWait(LateCopies):
        def wait(self, token):
            if token == 3:
                raise RuntimeError("the device is gone")
            super().wait(token)

    class FailingCopy(LateCopies):
        def copy(self, dst, src):
            if self.copies == 3:
                raise RuntimeError("no copy today")
            super().copy(dst, src)

    for engine, message in ((FailingWait(), "device is gone"), (FailingCopy(), "no copy today")):
        box = []

        def run():
            try:
                _staging.load(lambda objects, *_: decodes.append(int(objects[0])), items, engine, 2, 4096, ahead=1)
            except RuntimeError as e:
                box.append(e)

        decodes.clear()
        runner = threading.Thread(target=run)
        runner.start()
        runner.join(10)
        assert not runner.is_alive(), "the load hung"
        assert box and message in str(box[0])
        seen = len(decodes)
        assert seen < len(items) and not [x for x in threading.enumerate() if x.name.startswith("zt-staging")]
        assert len(decodes) == seen


def test_plan_batches_small_tensors_and_splits_large_ones():
    sizes = [10, 10, 300, 0, 5]
    batches = _staging.plan(sizes, 128)
    assert [pieces(b) for b in batches] == [
        [(0, 0, 10, 0), (1, 0, 10, 64)],  # small ones share a buffer, 64-aligned
        [(2, 0, 128, 0)],                 # a large one is split
        [(2, 128, 128, 0)],
        [(2, 256, 44, 0), (4, 0, 5, 64)],  # its tail shares; the empty item has no piece
    ]
    # Every byte of every item once, no piece past its buffer's end.
    for n in (64, 100, 4096):
        seen = {k: 0 for k in range(len(sizes))}
        for b in _staging.plan(sizes, n):
            for item, offset, nbytes, at in pieces(b):
                assert at + nbytes <= n and at % 64 == 0
                assert offset == seen[item]
                seen[item] += nbytes
        assert [seen[k] for k in range(len(sizes))] == sizes
    with pytest.raises(ValueError):
        _staging.plan(sizes, 10)
    assert _staging.plan([], 128) == _staging.plan([0, 0], 128) == []


def pieces(batch):
    """A batch's pieces as (item, offset, nbytes, at) tuples."""
    return list(zip(*(column.tolist() for column in batch)))


def plan_a_piece_at_a_time(sizes, buffer_bytes):
    """What _staging.plan gives, found the plain way (its first form)."""
    batches, batch, at = [], [], 0
    for k, size in enumerate(sizes):
        offset = 0
        while offset < size:
            if at >= buffer_bytes:
                batches.append(batch)
                batch, at = [], 0
            n = min(size - offset, buffer_bytes - at)
            batch.append((k, offset, n, at))
            offset += n
            at = zt._block_places.aligned(at + n)
    return batches + [batch] if batch else batches


def test_plan_is_the_plain_packing_of_the_items():
    import random
    rng = random.Random(1)
    for _ in range(2000):
        size = rng.choice([64, 128, 320, 4096, 1 << 20])
        sizes = [rng.choice([0, 1, 63, 64, 65, 1000, 5000, rng.randint(0, 3 * size)])
                 for _ in range(rng.randint(0, 30))]
        assert [pieces(b) for b in _staging.plan(sizes, size)] == plan_a_piece_at_a_time(sizes, size), (size, sizes)


def test_batches_decoded_ahead_run_at_once():
    # ahead=2: while batch k's copies are issued, batches k + 1 and k + 2
    # are decoded on two workers at once (each decode here waits, up to a
    # limit, for another to be under way).
    import threading
    import time
    items = [_staging.Item(i, 4096, torch.empty(4096, dtype=torch.uint8)) for i in range(12)]
    lock, inside, most = threading.Lock(), [0], [0]

    def decode(*columns):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        until = time.monotonic() + 2
        while most[0] < 2 and time.monotonic() < until:
            time.sleep(0.001)
        with lock:
            inside[0] -= 1

    engine = LateCopies()
    _staging.load(decode, items, engine, 3, 4096, ahead=2)
    assert most[0] >= 2 and engine.copies == 12
    with pytest.raises(ValueError):
        _staging.load(decode, items, LateCopies(), 3, 4096, ahead=-1)


def test_the_ring_takes_its_later_buffers_while_the_first_batches_move(tmp_path):
    # Pinning a buffer is slow (a first load's largest cost): buffers after
    # the first are taken on threads of their own, at once.
    import time

    class SlowBuffers(LateCopies):
        def buffer(self, nbytes):
            time.sleep(0.3)
            return super().buffer(nbytes)

    t = model(5)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    engine = SlowBuffers()
    start = time.monotonic()
    got = zt._load_all(zt._File(p), "cpu", zt._Staging(engine, 4, 4096, 3))
    took = time.monotonic() - start
    assert all(same(got[k], t[k]) for k in t) and len(engine.buffers) == 4
    assert took < 4 * 0.3 - 0.3, f"{took:.2f} s: the four buffers were taken one after another"

    class FailingBuffers(LateCopies):
        def buffer(self, nbytes):
            if self.buffers:
                raise MemoryError("no pinned memory left")
            return super().buffer(nbytes)

    with pytest.raises(MemoryError, match="no pinned memory"):
        zt._load_all(zt._File(p), "cpu", zt._Staging(FailingBuffers(), 3, 4096))


def test_a_failed_decode_still_waits_for_the_copies(tmp_path):
    t = model(2)
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    engine = LateCopies()
    calls = []

    def decode(*columns):
        calls.append(columns)
        if len(calls) == 2:
            raise ztensor.Error(3, "broken")

    items = [_staging.Item(i, v.numel() * v.element_size(), v.clone()) for i, v in enumerate(t.values())]
    with pytest.raises(ztensor.Error):
        _staging.load(decode, items, engine, 2, 4096)
    assert engine.done == len(engine.queue) > 0  # finish() ran: no copy reads a buffer later


class Net(torch.nn.Module):
    """Parameters and buffers of several dtypes, a tied weight, and one
    parameter stored transposed (not contiguous)."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.embed = torch.nn.Embedding(50, 16)
        self.proj = torch.nn.Linear(16, 24).to(dtype)
        self.norm = torch.nn.BatchNorm1d(24)  # buffers: running stats, an int64 count
        self.head = torch.nn.Linear(16, 50, bias=False)
        self.head.weight = self.embed.weight
        self.t = torch.nn.Parameter(torch.randn(12, 8).t())


def destinations(monkeypatch):
    """The destination addresses of every zt_decode_ranges request."""
    seen = []
    real = ztensor.File._decode_columns

    def recording(self, objects, roles, offsets, addresses, lengths, threads=0):
        seen.extend(addresses)
        return real(self, objects, roles, offsets, addresses, lengths, threads)

    monkeypatch.setattr(ztensor.File, "_decode_columns", recording)
    return seen


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("staged", [False, True])
def test_load_model_decodes_into_the_parameters(tmp_path, monkeypatch, encoding, staged):
    torch.manual_seed(0)
    src = Net()
    src.norm.running_mean.uniform_()
    src.norm.num_batches_tracked += 7
    p = tmp_path / "m.zt"
    zt.save_model(src, p, encoding=encoding, frame_size=4096)
    dst = Net()
    places = {k: v.data_ptr() for k, v in dst.state_dict(keep_vars=True).items()}
    if staged:  # the CUDA path's ring, with a CPU engine that copies late
        engine = LateCopies()
        monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, 4096))
    seen = destinations(monkeypatch)
    assert zt.load_model(dst, p) == ([], [])
    for k, v in src.state_dict().items():
        assert same(dst.state_dict()[k], v), k
        assert dst.state_dict()[k].data_ptr() == places[k], k  # the model's own memory
    assert dst.head.weight is dst.embed.weight
    filled = [places[k] for k in ("embed.weight", "proj.weight", "norm.running_mean")]
    if staged:
        assert engine.copies and not set(filled) & set(seen)  # through the ring
    else:
        assert set(filled) <= set(seen)  # decoded straight into the parameters
    assert "t" in src.state_dict() and places["t"] not in seen  # not contiguous: copied
    dst.proj(torch.ones(2, 16)).sum().backward()  # still parameters that learn
    assert dst.proj.weight.grad is not None


class Plain(torch.nn.Module):
    """Modules that load the default way (no BatchNorm)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.proj = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight


def test_load_model_hands_load_state_dict_only_what_it_must(tmp_path, monkeypatch):
    # Tensors filled in place are not handed to load_state_dict where it
    # would only copy them onto themselves; what it reports is the same.
    torch.manual_seed(2)
    src = Plain()
    p = tmp_path / "m.zt"
    zt.save_model(src, p)
    dst = Plain()
    handed = []
    real = torch.nn.Module.load_state_dict

    def recording(self, state_dict, strict=True, **kw):
        handed.append(sorted(state_dict))
        return real(self, state_dict, strict, **kw)

    monkeypatch.setattr(torch.nn.Module, "load_state_dict", recording)
    assert zt.load_model(dst, p) == ([], [])
    assert handed == [[]]
    for k, v in src.state_dict().items():
        assert same(dst.state_dict()[k], v), k
    assert dst.head.weight is dst.embed.weight

    class Wider(Plain):
        def __init__(self):
            super().__init__()
            self.extra = torch.nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match='Missing key.*"extra.weight", "extra.bias"'):
        zt.load_model(Wider(), p)
    assert zt.load_model(Wider(), p, strict=False) == (["extra.weight", "extra.bias"], [])

    # A load hook sees every tensor, as load_state_dict alone would show it.
    hooked, seen = Plain(), []
    hooked.proj._register_load_state_dict_pre_hook(lambda sd, prefix, *a: seen.extend(sorted(sd)))
    handed.clear()
    assert zt.load_model(hooked, p) == ([], [])
    assert handed == [sorted(src.state_dict())] and "proj.weight" in seen
    assert same(hooked.proj.weight, src.proj.weight)


def test_load_model_converts_what_does_not_fit(tmp_path, monkeypatch):
    torch.manual_seed(1)
    src = Net()
    p = tmp_path / "m.zt"
    zt.save_model(src, p)
    dst = Net(torch.float64)  # proj in another dtype: load_state_dict converts
    seen = destinations(monkeypatch)
    assert zt.load_model(dst, p, mmap=True) == ([], [])
    assert dst.proj.weight.dtype == torch.float64
    assert torch.equal(dst.proj.weight, src.proj.weight.double())
    assert dst.proj.weight.data_ptr() not in seen
    assert torch.equal(dst.embed.weight, src.embed.weight)
    assert dst.embed.weight.data_ptr() in seen  # filled, not mapped, with mmap=True


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the real-GPU load is not run")
@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_cuda_load_matches_the_cpu_load(tmp_path, encoding):
    t = model(3)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding, frame_size=4096)
    got = zt.load_file(p, device="cuda", staging_bytes=4096)
    for k in t:
        assert got[k].device.type == "cuda"
        assert same(got[k].cpu(), t[k]), k
    with zt.safe_open(p, framework="pt", device="cuda") as f:
        assert same(f.get_tensor("big.0").cpu(), t["big.0"])
        for k in t:  # a tensor at a time: one staging buffer and one copy each (_File.one)
            got = f.get_tensor(k)
            assert got.device.type == "cuda" and same(got.cpu(), t[k]), k
            assert same(f.get_slice(k)[...].cpu(), t[k]), k
        assert same(f.get_slice("big.1")[100:110].cpu(), t["big.1"][100:110])  # a rank's rows, one copy
        assert same(f.get_slice("big.1")[:, 5:9].cpu(), t["big.1"][:, 5:9].contiguous())  # columns, one copy
    part = zt.load_file(p, device="cuda", slices={"big.2": (slice(0, 10),)})["big.2"]
    assert part.device.type == "cuda" and same(part.cpu(), t["big.2"][:10])
    # A rank's columns, through the ring.
    columns = {f"big.{i}": (slice(None), slice(64, 128)) for i in range(3)}
    got = zt.load_file(p, device="cuda", staging_bytes=4096, slices=columns)
    for k, key in columns.items():
        assert got[k].device.type == "cuda" and same(got[k].cpu(), t[k][key].contiguous()), k


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the real-GPU load is not run")
def test_a_cuda_load_from_registered_pages_matches_the_cpu_load(tmp_path, monkeypatch):
    # _REGISTERED_LOADS on a real device: cudaHostRegister of the mapping's
    # chunks, copies from there (a zstd file and a rank's columns through
    # the ring).
    from ztensor import _registered
    monkeypatch.setattr(zt, "_REGISTERED_LOADS", True)
    monkeypatch.setattr(_registered, "CHUNK_BYTES", 256 << 10)
    t = model(3)
    for encoding in ("raw", "zstd"):
        p = tmp_path / f"m-{encoding}.zt"
        zt.save_file(t, p, encoding=encoding, frame_size=4096)
        got = zt.load_file(p, device="cuda", staging_bytes=1 << 20)
        assert all(got[k].is_cuda and same(got[k].cpu(), t[k]) for k in t), encoding
        columns = {f"big.{i}": (slice(None), slice(64, 128)) for i in range(3)}
        got = zt.load_file(p, device="cuda", slices=columns)
        assert all(same(got[k].cpu(), t[k][key].contiguous()) for k, key in columns.items()), encoding


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the real-GPU load is not run")
def test_a_cuda_load_carves_small_tensors_out_of_device_blocks(tmp_path):
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    got = zt.load_file(p, device="cuda")
    assert all(got[k].is_cuda and same(got[k].cpu(), t[k]) for k in t)
    small = [got[f"w.{i}"] for i in range(8)] + [got[f"b.{i}"] for i in range(5)]
    first = small[0].data_ptr()
    assert all(a.data_ptr() - first < 4 << 20 for a in small)  # one block
    assert all(storage_bytes(a) == a.numel() * 4 for a in small)
    kept = got.pop("b.4")
    del got, small
    torch.cuda.synchronize()
    assert same(kept.cpu(), t["b.4"])


def _hf_checkpoint(folder, tensors, quantization_config):
    """A Hugging Face checkpoint folder: model.safetensors of (name,
    safetensors dtype, numpy array) written by hand, and config.json."""
    import json
    folder.mkdir()
    header, offset, blobs = {}, 0, []
    for name, dtype, a in tensors:
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    (folder / "config.json").write_text(json.dumps({"quantization_config": quantization_config}))


def _quantized_checkpoints(tmp_path):
    """A GPTQ layer (qweight, qzeros, scales, g_idx) and a compressed-tensors
    pack-quantized one (its weight_shape is the object's shape), each beside
    a dense bias: folder -> {name: (safetensors dtype, array)}."""
    rng = np.random.default_rng(9)
    gptq = [("l.qweight", "I32", rng.integers(-2**31, 2**31, (4, 16)).astype("<i4")),
            ("l.qzeros", "I32", rng.integers(-2**31, 2**31, (2, 2)).astype("<i4")),
            ("l.scales", "F16", (rng.standard_normal((2, 16)) * 0.01).astype("<f2")),
            ("l.g_idx", "I32", (np.arange(32) // 16).astype("<i4")),
            ("l.bias", "F32", rng.standard_normal(16).astype("<f4"))]
    _hf_checkpoint(tmp_path / "gptq", gptq, {"quant_method": "gptq", "bits": 4, "group_size": 16})
    packed = [("l.weight_packed", "I32", rng.integers(-2**31, 2**31, (8, 2)).astype("<i4")),
              ("l.weight_scale", "F16", (rng.standard_normal((8, 1)) * 0.01).astype("<f2")),
              ("l.weight_shape", "I64", np.array([8, 16], "<i8")),
              ("l.bias", "F32", rng.standard_normal(8).astype("<f4"))]
    _hf_checkpoint(tmp_path / "packed", packed, {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                            "strategy": "channel"}}}})
    torch_of = {"I32": torch.int32, "I64": torch.int64, "F16": torch.float16, "F32": torch.float32}
    return {tmp_path / "gptq": {n: (torch_of[d], a) for n, d, a in gptq},
            tmp_path / "packed": {n: (torch_of[d], a) for n, d, a in packed}}


def _as_zt(folder, out):
    """The folder's objects copied into a v2 .zt by the Python writer,
    attributes (hf.tensors) included."""
    with ztensor.File(folder, allow_foreign=True) as f, ztensor.Writer(out, file_version=2) as w:
        for name in f:
            info = f.info(name)
            parts = {role: (f.component(name, role), c.dtype, c.type) for role, c in info.components.items()}
            w.add_object(name, info.format, info.shape, parts, encoding="zstd",
                         attributes=info.attributes or None)
    return out


def test_quantized_layers_load_as_the_checkpoint_or_dequantized(tmp_path):
    """A quantized Hugging Face layer is one object; ztensor.torch loads it
    as the checkpoint's own tensors (names, dtypes, shapes, bytes: what
    safetensors gives) by default, as its values with
    quantized="dequantize", from the checkpoint folder and from a .zt."""
    for folder, want in _quantized_checkpoints(tmp_path).items():
        for source, opts in ((folder, {"allow_foreign": True}),
                             (_as_zt(folder, tmp_path / f"{folder.name}.zt"), {})):
            got = zt.load_file(source, **opts)
            assert set(got) == set(want), source
            for name, (dtype, a) in want.items():
                assert same(got[name], torch.from_numpy(a.copy()).to(dtype)), (source, name)
            with zt.safe_open(source, "pt", **opts) as f:
                assert sorted(f.keys()) == sorted(want)
                for name, (dtype, a) in want.items():
                    assert same(f.get_tensor(name), torch.from_numpy(a.copy()).to(dtype)), (source, name)
                with pytest.raises(KeyError):
                    f.get_tensor("l.weight")
            values = zt.load_file(source, quantized="dequantize", **opts)
            assert set(values) == {"l.weight", "l.bias"}
            with ztensor.File(source, **opts) as f:
                np.testing.assert_array_equal(values["l.weight"].numpy(), f.decode("l.weight"))
            assert values["l.weight"].dtype == torch.float32
    with pytest.raises(ValueError, match="quantized"):
        zt.load_file(tmp_path / "gptq", allow_foreign=True, quantized="parts")


def test_requests_built_as_ctypes_structs_read_the_same_bytes(tmp_path, monkeypatch):
    # Where numpy's record layout does not match zt_decode_range (not on
    # 64-bit little-endian Linux), the requests are ctypes structs set one
    # by one: the same tensors, and ranges from their own offsets.
    t = {f"a{i}": torch.randn(100 + i) for i in range(50)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(ztensor._reader, "_RANGE_DTYPE", None)
    got = zt.load_file(p)
    assert list(got) == list(t) and all(same(got[k], t[k]) for k in t)
    f = ztensor.open(p)
    out = np.zeros(10, np.float32)
    f._decode_ranges([(f._index("a3"), "data", 8, out.ctypes.data, 40)])
    assert np.array_equal(out, t["a3"].numpy()[2:12])


# ---------------------------------------------------------------------------
# what a file claims, checked before it is used


class SyncCopies(LateCopies):
    """The staging pipeline's CPU engine, copying at once."""

    def copy(self, dst, src):
        dst.copy_(src)

    def record(self):
        return None

    def wait(self, token):
        pass

    def finish(self):
        pass


def claiming(p, elements):
    """A 1.2 file whose zstd object "a" claims `elements` float32 values in a
    few bytes (no digest), beside a plain "y"."""
    with ztensor.Writer(p, digest="none") as w:
        w.add("a", np.arange(1000, dtype=np.float32), encoding="zstd")
        w.add("y", np.ones(4, np.float32))
    data = p.read_bytes()
    n = struct.unpack("<Q", data[-16:-8])[0]
    manifest = _cbor.loads(data[-16 - n:-16])
    manifest["objects"]["a"]["shape"] = [elements]
    manifest["objects"]["a"]["components"]["data"]["uncompressed_length"] = 4 * elements
    body = _cbor.dumps(manifest)
    p.write_bytes(data[:-16 - n] + body + struct.pack("<Q", len(body)) + data[-8:])
    return p


def every_torch_load(p, **options):
    """name -> a call that loads object "a" of p, one for each way ztensor.torch has."""
    class Y(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.y = torch.nn.Parameter(torch.zeros(4))

    def get_tensor(mmap=False):
        with zt.safe_open(p, "pt", mmap=mmap, **options) as s:
            return s.get_tensor("a")

    return {
        "load_file": lambda: zt.load_file(p, **options),
        "load_file mmap": lambda: zt.load_file(p, mmap=True, **options),
        "staged": lambda: zt._load_all(zt._File(p, **options), "cpu", zt._Staging(SyncCopies(), 2, 4096)),
        "load": lambda: zt.load(p.read_bytes(), **options),
        "get_tensor": get_tensor,
        "get_tensor mmap": lambda: get_tensor(True),
        "get_slice": lambda: zt.safe_open(p, "pt", **options).get_slice("a")[0:4],
        "get_slice whole": lambda: zt.safe_open(p, "pt", **options).get_slice("a")[...],
        "get_slice all rows": lambda: zt.safe_open(p, "pt", **options).get_slice("a")[:],
        "load_model": lambda: zt.load_model(Y(), p, strict=False, **options),
    }


@pytest.mark.parametrize("elements", [2 ** 40, 2 ** 61])
def test_a_claimed_size_over_the_cap_is_the_librarys_limit_on_every_load(tmp_path, elements):
    # 4 TiB (or 8 EiB, which torch cannot even size) claimed by ten bytes of
    # zstd: torch.empty / np.empty of it failed with RuntimeError or
    # MemoryError before the library was asked.
    p = claiming(tmp_path / "c.zt", elements)
    loads = every_torch_load(p)
    loads["dlpack"] = lambda: ztensor.open(p).dlpack("a")
    for how, load in loads.items():
        with pytest.raises(ztensor.Error) as e:
            load()
        assert e.value.status_name == "ZT_ERR_LIMIT", (how, str(e.value))


def test_a_staged_load_refuses_a_carved_tensor_over_the_cap_before_placing_it(tmp_path, monkeypatch):
    # 2 MiB tensors are carved out of device blocks (under 4 MiB), and from
    # 1 MiB the library is asked first: over the reader's cap, nothing is
    # allocated for them.
    t = {"a": torch.zeros(1 << 19), "b": torch.ones(1 << 19)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding="zstd")  # the cap is on what a component decodes to
    blocks = []
    real_new_block = zt._blocks.Blocks._new_block
    monkeypatch.setattr(zt._blocks.Blocks, "_new_block", lambda self, n: blocks.append(n) or real_new_block(self, n))
    with pytest.raises(ztensor.Error) as e:
        zt._load_all(zt._File(p, max_decoded_bytes=1 << 20), "cpu", zt._Staging(LateCopies(), 2, 4096))
    assert e.value.status_name == "ZT_ERR_LIMIT" and 'object "a"' in str(e.value) and not blocks
    got = zt._load_all(zt._File(p), "cpu", zt._Staging(LateCopies(), 2, 1 << 20))
    assert all(same(got[k], t[k]) for k in t) and len(blocks) == 1


def test_torchs_refusal_to_allocate_is_a_ztensor_error(tmp_path):
    # Under a cap that lets 2 PiB through, what refuses it is torch's
    # allocator (RuntimeError): said as the File says it, ZT_ERR_NOMEM.
    p = claiming(tmp_path / "c.zt", 2 ** 49)
    cap = 2 ** 60
    with pytest.raises(ztensor.Error) as e:
        zt.load_file(p, max_decoded_bytes=cap)
    assert e.value.status_name == "ZT_ERR_NOMEM" and 'object "a"' in str(e.value)
    with pytest.raises(ztensor.Error) as e:
        zt._load_all(zt._File(p, max_decoded_bytes=cap), "cpu", zt._Staging(SyncCopies(), 2, 4096))
    assert e.value.status_name == "ZT_ERR_NOMEM"


def test_max_decoded_bytes_reaches_the_reader_of_every_load(tmp_path):
    p = tmp_path / "z.zt"
    with ztensor.Writer(p) as w:
        w.add("a", np.arange(4096, dtype=np.float32), encoding="zstd")  # 16 KiB decoded
        w.add("y", np.ones(4, np.float32))
    for how, load in every_torch_load(p, max_decoded_bytes=1000).items():
        with pytest.raises(ztensor.Error) as e:
            load()
        assert e.value.status_name == "ZT_ERR_LIMIT", how
    for how, load in every_torch_load(p, max_decoded_bytes=1 << 20).items():
        load()  # under the cap: loads


QUANT_GROUP = {"bits": 4, "group_size": 8, "axis": 0, "scale_form": "f32_factors",
               "packing": {"word": "u32", "order": "lsb_first", "per_word": 8},
               "zero_point": {"form": "implied", "value": 8}}
GOOD_RECORDS = {"data": {"name": "l.qweight", "dtype": "I32", "shape": [1, 1]},
                "scales": {"name": "l.scales", "dtype": "F32", "shape": [1]}}


def quantized_layer(p, records, shape_record=None):
    attributes = dict(QUANT_GROUP, **{"hf.tensors": records})
    if shape_record is not None:
        attributes["hf.shape_tensor"] = shape_record
    with ztensor.Writer(p, file_version=2) as w:
        w.add_object("l.weight", "zt.quant_group/1", (8, 1),
                     {"data": np.array([0x76543210], np.uint32), "scales": np.array([0.5], np.float32)},
                     attributes=attributes)
        w.add("other", np.zeros(2, np.float32))


@pytest.mark.parametrize("records, shape_record", [
    ({"data": {"name": "l.qweight", "shape": [1, 1]}, "scales": GOOD_RECORDS["scales"]}, None),  # no dtype
    ({"data": {"name": "l.qweight", "dtype": "I32", "shape": [1000]}, "scales": GOOD_RECORDS["scales"]}, None),
    ({"data": 5, "scales": GOOD_RECORDS["scales"]}, None),  # a record that is no map
    ({"data": {"name": "l.qweight", "dtype": "Q9", "shape": [1]}, "scales": GOOD_RECORDS["scales"]}, None),
    ({"data": {"name": "l.qweight", "dtype": "I32", "shape": ["1"]}, "scales": GOOD_RECORDS["scales"]}, None),
    ({"data": {"name": 7, "dtype": "I32", "shape": [1, 1]}, "scales": GOOD_RECORDS["scales"]}, None),
    ({"nope": {"name": "l.qweight", "dtype": "I32", "shape": [1]}}, None),  # not the object's parts
    ([1, 2], None),  # hf.tensors that is no map
    ({"data": {"name": "other", "dtype": "I32", "shape": [1, 1]}, "scales": GOOD_RECORDS["scales"]}, None),
    ({"data": {"name": "l.s", "dtype": "I32", "shape": [1, 1]},
      "scales": {"name": "l.s", "dtype": "F32", "shape": [1]}}, None),  # one name twice
    (GOOD_RECORDS, {"name": "l.shape", "dtype": "F32", "shape": [2]}),
    (GOOD_RECORDS, {"name": "l.shape", "dtype": "I64", "shape": [3]}),
    (GOOD_RECORDS, "l.shape"),
])
def test_checkpoint_records_that_are_not_records_are_invalid(tmp_path, records, shape_record):
    p = tmp_path / "q.zt"
    quantized_layer(p, records, shape_record)

    def get_all():
        with zt.safe_open(p) as s:
            return [s.get_tensor(k) for k in s.keys()]

    for how, load in {"load_file": lambda: zt.load_file(p), "safe_open": get_all}.items():
        with pytest.raises(ztensor.Error) as e:
            load()
        assert e.value.status_name == "ZT_ERR_INVALID", (how, str(e.value))
    assert zt.load_file(p, quantized="dequantize")["l.weight"].shape == (8, 1)  # the values still load


def test_good_checkpoint_records_load(tmp_path):
    p = tmp_path / "q.zt"
    quantized_layer(p, GOOD_RECORDS, {"name": "l.shape", "dtype": "I64", "shape": [2]})
    got = zt.load_file(p)
    assert sorted(got) == ["l.qweight", "l.scales", "l.shape", "other"]
    assert got["l.qweight"].dtype == torch.int32 and got["l.qweight"].shape == (1, 1)
    assert got["l.shape"].tolist() == [8, 1]


@pytest.mark.parametrize("aliases", [[1, 2], {"x": [1]}, 5, {"w": "b"}, {"b2": 3}])
def test_aliases_that_are_not_aliases_are_invalid(tmp_path, aliases):
    # A name mapped to a stored tensor's name silently replaced that tensor.
    p = tmp_path / "al.zt"
    with ztensor.Writer(p) as w:
        w.set_attributes({zt.ALIASES_KEY: aliases})
        w.add("w", np.zeros(2, np.float32))
        w.add("b", np.ones(2, np.float32))
    with pytest.raises(ztensor.Error) as e:
        zt.load_file(p)
    assert e.value.status_name == "ZT_ERR_INVALID"
    with ztensor.open(p) as f:
        assert f["w"].tolist() == [0.0, 0.0]  # the objects themselves read
    m = torch.nn.Module()
    m.w = torch.nn.Parameter(torch.full((2,), 7.0))
    with pytest.raises(ztensor.Error):
        zt.load_model(m, p, strict=False)
    assert m.w.tolist() == [7.0, 7.0]  # refused before the model was touched


def test_the_aliases_save_model_records_load(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4, bias=False)
            self.b = torch.nn.Linear(4, 4, bias=False)
            self.b.weight = self.a.weight

    p = tmp_path / "tied.zt"
    zt.save_model(Tied(), p)
    got = zt.load_file(p)
    assert got["a.weight"] is got["b.weight"]


def storage_bytes(t):
    return t.untyped_storage().nbytes() if hasattr(t, "untyped_storage") else t.storage().nbytes()  # torch < 2.0


def carved_back_to_back(tensors, nbytes):
    """The first of `tensors`' address, after checking that they lie back to
    back, `nbytes` each, each with a storage of exactly its own bytes."""
    first = tensors[0].data_ptr()
    assert [x.data_ptr() - first for x in tensors] == [i * nbytes for i in range(len(tensors))]
    assert all(storage_bytes(x) == nbytes and x.storage_offset() == 0 for x in tensors)
    return first


def advice_taken(monkeypatch):
    """The byte counts of every advise_huge_pages call from now on (the
    advice still given), in order."""
    advised = []
    real = zt._block_places.advise_huge_pages
    monkeypatch.setattr(zt._block_places, "advise_huge_pages", lambda a, n: (advised.append(n), real(a, n)))
    return advised


def _block_model():
    g = torch.Generator().manual_seed(7)
    t = {f"w.{i}": torch.randn(256, 256, generator=g) for i in range(8)}  # 8 x 256 KiB: carved on the CPU
    t.update({f"b.{i}": torch.randn(256, generator=g) for i in range(5)})  # 1 KiB: the heap's
    t["big"] = torch.randn(1024, 2048, generator=g)  # 8 MiB: its own
    return t


@pytest.mark.parametrize("huge", [False, True])
def test_a_cpu_load_carves_mid_sized_tensors_out_of_one_block(tmp_path, monkeypatch, huge):
    # With BLOCK_HUGE_PAGES (the default) the block starts on a huge page
    # and is advised for them; without, it is in 4 KiB pages.
    monkeypatch.setattr(zt._block_places, "BLOCK_HUGE_PAGES", huge)
    advised = advice_taken(monkeypatch)
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    got = zt.load_file(p)
    assert all(same(got[k], t[k]) for k in t)
    first = carved_back_to_back([got[f"w.{i}"] for i in range(8)], 256 * 1024)
    if huge:
        assert first % (2 << 20) == 0
    # "big" (8 MiB) is advised either way; the block (2 MiB) only if asked.
    assert sorted(advised) == sorted([8 << 20] + ([2 << 20] if huge else []))
    others = [got[f"b.{i}"].data_ptr() for i in range(5)] + [got["big"].data_ptr()]
    assert not any(first <= a < first + 8 * 256 * 1024 for a in others)
    assert storage_bytes(got["big"]) == 8 << 20


def test_a_cpu_load_carves_tensors_from_4_kib_out_of_a_huge_page_block(tmp_path, monkeypatch):
    # By default a CPU load carves every tensor of 4 KiB or more (and under
    # PACK_BELOW) out of blocks that start on a huge page and are advised
    # for them: one page fault per 2 MiB. Smaller ones come from the heap.
    advised = advice_taken(monkeypatch)
    g = torch.Generator().manual_seed(8)
    t = {f"k.{i}": torch.randn(1024, generator=g) for i in range(600)}  # 4 KiB each: 2.34 MiB
    t.update({f"b.{i}": torch.randn(255, generator=g) for i in range(5)})  # 1,020 bytes: the heap's
    p = tmp_path / "k.zt"
    zt.save_file(t, p)
    got = zt.load_file(p)
    assert all(same(got[k], t[k]) for k in t)
    first = carved_back_to_back([got[f"k.{i}"] for i in range(600)], 4096)
    assert first % (2 << 20) == 0
    assert advised == [4 << 20]  # the block's whole huge pages, nothing else
    assert not any(first <= got[f"b.{i}"].data_ptr() < first + 600 * 4096 for i in range(5))


def test_get_tensor_carves_tensors_from_4_kib_out_of_the_files_blocks(tmp_path, monkeypatch):
    # safe_open(...).get_tensor (one()) carves a CPU tensor of 4 KiB up to
    # PACK_BELOW out of blocks of the File, back to back in the order
    # asked, each its own storage: the first block 64 KiB, each next twice
    # the last (in huge pages from 2 MiB on), so that a few tensors asked
    # hold little more than their bytes. The blocks hold at most the bytes
    # of the file's tensors carved that way: a tensor asked again once they
    # are spent gets a block of its own.
    advised, sizes = advice_taken(monkeypatch), []
    real_new_block = zt._blocks.Blocks._new_block
    monkeypatch.setattr(zt._blocks.Blocks, "_new_block", lambda self, n: sizes.append(n) or real_new_block(self, n))
    g = torch.Generator().manual_seed(9)
    t = {f"k.{i}": torch.randn(1024, generator=g) for i in range(1100)}  # 4 KiB each: 4.3 MiB
    t["b"] = torch.randn(255, generator=g)  # 1,020 bytes: the heap's
    p = tmp_path / "k.zt"
    zt.save_file(t, p)
    with zt.safe_open(p, "pt") as s:
        one = s.get_tensor("k.7")
    assert same(one, t["k.7"]) and sizes == [64 << 10] and advised == []  # one tensor: a 64 KiB block
    sizes.clear()
    with zt.safe_open(p, "pt") as s:
        names = [f"k.{i}" for i in range(1100)][::-1]
        got = {name: s.get_tensor(name) for name in names}
        small = s.get_tensor("b")
        again = s.get_tensor("k.3")
    assert all(same(got[k], t[k]) for k in names) and same(small, t["b"]) and same(again, t["k.3"])
    total = 1100 * 4096
    firsts = [16, 32, 64, 128, 256, 512]  # tensors a block: 64 KiB, 128 KiB, ..., 2 MiB
    assert sizes == [n * 4096 for n in firsts] + [total - sum(firsts) * 4096, 4096]
    assert advised == [2 << 20]  # the 2 MiB block: the others are smaller
    at = 0
    for n in firsts + [total // 4096 - sum(firsts)]:
        carved_back_to_back([got[k] for k in names[at:at + n]], 4096)
        at += n
    assert got[names[sum(firsts[:5])]].data_ptr() % (2 << 20) == 0  # the 2 MiB block's first
    ours = {got[k].data_ptr() for k in names}
    assert small.data_ptr() not in ours and again.data_ptr() not in ours
    assert storage_bytes(again) == 4096


def test_get_tensor_from_many_threads_gets_each_tensor_its_own_place(tmp_path):
    # The File's blocks are shared by every thread calling get_tensor: each
    # place is one thread's.
    g = torch.Generator().manual_seed(10)
    t = {f"k.{i}": torch.randn(1024 + 16 * (i % 5), generator=g) for i in range(800)}
    p = tmp_path / "k.zt"
    zt.save_file(t, p)
    with zt.safe_open(p, "pt") as s:
        names = list(t)
        out = {}

        def worker(part):
            for name in part:
                out[name] = s.get_tensor(name)
        threads = [threading.Thread(target=worker, args=(names[k::4],)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert all(same(out[k], t[k]) for k in names)
    spans = sorted((v.data_ptr(), v.data_ptr() + v.numel() * 4) for v in out.values())
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))  # no two overlap


def test_carved_tensors_of_every_dtype_are_their_own_bytes_of_the_block():
    # carve() makes each tensor from a kept empty tensor of its dtype and
    # device (new()), not torch.empty: every dtype still gets exactly its
    # bytes of the block, contiguous, of its shape, on the block's device.
    blocks = zt._blocks.Blocks(1 << 20, torch.device("cpu"))
    made = []
    for dtype, shape in ((torch.bfloat16, (3, 5)), (torch.float32, (7,)), (torch.bool, (2, 2, 2)),
                         (torch.complex64, (4,)), (torch.int8, ()), (torch.bfloat16, (1, 9))):
        nbytes = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
        at = blocks.place(nbytes)
        t = zt._blocks.carve(blocks.storage, blocks.base + at, shape, dtype, nbytes, blocks.device)
        assert (t.dtype, tuple(t.shape), t.device.type) == (dtype, shape, "cpu") and t.is_contiguous()
        assert t.data_ptr() == blocks.address + at and storage_bytes(t) == nbytes
        made.append(t)
    made[0].fill_(1.5)
    made[-1].fill_(-2)
    assert bool((made[0] == 1.5).all()) and bool((made[-1] == -2).all())  # not one tensor's bytes twice
    assert (torch.bfloat16, torch.device("cpu")) in zt._blocks._NEW


def slowed_decode(monkeypatch, seconds, method="_decode_columns"):
    """File.<method> (a load's decode: _decode_columns, on the CPU and in the ring)
    taking `seconds` longer; returns the state it
    keeps: whether a decode runs, how many ended, the threads they ran on,
    and a log of "decode" / "decoded" events (a test may add its own)."""
    state = {"running": False, "ended": 0, "threads": set(), "log": []}
    real = getattr(ztensor.File, method)

    def slow(self, *a, **kw):
        state["running"] = True
        state["threads"].add(threading.get_ident())
        state["log"].append("decode")
        try:
            time.sleep(seconds)
            return real(self, *a, **kw)
        finally:
            state["log"].append("decoded")
            state["running"] = False
            state["ended"] += 1

    monkeypatch.setattr(ztensor.File, method, slow)
    return state


@pytest.mark.parametrize("enough", [8, 9])
def test_a_cpu_load_makes_its_carved_tensors_while_it_decodes(tmp_path, monkeypatch, enough):
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(zt, "_CARVE_DURING_DECODE_FROM", enough)
    decode = slowed_decode(monkeypatch, 0.5)
    log, real_carve = decode["log"], zt._blocks.carve
    monkeypatch.setattr(zt._blocks, "carve", lambda *a: log.append("carve") or real_carve(*a))
    got = zt.load_file(p)
    assert list(got) == list(t) and all(same(got[k], t[k]) for k in t)
    assert decode["ended"] == 1 and all(storage_bytes(got[f"w.{i}"]) == 256 * 1024 for i in range(8))
    if enough <= 8:
        # The decode started on another thread before the 8 carved tensors
        # were made, and ended after them (it sleeps half a second first).
        assert threading.get_ident() not in decode["threads"]
        assert log.count("carve") == 8 and log[-1] == "decoded"
    else:
        # Fewer than enough for a thread: made first, then decoded here.
        assert threading.get_ident() in decode["threads"]
        assert log == ["carve"] * 8 + ["decode", "decoded"]


def test_a_cpu_load_interrupted_while_carving_waits_for_its_decode(tmp_path, monkeypatch):
    # The decode writes into the blocks: they must outlive it, whatever
    # stops the carving (here Ctrl-C).
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(zt, "_CARVE_DURING_DECODE_FROM", 2)
    decode = slowed_decode(monkeypatch, 0.2)
    real_carve = zt._blocks.carve

    def interrupted(*a):
        if zt._blocks.carve.calls == 2:
            raise KeyboardInterrupt
        zt._blocks.carve.calls += 1
        return real_carve(*a)

    interrupted.calls = 0
    monkeypatch.setattr(zt._blocks, "carve", interrupted)
    with pytest.raises(KeyboardInterrupt):
        zt.load_file(p)
    assert decode["ended"] == 1 and not decode["running"]


def test_a_cpu_load_whose_decode_fails_while_carving_names_the_tensor(tmp_path, monkeypatch):
    monkeypatch.setattr(zt, "_CARVE_DURING_DECODE_FROM", 2)
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding="zstd")
    with pytest.raises(ztensor.Error) as e:
        zt.load_file(damaged(p, "w.5"))
    assert "w.5" in str(e.value)


def test_a_carved_tensor_is_a_tensor_of_its_own(tmp_path):
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    got = zt.load_file(p)
    # torch.save writes its storage: its bytes, not the block's.
    saved = tmp_path / "one.pt"
    torch.save(got["w.3"], saved)
    assert os.path.getsize(saved) < 256 * 1024 + 4096
    assert same(torch.load(saved), t["w.3"])
    # It keeps its block alive alone; writes stay its own.
    kept = got.pop("w.3")
    del got
    import gc
    gc.collect()
    assert same(kept, t["w.3"])
    kept.add_(1)
    assert torch.equal(kept, t["w.3"] + 1)
    # Shared with other processes as any CPU tensor is.
    kept.share_memory_()
    assert kept.is_shared() and torch.equal(kept, t["w.3"] + 1)
    # What changes: its storage cannot grow (a mapped load's cannot either).
    with pytest.raises(RuntimeError):
        kept.resize_(512, 256)


def test_a_staged_load_copies_a_run_of_small_tensors_at_once(tmp_path, monkeypatch):
    g = torch.Generator().manual_seed(5)
    t = {f"p.{i}": torch.randn(100 + i, generator=g) for i in range(200)}  # ~100 KiB of small tensors
    t["big"] = torch.randn(512, 512, generator=g)  # 1 MiB: split across buffers
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    engine = LateCopies()
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=64 << 10)
    assert all(same(got[k], t[k]) for k in t)
    # The small tensors lie in one block as in the buffers: one copy a
    # buffer's run of them, not one a tensor.
    assert engine.copies <= 3 + 16 + 2, engine.copies
    assert all(storage_bytes(got[f"p.{i}"]) == got[f"p.{i}"].numel() * 4 for i in range(200))


def test_tensors_given_to_fill_are_not_carved(tmp_path, monkeypatch):
    t = _block_model()
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    into = {k: torch.zeros_like(v) for k, v in t.items()}
    before = {k: v.data_ptr() for k, v in into.items()}
    for staged in (False, True):
        if staged:
            monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(LateCopies(), b, n))
        got = zt._load_path(p, "cpu", into=into)
        assert all(got[k] is into[k] and into[k].data_ptr() == before[k] and same(into[k], t[k]) for k in t)
        for v in into.values():
            v.zero_()


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_carved_tensors_can_be_made_while_the_ring_decodes(tmp_path, monkeypatch, encoding):
    g = torch.Generator().manual_seed(9)
    t = {f"p.{i}": torch.randn(300 + i, generator=g) for i in range(300)}  # ~360 KiB of small tensors
    t["big"] = torch.randn(700, 700, generator=g)  # 1.9 MiB, split across buffers
    t["h"] = torch.randn(64, 64, generator=g).to(torch.bfloat16)
    p = tmp_path / "m.zt"
    zt.save_file(t, p, encoding=encoding)
    monkeypatch.setattr(zt, "_CARVE_DURING_RING", True)
    decode = slowed_decode(monkeypatch, 0.005)  # a decode the main thread can work beside
    during, made, real_carve = [0], [0], zt._blocks.carve

    def counted_carve(*a):
        made[0] += 1
        during[0] += decode["running"]
        return real_carve(*a)

    monkeypatch.setattr(zt._blocks, "carve", counted_carve)
    engine = LateCopies()
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=64 << 10)
    assert list(got) == list(t)
    assert all(same(got[k], t[k]) for k in t)
    assert made[0] == 302 and during[0] > 0  # every small tensor carved, some while a batch decoded
    assert all(storage_bytes(got[k]) == got[k].numel() * got[k].element_size() for k in t)


def test_a_ring_load_interrupted_while_carving_stops_its_worker_first(tmp_path, monkeypatch):
    # Ctrl-C while this thread carves beside the ring's worker: the load
    # ends with it, once the batch being decoded is done and every copy
    # waited for (buffers and blocks outlive whatever writes them), and no
    # decode starts after.
    g = torch.Generator().manual_seed(9)
    t = {f"p.{i}": torch.randn(300 + i, generator=g) for i in range(300)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(zt, "_CARVE_DURING_RING", True)
    decode = slowed_decode(monkeypatch, 0.2)

    def interrupted(*a):
        # The first carving, once the worker's first decode runs.
        until = time.monotonic() + 5
        while not decode["running"] and time.monotonic() < until:
            time.sleep(0.001)
        raise KeyboardInterrupt

    monkeypatch.setattr(zt._blocks, "carve", interrupted)
    engine = LateCopies()
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    with pytest.raises(KeyboardInterrupt):
        zt.load_file(p, device="cpu", staging_bytes=64 << 10)
    ended = decode["ended"]
    assert ended >= 1 and not decode["running"]
    assert not [x for x in threading.enumerate() if x.name.startswith("zt-staging")]
    assert engine.done == len(engine.queue)  # finish() ran
    time.sleep(0.1)
    batches = len(_staging.plan([v.numel() * 4 for v in t.values()], 64 << 10))
    assert decode["ended"] == ended < batches  # none decoded after, and not all of them before


@pytest.mark.parametrize("during", [False, True])
def test_a_staged_load_spread_over_many_blocks(tmp_path, monkeypatch, during):
    # Blocks of 8 KiB: a new block every few tensors, runs cut at each.
    g = torch.Generator().manual_seed(11)
    t = {f"p.{i}": torch.randn(200 + 37 * i, generator=g) for i in range(60)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(zt._block_places, "BLOCK_BYTES", 8 << 10)
    monkeypatch.setattr(zt, "_CARVE_DURING_RING", during)
    blocks = []
    real_new_block = zt._blocks.Blocks._new_block
    monkeypatch.setattr(zt._blocks.Blocks, "_new_block",
                        lambda self, n: blocks.append(n) or real_new_block(self, n))
    engine = LateCopies()
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=16 << 10)
    assert all(same(got[k], t[k]) for k in t)
    assert len(blocks) > 10


class LateRegisteredCopies(LateCopies):
    """LateCopies that also registers pages (_registered's engine): it
    records every register and unregister, refuses overlapping or unaligned
    registrations, and checks that each copy reads registered pages only
    and that a chunk is unregistered only once its copies were done."""

    def __init__(self, fail_at=None):
        super().__init__()
        self.fail_at = fail_at
        self.pinned = {}  # address -> bytes
        self.staging = []  # (address, bytes) of the ring's buffers
        self.most = self.registered = 0
        self.lock = threading.Lock()

    def buffer(self, nbytes):
        b = super().buffer(nbytes)
        with self.lock:
            self.staging.append((b.data_ptr(), nbytes))
        return b

    def start(self):
        self.started = True  # no staging buffer is needed first

    def register(self, address, nbytes):
        with self.lock:
            assert address % mmap.PAGESIZE == 0 and nbytes > 0
            assert all(address + nbytes <= a or a + n <= address for a, n in self.pinned.items())
            if self.fail_at is not None and self.registered == self.fail_at:
                raise RuntimeError("cudaHostRegister: cudaError 1")
            self.registered += 1
            self.pinned[address] = nbytes
            self.most = max(self.most, len(self.pinned))

    def unregister(self, address):
        with self.lock:
            nbytes = self.pinned.pop(address)
            assert all(not (address <= s.data_ptr() < address + nbytes) for _, s in self.queue[self.done:])

    def copy(self, dst, src):
        at, n = src.data_ptr(), src.numel()
        with self.lock:  # from a ring buffer, or else from registered pages
            assert any(a <= at and at + n <= a + m for a, m in self.staging) or \
                any(a <= at and at + n <= a + m for a, m in self.pinned.items()), "a copy from pages not registered"
        super().copy(dst, src)


def test_a_registered_load_copies_from_the_files_pages_a_chunk_at_a_time(tmp_path, monkeypatch):
    # _REGISTERED_LOADS: raw tensors go from the file's own pages, pinned a
    # chunk at a time on threads, never more than AHEAD + 2 chunks at once;
    # each copy reads registered pages; every chunk is unregistered after
    # its copies; tensors split across chunks, small ones carved (a run of
    # them one copy); zstd tensors and a rank's columns go through the ring.
    from ztensor import _registered
    g = torch.Generator().manual_seed(11)
    t = {f"p.{i}": torch.randn(100 + i, generator=g) for i in range(300)}  # small: carved
    t.update({f"w.{i}": torch.randn(300, 257, generator=g) for i in range(12)})  # ~300 KiB each
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    z = tmp_path / "z.zt"
    zt.save_file({"z": t["w.0"], "r": t["w.1"]}, z, encoding="zstd")
    monkeypatch.setattr(zt, "_REGISTERED_LOADS", True)
    monkeypatch.setattr(_registered, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(_registered, "AHEAD", 2)
    engines = []

    def staging(device, b, n):
        engines.append(LateRegisteredCopies())
        return zt._Staging(engines[-1], b, n)

    monkeypatch.setattr(zt, "_staging_for", staging)
    got = zt.load_file(p, device="cpu", staging_bytes=64 << 10)
    assert all(same(got[k], t[k]) for k in t)
    e = engines[-1]
    size = p.stat().st_size
    assert e.registered >= size // (64 << 10) - 1 and not e.pinned  # all unregistered
    assert e.most <= 2 + 2
    assert e.buffers == []  # nothing went through the ring
    assert e.copies < 12 * 6 + 300 // 2, e.copies  # runs of small tensors went as one copy
    # zstd data: the ring; rows of a rank from the pages; columns: the ring.
    got = zt.load_file(z, device="cpu", staging_bytes=64 << 10)
    assert same(got["z"], t["w.0"]) and engines[-1].registered == 0 and engines[-1].buffers
    got = zt.load_file(p, device="cpu", slices={"w.3": (slice(10, 20),), "w.4": (slice(None), slice(5, 9))})
    assert same(got["w.3"], t["w.3"][10:20]) and same(got["w.4"], t["w.4"][:, 5:9].contiguous())
    assert engines[-1].registered > 0 and engines[-1].buffers and not engines[-1].pinned


def test_a_registered_load_of_objects_stored_once_copies_their_bytes_once_from_the_pages(tmp_path, monkeypatch):
    # A canonical v2 file stores identical objects once: the second goes
    # through the ring (pieces of pinned pages must not overlap).
    from ztensor import _registered
    g = torch.Generator().manual_seed(13)
    w = torch.randn(300, 257, generator=g)
    t = {"a": w, "b": w.clone(), "c": torch.randn(300, 257, generator=g)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p, file_version=2, canonical=True)
    monkeypatch.setattr(zt, "_REGISTERED_LOADS", True)
    monkeypatch.setattr(_registered, "CHUNK_BYTES", 64 << 10)
    engine = LateRegisteredCopies()
    monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
    got = zt.load_file(p, device="cpu", staging_bytes=64 << 10)
    assert all(same(got[k], t[k]) for k in t)
    assert engine.registered and engine.buffers and not engine.pinned


def test_a_registered_load_that_cannot_pin_goes_through_the_ring(tmp_path, monkeypatch):
    # A registration refused (cudaHostRegister's error) at the first chunk
    # or a later one: what was pinned is unpinned, and the ring loads every
    # tensor (writing again what was copied).
    from ztensor import _registered
    g = torch.Generator().manual_seed(12)
    t = {f"w.{i}": torch.randn(300, 257, generator=g) for i in range(6)}
    p = tmp_path / "m.zt"
    zt.save_file(t, p)
    monkeypatch.setattr(zt, "_REGISTERED_LOADS", True)
    monkeypatch.setattr(_registered, "CHUNK_BYTES", 64 << 10)
    for fail_at in (0, 5):
        engine = LateRegisteredCopies(fail_at)
        monkeypatch.setattr(zt, "_staging_for", lambda device, b, n: zt._Staging(engine, b, n))
        with pytest.warns(RuntimeWarning, match="could not be pinned.*cudaError 1"):
            got = zt.load_file(p, device="cpu", staging_bytes=64 << 10)
        assert all(same(got[k], t[k]) for k in t)
        assert not engine.pinned and engine.buffers, fail_at


def test_registered_chunks_cover_every_piece_once_on_whole_pages():
    from ztensor import _registered
    page = mmap.PAGESIZE
    pieces = [_registered.Piece(o, n, None) for o, n in
              [(64, 100), (5000, 3 * page), (9 * page + 7, 1), (40 * page, 2 * page + 1), (100 * page - 3, 6)]]
    for chunk in (page, 2 * page, 3 * page + 5, 1 << 20):
        chunks = _registered.plan(pieces, chunk)
        spans = [(c.start, c.end) for c in chunks]
        assert all(a % page == 0 and b % page == 0 and a < b for a, b in spans)
        assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))  # in order, none overlapping
        covered = {}
        for c in chunks:
            for k, first, n in c.parts:
                lo = pieces[k].offset + first
                assert c.start <= lo and lo + n <= c.end and c.end - c.start <= max(page, chunk // page * page)
                covered.setdefault(k, []).append((first, n))
        for k, p in enumerate(pieces):
            parts = sorted(covered[k])
            assert parts[0][0] == 0 and sum(n for _, n in parts) == p.nbytes
            assert all(a + n == b for (a, n), (b, _) in zip(parts, parts[1:]))
