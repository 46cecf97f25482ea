"""ztensor.torch against torch itself (Debian's python3-torch): every dtype
round-trips, slices index like torch, modules with tied weights save once
and load shared, files cross between ztensor.torch and the C ABI."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # Debian's python3-torch (scripts/setup.sh)

import ztensor  # noqa: E402
from ztensor import torch as zt  # noqa: E402

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128]
DTYPES += [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]


def sample(dtype, shape=(3, 4, 5)):
    n = int(np.prod(shape))
    base = (torch.arange(n, dtype=torch.float64) * 37 % 101 - 50).reshape(shape)
    if dtype == torch.bool:
        return base > 0
    if dtype == torch.uint8:
        return base.abs().to(dtype)
    if dtype.is_complex:
        return torch.complex(base, -base).to(dtype)
    return base.to(dtype)


def bits(t):
    """FP8 tensors compared by their bytes (torch.equal has no FP8 kernels)."""
    return t.view(torch.uint8) if str(t.dtype).startswith("torch.float8") else t


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_round_trips(tmp_path, dtype, encoding):
    t = {"x": sample(dtype), "scalar": sample(dtype, ()), "empty": sample(dtype, (0, 3))}
    zt.save_file(t, tmp_path / "t.zt", {"note": "hi"}, encoding=encoding)
    for mmap in (False, True):
        got = zt.load_file(tmp_path / "t.zt", mmap=mmap)
        assert set(got) == set(t)
        for k in t:
            assert got[k].dtype == dtype and got[k].shape == t[k].shape, k
            assert torch.equal(bits(got[k]), bits(t[k])), k
    assert zt.load(zt.save(t))["x"].dtype == dtype
    with zt.safe_open(tmp_path / "t.zt", framework="pt") as f:
        assert f.metadata() == {"note": "hi"}
        assert sorted(f.keys()) == ["empty", "scalar", "x"]
        assert torch.equal(f.get_tensor("x"), t["x"])


def test_bytes_match_the_c_abi(tmp_path):
    t = {"w": torch.arange(12, dtype=torch.float32).reshape(3, 4),
         "h": torch.tensor([1.0, -2.5], dtype=torch.bfloat16)}
    zt.save_file(t, tmp_path / "t.zt")
    with ztensor.open(tmp_path / "t.zt") as f:
        np.testing.assert_array_equal(f["w"], t["w"].numpy())
        assert f.info("h").components["data"].dtype == "bf16"
        assert f["h"].tolist() == t["h"].view(torch.int16).numpy().view(np.uint16).tolist()
        assert f.verify() == (2, 0)  # xxh3 digests by default
    # And the other way: a file written through the numpy API.
    with ztensor.Writer(tmp_path / "n.zt") as w:
        w.add("h", np.array([0x3F80, 0xC020], dtype=np.uint16), dtype="bf16")
    assert zt.load_file(tmp_path / "n.zt")["h"].tolist() == [1.0, -2.5]


SLICES = [0, -1, (slice(1, 3), 2), (Ellipsis, 1), (slice(None, None, 2), slice(3, 0, -1)),
          (slice(None), slice(1, 4, 2), slice(None, None, -2)), (1, 2, 3), ()]


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_slices_index_like_torch(tmp_path, encoding):
    t = sample(torch.float32, (4, 5, 6))
    b = sample(torch.bfloat16, (4, 5, 6))
    zt.save_file({"t": t, "b": b}, tmp_path / "t.zt", encoding=encoding)
    with zt.safe_open(tmp_path / "t.zt", framework="pt") as f:
        s, sb = f.get_slice("t"), f.get_slice("b")
        assert s.get_shape() == [4, 5, 6] and s.get_dtype() == "F32" and sb.get_dtype() == "BF16"
        for key in SLICES:
            # torch has no negative steps: compare with numpy's indexing there.
            want = torch.from_numpy(np.array(t.numpy()[key]))
            assert torch.equal(s[key], want), key
            got_b = sb[key]
            assert got_b.dtype == torch.bfloat16 and torch.equal(got_b.float(), want.to(torch.bfloat16).float())
        assert torch.equal(s[1:3, :, 4], t[1:3, :, 4])


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied
        self.norm = torch.nn.LayerNorm(4)


def test_save_model_stores_tied_weights_once_and_loads_them_shared(tmp_path):
    torch.manual_seed(0)
    m = Tied()
    with pytest.raises(ValueError, match="share memory"):
        zt.save_file(m.state_dict(), tmp_path / "no.zt")
    zt.save_model(m, tmp_path / "m.zt", {"arch": "tied"})
    with ztensor.open(tmp_path / "m.zt") as f:
        assert sorted(f) == ["embed.weight", "norm.bias", "norm.weight"]  # stored once
        assert f.attributes[zt.ALIASES_KEY] == {"head.weight": "embed.weight"}
    loaded = zt.load_file(tmp_path / "m.zt")
    assert loaded["head.weight"] is loaded["embed.weight"]
    m2 = Tied()
    assert zt.load_model(m2, tmp_path / "m.zt") == ([], [])
    assert torch.equal(m2.embed.weight, m.embed.weight)
    assert m2.head.weight.data_ptr() == m2.embed.weight.data_ptr()  # still tied

    class Other(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)
            self.extra = torch.nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match='Missing key.*"extra.weight".*\n.*Unexpected key.*"norm.bias"'):
        zt.load_model(Other(), tmp_path / "m.zt")
    missing, unexpected = zt.load_model(Other(), tmp_path / "m.zt", strict=False)
    assert sorted(missing) == ["extra.bias", "extra.weight"]
    assert sorted(unexpected) == ["head.weight", "norm.bias", "norm.weight"]


def test_copies_by_default_and_copy_on_write_with_mmap(tmp_path):
    t = torch.arange(1000, dtype=torch.float32)
    zt.save_file({"t": t}, tmp_path / "t.zt")
    before = (tmp_path / "t.zt").read_bytes()
    a = zt.load_file(tmp_path / "t.zt")["t"]
    a[0] = 42  # an ordinary writable tensor
    m = zt.load_file(tmp_path / "t.zt", mmap=True)["t"]
    assert m[0] == 0
    m[1] = 43  # copy-on-write: this process's page changes, the file does not
    assert m[1] == 43
    assert (tmp_path / "t.zt").read_bytes() == before
    assert zt.load_file(tmp_path / "t.zt")["t"][1] == 1


def test_device_reaches_to(tmp_path):
    zt.save_file({"t": torch.ones(2)}, tmp_path / "t.zt")
    assert zt.load_file(tmp_path / "t.zt", device="meta")["t"].device.type == "meta"
    with zt.safe_open(tmp_path / "t.zt", framework="pt", device="meta") as f:
        assert f.get_tensor("t").device.type == "meta"
        assert f.get_slice("t")[0:1].device.type == "meta"


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_and_quantized_objects_load_dense_or_sparse(tmp_path):
    with ztensor.Writer(tmp_path / "s.zt") as w:
        w.add_csr("csr", np.array([1.0, 2.0], np.float64), np.array([1, 0]), np.array([0, 1, 2]), (2, 2))
        w.add_coo("coo", np.array([3.0], np.float32), np.array([[1], [0]]), (2, 2))
        # w[n, k] = (q(n, k) - zero[n]) * scale[n], q(n, k) = packed[k, n]
        w.add_object("q", "quantized_group", (2, 4),
                     {"packed_weight": np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.uint8),
                      "scales": np.array([[0.5, 2.0]], np.float32),
                      "zeros": np.array([[1, 2]], np.uint8)},
                     attributes={"bits": 8, "group_size": 4, "packing": "1_per_u8"})
    got = zt.load_file(tmp_path / "s.zt")
    assert got["q"].dtype == torch.float32 and got["q"].tolist() == [[0, 1, 2, 3], [0, 4, 8, 12]]
    assert got["csr"].dtype == torch.float64 and got["csr"].tolist() == [[0, 1], [2, 0]]
    assert got["coo"].tolist() == [[0, 0], [3, 0]]
    sp = zt.load_file(tmp_path / "s.zt", sparse=True)
    assert sp["csr"].layout == torch.sparse_csr and sp["csr"].to_dense().tolist() == [[0, 1], [2, 0]]
    assert sp["coo"].layout == torch.sparse_coo and sp["coo"].to_dense().tolist() == [[0, 0], [3, 0]]


def test_fp8_needs_a_native_type_or_asks_for_float32(tmp_path):
    with ztensor.Writer(tmp_path / "f8.zt") as w:
        w.add("q", np.array([0x38, 0xC0], np.uint8), type="f8_e4m3fn")  # 1.0, -2.0
    if hasattr(torch, "float8_e4m3fn"):
        assert zt.load_file(tmp_path / "f8.zt")["q"].float().tolist() == [1.0, -2.0]
    else:
        with pytest.raises(TypeError, match="float8='float32'"):
            zt.load_file(tmp_path / "f8.zt")
    assert zt.load_file(tmp_path / "f8.zt", float8="float32")["q"].tolist() == [1.0, -2.0]


def test_foreign_files_load_as_tensors(tmp_path):
    torch.save({"w": torch.arange(4.0)}, tmp_path / "c.pt")
    assert zt.load_file(tmp_path / "c.pt", allow_foreign=True)["w"].tolist() == [0, 1, 2, 3]


def test_a_tensor_as_an_index_is_refused_not_read_as_an_int(tmp_path):
    # torch reads t[torch.tensor([1])] as advanced indexing (the dimension
    # stays) and a bool tensor as a mask: read as ints they gave other data.
    t = torch.arange(12.0).reshape(3, 4)
    zt.save_file({"w": t}, tmp_path / "k.zt")
    for key in (torch.tensor([1]), torch.tensor(True), torch.tensor(False)):
        with pytest.raises(IndexError, match="array or tensor"):
            zt.load_file(tmp_path / "k.zt", slices={"w": key})
        with zt.safe_open(tmp_path / "k.zt", framework="pt") as f:
            with pytest.raises(IndexError):
                f.get_slice("w")[key]
    # A 0-d integer tensor is an int to torch too.
    got = zt.load_file(tmp_path / "k.zt", slices={"w": torch.tensor(2)})["w"]
    assert torch.equal(got, t[torch.tensor(2)])


def test_get_slice_gives_numpys_result_for_every_key(tmp_path):
    # Random basic-indexing keys (ints, slices with any step, Ellipsis) on a
    # 3-d tensor: numpy's result as a tensor, or numpy's exception type.
    import random
    a = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    zt.save_file({"a": torch.from_numpy(a)}, tmp_path / "s.zt")
    rnd = random.Random(7)

    def part():
        c = rnd.random()
        if c < 0.25:
            return rnd.randint(-7, 7)
        if c < 0.3:
            return Ellipsis
        bound = lambda: rnd.choice([None, rnd.randint(-8, 8)])  # noqa: E731
        return slice(bound(), bound(), rnd.choice([None, 1, 2, -1, -2, 3, -3]))

    negative = 0
    with zt.safe_open(tmp_path / "s.zt", framework="pt") as f:
        view = f.get_slice("a")
        for _ in range(1500):
            key = tuple(part() for _ in range(rnd.randint(0, 4)))
            try:
                want = a[key]
            except (IndexError, TypeError) as e:
                with pytest.raises(type(e)):
                    view[key]
                continue
            negative += any(s < 0 for s in np.asarray(want).strides)
            got = view[key]
            assert torch.equal(got, torch.from_numpy(np.array(want, copy=True))), key
    assert negative > 20  # the keys that failed before: negative steps


@pytest.mark.parametrize("version", [None, 2])
def test_bool_bytes_other_than_0_and_1_are_refused_by_the_loaders(tmp_path, version):
    # torch's bool, like numpy's, holds 0 or 1: a byte of 2 filled byte for
    # byte is refused as f[name] refuses it, on every load path.
    p = tmp_path / "b.zt"
    with ztensor.Writer(p, digest="none", **({"file_version": version} if version else {})) as w:
        w.add("b", np.array([True, False, True]))
        w.add("x", np.arange(3, dtype=np.float32))
    with ztensor.open(p) as f:
        part = f.manifest["objects"]["b"]["components"]["data"]
    data = bytearray(p.read_bytes())
    data[part["offset"] + 1] = 2
    p.write_bytes(bytes(data))
    for load in (lambda: zt.load_file(p), lambda: zt.load_file(p, mmap=True),
                 lambda: zt.safe_open(p, "pt").get_tensor("b")):
        with pytest.raises(ztensor.Error) as e:
            load()
        assert e.value.status_name == "ZT_ERR_INVALID" and "bool byte 0x02 at element 1" in str(e.value)
    assert zt.safe_open(p, "pt").get_tensor("x").tolist() == [0.0, 1.0, 2.0]


# ---------------------------------------------------------------------------
# what the savers refuse, and when


class Views(torch.nn.Module):
    """A parameter and a buffer over the same storage, read another way."""

    def __init__(self, view):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.5, -2.0, 3.25]))
        self.register_buffer("v", view(self.w.data))


@pytest.mark.parametrize("view", [lambda w: w.view(torch.int32), torch._neg_view],
                         ids=["int32", "neg"])
def test_save_model_refuses_views_of_another_dtype_or_sign(tmp_path, view):
    with pytest.raises(ValueError, match="different views"):
        zt.save_model(Views(view), tmp_path / "m.zt")
    assert not (tmp_path / "m.zt").exists()


def test_save_model_refuses_a_conjugate_view_as_an_alias(tmp_path):
    m = torch.nn.Module()
    m.z = torch.nn.Parameter(torch.tensor([1 + 2j, 3 - 1j]))
    m.register_buffer("c", m.z.data.conj())
    with pytest.raises(ValueError, match="different views"):
        zt.save_model(m, tmp_path / "m.zt")


def test_conjugate_and_negative_views_save_their_values(tmp_path):
    z = torch.tensor([1 + 2j, 3 - 1j])
    t = {"conj": z.conj(), "neg": z.clone().conj().imag}  # is_conj(), is_neg(): bits, not values
    assert t["conj"].is_conj() and t["neg"].is_neg()
    zt.save_file(t, tmp_path / "t.zt")
    got = zt.load_file(tmp_path / "t.zt")
    assert torch.equal(got["conj"], torch.tensor([1 - 2j, 3 + 1j]))
    assert torch.equal(got["neg"], torch.tensor([-2.0, 1.0]))


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_a_tensors_own_memory_is_written_as_numpy_would_write_it(tmp_path, monkeypatch, encoding):
    # save_file writes a contiguous CPU tensor of a plain dtype from its own
    # memory (_raw_tensor); the file is byte for byte the one numpy's way
    # makes, for every dtype, views, scalars, empty, strided, conj and neg
    # tensors, and tensors that require grad.
    t = {f"{d}".replace("torch.", ""): sample(d) for d in DTYPES}
    t.update({"scalar": sample(torch.float32, ()), "empty": sample(torch.bfloat16, (0, 3)),
              "strided": sample(torch.int16).transpose(0, 2), "offset": sample(torch.float64)[1],
              "conj": torch.tensor([1 + 2j]).conj(), "neg": torch.tensor([1 + 2j]).conj().imag,
              "grad": torch.ones(3, requires_grad=True), "view": sample(torch.float32).view(torch.int32)})
    zt.save_file(t, tmp_path / "fast.zt", encoding=encoding)
    assert zt._raw_tensor(t["float32"]) is not None and zt._raw_tensor(t["strided"]) is None
    monkeypatch.setattr(zt, "_raw_tensor", lambda x: None)
    zt.save_file(t, tmp_path / "numpy.zt", encoding=encoding)
    assert (tmp_path / "fast.zt").read_bytes() == (tmp_path / "numpy.zt").read_bytes()


def test_plain_tensors_are_saved_without_numpy(tmp_path, monkeypatch):
    # The per-tensor work of a model of many small tensors: a numpy array a
    # tensor (and the ctypes cast of its address) cost ~15 us of save_file's
    # 44 us a tensor. Plain contiguous CPU tensors never make one.
    def refused(name, t):
        raise AssertionError(f"{name} went through numpy")

    monkeypatch.setattr(zt, "_numpy_of", refused)
    t = {f"w{i}": sample(d) for i, d in enumerate((torch.bfloat16, torch.float32, torch.int64, torch.bool))}
    zt.save_file(t, tmp_path / "t.zt")
    assert all(torch.equal(v, t[k]) for k, v in zt.load_file(tmp_path / "t.zt").items())


def test_a_run_of_plain_tensors_is_saved_in_one_call(tmp_path, monkeypatch):
    # A foreign call a tensor (~8 us through ctypes) was most of what saving
    # a model of many small tensors cost: each run of plain tensors goes to
    # the writer in one zt_writer_add_dense_many call, in the dict's order,
    # the others one by one between the runs.
    from ztensor import _lib
    calls = []
    for fn in ("zt_writer_add_dense", "zt_writer_add_dense_many", "zt_writer_begin_object"):
        real = getattr(_lib.lib, fn)
        monkeypatch.setattr(_lib.lib, fn, lambda *a, fn=fn, real=real: calls.append((fn, a[2])) or real(*a))
    t = {"a": sample(torch.bfloat16), "b": sample(torch.int8), "c": torch.tensor([1 + 2j]),
         "d": sample(torch.float32), "e": sample(torch.float16, ()), "f": sample(torch.int64),
         "g": sample(torch.int16).transpose(0, 2)}
    zt.save_file(t, tmp_path / "t.zt")
    # c (complex: a typed component) and g (strided: through numpy) one by one.
    assert [fn for fn, _ in calls] == ["zt_writer_add_dense_many", "zt_writer_begin_object",
                                       "zt_writer_add_dense_many", "zt_writer_add_dense"]
    assert [n for fn, n in calls if fn.endswith("many")] == [2, 3]
    with zt.safe_open(tmp_path / "t.zt", "pt") as f:
        assert list(f.keys()) == list(t)
        assert all(torch.equal(f.get_tensor(k), v) for k, v in t.items())


def test_many_dense_objects_are_refused_as_one_would_be(tmp_path):
    # Writer._add_dense_many: a NUL inside a name is refused before anything
    # is written (ValueError, as cstr refuses it), a name given twice with
    # the library's message naming it; the names go to the file as they are.
    import ztensor
    data = np.arange(6, dtype=np.float32)
    p = data.ctypes.data
    with ztensor.Writer(tmp_path / "nul.zt") as w:
        with pytest.raises(ValueError, match="embedded NUL"):
            w._add_dense_many(["a", "b\0c"], ["f32", "f32"], [(6,), (2, 3)], [p, p], [24, 24], "raw")
        w._add_dense_many(["ünï", "b"], ["f32", "i32"], [(6,), (2, 3)], [p, p], [24, 24], "raw")
        with pytest.raises(ztensor.Error, match="ünï"):
            w._add_dense_many(["c", "ünï"], ["f32", "f32"], [(), (6,)], [p, p], [4, 24], "raw")
    with ztensor.File(tmp_path / "nul.zt") as f:
        assert list(f.keys()) == ["ünï", "b", "c"]
        assert f.array("b").tolist() == data.view(np.int32).reshape(2, 3).tolist()
        assert f.array("c").shape == ()


def test_get_tensor_finds_names_as_the_file_has_them(tmp_path, monkeypatch):
    # get_tensor checks a str name against the summaries' names (a set made
    # once), anything else against the reader: a name the file lacks, in any
    # form, is a KeyError naming it.
    t = {"a": torch.ones(2), "ünï": torch.zeros(3)}
    zt.save_file(t, tmp_path / "t.zt")
    with zt.safe_open(tmp_path / "t.zt", "pt") as f:
        assert torch.equal(f.get_tensor("ünï"), t["ünï"]) and torch.equal(f.get_tensor("a"), t["a"])
        for missing in ("b", "A", "a ", 3, b"a"):
            with pytest.raises(KeyError):
                f.get_tensor(missing)
        # A str name is not looked up through the reader (~2.7 us a call).
        monkeypatch.setattr(ztensor.File, "__contains__", lambda self, k: pytest.fail("reader lookup"))
        assert torch.equal(f.get_tensor("a"), t["a"])
        with pytest.raises(KeyError):
            f.get_tensor("b")


def test_save_to_bytes_refuses_shards_and_append():
    t = {"x": torch.zeros(4)}
    with pytest.raises(ValueError, match="shard_bytes"):
        zt.save(t, file_version=2, shard_bytes=1 << 20)
    with pytest.raises(ValueError, match="append"):
        zt.save(t, file_version=2, append=True)
    assert zt.load(zt.save(t, file_version=2, shard_bytes=0))["x"].tolist() == [0.0] * 4


def test_canonical_saves_sort_the_names(tmp_path):
    torch.manual_seed(0)
    m = torch.nn.Linear(2, 2)  # state_dict: weight before bias
    zt.save_model(m, tmp_path / "m.zt", file_version=2, canonical=True)
    m2 = torch.nn.Linear(2, 2)
    assert zt.load_model(m2, tmp_path / "m.zt") == ([], [])
    assert torch.equal(m2.weight, m.weight) and torch.equal(m2.bias, m.bias)
    got = zt.load(zt.save({"b": torch.ones(2), "a": torch.zeros(3)}, file_version=2, canonical=True))
    assert torch.equal(got["a"], torch.zeros(3)) and torch.equal(got["b"], torch.ones(2))
    zt.save_file({"b": torch.ones(2), "a": torch.zeros(3)}, tmp_path / "o.zt")
    with ztensor.open(tmp_path / "o.zt") as f:
        assert list(f) == ["b", "a"]  # not canonical: the dict's order


class NoWriter:
    """Stands in for ztensor.Writer where a save must fail before opening one."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the Writer was opened before the arguments were checked")


@pytest.mark.parametrize("bad, match", [
    ({"a": np.zeros(2)}, "'a'.*torch.Tensor"),
    ({"s": torch.eye(2).to_sparse()}, "'s'.*to_dense"),
    ({1: torch.zeros(2)}, "str"),
    ({"q": torch.quantize_per_tensor(torch.zeros(2), 1.0, 0, torch.quint8)}, "'q'.*dtype"),
], ids=["numpy", "sparse", "int-key", "dtype"])
def test_save_file_refuses_bad_entries_with_a_type_error_first(tmp_path, monkeypatch, bad, match):
    monkeypatch.setattr(zt, "Writer", NoWriter)
    tensors = {"first": torch.zeros(3), **bad}  # the bad entry last
    with pytest.raises(TypeError, match=match):
        zt.save_file(tensors, tmp_path / "t.zt")


def test_metadata_values_are_checked_before_any_tensor_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(zt, "Writer", NoWriter)
    with pytest.raises(TypeError):
        zt.save_file({"x": torch.zeros(2)}, tmp_path / "t.zt", {"k": object()})
    with pytest.raises(TypeError):
        zt.save_model(torch.nn.Linear(2, 2), tmp_path / "t.zt", {"k": {1, 2}})
