"""Files written by today's real tools (torch 2.11, safetensors 0.8,
transformers 5.17, onnx 1.23; tests/fixtures/make_today.py, run on the lent
GPU machine) read back byte for byte against the manifest those tools'
own tensors gave. Debian's torch is 1.13, so these files are the only
check that we read what users' current tools write."""

import json
import pathlib

import numpy as np
import pytest

import ztensor
from process_maps import mapping_of as _mapping_of

HERE = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "today"
MANIFEST = json.loads((HERE / "manifest.json").read_text())

# What each file is opened as, and the defects still open (issue #45, part 1):
# such a test fails until the defect is fixed, then fails again (strict) so
# that the marker goes.
CASES = {
    "torch_dtypes.pt": ("torch_dtypes.pt", None),
    "torch_views.pt": ("torch_views.pt", None),
    "torch_legacy_format.pt": ("torch_legacy_format.pt", None),
    "safetensors_dtypes.safetensors": ("safetensors_dtypes.safetensors", None),
    "hf_llama_sharded": ("hf_llama_sharded/model.safetensors.index.json", None),
    "onnx_external": ("onnx_external/model.onnx", None),
}


def raw(a):
    """An array's elements in row-major order, little-endian, as hex."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes().hex()


@pytest.mark.parametrize("key", sorted(CASES))
def test_todays_files_read_byte_for_byte(key):
    path, defect = CASES[key]
    expected = MANIFEST["files"][key]["tensors"]
    run = lambda: check(HERE / path, expected)  # noqa: E731
    if defect:
        with pytest.raises(ztensor.Error):
            run()
        pytest.xfail(defect)
    run()


def check(path, expected):
    with ztensor.open(path, allow_foreign=True) as f:
        assert sorted(f.keys()) == sorted(expected)
        for name, want in expected.items():
            got = f[name]
            assert list(got.shape) == want["shape"] or want["dtype"] == "float4_e2m1fn_x2", name
            assert raw(got) == want["hex"], name


# The files a torch loader takes on this torch (torch_dtypes.pt and
# safetensors_dtypes.safetensors hold u64 values above 2**63 - 1, which
# torch 1.13 has no type for), and how many of their tensors lie in a file
# as they are read (aligned, not a strided view, not reordered): transformers'
# sharded checkpoint and ONNX's external data whole.
MAPPED = {"torch_views.pt": 1, "torch_legacy_format.pt": 3, "hf_llama_sharded": 21, "onnx_external": 2}


@pytest.mark.parametrize("key", sorted(MAPPED))
def test_todays_files_map_where_their_bytes_lie_as_read(key):
    # load_file(mmap=True) of files today's tools wrote: the same tensors as
    # the copying load, each mapped in the file that holds it where its
    # bytes allow (a sharded checkpoint's shards, ONNX external data).
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt
    path = HERE / CASES[key][0]
    copied = zt.load_file(path, allow_foreign=True)
    mapped = zt.load_file(path, allow_foreign=True, mmap=True)
    assert sorted(mapped) == sorted(copied)
    places = []
    for name, want in copied.items():
        got = mapped[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert torch.equal(got.reshape(-1).view(torch.uint8), want.reshape(-1).view(torch.uint8)), name
        places.append(_mapping_of(got.data_ptr()) if got.numel() else "")
    assert sum(1 for p in places if p and p.startswith(str(HERE))) == MAPPED[key], places
