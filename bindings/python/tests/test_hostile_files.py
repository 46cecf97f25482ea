"""Hostile files through the Python API raise ztensor.Error, and nothing else.

Issue 25: the C library refuses hostile input with a status; the Python
module must keep that promise on its own side (no numpy ValueError,
MemoryError, OverflowError or TypeError from what a file claims, no
crash). The inputs are the conformance vectors and the fuzz corpus, each as
it is, cut short and with bytes changed (a fixed seed: the same files every
run), opened in map and copy mode and walked through every reading call.
"""

import pathlib
import random

import pytest

import ztensor

ROOT = pathlib.Path(__file__).resolve().parents[3]  # the source tree: bindings/python/tests/..
CORPUS_DIRS = [ROOT.parent / "shared" / "conformance" / "corpus" / "valid",
               ROOT.parent / "shared" / "conformance" / "corpus" / "reject",
               ROOT / "fuzz" / "corpus" / "open_walk"]
MAX_FILE = 1 << 16  # larger corpus files are skipped: the point is variety, not size


def corpus():
    files = []
    for d in CORPUS_DIRS:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.is_file() and p.suffix != ".json" and p.stat().st_size <= MAX_FILE:
                files.append(p.read_bytes())
    return files


def variants(data, rng):
    """The file, three cuts and eight single-byte changes of it."""
    yield data
    for _ in range(3):
        yield data[:rng.randrange(len(data) + 1)]
    for _ in range(8):
        if not data:
            break
        b = bytearray(data)
        at = rng.randrange(len(b))
        b[at] = rng.choice([0x00, 0xFF, b[at] ^ 0x01, (b[at] + 0x20) & 0xFF, rng.randrange(256)])
        yield bytes(b)


def walk(path, copy):
    """Every reading call on every object; the values themselves do not matter."""
    with ztensor.open(path, copy=copy) as f:
        (f.version, f.attributes, f.manifest)  # properties that read the manifest
        for name in list(f):
            info = f.info(name)
            attempt(lambda: f[name])
            attempt(lambda: f.array(name))
            attempt(lambda: f.decode(name))
            attempt(lambda: f.rows(name, 0, 1))
            for role in info.components:
                attempt(lambda: f.component(name, role))
        attempt(f.decode_many)
        attempt(f.verify)
    attempt(lambda: ztensor.load(path))


def attempt(call):
    """A call may be refused, but only as ztensor.Error."""
    try:
        call()
    except ztensor.Error:
        pass


def test_hostile_files_only_ever_raise_ztensor_error(tmp_path):
    files = corpus()
    assert len(files) > 20, "the conformance and fuzz corpora were not found"
    rng = random.Random(2025)
    path = tmp_path / "h.zt"
    tried = refused_at_open = 0
    for data in files:
        for v in variants(data, rng):
            path.write_bytes(v)
            for copy in (False, True):
                tried += 1
                try:
                    walk(path, copy)
                except ztensor.Error:
                    refused_at_open += 1
                except Exception as e:  # noqa: BLE001 - the point of the test
                    pytest.fail(f"{type(e).__name__}: {e} (copy={copy}, {len(v)} bytes: {v[:64].hex()}...)")
    # Both outcomes occur: the walk is not vacuous.
    assert 0 < refused_at_open < tried


def test_hostile_files_give_a_tensor_at_a_time_what_a_whole_load_gives(tmp_path):
    # safe_open's get_tensor and get_slice[...] (one tensor's own path) give
    # the tensor load_file gives, byte for byte, and refuse no tensor of a
    # file that load_file reads whole. A refusal is ztensor.Error, or
    # TypeError for values this torch has no type for (u64 above 2**63 - 1).
    refusals = (ztensor.Error, TypeError)
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    files = corpus()
    rng = random.Random(2026)
    path = tmp_path / "h.zt"
    compared = 0
    for data in files:
        for v in variants(data, rng):
            path.write_bytes(v)
            try:
                whole = zt.load_file(path)
            except refusals:
                whole = None
            except Exception as e:  # noqa: BLE001 - the point of the test
                pytest.fail(f"load_file: {type(e).__name__}: {e} ({len(v)} bytes: {v[:64].hex()}...)")
            try:
                f = zt.safe_open(path, "pt")
            except ztensor.Error:
                continue
            with f:
                for name in f.keys():
                    try:
                        view = f.get_slice(name)
                    except (ztensor.Error, KeyError):  # get_slice takes dense objects' names only
                        view = None
                    for how, get in (("get_tensor", lambda: f.get_tensor(name)),
                                     ("get_slice", None if view is None else lambda: view[...])):
                        if get is None:
                            continue
                        try:
                            t = get()
                        except refusals as e:
                            assert whole is None, (how, name, str(e), v[:64].hex())
                            continue
                        except Exception as e:  # noqa: BLE001
                            pytest.fail(f"{how}({name!r}): {type(e).__name__}: {e} ({v[:64].hex()}...)")
                        if whole is not None and name in whole:
                            w = whole[name]
                            assert (t.dtype, t.shape) == (w.dtype, w.shape), (how, name)
                            if not t.is_sparse and t.numel():
                                assert torch.equal(t.reshape(-1).view(torch.uint8), w.reshape(-1).view(torch.uint8)), \
                                    (how, name)
                            compared += 1
    assert compared > 100  # not vacuous
