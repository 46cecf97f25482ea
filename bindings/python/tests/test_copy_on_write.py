"""What File.dlpack and ztensor.torch's mmap=True hand out of the file's own
bytes (copy-on-write mappings): each hand-out is memory of its own, and it
is the file the library opened, whatever happened to its path since."""

import os

import numpy as np
import pytest

import ztensor
from ztensor._lib import lib

torch = pytest.importorskip("torch")
from ztensor import torch as zt  # noqa: E402


def shared_blob(p):
    """A canonical v2 file whose two identical objects share one blob."""
    a = np.arange(1024, dtype=np.float32)
    with ztensor.Writer(p, file_version=2, canonical=True) as w:
        w.add("a", a)
        w.add("b", a.copy())
    with ztensor.open(p) as f:
        assert extent(f, "a") == extent(f, "b")  # the premise: one blob
    return a


def extent(f, name):
    import ctypes
    o, n = ctypes.c_uint64(), ctypes.c_uint64()
    assert lib.zt_component_extent(f._r(), f._index(name), b"data", ctypes.byref(o), ctypes.byref(n)) == 0
    return o.value, n.value


def poke(p, offset, value):
    """Writes a float32 into the file in place (what a mapping shows through)."""
    fd = os.open(p, os.O_WRONLY)
    try:
        os.pwrite(fd, np.float32(value).tobytes(), offset)
    finally:
        os.close(fd)


def test_objects_sharing_a_blob_load_as_tensors_of_their_own(tmp_path):
    p = tmp_path / "shared.zt"
    a = shared_blob(p)
    t = zt.load_file(p, mmap=True)
    assert t["a"].data_ptr() != t["b"].data_ptr()
    t["a"][0] = 999.0
    assert t["b"][0].item() == 0.0 and torch.equal(t["b"], torch.from_numpy(a))
    t["b"][1] = -5.0
    assert t["a"][1].item() == 1.0


def test_the_first_hand_out_of_a_blob_stays_mapped(tmp_path):
    # Only a repeat is a copy: distinct objects are still the file's pages
    # (bytes changed in the file show through a private mapping until written).
    p = tmp_path / "shared.zt"
    shared_blob(p)
    with zt.safe_open(p, "pt", mmap=True) as s:
        first, again = s.get_tensor("a"), s.get_tensor("b")
        with ztensor.open(p) as f:
            offset = extent(f, "a")[0]
    poke(p, offset + 4 * 7, 42.0)
    assert first[7].item() == 42.0
    assert again[7].item() == 7.0  # its own bytes: unchanged


def test_two_exports_of_one_object_are_independent(tmp_path):
    p = tmp_path / "x.zt"
    with ztensor.Writer(p) as w:
        w.add("x", np.zeros(8, np.float32))
    with ztensor.open(p) as f:
        a, b = torch.from_dlpack(f.dlpack("x")), torch.from_dlpack(f.dlpack("x"))
        c = torch.from_dlpack(f.dlpack("x"))
    a[0] = 1.0
    c[2] = 3.0
    assert b.tolist() == [0.0] * 8
    assert a[2].item() == 0.0 and c[0].item() == 0.0
    with zt.safe_open(p, "pt", mmap=True) as s:
        t1, t2 = s.get_tensor("x"), s.get_tensor("x")
    t1[1] = 5.0
    assert t2[1].item() == 0.0
    with ztensor.open(p) as f:
        assert f["x"].tolist() == [0.0] * 8  # and the file kept its bytes


def test_exports_read_the_file_that_was_opened_not_its_replacement(tmp_path):
    # Writer publishes by rename: the path then names another file, while
    # the reader still reads the one it opened. What dlpack and mmap=True
    # hand out must be that file's bytes too, not the new file's at the old
    # offsets.
    p = tmp_path / "ckpt.zt"
    with ztensor.Writer(p) as w:
        w.add("w", np.full(1024, 1.0, np.float32))
    f = ztensor.open(p)
    s = zt.safe_open(p, "pt", mmap=True)
    with ztensor.Writer(p) as w:
        w.add("w", np.full(1024, 2.0, np.float32))
    assert f["w"][0] == 1.0
    assert np.asarray(f.dlpack("w"))[0] == 1.0
    assert s.get_tensor("w")[0].item() == 1.0
    # A shorter replacement: the old offsets are past its end.
    f2, s2 = ztensor.open(p), zt.safe_open(p, "pt", mmap=True)
    with ztensor.Writer(p) as w:
        w.add("w", np.zeros(1, np.float32))
    assert np.asarray(f2.dlpack("w")).tolist() == [2.0] * 1024
    assert s2.get_tensor("w").tolist() == [2.0] * 1024
    f.close(), f2.close()


def test_a_relative_path_and_a_later_chdir_do_not_matter(tmp_path, monkeypatch):
    for d, v in (("one", 1.0), ("two", 2.0)):
        (tmp_path / d).mkdir()
        with ztensor.Writer(tmp_path / d / "m.zt") as w:
            w.add("w", np.full(16, v, np.float32))
    monkeypatch.chdir(tmp_path / "one")
    f = ztensor.open("m.zt")
    s = zt.safe_open("m.zt", "pt", mmap=True)
    monkeypatch.chdir(tmp_path / "two")
    assert np.asarray(f.dlpack("w"))[0] == 1.0
    assert s.get_tensor("w")[0].item() == 1.0
    f.close()


def test_a_file_replaced_while_the_library_opens_it_is_not_mapped(tmp_path, monkeypatch):
    # What names the file is taken before and after zt_open_ex: if the path
    # named another file by the time the library had opened it, nothing is
    # mapped, and the data is read through the library instead.
    p, new = tmp_path / "m.zt", tmp_path / "new.zt"
    with ztensor.Writer(p) as w:
        w.add("w", np.full(16, 1.0, np.float32))
    with ztensor.Writer(new) as w:
        w.add("w", np.full(16, 2.0, np.float32))
    real = lib.zt_open_ex

    def replaced_first(*args):
        os.replace(new, p)
        return real(*args)

    monkeypatch.setattr(lib, "zt_open_ex", replaced_first)
    f = ztensor.open(p)
    monkeypatch.setattr(lib, "zt_open_ex", real)
    assert f["w"][0] == 2.0  # the library's file
    assert np.asarray(f.dlpack("w"))[0] == 2.0
    assert f._mapped is None
    f.close()


def test_no_descriptor_is_held_for_copy_on_write(tmp_path):
    # A program holding many Files holds the library's descriptors only:
    # the file is mapped at the first copy-on-write hand-out, and that
    # descriptor closed at once (the mapping holds its own).
    p = tmp_path / "m.zt"
    with ztensor.Writer(p) as w:
        w.add("w", np.arange(16, dtype=np.float32))
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = fds()
    f = ztensor.open(p)
    opened = fds()
    g = ztensor.open(p)
    assert fds() - opened == opened - before  # each File: what the library holds, no more
    t = f.dlpack("w")
    assert fds() <= opened + (opened - before) + 1  # the mapping's own descriptor
    f.close()
    g.close()
    assert np.asarray(t)[5] == 5.0  # the mapping outlives the File
    for other in (ztensor.open(p, copy=True), ztensor.File.from_bytes(p.read_bytes())):
        assert other._mapped is None


def test_a_mapped_load_maps_the_raw_objects_and_decodes_the_others(tmp_path):
    # One zt_component_extents call says where every object lies; the raw
    # ones are the file's pages (bytes changed in the file show through),
    # a zstd one between them is decoded, and tensors asked one at a time
    # in any order are mapped all the same.
    p = tmp_path / "mixed.zt"
    a, z, b = np.arange(256, dtype=np.float32), np.arange(512, dtype=np.int16), np.full(64, 3.0, np.float32)
    with ztensor.Writer(p) as w:
        w.add("a", a)
        w.add("z", z, encoding="zstd")
        w.add("b", b)
    with ztensor.open(p) as f:
        at = {name: extent(f, name)[0] for name in ("a", "b")}
    loaded = zt.load_file(p, mmap=True)
    with zt.safe_open(p, "pt", mmap=True) as s:
        later_first = {name: s.get_tensor(name) for name in ("b", "z", "a")}
    for name, value in (("a", 42.0), ("b", -1.0)):
        poke(p, at[name] + 4 * 5, value)
    for got in (loaded, later_first):
        assert torch.equal(got["z"], torch.from_numpy(z))
        assert got["a"][5].item() == 42.0 and got["b"][5].item() == -1.0
        assert got["a"][4].item() == 4.0 and got["b"][4].item() == 3.0


def test_a_load_of_many_objects_sharing_blobs_maps_each_blob_once(tmp_path):
    # Enough objects that their places are claimed together: where two share
    # a blob, the first asked is the file's pages, the second a copy.
    p = tmp_path / "pairs.zt"
    values = [np.full(256, float(k), np.float32) for k in range(12)]
    with ztensor.Writer(p, file_version=2, canonical=True) as w:
        for k, v in enumerate(values):  # canonical: in name order
            w.add(f"a{k:02}", v)
        for k, v in enumerate(values):
            w.add(f"b{k:02}", v.copy())
    with ztensor.open(p) as f:
        at = [extent(f, f"a{k:02}") for k in range(12)]
        assert at == [extent(f, f"b{k:02}") for k in range(12)]  # the premise: shared
    t = zt.load_file(p, mmap=True)
    for k in range(12):
        poke(p, at[k][0], -1.0)
    for k in range(12):
        a, b = t[f"a{k:02}"], t[f"b{k:02}"]
        assert a[0].item() == -1.0  # mapped: the file's change shows
        assert b[0].item() == float(k) and b[1].item() == float(k)  # its own copy
        assert a.data_ptr() != b.data_ptr()


def constant_tensors(p, count, length):
    """Writes `count` float32 objects of `length` elements, t0 all 0.0, t1
    all 1.0, ...; returns their values by name."""
    values = {f"t{k}": np.full(length, float(k), np.float32) for k in range(count)}
    with ztensor.Writer(p) as w:
        for name, v in values.items():
            w.add(name, v)
    return values


def count_extent_calls(monkeypatch):
    """From now on, {"one": calls of zt_component_extent, "all": [count of
    each zt_component_extents call]}."""
    calls = {"one": 0, "all": []}
    one, many = lib.zt_component_extent, lib.zt_component_extents

    def extent_of_one(*args):
        calls["one"] += 1
        return one(*args)

    def extents(r, role, first, count, *out):
        calls["all"].append(count)
        return many(r, role, first, count, *out)

    monkeypatch.setattr(lib, "zt_component_extent", extent_of_one)
    monkeypatch.setattr(lib, "zt_component_extents", extents)
    return calls


def test_get_tensor_maps_each_tensor_from_the_extents_asked_once(tmp_path, monkeypatch):
    # transformers' loop, mapped: no call into the library a tensor for its
    # place (zt_component_extents for windows that double, here from the
    # end: each object asked once, in log(n) calls), each tensor the file's
    # pages.
    p = tmp_path / "m.zt"
    values = constant_tensors(p, 40, 64)
    with ztensor.open(p) as f:
        at = {name: extent(f, name)[0] for name in values}
    calls = count_extent_calls(monkeypatch)
    with zt.safe_open(p, "pt", mmap=True) as s:
        got = {name: s.get_tensor(name) for name in reversed(list(values))}
    assert calls == {"one": 0, "all": [1, 2, 4, 8, 16, 9]}
    for name in values:
        poke(p, at[name] + 4, 0.5)
    for name, v in values.items():
        assert got[name][0].item() == v[0] and got[name][1].item() == 0.5


def test_a_dlpack_loop_asks_where_the_files_objects_lie_once(tmp_path, monkeypatch):
    # The first export asks for its own object's extent; from the second on
    # (the File keeps the layouts of a loop) the next objects', in windows
    # that double: each object asked once, in log(n) calls.
    p = tmp_path / "m.zt"
    values = constant_tensors(p, 40, 32)
    calls = count_extent_calls(monkeypatch)
    with ztensor.open(p) as f:
        got = {name: torch.from_dlpack(f.dlpack(name)) for name in values}
    assert calls == {"one": 1, "all": [1, 2, 4, 8, 16, 8]}
    assert all(torch.equal(got[name], torch.from_numpy(v)) for name, v in values.items())
    got["t3"][0] = -1.0  # each its own copy-on-write pages
    assert got["t4"][0].item() == 4.0 and got["t2"][-1].item() == 2.0


@pytest.mark.parametrize("run", [1, 2, 3, 256])
def test_the_ranges_handed_out_are_refused_again_in_any_order(monkeypatch, run):
    # A mapping's hand-outs (_Extents) against a plain list of ranges: a
    # claim overlapping any range recorded is refused, any other recorded,
    # in random orders (runs split at every size: _EXTENT_RUN), and a
    # batch (claim_many) is recorded only where it overlaps nothing.
    import random
    from ztensor import _reader
    monkeypatch.setattr(_reader, "_EXTENT_RUN", run)
    for seed in range(200):
        rng = random.Random(seed)
        extents, taken = _reader._Extents(), []
        for _ in range(rng.randrange(1, 120)):
            if rng.random() < 0.1:
                base, n = rng.randrange(0, 3000), rng.randrange(1, 6)
                starts = np.array(sorted(rng.sample(range(base, base + 200), n)), np.int64)
                ends = starts + np.array([rng.randrange(1, 6) for _ in range(n)], np.int64)
                ranges = list(zip(starts.tolist(), ends.tolist()))
                if extents.claim_many(starts, ends):
                    assert not any(a < d and c < b for a, b in taken for c, d in ranges), seed
                    assert all(b <= c for (_, b), (c, _) in zip(ranges, ranges[1:])), seed
                    taken += ranges
                continue
            a = rng.randrange(0, 3000)
            b = a + rng.randrange(1, 40)
            free = not any(a < d and c < b for c, d in taken)
            assert extents.claim(a, b) == free, (seed, a, b)
            if free:
                taken.append((a, b))
        assert [(a, b) for starts, ends in extents.runs for a, b in zip(starts, ends)] == sorted(taken), seed
        assert extents.firsts == [starts[0] for starts, _ in extents.runs]
        assert all(0 < len(starts) <= 2 * run for starts, _ in extents.runs)
