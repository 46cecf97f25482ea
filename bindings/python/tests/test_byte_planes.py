"""v2's byte-planes encoding (libztensor.byte_planes/1, issue #46): a part
written as planes reads as the same bytes through every path (map, copy
mode, decode_many, rows, slices, torch), verifies, keeps the content
digest of its raw twin, and a damaged stream is refused, never handed out."""

import numpy as np
import pytest

import ztensor

PLANES = "libztensor.byte_planes/1"


def tensors():
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((300, 257)) * 0.02).astype(np.float32)
    return {
        "bf16": ((w.view(np.uint32) >> 16).astype(np.uint16), "bf16"),
        "f16": (w.astype(np.float16), None),
        "f32": (w, None),
        "f64": (w[:40].astype(np.float64), None),
        "i64": (np.arange(-500, 500, dtype=np.int64).reshape(10, 100), None),
        "u8": (rng.integers(0, 256, (3, 1000), dtype=np.uint8), None),
        "big": ((rng.standard_normal((1100, 1024)) * 0.02).astype(np.float16), None),  # > 1 frame
        "empty": (np.zeros((0, 4), np.float32), None),
    }


def write(path, encoding):
    with ztensor.Writer(path, file_version=2, canonical=False) as w:
        for name, (a, dtype) in tensors().items():
            w.add(name, a, encoding=encoding, dtype=dtype)
    return path


def test_planes_read_the_same_through_every_path(tmp_path):
    raw = write(tmp_path / "raw.zt", "raw")
    planes = write(tmp_path / "planes.zt", "planes")
    with ztensor.open(raw) as r, ztensor.open(planes) as p, ztensor.open(planes, copy=True) as c:
        assert p.content_digest() == r.content_digest()
        bf16 = p.info("bf16").components["data"]
        assert bf16.encoding == PLANES
        assert bf16.stored_size < 0.72 * tensors()["bf16"][0].nbytes  # about 1.49x
        assert p.info("i64").components["data"].encoding == PLANES
        for name in r:
            np.testing.assert_array_equal(p[name], r[name])
            np.testing.assert_array_equal(c[name], r[name])
        many = p.decode_many()
        for name in r:
            np.testing.assert_array_equal(many[name], r[name])
        np.testing.assert_array_equal(p.rows("big", 100, 900), r.rows("big", 100, 900))
        key = (slice(7, 290, 3), slice(None, None, -5))
        np.testing.assert_array_equal(p.slice("f32", key), r.slice("f32", key))
        np.testing.assert_array_equal(p.decode("bf16"), r.decode("bf16"))
        assert p.verify() == (len(tensors()), 0)  # (digests checked, parts without one)
    torch = pytest.importorskip("torch")  # Debian's python3-torch
    from ztensor import torch as zt
    a, b = zt.load_file(planes), zt.load_file(raw)
    assert set(a) == set(b) and all(torch.equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)


def test_the_decode_cap_refuses_planes_on_every_path(tmp_path):
    """max_decoded_bytes: every way of reading a byte-planes part refuses it
    as it refuses a zstd one (dlpack and verify handed it out)."""
    x = (np.random.default_rng(3).standard_normal((256, 256)) * 0.02).astype(np.float32)  # 256 KiB
    for encoding in ("planes", "zstd"):
        path = tmp_path / f"{encoding}.zt"
        with ztensor.Writer(path, file_version=2, canonical=False) as w:
            w.add("x", x, encoding=encoding)
        for copy in (False, True):
            with ztensor.open(path, max_decoded_bytes=64 << 10, copy=copy) as f:
                for read in (lambda: f["x"], lambda: f.rows("x", 0, 1), lambda: f.decode_many(["x"]),
                             lambda: np.asarray(f.dlpack("x")), lambda: f.verify()):
                    with pytest.raises(ztensor.Error) as e:
                        read()
                    assert e.value.status_name == "ZT_ERR_LIMIT", (encoding, copy, e.value.message)
            with ztensor.open(path, max_decoded_bytes=256 << 10, copy=copy) as f:
                np.testing.assert_array_equal(np.asarray(f.dlpack("x")), x)
                assert f.verify() == (1, 0)


def test_planes_are_a_v2_encoding(tmp_path):
    with pytest.raises(ztensor.Error, match="v2 encoding"):
        with ztensor.Writer(tmp_path / "old.zt") as w:
            w.add("x", np.ones(4, np.float32), encoding="planes")


def test_a_damaged_stream_is_refused(tmp_path):
    p = write(tmp_path / "planes.zt", "planes")
    with ztensor.open(p) as f:
        m = f.manifest
    # The "big" part: change one stored byte in its middle.
    part = m["objects"]["big"]["components"]["data"]
    data = bytearray(p.read_bytes())
    data[part["offset"] + part["length"] // 2] ^= 0x40
    p.write_bytes(bytes(data))
    with ztensor.open(p) as f:
        with pytest.raises(ztensor.Error) as e:
            f["big"]
        assert e.value.status_name == "ZT_ERR_INVALID"
        assert 'object "big"' in e.value.message
        np.testing.assert_array_equal(f["f32"], tensors()["f32"][0])  # the others still read
        with pytest.raises(ztensor.Error):
            f.verify()


def decode_by_the_profile(stored, decoded_length):
    """A second reader, written from docs/profiles/libztensor.byte_planes-1.md
    alone: footer, index, planes (zstd or stored), the inverse transform,
    each frame's checksum."""
    import struct

    import xxhash
    import zstandard

    frames, frame_bytes, width, transform, reserved, magic = struct.unpack("<IIBBHI", stored[-16:])
    assert magic == 0x5042545A and reserved == 0 and width in (1, 2, 4, 8) and transform in (0, 1)
    assert frames == -(-decoded_length // frame_bytes)
    entry = 4 * (width + 1)
    index = stored[len(stored) - 16 - frames * entry:len(stored) - 16]
    at, out = 0, bytearray()
    for k in range(frames):
        sizes = struct.unpack_from(f"<{width}I", index, k * entry)
        (checksum,) = struct.unpack_from("<I", index, k * entry + 4 * width)
        n = min(frame_bytes, decoded_length - k * frame_bytes) // width
        planes = []
        for v in sizes:
            size, coded = v & 0x7FFFFFFF, v >> 31
            body = stored[at:at + size]
            at += size
            planes.append(zstandard.ZstdDecompressor().decompress(body) if coded else body)
            assert len(planes[-1]) == n
        u = np.zeros(n, np.uint64)
        for j, p in enumerate(planes):
            u |= np.frombuffer(p, np.uint8).astype(np.uint64) << np.uint64(8 * j)
        if transform:
            bits = np.uint64(8 * width)
            u = (u >> np.uint64(1)) | ((u & np.uint64(1)) << (bits - np.uint64(1)))
        frame = u.astype(f"<u{width}").tobytes()
        assert xxhash.xxh3_64_intdigest(frame) & 0xFFFFFFFF == checksum, k
        out += frame
    assert at == len(stored) - 16 - frames * entry
    return bytes(out)


def test_a_second_reader_follows_the_profile(tmp_path):
    p = write(tmp_path / "planes.zt", "planes")
    data = p.read_bytes()
    with ztensor.open(p) as f:
        m = f.manifest
        for name, (a, _) in tensors().items():
            part = m["objects"][name]["components"]["data"]
            stored = data[part["offset"]:part["offset"] + part["length"]]
            assert decode_by_the_profile(stored, a.nbytes) == a.tobytes(), name


def test_auto_takes_planes_only_where_they_beat_zstd(tmp_path):
    """encoding="auto" in a v2 file: float weights take byte planes (they
    beat zstd by more than 5%), data zstd does better on (zeros: planes
    add their index and a frame per plane) keeps zstd, noise stays raw, integers and 1.2 files never get
    planes; every choice reads back the same bytes."""
    rng = np.random.default_rng(46)
    w = (rng.standard_normal((512, 256)) * 0.02).astype(np.float32)
    arrays = {
        "bf16": ((w.view(np.uint32) >> 16).astype(np.uint16), "bf16"),
        "f16": (w.astype(np.float16), None),
        "zeros": (np.zeros(65536, np.float32), None),  # a zstd frame of a few bytes
        "noise": (rng.integers(0, 256, 1 << 17, dtype=np.uint8).view(np.float32), None),
        "i32": (rng.integers(-50, 50, 1 << 15).astype(np.int32), None),
    }
    want = {"bf16": PLANES, "f16": PLANES, "zeros": "zstd", "noise": "raw", "i32": "zstd"}
    # 1.2: no planes; f16 weights gain under 10% from zstd (1.09x): raw.
    want_v1 = dict(want, bf16="zstd", f16="raw")
    for version, path in ((2, tmp_path / "v2.zt"), (None, tmp_path / "v1.zt")):
        with ztensor.Writer(path, file_version=version, canonical=False if version else None) as wr:
            for name, (a, dtype) in arrays.items():
                wr.add(name, a, encoding="auto", dtype=dtype)
        with ztensor.open(path) as f:
            for name, (a, dtype) in arrays.items():
                got = f.info(name).components["data"].encoding
                assert got == (want if version else want_v1)[name], (version, name, got)
                assert f.component(name, "data").tobytes() == a.tobytes(), name
            assert f.verify()[1] == 0
