"""File.dlpack: dense data to any DLPack consumer without a copy, in its own
dtype (bf16 as torch.bfloat16), valid after the File closes, freed when the
consumer lets it go, and never a way to write to the file."""

import gc
import os

import numpy as np
import pytest

import ztensor
from ztensor import _dlpack


def write(p, version=None):
    with ztensor.Writer(p, file_version=version) as w:
        w.add("f", np.arange(12, dtype=np.float32).reshape(3, 4))
        w.add("z", np.arange(1000, dtype=np.int64), encoding="zstd")
        w.add("h", np.array([0x3F80, 0xC000, 0x4049], np.uint16), dtype="bf16")  # 1, -2, 3.140625
        w.add("q", np.array([0x38, 0xC0], np.uint8), type="f8_e4m3fn")
        w.add("c", np.array([1 + 2j, -3j], np.complex64))
        w.add("s", np.float64(2.5))
        w.add("e", np.zeros((0, 3), np.float32))
        w.add_csr("csr", np.array([1.0], np.float32), [0], [0, 1], (1, 2))


@pytest.mark.parametrize("version", [None, 2])
def test_numpy_takes_what_it_has_types_for(tmp_path, version):
    p = tmp_path / "t.zt"
    write(p, version)
    with ztensor.open(p) as f:
        for name in ("f", "z", "c", "s", "e"):
            a = np.from_dlpack(f.dlpack(name))
            assert a.dtype == f[name].dtype and np.array_equal(a, f[name]), name
        assert np.asarray(f.dlpack("h")).tolist() == [0x3F80, 0xC000, 0x4049]  # storage codes
        assert bytes(memoryview(np.asarray(f.dlpack("f")))) == f["f"].tobytes()  # buffer protocol
        with pytest.raises(ztensor.Error) as e:
            f.dlpack("csr")
        assert e.value.status_name == "ZT_ERR_ARGUMENT"


def test_a_loop_of_exports_reads_the_summaries_once(tmp_path, monkeypatch):
    # The first export asks for its object's summary alone; a second starts
    # a loop (JAX's way to load a model), and all objects' are read once.
    p = tmp_path / "t.zt"
    write(p)
    counts = []
    real = ztensor._lib.lib.zt_object_summaries
    monkeypatch.setattr(ztensor._lib.lib, "zt_object_summaries",
                        lambda r, first, array, count: counts.append(count) or real(r, first, array, count))
    with ztensor.open(p) as f:
        names = [n for n in f if n != "csr"]
        for name in names * 2:  # each twice: the second a copy, as ever
            a = np.asarray(f.dlpack(name))
            assert a.tobytes() == np.asarray(f[name]).tobytes(), name
        assert counts == [1, len(f)]
        with pytest.raises(ztensor.Error):
            f.dlpack("csr")  # the refusal's message from its own summary
        assert counts == [1, len(f), 1]


def test_raw_data_is_shared_copy_on_write(tmp_path):
    p = tmp_path / "t.zt"
    write(p)
    with ztensor.open(p) as f:
        t = f.dlpack("f")
        a = np.from_dlpack(t)
        offset = f.manifest["objects"]["f"]["components"]["data"]["offset"]
    # The file's bytes show through (a private mapping sees the file until
    # a page is written): not a copy.
    fd = os.open(p, os.O_WRONLY)
    try:
        os.pwrite(fd, np.float32(42).tobytes(), offset)
    finally:
        os.close(fd)
    assert a[0, 0] == 42
    before = p.read_bytes()
    np.asarray(t)[0, 1] = -1  # the exported memory is writable, and the file keeps its bytes
    assert a[0, 1] == -1 and p.read_bytes() == before


def test_exports_are_freed_when_their_consumers_let_go(tmp_path):
    p = tmp_path / "t.zt"
    write(p)
    gc.collect()
    start = len(_dlpack._alive)
    with ztensor.open(p) as f:
        consumed = [np.from_dlpack(f.dlpack(n)) for n in ("f", "z")]
        unconsumed = f.dlpack("f").__dlpack__()  # a capsule nobody takes
    assert len(_dlpack._alive) == start + 3
    assert consumed[1][999] == 999  # valid after the File closed
    del consumed, unconsumed
    gc.collect()
    assert len(_dlpack._alive) == start


def test_a_consumer_that_refuses_a_tensor_raises_its_own_error(tmp_path):
    """numpy has no FP8 type: it refuses the capsule, drops it with its
    exception set, and the capsule's destructor (a ctypes callback, Python
    code) ran then: its first call raised SystemError, numpy's error was
    lost ("returned NULL without setting an exception") and the tensor was
    never freed. Capsules are now let go by sweeps in code of ours."""
    p = tmp_path / "t.zt"
    write(p)
    gc.collect()
    start = len(_dlpack._alive)
    with ztensor.open(p) as f:
        for _ in range(3):
            with pytest.raises(Exception) as e:
                np.from_dlpack(f.dlpack("q"))
            assert not isinstance(e.value, SystemError), repr(e.value)
            assert "dtype" in str(e.value).lower(), repr(e.value)
        t = f.dlpack("q")
        with pytest.raises(Exception) as e:
            np.from_dlpack(t)
        assert not isinstance(e.value, SystemError), repr(e.value)
        assert len(_dlpack._alive) == start + 1  # t's refused capsule, until t goes
        del t
        assert len(_dlpack._alive) == start
        a = np.from_dlpack(f.dlpack("f"))  # and the next export works
        assert a[2, 3] == 11
    del a
    gc.collect()
    assert len(_dlpack._alive) == start


def test_torch_gets_bf16_as_bf16(tmp_path):
    torch = pytest.importorskip("torch")
    p = tmp_path / "t.zt"
    write(p)
    with ztensor.open(p) as f:
        h = torch.from_dlpack(f.dlpack("h"))
        w = torch.from_dlpack(f.dlpack("f"))
        c = torch.from_dlpack(f.dlpack("c"))
        q = f.dlpack("q")
    assert h.dtype == torch.bfloat16 and h.tolist() == [1.0, -2.0, 3.140625]
    assert w.dtype == torch.float32 and w.shape == (3, 4) and w[2, 3] == 11
    assert c.dtype == torch.complex64 and c.tolist() == [1 + 2j, -3j]
    if hasattr(torch, "float8_e4m3fn"):
        try:
            t = torch.from_dlpack(q)
        except (BufferError, RuntimeError, TypeError) as e:  # a torch whose DLPack lacks FP8 codes
            pytest.skip(f"this torch's from_dlpack does not take FP8: {e}")
        assert t.dtype == torch.float8_e4m3fn and t.float().tolist() == [1.0, -2.0]
    w[0, 0] = 7  # the consumer's copy-on-write page
    with ztensor.open(p) as f:
        assert f["f"][0, 0] == 0


# A garbage cycle holding a Tensor (or a consumer's tensor) that the
# collector finalizes while this thread sweeps under the lock: the
# finalizer's sweep (or the consumer's deleter) took the lock again and
# waited forever. Run in a child process: a hang is a timeout, not a stuck suite.
_FINALIZED_DURING_A_SWEEP = """
import gc, sys, numpy as np, ztensor
f = ztensor.open(sys.argv[1])
t0 = f.dlpack("x")
consume = {consume}

class Holder:
    pass

for threshold in range(1, 400):
    h = Holder(); h.self = h; h.t = consume(f.dlpack("x")); del h  # garbage, not yet collected
    gc.set_threshold(threshold)  # a collection lands somewhere in the export below
    c = t0.__dlpack__()
    gc.set_threshold(700)
    del c
print("done")
"""


@pytest.mark.parametrize("consumer", ["none", "torch"])
def test_a_collection_during_a_sweep_does_not_deadlock(tmp_path, consumer):
    import subprocess
    import sys
    if consumer == "torch":
        pytest.importorskip("torch")
        consume = "__import__('torch').from_dlpack"
    else:
        consume = "lambda t: t"
    p = tmp_path / "x.zt"
    with ztensor.Writer(p) as w:
        w.add("x", np.zeros(4, np.float32))
    script = _FINALIZED_DURING_A_SWEEP.format(consume=consume)
    try:
        run = subprocess.run([sys.executable, "-c", script, str(p)], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("an export deadlocked when the collector finalized a Tensor during its sweep")
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr


def with_bool_byte_2(p, version, encoding):
    """A bool object whose element 3000 is the byte 2 (no digest: the byte
    is to meet the content rule, not a digest). The writer refuses such
    bools, so raw data is changed in place, and zstd data is written as u8
    whose manifest then says bool (a 1.2 file: its footer is plain)."""
    if encoding == "raw":
        with ztensor.Writer(p, file_version=version, digest="none") as w:
            w.add("b", np.ones(4096, bool))
        with ztensor.open(p) as f:
            offset = f.manifest["objects"]["b"]["components"]["data"]["offset"]
        data = bytearray(p.read_bytes())
        data[offset + 3000] = 2
        p.write_bytes(bytes(data))
        return
    import struct
    from ztensor import _cbor
    codes = np.ones(4096, np.uint8)
    codes[3000] = 2
    with ztensor.Writer(p, digest="none") as w:
        w.add("b", codes, encoding="zstd")
    data = p.read_bytes()
    n = struct.unpack("<Q", data[-16:-8])[0]
    manifest = _cbor.loads(data[-16 - n:-16])
    manifest["objects"]["b"]["components"]["data"]["dtype"] = "bool"
    body = _cbor.dumps(manifest)
    p.write_bytes(data[:-16 - n] + body + struct.pack("<Q", len(body)) + data[-8:])


@pytest.mark.parametrize("encoding, version", [("raw", None), ("raw", 2), ("zstd", None)])
def test_bool_bytes_other_than_0_and_1_are_refused_as_f_name_refuses_them(tmp_path, encoding, version):
    p = tmp_path / "b.zt"
    with_bool_byte_2(p, version, encoding)
    with ztensor.open(p) as f:
        with pytest.raises(ztensor.Error) as by_name:
            f["b"]
        with pytest.raises(ztensor.Error) as by_dlpack:
            f.dlpack("b")
    assert by_name.value.status_name == by_dlpack.value.status_name == "ZT_ERR_INVALID"
