"""Foreign files through ztensor.File(path, allow_foreign=True): the C
library's own readers (zt_open_options.allow_foreign), the values numpy and
torch wrote, and the hostile pickle refused without running it."""

import json
import pickle
import struct

import numpy as np
import pytest

import ztensor


def safetensors(path, tensors, metadata=None):
    """A .safetensors file of little-endian numpy arrays, written by hand."""
    names = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64", np.dtype("<f2"): "F16"}
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
