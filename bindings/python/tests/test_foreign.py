"""Foreign files through ztensor.File(path, allow_foreign=True): the C
library's own readers (zt_open_options.allow_foreign), the values numpy and
torch wrote, and the hostile pickle refused without running it."""

import io
import json
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import ztensor
import zip_forgery
from ztensor import _reader
from process_maps import mapping_of as _mapping_of


def safetensors(path, tensors, metadata=None):
    """A .safetensors file of little-endian numpy arrays, written by hand."""
    names = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64", np.dtype("<f2"): "F16", np.dtype("u1"): "U8"}
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return path


def test_npy_and_npz_stored_and_deflated(tmp_path):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.save(tmp_path / "a.npy", np.asfortranarray(a))
    with ztensor.open(tmp_path / "a.npy", allow_foreign=True) as f:
        assert f.format == "npy" and f.version == ""
        np.testing.assert_array_equal(f["a"], a)
    b = np.arange(5, dtype=">i8")
    c = (np.arange(6) % 2 == 0).reshape(2, 3)
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "m.npz", a=a, b=b, c=c)
        with ztensor.File(tmp_path / "m.npz", allow_foreign=True) as f:
            assert f.format == "npz"
            assert list(f) == ["a", "b", "c"]
            np.testing.assert_array_equal(f["a"], a)
            np.testing.assert_array_equal(f["b"], b)
            assert f["b"].dtype == np.int64
            np.testing.assert_array_equal(f["c"], c)
            assert f.verify() == (0, 3)


def test_a_stored_npz_member_is_viewed_in_the_file(tmp_path):
    """np.savez stores its members uncompressed: they are viewed in the
    mapped file once their CRC-32 holds (no copy of their size at open), as a
    checkpoint's storages are; np.savez_compressed's are inflated."""
    a = np.arange(1 << 18, dtype=np.float32).reshape(512, 512)
    np.savez(tmp_path / "m.npz", a=a)
    np.savez_compressed(tmp_path / "z.npz", a=a)
    with ztensor.File(tmp_path / "m.npz", allow_foreign=True) as f:
        got = f["a"]
        assert _mapping_of(got.__array_interface__["data"][0]) == str(tmp_path / "m.npz")
        np.testing.assert_array_equal(got, a)
    with ztensor.File(tmp_path / "z.npz", allow_foreign=True) as f:
        got = f["a"]
        assert _mapping_of(got.__array_interface__["data"][0]) != str(tmp_path / "z.npz")
        np.testing.assert_array_equal(got, a)
    # A stored member whose bytes no longer match its CRC-32 is not viewed:
    # it is read through libzip, which refuses it when its data is read.
    blob = bytearray((tmp_path / "m.npz").read_bytes())
    at = bytes(blob).find(a.tobytes()[4096:4160])
    blob[at] ^= 0x10
    (tmp_path / "bad.npz").write_bytes(bytes(blob))
    with ztensor.File(tmp_path / "bad.npz", allow_foreign=True) as f:
        assert f.info("a").shape == (512, 512)
        with pytest.raises(ztensor.Error, match="CRC"):
            f["a"]
        with pytest.raises(ztensor.Error, match="CRC"):
            f.verify()


def _peak_mib_of(code, *args):
    """Runs `code` (Python, with ztensor importable, sys.argv[1:] = args) in
    a fresh process; returns that process's peak resident MiB."""
    import subprocess
    import sys
    launcher = ("import resource, runpy, sys\n"
                "sys.argv = sys.argv[1:]\n"
                "exec(sys.argv[0])\n"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    p = subprocess.run([sys.executable, "-c", launcher, code, *map(str, args)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return int(p.stdout.split()[-1]) / 1024


def test_a_deflated_npz_member_is_inflated_as_it_is_read(tmp_path):
    """np.savez_compressed's members were all inflated at open: 40 members of
    16 MiB of zeros held 640 MiB from a 650 KB file. A deflated member over
    64 KiB is now inflated when, and as far as, it is read: an open costs
    its header, verify a window at a time; its values and rows are a stored
    member's; damage past its header opens, and is refused when read."""
    zeros = tmp_path / "zeros.npz"
    np.savez_compressed(zeros, **{f"z{i}": np.zeros(16 << 20, np.uint8) for i in range(40)})
    assert os.path.getsize(zeros) < (1 << 20)
    open_and_list = ("import sys, ztensor\n"
                     "with ztensor.File(sys.argv[1], allow_foreign=True) as f:\n"
                     "    assert len(list(f)) == 40 and f.info('z7').shape == (16 << 20,)\n"
                     "    if len(sys.argv) > 2: assert f.verify() == (0, 40)\n")
    baseline = _peak_mib_of("import ztensor")
    opened = _peak_mib_of(open_and_list, zeros)
    verified = _peak_mib_of(open_and_list, zeros, "verify")
    assert opened - baseline < 48, f"open and list: {opened - baseline:.0f} MiB over the import"
    assert verified - baseline < 96, f"verify: {verified - baseline:.0f} MiB over the import"

    rng = np.random.default_rng(7)
    arrays = {"w": rng.standard_normal((300, 400)).astype(np.float32),
              "mask": rng.integers(0, 2, 200_000).astype(np.bool_),
              "big_endian": np.arange(50_000, dtype=">i4"),
              "fortran": np.asfortranarray(rng.standard_normal((300, 100))),
              "empty": np.zeros((0, 4), np.float32), "small": np.arange(10)}
    np.savez(tmp_path / "stored.npz", **arrays)
    np.savez_compressed(tmp_path / "deflated.npz", **arrays)
    with ztensor.File(tmp_path / "stored.npz", allow_foreign=True) as s, \
            ztensor.File(tmp_path / "deflated.npz", allow_foreign=True) as d:
        for name, a in arrays.items():
            np.testing.assert_array_equal(d[name], a, err_msg=name)
            np.testing.assert_array_equal(d[name], s[name], err_msg=name)
        for start, stop in ((0, 1), (150, 151), (299, 300), (17, 203), (0, 300)):
            np.testing.assert_array_equal(d.rows("w", start, stop), arrays["w"][start:stop])
            np.testing.assert_array_equal(d.rows("w", start, stop, dtype=np.float32),
                                          arrays["w"][start:stop])
        assert d.verify() == (0, len(arrays))

    # A member whose deflated stream stops short of the size its entry states
    # (and its header's shape says): the header reads, the data does not.
    image = io.BytesIO()
    np.save(image, arrays["w"])
    image = image.getvalue()
    short = tmp_path / "short.npz"
    with zipfile.ZipFile(short, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("w.npy", image[:-4096])
    blob = bytearray(short.read_bytes())
    for at, sig in ((0, b"PK\x03\x04"), (blob.rfind(b"PK\x01\x02"), b"PK\x01\x02")):
        assert blob[at:at + 4] == sig
        field = at + (22 if sig == b"PK\x03\x04" else 24)  # uncompressed size
        assert struct.unpack_from("<I", blob, field)[0] == len(image) - 4096
        struct.pack_into("<I", blob, field, len(image))
    short.write_bytes(bytes(blob))
    with ztensor.File(short, allow_foreign=True) as f:
        assert f.info("w").shape == (300, 400)
        np.testing.assert_array_equal(f.rows("w", 0, 2, dtype=np.float32), arrays["w"][:2])
        with pytest.raises(ztensor.Error, match="ends after"):
            f["w"]
        with pytest.raises(ztensor.Error, match="ends after"):
            f.verify()


def test_deflated_npz_members_inflate_side_by_side_and_a_damaged_one_is_refused(tmp_path):
    """np.savez_compressed's members are inflated by ISA-L where they lie in
    the mapped file, each its own stream: a decode_many of many members
    (and a torch load_file) inflates them on every core and gives numpy's
    values; a member whose deflate stream is damaged opens, and every way
    of reading it refuses it naming the member, while the others read."""
    from ztensor import torch as zt
    rng = np.random.default_rng(3)
    arrays = {f"w{i}": rng.standard_normal((256, 1024)).astype(np.float16) for i in range(6)}
    arrays["ones"] = np.ones((512, 512), np.float32)
    p = tmp_path / "c.npz"
    np.savez_compressed(p, **arrays)
    with ztensor.File(p, allow_foreign=True) as f:
        out = f.decode_many()
        assert sorted(out) == sorted(arrays)
        for name, a in arrays.items():
            np.testing.assert_array_equal(out[name], a, err_msg=name)
        # Pieces of two members in turn: each continues its own stream.
        for start in range(0, 256, 64):
            for name in ("w1", "w4"):
                np.testing.assert_array_equal(f.rows(name, start, start + 64),
                                              arrays[name][start:start + 64])
    loaded = zt.load_file(p, allow_foreign=True)
    for name, a in arrays.items():
        np.testing.assert_array_equal(loaded[name].numpy(), a, err_msg=name)

    with zipfile.ZipFile(p) as z:
        info = z.getinfo("w2.npy")
    blob = bytearray(p.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", blob, info.header_offset + 26)
    data = info.header_offset + 30 + name_len + extra_len
    middle = data + info.compress_size // 2
    blob[middle:middle + 64] = b"\xff" * 64
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(blob))
    with ztensor.File(bad, allow_foreign=True) as f:
        assert f.info("w2").shape == (256, 1024)
        for read in (lambda: f["w2"], lambda: f.decode_many(["w3", "w2"]), f.verify,
                     lambda: f.rows("w2", 200, 256)):
            with pytest.raises(ztensor.Error, match=r'ZT_ERR_FORMAT.*member "w2.npy": '
                                                    r'(cannot decompress|holds more|ends after)'):
                read()
        np.testing.assert_array_equal(f["w3"], arrays["w3"])
    with pytest.raises(ztensor.Error, match=r'member "w2.npy"'):
        zt.load_file(bad, allow_foreign=True)


def test_an_npy_that_must_be_reordered_honours_max_decoded_bytes(tmp_path):
    """Big-endian or Fortran-ordered data is copied to be served: that copy
    is checked against the caller's max_decoded_bytes before it is made
    (it was not: 64 MiB of >f4 cost 128 MiB at a 1 MiB limit); data
    served in place from the mapping is not a copy."""
    a = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024)  # 4 MiB
    np.save(tmp_path / "le.npy", a)
    np.save(tmp_path / "be.npy", a.astype(">f4"))
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    for name in ("be.npy", "f.npy"):
        with pytest.raises(ztensor.Error, match="more than the limit") as e:
            ztensor.open(tmp_path / name, allow_foreign=True, max_decoded_bytes=1 << 20)
        assert e.value.status_name == "ZT_ERR_LIMIT"
        with ztensor.open(tmp_path / name, allow_foreign=True, max_decoded_bytes=8 << 20) as f:
            np.testing.assert_array_equal(f[name[:-4]], a)
    with ztensor.open(tmp_path / "le.npy", allow_foreign=True, max_decoded_bytes=1 << 20) as f:
        np.testing.assert_array_equal(f["le"], a)


def test_without_allow_foreign_a_foreign_file_is_refused(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(3))
    with pytest.raises(ztensor.Error, match="allow_foreign"):
        ztensor.File(tmp_path / "a.npy")


def test_sharded_checkpoint_through_its_index(tmp_path):
    w1 = np.arange(6, dtype=np.float32).reshape(2, 3)
    w2 = np.arange(4, dtype=np.int64)
    safetensors(tmp_path / "model-00001-of-00002.safetensors", {"w1": w1}, {"format": "pt"})
    safetensors(tmp_path / "model-00002-of-00002.safetensors", {"w2": w2}, {"format": "pt"})
    index = {"metadata": {"total_size": 56},
             "weight_map": {"w1": "model-00001-of-00002.safetensors",
                            "w2": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with ztensor.File(tmp_path / "model.safetensors.index.json", allow_foreign=True) as f:
        assert f.format == "hf_index"
        np.testing.assert_array_equal(f["w1"], w1)
        np.testing.assert_array_equal(f["w2"], w2)
        attrs = f.manifest["attributes"]
        assert attrs["format"] == "pt"
        assert attrs["hf.index.metadata"] == {"total_size": 56}
    # The model's folder, and its config.json, open the index.
    (tmp_path / "config.json").write_text("{}")
    for named in (tmp_path, tmp_path / "config.json"):
        with ztensor.File(named, allow_foreign=True) as f:
            assert f.format == "hf_index"
            np.testing.assert_array_equal(f["w2"], w2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ztensor.Error, match="ZT_ERR_NOT_FOUND.*has neither"):
        ztensor.File(tmp_path / "empty", allow_foreign=True)
    # A tensor missing from the shard its map names.
    index["weight_map"]["w3"] = "model-00002-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ztensor.Error, match="w3"):
        ztensor.File(tmp_path / "model.safetensors.index.json", allow_foreign=True)


def test_pytorch_checkpoints_without_running_the_pickle(tmp_path):
    torch = pytest.importorskip("torch")  # Debian's python3-torch (scripts/setup.sh)
    w = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    state = {"model": {"w": w, "wt": w.t(), "h": torch.tensor([1.5, -2], dtype=torch.bfloat16)},
             "optimizer": {"state": {0: {"exp_avg": torch.ones(2, dtype=torch.float64)}}},
             "epoch": 7}
    for zip_format in (True, False):
        path = tmp_path / f"c{int(zip_format)}.pt"
        torch.save(state, path, _use_new_zipfile_serialization=zip_format)
        with ztensor.File(path, allow_foreign=True) as f:
            assert f.format == "pytorch"
            assert set(f) == {"model.w", "model.wt", "model.h", "optimizer.state.0.exp_avg"}
            np.testing.assert_array_equal(f["model.w"], w.numpy())
            np.testing.assert_array_equal(f["model.wt"], w.t().numpy())
            assert f["model.h"].tolist() == state["model"]["h"].view(torch.int16).numpy().astype(np.uint16).tolist()
            np.testing.assert_array_equal(f["optimizer.state.0.exp_avg"], np.ones(2))
            assert f.manifest["attributes"] == {"epoch": 7}

    class Hostile:
        def __reduce__(self):
            import os
            return (os.system, ("touch " + str(tmp_path / "ran"),))

    (tmp_path / "hostile.pt").write_bytes(pickle.dumps({"w": Hostile()}, protocol=2))
    with pytest.raises(ztensor.Error, match="os.system|posix.system"):
        ztensor.File(tmp_path / "hostile.pt", allow_foreign=True)
    assert not (tmp_path / "ran").exists()


def test_onnx_initializers_from_external_data(tmp_path):
    onnx = pytest.importorskip("onnx")  # Debian's python3-onnx (scripts/setup.sh)
    from onnx import helper, numpy_helper, TensorProto
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([1, -2], np.int64)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, producer_name="test")
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.bin",
                    size_threshold=0)
    with ztensor.File(tmp_path / "m.onnx", allow_foreign=True) as f:
        assert f.format == "onnx"
        assert list(f) == ["w", "b"]
        np.testing.assert_array_equal(f["w"], w)
        np.testing.assert_array_equal(f["b"], b)
        assert f.manifest["attributes"]["onnx.producer_name"] == "test"
        assert f.verify() == (0, 2)


def _escape_and_cache_layouts(tmp_path, model_name, data_names, write):
    """Three layouts of a model that names files beside it (#42 item 4):
    'escape': a named file is a symbolic link to a file outside the model's
    folder (refused, naming the rule); 'dirlink': the same through a linked
    directory; 'cache': a Hugging Face cache, model and data both links into
    blobs/ (read). write(folder) writes the model and its data files there."""
    import os
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside)
    escape = tmp_path / "escape"
    escape.mkdir()
    write(escape)
    for n in data_names:  # the data replaced by links to the outside copies
        os.remove(escape / n)
        os.symlink(outside / n, escape / n)
    dirlink = tmp_path / "dirlink"
    dirlink.mkdir()
    write(dirlink)
    os.symlink(outside, dirlink / "sub")
    blobs, snap = tmp_path / "cache" / "blobs", tmp_path / "cache" / "snapshots" / "abc"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    write(blobs)
    for n in [model_name] + list(data_names):
        os.rename(blobs / n, blobs / ("sha-" + n))
        os.symlink(blobs / ("sha-" + n), snap / n)
    return escape, dirlink, snap


def test_onnx_external_data_stays_inside_the_model_folder(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper, TensorProto
    w = np.arange(12, dtype=np.float32).reshape(3, 4)

    def write(folder, location="m.bin"):
        graph = helper.make_graph([], "g", [], [], initializer=[numpy_helper.from_array(w, "w")])
        onnx.save_model(helper.make_model(graph), str(folder / "m.onnx"), save_as_external_data=True,
                        location=location, size_threshold=0)

    escape, dirlink, cache = _escape_and_cache_layouts(tmp_path, "m.onnx", ["m.bin"], write)
    with pytest.raises(ztensor.Error, match="outside the model's folder") as e:
        ztensor.File(escape / "m.onnx", allow_foreign=True)["w"]
    assert e.value.status_name == "ZT_ERR_INVALID"
    write(dirlink, "sub/m.bin")  # through the linked directory
    with pytest.raises(ztensor.Error, match="outside the model's folder"):
        ztensor.File(dirlink / "m.onnx", allow_foreign=True)["w"]
    with ztensor.File(cache / "m.onnx", allow_foreign=True) as f:  # the HF cache layout
        np.testing.assert_array_equal(f["w"], w)


def test_index_shards_stay_inside_the_model_folder(tmp_path):
    w = np.arange(6, dtype=np.float32)

    def write(folder):
        safetensors(folder / "s.safetensors", {"w": w})
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "s.safetensors"}}))

    escape, _, cache = _escape_and_cache_layouts(tmp_path, "model.safetensors.index.json", ["s.safetensors"], write)
    with pytest.raises(ztensor.Error, match="outside the model's folder"):
        ztensor.File(escape / "model.safetensors.index.json", allow_foreign=True)
    with ztensor.File(cache / "model.safetensors.index.json", allow_foreign=True) as f:
        np.testing.assert_array_equal(f["w"], w)


def test_v2_shard_files_stay_inside_the_model_folder(tmp_path):
    import os
    parts = {f"w{i}": np.full((64, 256), i, np.float32) for i in range(3)}

    def write(folder):
        with ztensor.Writer(folder / "m.zt", file_version=2, shard_bytes=150 << 10) as wr:
            for k, a in parts.items():
                wr.add(k, a)

    probe = tmp_path / "probe"
    probe.mkdir()
    write(probe)
    shards = sorted(n for n in os.listdir(probe) if n != "m.zt")
    escape, _, cache = _escape_and_cache_layouts(tmp_path, "m.zt", shards, write)
    with ztensor.open(escape / "m.zt") as f:
        with pytest.raises(ztensor.Error, match="outside the model's folder"):
            [f[k] for k in parts]
    with ztensor.open(cache / "m.zt") as f:
        assert all(np.array_equal(f[k], a) for k, a in parts.items())


def test_zip_members_are_read_where_the_central_directory_says(tmp_path):
    # Issue #42 item 8: a local header of a member's name placed before the
    # real one, its data different but its CRC-32 forged to the central
    # directory's. torch.load and zipfile read the real data through the
    # central directory's offset; so must we (we searched for the header).
    torch = pytest.importorskip("torch")
    real = torch.arange(64, dtype=torch.float32)
    saved = tmp_path / "saved.pt"
    torch.save({"w": real}, saved)
    forged = tmp_path / "forged.pt"
    forged.write_bytes(zip_forgery.with_decoy(saved.read_bytes(), "/data/0",
                                              np.full(64, 7.0, "<f4").tobytes()))
    assert torch.equal(torch.load(forged)["w"], real)  # what torch reads
    with ztensor.open(forged, allow_foreign=True) as f:
        assert np.array_equal(f["w"], real.numpy())


def test_zip_with_two_members_of_one_name_is_refused(tmp_path):
    import warnings
    import zipfile
    p = tmp_path / "two.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate, and writes it
        with zipfile.ZipFile(p, "w") as zf:
            for fill in (1, 2):
                buf = __import__("io").BytesIO()
                np.save(buf, np.full(3, fill, np.int32))
                zf.writestr("a.npy", buf.getvalue())
    # libzip refuses it ("File already exists"); our own check says so where it does not.
    with pytest.raises(ztensor.Error, match='two members are named "a.npy"|File already exists'):
        ztensor.open(p, allow_foreign=True)


def test_foreign_opens_honour_max_decoded_bytes(tmp_path):
    # Issue #42 item 7: a .pt tensor that is a stride-0 view of a 1 GiB size,
    # and an .npz member inflating to 256 MiB, were made whole at open
    # whatever the caller's max_decoded_bytes. Now refused before allocating.
    import resource
    import zipfile
    torch = pytest.importorskip("torch")
    pt = tmp_path / "expanded.pt"
    torch.save({"w": torch.zeros(1).expand(1 << 28)}, pt)  # 1 GiB of f32, one element stored
    npz = tmp_path / "big.npz"
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("a.npy", "w", force_zip64=True) as f:
            header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.uint8))
            header["shape"] = (256 << 20,)
            np.lib.format.write_array_header_1_0(f, header)
            block = bytes(16 << 20)
            for _ in range(16):
                f.write(block)
    assert os.path.getsize(npz) < (2 << 20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for path in (pt, npz):
        with pytest.raises(ztensor.Error, match="more than the limit"):
            ztensor.open(path, allow_foreign=True, max_decoded_bytes=16 << 20)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown < 64, f"the refused opens grew the peak by {grown:.0f} MiB"
    # Within the limit such a view reads, gathered.
    small = tmp_path / "small.pt"
    torch.save({"w": torch.ones(1).expand(1 << 20)}, small)
    with ztensor.open(small, allow_foreign=True, max_decoded_bytes=16 << 20) as f:
        assert f["w"].shape == (1 << 20,) and f["w"].all()


def test_a_safetensors_file_is_mapped_where_its_elements_are_aligned(tmp_path):
    # safetensors data is little-endian by its specification: mmap=True and
    # dlpack map it copy-on-write as they map a zTensor file's, except a
    # tensor whose bytes do not start at a multiple of its element's size
    # (the format packs tensors back to back), which is decoded into memory
    # of its own: reading misaligned elements is undefined behaviour.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    w, odd, after = np.arange(64, dtype=np.float32), np.array([1, 2, 3], np.uint8), np.full(8, 2.5, np.float32)
    p = safetensors(tmp_path / "m.safetensors", {"w": w, "odd": odd, "after": after})
    body = 8 + struct.unpack("<Q", p.read_bytes()[:8])[0]
    at = {"w": body, "odd": body + w.nbytes, "after": body + w.nbytes + odd.nbytes}
    assert at["after"] % 4 != 0  # the premise: "after" is misaligned
    loaded = zt.load_file(p, mmap=True, allow_foreign=True)
    with zt.safe_open(p, "pt", mmap=True, allow_foreign=True) as s:
        one_at_a_time = {name: s.get_tensor(name) for name in ("after", "w")}
    with ztensor.open(p, allow_foreign=True) as f:
        exported = torch.from_dlpack(f.dlpack("w"))
    assert loaded["after"].data_ptr() % 4 == 0 and one_at_a_time["after"].data_ptr() % 4 == 0
    fd = os.open(p, os.O_WRONLY)
    try:  # what the file's pages show through a private mapping until written
        os.pwrite(fd, np.float32(-7.0).tobytes(), at["w"] + 4)
        os.pwrite(fd, np.float32(-7.0).tobytes(), at["after"])
    finally:
        os.close(fd)
    for got in (loaded["w"], one_at_a_time["w"], exported):
        assert got[1].item() == -7.0 and got[2].item() == 2.0
    for got in (loaded, one_at_a_time):
        assert got["after"].tolist() == [2.5] * 8  # a copy made at load
    assert loaded["odd"].tolist() == [1, 2, 3]


def test_many_safetensors_tensors_are_mapped_together_where_aligned(tmp_path):
    # Enough tensors that their places are claimed together (numpy's
    # columns): the aligned ones map, the misaligned ones are copies.
    pytest.importorskip("torch")
    from ztensor import torch as zt
    tensors = {}
    for k in range(12):
        tensors[f"f{k:02}"] = np.full(4, float(k), np.float32)
        tensors[f"u{k:02}"] = np.arange(k % 3 + 1, dtype=np.uint8)  # 1 to 3 bytes: the next f32 moves
    p = safetensors(tmp_path / "m.safetensors", tensors)
    body = 8 + struct.unpack("<Q", p.read_bytes()[:8])[0]
    at, offset = {}, body
    for name, a in tensors.items():
        at[name], offset = offset, offset + a.nbytes
    loaded = zt.load_file(p, mmap=True, allow_foreign=True)
    fd = os.open(p, os.O_WRONLY)
    try:
        for k in range(12):
            os.pwrite(fd, np.float32(-1.0).tobytes(), at[f"f{k:02}"])
    finally:
        os.close(fd)
    aligned = [k for k in range(12) if at[f"f{k:02}"] % 4 == 0]
    assert 0 < len(aligned) < 12  # the premise: both kinds
    for k in range(12):
        got = loaded[f"f{k:02}"]
        assert got.data_ptr() % 4 == 0
        assert got[0].item() == (-1.0 if k in aligned else float(k)) and got[1].item() == float(k)


def test_a_pytorch_checkpoint_of_many_tensors_reads_every_one(tmp_path):
    # Its central directory (5,000 entries, ~0.5 MB) is read through more
    # than one read-ahead window, and each member's local header through
    # pages of its own: every tensor comes back as saved.
    torch = pytest.importorskip("torch")
    state = {f"layer.{k}.{'w' * (k % 37)}": torch.full((k % 5 + 1,), float(k)) for k in range(5000)}
    p = tmp_path / "many.pt"
    torch.save(state, p)
    with ztensor.open(p, allow_foreign=True) as f:
        assert sorted(f.keys()) == sorted(state)
        for name, t in state.items():
            np.testing.assert_array_equal(f[name], t.numpy())


def gguf(path, tensors, align=32):
    """A GGUF v3 file of `tensors` (f32 or f16 numpy arrays), no metadata:
    the header, the tensor infos (dimensions innermost first), then the data,
    each tensor at a multiple of `align`."""
    def text(x):
        return struct.pack("<Q", len(x.encode())) + x.encode()

    infos, data = b"", b""
    for name, a in tensors.items():
        kind = {np.dtype(np.float32): 0, np.dtype(np.float16): 1}[a.dtype]
        data += b"\0" * (-len(data) % align)
        infos += text(name) + struct.pack("<I", a.ndim) + b"".join(struct.pack("<Q", d) for d in reversed(a.shape))
        infos += struct.pack("<IQ", kind, len(data))
        data += a.tobytes()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0) + infos
    path.write_bytes(head + b"\0" * (-len(head) % align) + data)
    return path


def test_foreign_files_are_mapped_where_their_bytes_lie_as_read(tmp_path):
    # mmap=True (load_file, safe_open) and dlpack map a foreign file's
    # tensor copy-on-write wherever its bytes lie in the file as they are
    # read (torch.save's storages, np.save's and np.savez's arrays, GGUF's),
    # as they map a zTensor file's; a tensor whose bytes the reader had to change
    # (a strided view gathered, big-endian elements reordered, a
    # Fortran-order array transposed, a member inflated) is a copy, and a
    # stored member whose CRC-32 does not hold is refused as a copying load
    # refuses it. Every tensor has the values a copying load gives.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    w = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    pt = tmp_path / "m.pt"
    torch.save({"w": w, "wt": w.t(), "row": w[2], "h": torch.tensor([1.5, -2.0] * 32, dtype=torch.bfloat16),
                "b": torch.arange(64) % 3 == 0}, pt)
    a = np.arange(4096, dtype=np.float32).reshape(64, 64)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "big.npy", a.astype(">f4"))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(a))
    members = {"a": a, "i": np.arange(100, dtype=np.int64) * 3, "u": np.arange(256, dtype=np.uint8)}
    np.savez(tmp_path / "m.npz", **members)
    np.savez_compressed(tmp_path / "z.npz", a=a)
    # np.savez does not align its members' data (a zip entry's header and
    # name come first): a member is mapped where its elements are aligned.
    npz = (tmp_path / "m.npz").read_bytes()
    aligned = {name for name, m in members.items() if npz.find(m.tobytes()) % m.itemsize == 0}
    assert "u" in aligned
    g = gguf(tmp_path / "m.gguf", {"g": a, "half": np.arange(7, dtype=np.float16)})
    # (an .npy file's one array is named after the file)
    mapped = {pt: {"w", "h", "b"}, tmp_path / "a.npy": {"a"}, tmp_path / "m.npz": aligned, g: {"g", "half"}}
    copied = {pt: {"wt", "row"}, tmp_path / "big.npy": {"big"}, tmp_path / "fortran.npy": {"fortran"},
              tmp_path / "z.npz": {"a"}, tmp_path / "m.npz": set(members) - aligned}
    for path in sorted(set(mapped) | set(copied)):
        expected = zt.load_file(path, allow_foreign=True)
        loaded = zt.load_file(path, allow_foreign=True, mmap=True)
        with zt.safe_open(path, "pt", allow_foreign=True, mmap=True) as s:
            one_at_a_time = {name: s.get_tensor(name) for name in s.keys()}
        assert set(loaded) == set(one_at_a_time) == set(expected) == mapped.get(path, set()) | copied.get(path, set())
        for name, want in expected.items():
            for got in (loaded[name], one_at_a_time[name]):
                assert got.dtype == want.dtype and torch.equal(got, want), (path.name, name)
                place = _mapping_of(got.data_ptr())
                assert (place == str(path)) == (name in mapped.get(path, ())), (path.name, name, place)
        if path.suffix == ".npy":
            with ztensor.open(path, allow_foreign=True) as f:
                exported = torch.from_dlpack(f.dlpack(path.stem))
            assert torch.equal(exported, expected[path.stem])
            assert (_mapping_of(exported.data_ptr()) == str(path)) == (path.name == "a.npy")
    # A mapped tensor is this process's copy-on-write: a write changes it,
    # never the file.
    loaded = zt.load_file(tmp_path / "a.npy", allow_foreign=True, mmap=True)
    loaded["a"][0, 0] = -1.0
    assert np.load(tmp_path / "a.npy")[0, 0] == 0.0
    # A stored member whose bytes no longer match its CRC-32.
    blob = bytearray((tmp_path / "m.npz").read_bytes())
    blob[bytes(blob).find(a.tobytes()[4096:4160])] ^= 0x10
    (tmp_path / "bad.npz").write_bytes(bytes(blob))
    for mmap in (False, True):
        with pytest.raises(ztensor.Error, match="CRC"):
            zt.load_file(tmp_path / "bad.npz", allow_foreign=True, mmap=mmap)


def _sharded_models(tmp_path, tensors):
    """The same tensors as a sharded safetensors checkpoint (an index and
    two shards) and as a v2 zTensor model split into shards; returns
    {index or root path: the files its tensors may lie in}."""
    names = sorted(tensors)
    half = {"a": names[: len(names) // 2], "b": names[len(names) // 2:]}
    hf = tmp_path / "hf"
    hf.mkdir()
    weight_map = {}
    for part, keys in half.items():
        shard = f"model-0000{1 if part == 'a' else 2}-of-00002.safetensors"
        safetensors(hf / shard, {k: tensors[k] for k in keys}, {"format": "pt"})
        weight_map.update({k: shard for k in keys})
    (hf / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    v2 = tmp_path / "v2"
    v2.mkdir()
    with ztensor.Writer(v2 / "m.zt", file_version=2, shard_bytes=192 << 10) as w:
        for k in names:
            w.add(k, tensors[k])
    return {hf / "model.safetensors.index.json": sorted(hf.glob("*.safetensors")),
            v2 / "m.zt": sorted(p for p in v2.iterdir() if p.name != "m.zt")}


def test_a_sharded_models_tensors_are_mapped_in_their_shard_files(tmp_path):
    # A sharded checkpoint (.index.json) and a v2 model's shards: mmap=True,
    # get_tensor and dlpack loops map each tensor in the file that holds it
    # (zt_component_files: where, and which file the library opened), as
    # they map one file's; each file is mapped once.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    tensors = {f"w{k:02}": np.full((64, 256), k, np.float32) for k in range(8)}  # 64 KiB each
    tensors.update({f"s{k:02}": np.arange(k + 1, dtype=np.float32) for k in range(24)})
    for path, shard_files in _sharded_models(tmp_path, tensors).items():
        assert len(shard_files) >= 2
        allow = path.suffix == ".json"
        shown = {str(p) for p in shard_files}
        loaded = zt.load_file(path, mmap=True, allow_foreign=allow)
        with zt.safe_open(path, "pt", mmap=True, allow_foreign=allow) as s:
            one_at_a_time = {k: s.get_tensor(k) for k in s.keys()}
        with ztensor.open(path, allow_foreign=allow) as f:
            exported = {k: torch.from_dlpack(f.dlpack(k)) for k in f.keys()}
        for got in (loaded, one_at_a_time, exported):
            assert sorted(got) == sorted(tensors)
            places = set()
            for k, t in got.items():
                assert t.tolist() == tensors[k].tolist(), (path.name, k)
                places.add(_mapping_of(t.data_ptr()))
            assert places == shown, (path.name, places)
        # Each file mapped once: the mappings of this process that name them.
        with open("/proc/self/maps") as maps:
            named = [line.split()[-1] for line in maps if line.split()[-1] in shown]
        assert named, "no mapping of a shard file"
        # A write changes this process's pages, never the file.
        loaded["w03"][0, 0] = -5.0
        assert zt.load_file(path, allow_foreign=allow)["w03"][0, 0].item() == 3.0


def test_a_shard_replaced_after_open_is_not_mapped(tmp_path, monkeypatch):
    # What a shard's path names when the tensors are mapped must be the file
    # the library opened (its device and inode): a shard replaced by
    # rename since is not mapped, and the tensors come from the library's
    # file, as a copying load's do.
    pytest.importorskip("torch")
    from ztensor import torch as zt
    tensors = {f"w{k:02}": np.full((64, 256), k, np.float32) for k in range(8)}
    tensors.update({f"s{k:02}": np.arange(k + 1, dtype=np.float32) for k in range(24)})
    for path, shard_files in _sharded_models(tmp_path, tensors).items():
        allow = path.suffix == ".json"
        with zt.safe_open(path, "pt", mmap=True, allow_foreign=allow) as s:
            # The first mapped get_tensor asks where every tensor lies
            # (zt_component_files; here from the first ask, where a loop
            # asks windows of them), which opens every shard of a v2 model
            # (a sharded checkpoint's are opened with its index).
            monkeypatch.setattr(_reader, "_SCATTERED_PLACES", 0)
            first = s.get_tensor("s00")
            assert first.tolist() == [0.0]
            for shard in shard_files:
                blob = bytearray(shard.read_bytes())
                for k in range(8):  # other values where each w lies (same size)
                    at = bytes(blob).find(tensors[f"w{k:02}"].tobytes())
                    if at >= 0:
                        blob[at:at + 4] = np.float32(-1).tobytes()
                fresh = shard.with_name(shard.name + ".new")
                fresh.write_bytes(bytes(blob))
                os.replace(fresh, shard)
            loaded = {k: s.get_tensor(k) for k in s.keys()}
        for k, t in loaded.items():
            assert t.tolist() == tensors[k].tolist(), (path.name, k)
            assert _mapping_of(t.data_ptr()) not in {str(p) for p in shard_files}


def _read_calls():
    """This process's read system calls so far (read, pread, ...: syscr of
    /proc/self/io), or None where the kernel does not say."""
    try:
        with open("/proc/self/io") as io_counts:
            for line in io_counts:
                if line.startswith("syscr:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def test_a_pytorch_checkpoints_directory_is_read_in_few_calls(tmp_path):
    # libzip reads a central directory larger than its tail probe an entry
    # at a time, then each member's local header: 6 reads a tensor (120,000
    # for 20,000 tensors) before the archive's small reads came from a
    # window read ahead. The open of 5,000 tensors now takes a few hundred.
    torch = pytest.importorskip("torch")
    if _read_calls() is None:
        pytest.skip("/proc/self/io does not count this process's reads here")
    count = 5000
    p = tmp_path / "many.pt"
    torch.save({f"layer.{k}.w": torch.full((k % 5 + 1,), float(k)) for k in range(count)}, p)
    before = _read_calls()
    with ztensor.open(p, allow_foreign=True) as f:
        calls = _read_calls() - before
        assert len(f) == count
    assert calls < count // 4, f"{calls} read calls to open {count} tensors"



def _resident_fraction(path):
    """The fraction of `path`'s pages in the page cache (mincore(2) over a
    mapping of it, which touches none)."""
    import ctypes
    import mmap as mmap_module
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = os.path.getsize(path)
    pages = (size + mmap_module.PAGESIZE - 1) // mmap_module.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap_module.PROT_READ, mmap_module.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
        try:
            vec = (ctypes.c_ubyte * pages)()
            assert libc.mincore(address, size, vec) == 0, ctypes.get_errno()
            return sum(v & 1 for v in vec) / pages
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)


def test_a_pytorch_checkpoint_opens_without_reading_its_tensors(tmp_path):
    # zt_open validates structure without touching data bytes: a stored zip
    # member's CRC-32 (a checkpoint's storage, an .npz array) is checked at
    # the first read of its bytes, not at open (which read every member
    # whole: a cold open of a 14 GB checkpoint read 14 GB).
    torch = pytest.importorskip("torch")
    p = tmp_path / "m.pt"
    torch.save({f"w{k}": torch.full((1 << 20,), float(k)) for k in range(8)}, p)  # 32 MiB
    np.savez(tmp_path / "m.npz", **{f"a{k}": np.full(1 << 20, k, np.float32) for k in range(8)})
    for path in (p, tmp_path / "m.npz"):
        _drop_from_page_cache(path)
        if _resident_fraction(path) > 0.05:
            pytest.skip("the page cache kept the file (cannot drop it here)")
        with ztensor.open(path, allow_foreign=True) as f:
            assert len(f) == 8
            assert _resident_fraction(path) < 0.25, path.name
            first = sorted(f.keys())[0]
            assert float(f[first][5]) == 0.0  # read: its member checked then


def _drop_from_page_cache(path):
    """Asks the kernel to drop `path`'s pages (fsync first: dirty pages stay)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _checkpoint_of_members(tmp_path, torch, count=16, elements=1 << 19):
    """A torch.save file of `count` float32 tensors, each its own storage
    (a zip member of 2 MiB by default) filled with its number."""
    p = tmp_path / "m.pt"
    torch.save({f"w{k:02d}": torch.full((elements,), float(k)) for k in range(count)}, p)
    return p


def test_a_few_mapped_tensors_of_a_checkpoint_ask_only_their_places(tmp_path, monkeypatch):
    # A hand-out of a mapped tensor asks where it lies (zt_component_extents),
    # which runs the pending CRC-32 check of its zip member: the whole
    # file's. A few tensors handed out one at a time (safe_open(mmap=True)'s
    # get_tensor, f[name], dlpack) asked every object's place at the second,
    # reading the whole checkpoint (a cold 10 GB file: all of it read for two
    # tensors). Now: the objects asked, one at a time where the names asked
    # are scattered; windows that double in a loop in the model's order.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    p = _checkpoint_of_members(tmp_path, torch)
    asked = []
    extents = _reader.lib.zt_component_extents

    def spy(r, role, first, count, *rest):
        asked.append((first, count))
        return extents(r, role, first, count, *rest)

    monkeypatch.setattr(_reader.lib, "zt_component_extents", spy)
    with zt.safe_open(p, "pt", allow_foreign=True, mmap=True) as s:
        for k in (3, 11, 7):
            assert s.get_tensor(f"w{k:02d}")[9].item() == float(k)
        assert sum(count for _, count in asked) == 3, asked
        asked.clear()
        for k in range(16):  # in the model's order: windows of 1, 2, 4, ... (the three asked not again)
            assert s.get_tensor(f"w{k:02d}")[9].item() == float(k)
        assert len(asked) <= 6 and sum(count for _, count in asked) == 13, asked
    asked.clear()
    with ztensor.open(p, allow_foreign=True) as f:
        assert float(f["w05"][0]) == 5.0 and float(f["w12"][0]) == 12.0
        assert float(np.from_dlpack(f.dlpack("w14"))[3]) == 14.0
        assert sum(count for _, count in asked) <= 2, asked  # the first f[name] asks zt_component_extent
    asked.clear()
    # More scattered asks than _SCATTERED_PLACES: every object asked once.
    monkeypatch.setattr(_reader, "_SCATTERED_PLACES", 2)
    with zt.safe_open(p, "pt", allow_foreign=True, mmap=True) as s:
        for k in (15, 0, 9, 4, 2):
            assert s.get_tensor(f"w{k:02d}")[1].item() == float(k)
    assert asked[:2] == [(15, 1), (0, 1)] and asked[2][1] == 16 and len(asked) == 3, asked
    # A whole mapped load asks every place at once.
    asked.clear()
    loaded = zt.load_file(p, allow_foreign=True, mmap=True)
    assert [float(loaded[f"w{k:02d}"][7]) for k in range(16)] == [float(k) for k in range(16)]
    assert asked == [(0, 16)], asked


def test_a_few_mapped_tensors_of_a_cold_checkpoint_read_only_their_members(tmp_path):
    # What the places asked above mean on a disk: with the file dropped
    # from the page cache, two tensors handed out (mapped) read their two
    # members of sixteen (and the kernel's readahead), not the file.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    p = _checkpoint_of_members(tmp_path, torch)
    _drop_from_page_cache(p)
    if _resident_fraction(p) > 0.05:
        pytest.skip("the page cache kept the file (cannot drop it here)")
    with zt.safe_open(p, "pt", allow_foreign=True, mmap=True) as s:
        assert s.get_tensor("w02")[100].item() == 2.0
        assert s.get_tensor("w13")[100].item() == 13.0
        assert _resident_fraction(p) < 0.5  # 2 of 16 members (before: all 16 read at the second)


def test_a_pytorch_checkpoints_corrupt_storage_is_refused_by_every_read(tmp_path):
    # A storage whose bytes no longer match its CRC-32: the open succeeds
    # (it reads no tensor's data); every way of reading a tensor in that
    # storage refuses it (ZT_ERR_DIGEST, naming the member), mapped loads
    # included; the other tensors read; verify refuses the file.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    p = tmp_path / "m.pt"
    torch.save({"good": torch.arange(64, dtype=torch.float32), "bad": torch.full((256,), 3.0)}, p)
    blob = bytearray(p.read_bytes())
    at = bytes(blob).find(np.full(256, 3.0, np.float32).tobytes())
    blob[at + 100] ^= 0x40
    p.write_bytes(bytes(blob))
    with ztensor.open(p, allow_foreign=True) as f:
        assert sorted(f.keys()) == ["bad", "good"]
        assert f["good"][63] == 63.0
        with pytest.raises(ztensor.Error, match="ZT_ERR_DIGEST.*CRC-32"):
            f["bad"]
        with pytest.raises(ztensor.Error, match="CRC-32"):
            f.dlpack("bad")
        with pytest.raises(ztensor.Error, match="CRC-32"):
            f.verify()
    for mmap in (False, True):
        with pytest.raises(ztensor.Error, match="CRC-32"):
            zt.load_file(p, allow_foreign=True, mmap=mmap)
        with zt.safe_open(p, "pt", allow_foreign=True, mmap=mmap) as s:
            assert s.get_tensor("good")[5].item() == 5.0
            with pytest.raises(ztensor.Error, match="CRC-32"):
                s.get_tensor("bad")



def test_a_sharded_pytorch_checkpoints_members_are_checked_each_in_its_shard(tmp_path):
    # pytorch_model.bin.index.json and its .bin shards: each shard's members
    # are checked at their first read, against their own CRC-32; a corrupt
    # storage in the second shard refuses its tensor alone.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    shards = {"pytorch_model-00001-of-00002.bin": {"a": torch.full((64,), 1.0), "b": torch.full((64,), 2.0)},
              "pytorch_model-00002-of-00002.bin": {"c": torch.full((64,), 3.0), "d": torch.full((64,), 4.0)}}
    for name, state in shards.items():
        torch.save(state, tmp_path / name)
    weight_map = {k: name for name, state in shards.items() for k in state}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    second = tmp_path / "pytorch_model-00002-of-00002.bin"
    blob = bytearray(second.read_bytes())
    blob[bytes(blob).find(np.full(64, 4.0, np.float32).tobytes()) + 9] ^= 0x01
    second.write_bytes(bytes(blob))
    index = tmp_path / "pytorch_model.bin.index.json"
    for mmap in (False, True):
        with zt.safe_open(index, "pt", allow_foreign=True, mmap=mmap) as s:
            for k, v in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
                assert s.get_tensor(k).tolist() == [v] * 64, (k, mmap)
            with pytest.raises(ztensor.Error, match="CRC-32"):
                s.get_tensor("d")
