"""Reading .zt files over HTTP (zt_open_url) from a real nginx on loopback:
what each call fetches (the access log), that every call gives what the
local file gives, and the faults (404, 500 then success, a body cut short,
a server that ignores Range, the file replaced while open, the server
stopped). Run by tests/remote/run.sh with ZTENSOR_LIBRARY and ZT_CLI set."""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import servers  # noqa: E402

import ztensor  # noqa: E402

ZT = os.environ.get("ZT_CLI", "zt")
TAIL = 64 << 10


def zt(*args):
    """Runs the zt tool. Under sanitizers the interpreter has the runtime
    preloaded; zt links its own, and must not get a second one."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([ZT, *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def nginx():
    with tempfile.TemporaryDirectory(prefix="zt_nginx_") as d:
        n = servers.Nginx(d).start()
        yield n
        n.stop()


def put(nginx, name, build):
    """Writes a .zt file into nginx's document root with `build(writer)`."""
    path = os.path.join(nginx.www, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with ztensor.Writer(path) as w:
        build(w)
    return path


def requests_since(nginx, mark, expect=0):
    entries = nginx.since(mark, expect)
    return len(entries), sum(e[2] for e in entries), entries


def rng(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def build_mixed(w):
    w.add("dense", rng(1, (64, 48)), attributes={"unit": "m", "n": 3})
    w.add("packed", rng(2, (256, 256)), encoding="zstd")
    w.add("ints", np.arange(1000, dtype=np.int64).reshape(10, 100))
    w.add("half", rng(3, (17,), np.float16))
    w.add_csr("csr", np.array([1.0, 2.0, 3.0], np.float32), [0, 2, 1], [0, 2, 2, 3], (3, 4))
    w.add_coo("coo", np.array([5, 6], np.int32), [[0, 2], [1, 3]], (3, 4))
    w.add("scalar", np.float64(2.5))
    w.add("empty", np.zeros((0, 4), np.float32))


def test_every_call_matches_the_local_file(nginx):
    path = put(nginx, "mixed.zt", build_mixed)
    with ztensor.open(path) as local, ztensor.open(nginx.url + "/mixed.zt") as remote:
        assert remote.format == "zt" and remote.version == local.version
        assert list(remote) == list(local)
        assert remote.attributes == local.attributes
        for name in local:
            a, b = local[name], remote[name]
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), name
            else:  # CSR / COO
                for x, y in zip(a, b):
                    assert np.array_equal(np.asarray(x), np.asarray(y)), name
            assert remote.info(name).attributes == local.info(name).attributes
        assert remote.verify() == local.verify() == (11, 0)  # 8 objects, 11 components
        got = remote.decode_many(["dense", "packed", "ints"], threads=3)
        for name, a in got.items():
            assert np.array_equal(a, local[name])
        assert np.array_equal(remote.get_slice("packed")[10:20, 100:140],
                              local["packed"][10:20, 100:140])


def test_redirect_is_followed(nginx):
    put(nginx, "mixed.zt", build_mixed)
    with ztensor.open(nginx.url + "/moved.zt") as f:
        assert np.array_equal(f["ints"], np.arange(1000, dtype=np.int64).reshape(10, 100))


def test_tls_certificate_is_verified(nginx):
    if nginx.tls_port is None:
        pytest.skip("openssl could not make a certificate")
    put(nginx, "mixed.zt", build_mixed)
    with pytest.raises(ztensor.Error) as e:
        ztensor.open(f"https://127.0.0.1:{nginx.tls_port}/mixed.zt")
    assert e.value.status_name == "ZT_ERR_IO"
    assert "certificate" in e.value.message.lower(), e.value.message


def test_open_costs_two_requests_and_the_manifest(nginx):
    def build(w):
        for i in range(10000):
            w.add(f"layer.{i}.bias", np.full(4, i, np.float32))
        w.add("big", rng(4, (16, 1024)))  # 64 KiB
    path = put(nginx, "many.zt", build)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(size - 16)
        manifest = int.from_bytes(f.read(8), "little")
    assert manifest > 4 * TAIL
    mark = nginx.mark()
    f = ztensor.open(nginx.url + "/many.zt")
    n, sent, entries = requests_since(nginx, mark)
    assert n == 2, entries
    assert entries[0][3] == f"bytes=-{TAIL}"
    assert entries[1][3].startswith("bytes=0-7,"), entries  # magic + manifest, one request
    assert all(e[1] == 206 for e in entries)
    # multipart framing on top of the bytes: a few hundred bytes
    assert sent <= manifest + 16 + TAIL + 8 + 1024, (sent, manifest)
    # one 64 KiB tensor: its bytes, one request
    mark = nginx.mark()
    big = f["big"]
    n, sent, entries = requests_since(nginx, mark)
    assert big.nbytes == 64 << 10 and (n, sent) == (1, 64 << 10), entries
    assert np.array_equal(big, rng(4, (16, 1024)))
    f.close()


def test_cli_info_and_export_fetch_only_what_they_need(nginx, tmp_path):
    def build(w):
        w.add("small", np.arange(12, dtype=np.float32).reshape(3, 4))
        w.add("large", rng(5, (1024, 1024)))  # 4 MiB the commands below never read
    put(nginx, "cli.zt", build)
    url = nginx.url + "/cli.zt"
    mark = nginx.mark()
    out = zt("info", url)
    assert out.returncode == 0, out.stderr
    assert "small" in out.stdout and "large" in out.stdout
    n, sent, entries = requests_since(nginx, mark)
    # the tail holds the manifest; the magic is the second request
    assert n == 2 and sent <= TAIL + 8, entries
    mark = nginx.mark()
    npy = tmp_path / "small.npy"
    out = zt("export", url, "small", "-o", str(npy))
    assert out.returncode == 0, out.stderr
    assert np.array_equal(np.load(npy), np.arange(12, dtype=np.float32).reshape(3, 4))
    n, sent, entries = requests_since(nginx, mark)
    assert sent < TAIL + 4096, entries  # not the 4 MiB of "large"


def test_no_command_or_repr_shows_user_info_or_a_query(nginx, tmp_path):
    """#42 item 11: a URL's user:password@ and query string (a pre-signed
    signature) appear in no output of the zt tool, its messages included,
    nor in Python's repr; the file is still read."""
    put(nginx, "secret.zt", lambda w: w.add("w", np.arange(6, dtype=np.float32)))
    scheme, rest = nginx.url.split("://")
    url = f"{scheme}://user:PASSWORD@{rest}/secret.zt?X-Amz-Signature=SIGNATURE#FRAGMENT"
    missing = f"{scheme}://user:PASSWORD@{rest}/none.zt?X-Amz-Signature=SIGNATURE"
    runs = [zt("info", url), zt("info", "--json", url), zt("ls", url), zt("verify", url),
            zt("cat", url, "w"), zt("dump", url), zt("convert", url, str(tmp_path / "o.zt")),
            zt("id", url),  # a 1.2 file has no content digest: refused, naming the file
            zt("info", missing), zt("verify", missing), zt("cat", url, "nope"),
            zt("compress", url, "--in-place")]
    assert [r.returncode for r in runs[:7]] == [0] * 7, [r.stderr for r in runs]
    assert all(r.returncode != 0 and "/secret.zt" in r.stdout + r.stderr or "/none.zt" in r.stderr
               for r in runs[7:]), [r.stderr for r in runs[7:]]
    for r in runs:
        text = r.stdout + r.stderr
        for secret in ("PASSWORD", "SIGNATURE", "FRAGMENT", "user:"):
            assert secret not in text, (r.args, text)
    assert "/secret.zt" in runs[0].stdout  # still named, without the secrets
    with ztensor.open(url) as f:
        assert f["w"][5] == 5
        shown = repr(f)
    assert "PASSWORD" not in shown and "SIGNATURE" not in shown and "/secret.zt" in shown


def test_no_secret_is_shown_of_odd_urls_headers_or_urls_given_as_paths(nginx, tmp_path):
    """Secrets where a search for '@' and '/' misses them: a third slash
    (libcurl reads "http:///user:pw@host"), a password holding '/', '@' or
    '?' unencoded; a header that is not one line (its value may be a
    token); a URL handed to a call that takes a local path."""
    put(nginx, "secret.zt", lambda w: w.add("w", np.arange(6, dtype=np.float32)))
    scheme, rest = nginx.url.split("://")
    odd = [f"{scheme}:///user:PASS@{rest}/secret.zt?X-Amz-Signature=SIG",
           f"{scheme}://user:PASS/WORD@{rest}/secret.zt", f"{scheme}://user:PASS@WORD@{rest}/secret.zt",
           f"{scheme}://user:PASS?WORD@{rest}/secret.zt", f"{scheme}://user:PASS#WORD@{rest}/secret.zt"]
    for url in odd:
        for r in (zt("info", url), zt("info", "--json", url)):
            text = r.stdout + r.stderr
            assert "PASS" not in text and "WORD" not in text and "SIG" not in text, (url, text)
        try:
            with ztensor.open(url) as f:
                shown = repr(f)
        except ztensor.Error as e:
            shown = e.message
        assert "PASS" not in shown and "WORD" not in shown and "SIG" not in shown, (url, shown)
    with ztensor.open(odd[0]) as f:  # read, as libcurl reads it
        assert f["w"][5] == 5
        assert "/secret.zt" in repr(f)
    for value in ("Bearer TOK\nEN456", "Bearer TOK\rEN456"):
        with pytest.raises(ztensor.Error) as e:
            ztensor.File.from_url(nginx.url + "/secret.zt", headers={"Authorization": value})
        assert e.value.status_name == "ZT_ERR_ARGUMENT"
        assert "TOK" not in e.value.message and "EN456" not in e.value.message, e.value.message
    url = f"{scheme}://user:PASS@{rest}/secret.zt?X-Amz-Signature=SIG"
    # A local path's call (zt_open_ex), a model's config.json by URL too:
    # refused as a URL, before any reader names it as a missing file.
    for local in (url, f"{scheme}://user:PASS@{rest}/m/config.json?sig=SIG"):
        for foreign in (False, True):
            with pytest.raises(ztensor.Error) as e:
                ztensor.File(local, allow_foreign=foreign)
            assert "PASS" not in e.value.message and "SIG" not in e.value.message, e.value.message
            assert e.value.status_name == "ZT_ERR_ARGUMENT", e.value.message
    for args in (("compress", str(tmp_path / "none.zt"), "-o", url), ("append", url, str(tmp_path / "n.zt"))):
        r = zt(*args)
        assert r.returncode != 0
        assert "PASS" not in r.stdout + r.stderr and "SIG" not in r.stdout + r.stderr, r.stderr


def test_shards_of_a_root_at_a_url_without_a_path_stay_on_its_host(nginx):
    """A root served at "http://host" (no path): its shards are asked of
    that host, never of a host name made from the shard's name."""
    with tempfile.TemporaryDirectory() as d:
        with ztensor.Writer(os.path.join(d, "m.zt"), file_version=2, shard_bytes=150 << 10) as w:
            for i in range(3):
                w.add(f"w{i}", rng(40 + i, (64, 256)))
        shutil.copy(os.path.join(d, "m.zt"), os.path.join(nginx.www, "index.html"))
    try:
        mark = nginx.mark()
        with ztensor.open(nginx.url) as f:
            with pytest.raises(ztensor.Error) as e:
                f["w2"]
        assert e.value.status_name == "ZT_ERR_IO"
        assert "resolve" not in e.value.message, e.value.message
        assert "404" in e.value.message, e.value.message
        asked = [x[0].split()[1] for x in nginx.since(mark)]
        assert all(a.startswith("/") for a in asked) and len(asked) >= 2, asked
    finally:
        os.remove(os.path.join(nginx.www, "index.html"))


def test_cli_verify_and_convert_read_urls(nginx, tmp_path):
    put(nginx, "mixed.zt", build_mixed)
    url = nginx.url + "/mixed.zt"
    out = zt("verify", url)
    assert out.returncode == 0, out.stderr
    copy = tmp_path / "copy.zt"
    out = zt("convert", url, str(copy))
    assert out.returncode == 0, out.stderr
    with ztensor.open(str(copy)) as a, ztensor.open(os.path.join(nginx.www, "mixed.zt")) as b:
        assert list(a) == list(b)
        assert np.array_equal(a["packed"], b["packed"])
        assert a.info("dense").attributes == {"unit": "m", "n": 3}
    # every command that reads a file reads a URL
    for args in (("ls", url), ("dump", url), ("cat", url, "dense"), ("diff", url, str(copy)),
                 ("compress", url, "-o", str(tmp_path / "c.zt")), ("rm", url, "half", "-o", str(tmp_path / "r.zt")),
                 ("merge", url, str(copy), "--rename", "-o", str(tmp_path / "m.zt"))):
        out = zt(*args)
        assert out.returncode == 0, (args, out.stderr)
    # but a URL is not replaced in place
    out = zt("compress", url, "--in-place")
    assert out.returncode == 2 and "is a URL (give -o OUT)" in out.stderr, out.stderr
    # a format whose reader needs the whole file is not read over HTTP: a clear refusal
    out = zt("info", nginx.url + "/model.gguf")
    assert out.returncode == 4 and "read from a local copy" in out.stderr, out.stderr


def test_column_slice_fetches_its_runs(nginx):
    m = rng(6, (256, 4096))  # 4 MiB, rows of 16 KiB
    put(nginx, "matrix.zt", lambda w: w.add("m", m))
    with ztensor.open(nginx.url + "/matrix.zt") as f:
        mark = nginx.mark()
        cols = f.get_slice("m")[:, 1024:1536]  # an eighth of the columns
        n, sent, entries = requests_since(nginx, mark)
        assert np.array_equal(cols, m[:, 1024:1536])
        # 256 runs of 2 KiB: an eighth of the bytes, plus framing per run
        assert sent <= m.nbytes // 8 + 256 * 200, (n, sent)
        assert n <= 4, n  # several runs per request


def test_rows_fetch_only_the_rows(nginx):
    # f.rows of raw data is zero-copy over a mapping; at a URL there is none,
    # and mapping the rows fetched (and kept) the whole tensor.
    m = rng(8, (256, 4096))  # 4 MiB, rows of 16 KiB
    put(nginx, "rows.zt", lambda w: w.add("m", m))
    with ztensor.open(nginx.url + "/rows.zt") as f:
        mark = nginx.mark()
        got = f.rows("m", 10, 12)
        n, sent, entries = requests_since(nginx, mark)
        assert np.array_equal(got, m[10:12]) and got.flags.writeable
        assert n == 1 and sent <= 2 * 16384 + 1024, (n, sent, entries)


def test_slice_of_1x_zstd_fetches_the_prefix_that_reaches_it(nginx):
    m = rng(7, (512, 4096))  # 8 MiB as 1.2 writes it: eight 1 MiB zstd frames, no seek table
    path = put(nginx, "packed.zt", lambda w: w.add("m", m, encoding="zstd"))
    size = os.path.getsize(path)
    with ztensor.open(nginx.url + "/packed.zt") as f:
        mark = nginx.mark()
        top = f.get_slice("m")[10:20, 100:200]  # inside the first frame
        n, sent, entries = requests_since(nginx, mark)
        assert np.array_equal(top, m[10:20, 100:200])
        # one request for the first frame and a margin, not the eight
        assert n == 1 and sent < size // 4, (n, sent, size)
        mark = nginx.mark()
        bottom = f.get_slice("m")[500:512, :]  # in the last frame: every frame before it
        n, sent, entries = requests_since(nginx, mark)
        assert np.array_equal(bottom, m[500:512, :])
        assert sent <= size, (n, sent, size)


def test_large_read_goes_as_parallel_ranges(nginx):
    a = rng(14, (2560, 4096))  # 40 MiB: two pieces of 20 MiB (16 MiB at least each)
    put(nginx, "large.zt", lambda w: w.add("a", a))
    with ztensor.open(nginx.url + "/large.zt") as f:
        mark = nginx.mark()
        got = f["a"]
        n, sent, entries = requests_since(nginx, mark)
    assert np.array_equal(got, a)
    assert n == 2 and sent == a.nbytes, entries
    assert all("," not in e[3] for e in entries)  # two single ranges


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_many_small_tensors_load_in_few_requests(nginx, encoding):
    # 3,000 tensors of 1 KiB: decode_many gathers small raw reads in file
    # order, 1,024 at most a task, each task one request (a range merging
    # neighbours); small zstd components have their stored bytes fetched
    # together into the cache the same way. One request a tensor before.
    parts = {f"t{i}": np.round(rng(100 + i, (256,))) for i in range(3000)}
    put(nginx, f"many_{encoding}.zt", lambda w: [w.add(k, v, encoding=encoding) for k, v in parts.items()])
    with ztensor.open(nginx.url + f"/many_{encoding}.zt") as f:
        mark = nginx.mark()
        got = f.decode_many()
        n, sent, entries = requests_since(nginx, mark)
        stored = sum(c["components"]["data"]["length"] for c in f.manifest["objects"].values())
    assert set(got) == set(parts)
    assert all(np.array_equal(got[k], v) for k, v in parts.items())
    assert n <= 6, entries  # 3 groups (1,024 components each at most), on either of 2 threads
    assert sent <= stored + 3000 * 64, (sent, stored)  # the components and their alignment gaps


def test_sharded_v2_model_fetches_a_shard_when_read(nginx):
    parts = {f"w{i}": rng(20 + i, (64, 256)) for i in range(4)}  # 64 KiB each
    path = os.path.join(nginx.www, "sharded", "model.zt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with ztensor.Writer(path, file_version=2, shard_bytes=150 << 10) as w:
        for name, a in parts.items():
            w.add(name, a)
    shards = sorted(n for n in os.listdir(os.path.dirname(path)) if n != "model.zt")
    assert len(shards) >= 2, shards
    mark = nginx.mark()
    with ztensor.open(nginx.url + "/sharded/model.zt") as f:
        opened = nginx.since(mark)
        assert {e[0].split()[1] for e in opened} == {"/sharded/model.zt"}, opened
        mark = nginx.mark()
        assert np.array_equal(f["w3"], parts["w3"])
        read = nginx.since(mark)
        touched = {e[0].split()[1] for e in read}
        assert len(touched) == 1 and touched != {"/sharded/model.zt"}, read
        # The shard's open brings its footer: the open, its magic, the part.
        assert len(read) == 3, read
        assert f.verify()[0] == 4  # every shard hashed whole, every part checked
    with ztensor.open(path) as local:
        assert local.verify()[0] == 4


def test_sharded_v2_model_whose_name_needs_percent_encoding(nginx):
    """The root's stem comes from its URL, encoded ("my%20model"): the
    shards were asked as "my%2520model-00001-....zt" (404); local and
    remote disagreed."""
    parts = {f"w{i}": rng(30 + i, (64, 256)) for i in range(3)}  # 64 KiB each
    for name, url_name in (("my model.zt", "my%20model.zt"), ("m+x é.zt", "m%2Bx%20%C3%A9.zt")):
        path = os.path.join(nginx.www, "pct", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with ztensor.Writer(path, file_version=2, shard_bytes=150 << 10) as w:
            for k, a in parts.items():
                w.add(k, a)
        with ztensor.open(nginx.url + "/pct/" + url_name) as f:
            assert all(np.array_equal(f[k], a) for k, a in parts.items())
            assert f.verify()[0] == 3


def write_safetensors(path, tensors):
    names = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64"}
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, a in tensors.items():
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def test_safetensors_header_at_open_each_tensor_when_read(nginx):
    tensors = {"a": rng(30, (512, 512)), "b": np.arange(10, dtype=np.int64)}
    write_safetensors(os.path.join(nginx.www, "m.safetensors"), tensors)
    url = nginx.url + "/m.safetensors"
    mark = nginx.mark()
    with ztensor.open(url, allow_foreign=True) as f:
        n, sent, entries = requests_since(nginx, mark)
        # The open brings the header; config.json beside it is asked for
        # (a quantized checkpoint's layers are grouped by it): 404 here.
        assert n == 2 and sent <= (64 << 10) + 1024, entries
        assert entries[1][:2] == ("GET /config.json HTTP/1.1", 404), entries
        assert f.format == "safetensors" and list(f) == ["a", "b"]
        assert f.manifest["attributes"] == {"format": "pt"}
        mark = nginx.mark()
        np.testing.assert_array_equal(f["b"], tensors["b"])
        n, sent, entries = requests_since(nginx, mark)
        assert n <= 1 and sent <= 80, entries  # in the first 64 KiB already, or its 80 bytes
        mark = nginx.mark()
        np.testing.assert_array_equal(f["a"], tensors["a"])
        n, sent, entries = requests_since(nginx, mark)
        assert sent <= tensors["a"].nbytes, entries
        assert f.verify() == (0, 2)
    # Without allow_foreign it is refused, saying how to read it, as a local
    # file is (the query is not the file's name).
    for where in (url + "?X-Signature=abc", os.path.join(nginx.www, "m.safetensors")):
        with pytest.raises(ztensor.Error) as e:
            ztensor.open(where)
        assert e.value.status_name == "ZT_ERR_FORMAT", str(e.value)
        assert "(a safetensors file: zt_open_options.allow_foreign reads it)" in str(e.value), str(e.value)
    with pytest.raises(ztensor.Error, match="bad header magic"):
        ztensor.open(url)  # without allow_foreign: a .zt file is expected
    p = zt("export", url, "b", "-o", os.path.join(nginx.dir, "b.npy"))
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(np.load(os.path.join(nginx.dir, "b.npy")), tensors["b"])
    p = zt("info", url)
    assert p.returncode == 0 and "safetensors" in p.stdout, p.stdout + p.stderr
    np.save(os.path.join(nginx.www, "x.npy"), np.zeros(3))
    p = zt("info", nginx.url + "/x.npy")
    assert p.returncode == 4 and "read from a local copy" in p.stderr, p.stderr


def test_safetensors_names_at_a_url_are_held_as_local_ones_are(nginx):
    """A tensor name with a NUL byte (two names the C API shows as one) is
    refused at a URL as in a local file: the name rules were skipped there."""
    tensors = {"w\u0000a": np.arange(2, dtype=np.int64), "w\u0000b": np.arange(3, dtype=np.int64)}
    write_safetensors(os.path.join(nginx.www, "nul.safetensors"), tensors)
    for where in (nginx.url + "/nul.safetensors", os.path.join(nginx.www, "nul.safetensors")):
        with pytest.raises(ztensor.Error) as e:
            ztensor.open(where, allow_foreign=True)
        assert e.value.status_name == "ZT_ERR_INVALID", str(e.value)
        assert 'tensor name "w\\x00' in str(e.value) and "holds a NUL byte" in str(e.value), str(e.value)


def test_safetensors_header_longer_than_the_open_costs_one_more_request(nginx):
    tensors = {"t%04d_%s" % (i, "x" * 40): np.full((2,), i, np.int64) for i in range(1500)}
    write_safetensors(os.path.join(nginx.www, "long.safetensors"), tensors)
    mark = nginx.mark()
    with ztensor.open(nginx.url + "/long.safetensors", allow_foreign=True) as f:
        n, sent, entries = requests_since(nginx, mark)
        assert n == 3, entries  # the open's first 64 KiB, the rest of the header, config.json
        assert len(f) == 1500
        np.testing.assert_array_equal(f["t1499_" + "x" * 40], [1499, 1499])
    # A header of megabytes comes in requests that double from 1 MiB: the
    # memory follows what arrived, never only what the length field claims.
    tensors = {"t%05d_%s" % (i, "x" * 40): np.full((1,), i, np.int64) for i in range(30000)}
    write_safetensors(os.path.join(nginx.www, "longer.safetensors"), tensors)
    with open(os.path.join(nginx.www, "longer.safetensors"), "rb") as fh:
        want = 8 + struct.unpack("<Q", fh.read(8))[0]
    held, header_requests = 64 << 10, 1
    while held < want:
        held = min(want, held + max(held, 1 << 20))
        header_requests += 1
    assert header_requests >= 3, want
    mark = nginx.mark()
    with ztensor.open(nginx.url + "/longer.safetensors", allow_foreign=True) as f:
        n, sent, entries = requests_since(nginx, mark)
        assert n == header_requests + 1, (want, entries)  # and config.json
        assert len(f) == 30000


def sockets_open():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def test_an_index_of_many_shards_keeps_a_bounded_number_of_connections(nginx):
    """One source per shard, each keeping its connection for the next
    request: an index of 1,100 shards held 1,100 sockets (a process under
    ulimit -n 1024 failed to open it). The connections kept open are
    counted over the process (64 at most); every tensor still reads."""
    d = os.path.join(nginx.www, "many")
    os.makedirs(d, exist_ok=True)
    count = 150
    weight_map = {}
    for i in range(count):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, count)
        write_safetensors(os.path.join(d, name), {f"w{i}": np.full((2,), i, np.int64)})
        weight_map[f"w{i}"] = name
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    before = sockets_open()
    with ztensor.open(nginx.url + "/many/model.safetensors.index.json", allow_foreign=True) as f:
        for i in range(count):
            assert f[f"w{i}"][1] == i
        # Each connection kept is a TCP socket and the socket pair of
        # libcurl's handle: 3 descriptors (450 here before).
        held = sockets_open() - before
        assert held <= 3 * (64 + 4), held  # the budget, and one source's requests in flight


def test_sharded_safetensors_index_as_one_reader(nginx):
    d = os.path.join(nginx.www, "hub")
    os.makedirs(d, exist_ok=True)
    shards = {"model-00001-of-00002.safetensors": {"w1": rng(31, (128, 64))},
              "model-00002-of-00002.safetensors": {"w2": np.arange(6, dtype=np.int64), "w3": rng(32, (4,))}}
    for name, tensors in shards.items():
        write_safetensors(os.path.join(d, name), tensors)
    index = {"metadata": {"total_size": 32848},
             "weight_map": {t: name for name, ts in shards.items() for t in ts}}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    mark = nginx.mark()
    with ztensor.open(nginx.url + "/hub/model.safetensors.index.json", allow_foreign=True) as f:
        n, sent, entries = requests_since(nginx, mark)
        # The index in one request; each shard: its open, which brings its
        # header; config.json beside the index (404 here).
        assert n == 4, entries
        assert f.format == "hf_index" and list(f) == ["w1", "w2", "w3"]
        assert f.manifest["attributes"]["hf.index.metadata"] == {"total_size": 32848}
        for ts in shards.values():
            for t, a in ts.items():
                np.testing.assert_array_equal(f[t], a)
        assert f.verify() == (0, 3)
    p = zt("convert", nginx.url + "/hub/model.safetensors.index.json", os.path.join(nginx.dir, "hub.zt"))
    assert p.returncode == 0, p.stderr
    # A tensor the map names but its shard lacks: refused like a local index.
    index["weight_map"]["w4"] = "model-00002-of-00002.safetensors"
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    with pytest.raises(ztensor.Error, match="w4"):
        ztensor.open(nginx.url + "/hub/model.safetensors.index.json", allow_foreign=True)


def test_sharded_index_gathers_small_tensors_and_fetches_only_a_share(nginx):
    """The tensors of an index's shards are read as the root file's are: a
    shard's small tensors fetched together (one request a tensor before:
    200 here), a range of a large one fetched alone (before: the tensor
    from its first byte to the range's end)."""
    d = os.path.join(nginx.www, "hubshare")
    os.makedirs(d, exist_ok=True)
    small = {f"t{i}": np.full((1024,), i, np.int64) for i in range(200)}  # 8 KiB each
    big = rng(41, (512, 256))  # 512 KiB
    write_safetensors(os.path.join(d, "model-00001-of-00002.safetensors"), small)
    write_safetensors(os.path.join(d, "model-00002-of-00002.safetensors"), {"big": big})
    weight_map = {k: "model-00001-of-00002.safetensors" for k in small}
    weight_map["big"] = "model-00002-of-00002.safetensors"
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    url = nginx.url + "/hubshare/model.safetensors.index.json"
    with ztensor.open(url, allow_foreign=True) as f:
        mark = nginx.mark()
        got = f.decode_many(list(small))
        n, _, entries = requests_since(nginx, mark)
        assert all(np.array_equal(got[k], a) for k, a in small.items())
        assert n <= 4, entries
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt_torch
    mark = nginx.mark()
    part = zt_torch.load_file(url, allow_foreign=True, slices={"big": (slice(384, 512),)})
    assert torch.equal(part["big"], torch.from_numpy(big[384:]))
    _, _, entries = requests_since(nginx, mark)
    of_big = [e for e in entries if "model-00002" in e[0]]
    assert sum(e[2] for e in of_big) < big.nbytes / 2, of_big  # its open and the share (128 KiB)


def test_an_index_over_the_limit_is_refused_at_its_headers(nginx):
    # An .index.json is taken whole by the open: one over the limit (100 MB)
    # was downloaded (100 MB) and then refused; its size is in the answer's
    # headers, and the transfer stops there.
    d = os.path.join(nginx.www, "bigindex")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors.index.json"), "wb") as f:
        f.truncate(100_000_001)  # sparse: no disk
    mark = nginx.mark()
    with pytest.raises(ztensor.Error) as e:
        ztensor.open(nginx.url + "/bigindex/model.safetensors.index.json", allow_foreign=True)
    assert e.value.status_name == "ZT_ERR_LIMIT", str(e.value)
    assert "100000001 bytes, more than the limit of 100000000" in str(e.value)
    n, sent, entries = requests_since(nginx, mark, expect=1)
    assert n == 1 and sent < 16 << 20, (n, sent, entries)


def test_a_quantized_checkpoint_over_http_is_grouped_by_its_config(nginx):
    """config.json beside a remote model.safetensors or index (fetched as
    its shards are) groups the quantized layers as a local folder's does:
    the same objects, values and recorded tensors, one more request."""
    rng_ = np.random.default_rng(50)
    qweight = rng_.integers(-2**31, 2**31, (4, 16)).astype("<i4")
    qzeros = rng_.integers(-2**31, 2**31, (2, 2)).astype("<i4")
    scales = (rng_.standard_normal((2, 16)) * 0.01).astype("<f4")
    g_idx = (np.arange(32) // 16).astype("<i8")
    layer = {"l.qweight": qweight, "l.qzeros": qzeros, "l.scales": scales, "l.g_idx": g_idx}
    config = {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 16}}
    d = os.path.join(nginx.www, "gptq")
    os.makedirs(d, exist_ok=True)
    names = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64", np.dtype("<i4"): "I32"}
    header, offset, blobs = {}, 0, []
    for name, a in layer.items():
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {n: "model.safetensors" for n in layer}}, f)
    with ztensor.open(d, allow_foreign=True) as local:
        want = local.decode("l.weight")
        recorded = local.info("l.weight").attributes["hf.tensors"]
    for url in ("/gptq/model.safetensors", "/gptq/model.safetensors.index.json"):
        with ztensor.open(nginx.url + url, allow_foreign=True) as f:
            assert list(f) == ["l.weight"], url
            info = f.info("l.weight")
            assert info.format == "libztensor.packed_group/1" and info.shape == (16, 32)
            assert info.attributes["hf.tensors"] == recorded
            np.testing.assert_array_equal(f.decode("l.weight"), want)
            assert f.manifest["attributes"]["hf.quantization_config"] == config["quantization_config"]
    # A group map naming a group that does not exist: refused when decoded
    # (its bytes are remote), as a local layer is refused at open.
    bad = g_idx.copy()
    bad[3] = 7
    with open(os.path.join(d, "model.safetensors"), "r+b") as f:
        f.seek(8 + len(h) + qweight.nbytes + qzeros.nbytes + scales.nbytes)
        f.write(bad.tobytes())
    with ztensor.open(nginx.url + "/gptq/model.safetensors", allow_foreign=True) as f:
        with pytest.raises(ztensor.Error, match="g_idx"):
            f.decode("l.weight")


def test_byte_planes_parts_over_http(nginx):
    """A v2 file whose parts are byte planes (libztensor.byte_planes/1)
    reads over HTTP as the local file does."""
    w = (rng(60, (512, 300)) * 0.02).astype(np.float16)
    path = os.path.join(nginx.www, "planes.zt")
    with ztensor.Writer(path, file_version=2, canonical=False) as wr:
        wr.add("w", w, encoding="planes")
        wr.add("i", np.arange(100, dtype=np.int64), encoding="planes")
    with ztensor.open(nginx.url + "/planes.zt") as f:
        assert f.info("w").components["data"].encoding == "libztensor.byte_planes/1"
        np.testing.assert_array_equal(f["w"], w)
        np.testing.assert_array_equal(f.rows("i", 10, 20), np.arange(10, 20))
        assert f.verify() == (2, 0)


def test_a_range_of_byte_planes_fetches_only_its_frames(nginx):
    """#46: a part of 1 MiB frames (4 here): rows or a box inside one frame
    fetch that frame and the index, not the part."""
    w = (rng(61, (2048, 1024)) * 0.02).astype(np.float16)  # 4 MiB
    path = os.path.join(nginx.www, "planes_big.zt")
    with ztensor.Writer(path, file_version=2, canonical=False) as wr:
        wr.add("w", w, encoding="planes")
    stored = os.path.getsize(path)
    with ztensor.open(nginx.url + "/planes_big.zt") as f:
        mark = nginx.mark()
        np.testing.assert_array_equal(f.rows("w", 600, 610), w[600:610])
        n, fetched, _ = requests_since(nginx, mark)
        assert fetched < stored / 3, (n, fetched, stored)  # one frame of four, and the index
        mark = nginx.mark()
        np.testing.assert_array_equal(f.slice("w", (slice(1030, 1040), slice(5, 900))),
                                      w[1030:1040, 5:900])
        n, fetched, _ = requests_since(nginx, mark)
        assert fetched < stored / 3, (n, fetched, stored)
        np.testing.assert_array_equal(f["w"], w)


def test_a_remote_index_cannot_reach_outside_its_folder(nginx):
    """#42 item 3: a weight_map shard name is one path segment, percent-
    encoded into the URL: "%2E%2E%2Fprivate%2Fsecret.safetensors" must not
    become /private/secret.safetensors on a server that decodes paths
    (nginx does). Names with a backslash are refused as locally."""
    os.makedirs(os.path.join(nginx.www, "private"), exist_ok=True)
    write_safetensors(os.path.join(nginx.www, "private", "secret.safetensors"), {"w": rng(50, (4,))})
    d = os.path.join(nginx.www, "evil")
    os.makedirs(d, exist_ok=True)
    for shard in ("%2E%2E%2Fprivate%2Fsecret.safetensors", "..%2Fprivate%2Fsecret.safetensors"):
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": {"w": shard}}, f)
        mark = nginx.mark()
        with pytest.raises(ztensor.Error):
            ztensor.open(nginx.url + "/evil/model.safetensors.index.json", allow_foreign=True)
        asked = [e[0].split()[1] for e in nginx.since(mark)]
        assert not any("private" in p and "%25" not in p for p in asked), asked
        assert all(p.startswith("/evil/") for p in asked), asked
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"w": "a\\b.safetensors"}}, f)
    with pytest.raises(ztensor.Error, match="b.safetensors"):
        ztensor.open(nginx.url + "/evil/model.safetensors.index.json", allow_foreign=True)


def test_torch_load_file_of_a_url_and_a_ranks_slice(nginx):
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt_torch
    t = {"w": torch.arange(256 * 512, dtype=torch.float32).reshape(256, 512).to(torch.bfloat16),
         "b": torch.ones(7)}
    path = os.path.join(nginx.www, "torch.zt")
    zt_torch.save_file(t, path)
    got = zt_torch.load_file(nginx.url + "/torch.zt")
    assert all(torch.equal(got[k], t[k]) and got[k].dtype == t[k].dtype for k in t)
    mark = nginx.mark()
    part = zt_torch.load_file(nginx.url + "/torch.zt", slices={"w": (slice(64, 128),)})
    assert torch.equal(part["w"], t["w"][64:128])
    n, fetched, _ = requests_since(nginx, mark)
    whole = 256 * 512 * 2
    assert fetched < whole / 4 + TAIL + 4096, (n, fetched)  # the open and a quarter of w
    # A tensor at a time (get_tensor, get_slice: transformers' way) fetches
    # only what it returns.
    with zt_torch.safe_open(nginx.url + "/torch.zt", "pt") as f:
        mark = nginx.mark()
        assert torch.equal(f.get_slice("w")[64:128], t["w"][64:128])
        assert torch.equal(f.get_tensor("b"), t["b"])
        n, fetched, _ = requests_since(nginx, mark)
        assert fetched < whole / 4 + 4096, (n, fetched)  # a quarter of w and b, no open
        assert torch.equal(f.get_slice("w")[:, 128:256], t["w"][:, 128:256])
        assert torch.equal(f.get_slice("w")[...], t["w"])


def test_a_ranks_columns_of_a_url_go_through_the_staging_ring(nginx):
    # To a device, a box of raw data is read a buffer's piece at a time:
    # only its runs are fetched (multipart requests), never the whole rows,
    # and it is not read whole into host memory first (no slice() call).
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt_torch

    class SyncCopies:  # the ring's copy engine, on the CPU
        def start(self): pass
        def buffer(self, n): return torch.empty(n, dtype=torch.uint8)
        def copy(self, dst, src): dst.copy_(src)
        def record(self): return None
        def wait(self, token): pass
        def finish(self): pass

    w = torch.arange(64 * 16384, dtype=torch.float32).reshape(64, 16384).to(torch.bfloat16)
    zt_torch.save_file({"w": w, "b": torch.ones(7)}, os.path.join(nginx.www, "columns.zt"))
    key = {"w": (slice(None), slice(4096, 8192))}  # runs of 8 KiB, 24 KiB apart
    f = zt_torch._File(nginx.url + "/columns.zt")
    f.slice = lambda *a: pytest.fail("the box was read whole on the CPU")
    mark = nginx.mark()
    got = zt_torch._load_all(f, "cpu", zt_torch._Staging(SyncCopies(), 2, 100_000), key)
    assert torch.equal(got["w"], w[key["w"]]) and torch.equal(got["b"], torch.ones(7))
    n, fetched, _ = requests_since(nginx, mark)
    assert fetched < 64 * 8192 + 64 * 1024, (n, fetched)  # the runs (and each part's headers)


def test_torch_load_file_of_a_url_carves_while_it_fetches(nginx):
    # 70 tensors of 128 KiB: carved out of blocks, made while the worker
    # thread's decode fetches their bytes.
    torch = pytest.importorskip("torch")
    from ztensor import torch as zt_torch
    t = {f"m.{i}": torch.full((64, 1024), float(i)).to(torch.bfloat16) for i in range(70)}
    t["big"] = torch.arange(1 << 20, dtype=torch.float32)
    zt_torch.save_file(t, os.path.join(nginx.www, "carved.zt"))
    got = zt_torch.load_file(nginx.url + "/carved.zt")
    assert list(got) == list(t)
    assert all(torch.equal(got[k], t[k]) and got[k].dtype == t[k].dtype for k in t)


def test_missing_file_is_404(nginx):
    with pytest.raises(ztensor.Error) as e:
        ztensor.open(nginx.url + "/nothing.zt")
    assert e.value.status_name == "ZT_ERR_IO"
    assert "/nothing.zt: HTTP 404" in e.value.message


def test_server_ignoring_range_is_refused_unread(nginx):
    put(nginx, "norange/big.zt", lambda w: w.add("x", rng(7, (1024, 256))))  # 1 MiB
    with pytest.raises(ztensor.Error) as e:
        ztensor.open(nginx.url + "/norange/big.zt")
    assert "ignores Range requests" in e.value.message
    # a file within the speculative tail is taken whole
    put(nginx, "norange/small.zt", lambda w: w.add("x", np.arange(5, dtype=np.int32)))
    with ztensor.open(nginx.url + "/norange/small.zt") as f:
        assert np.array_equal(f["x"], np.arange(5, dtype=np.int32))


def test_server_without_multirange_is_read_range_by_range(nginx):
    def build(w):
        for i in range(4000):
            w.add(f"t{i}", np.full(8, i, np.float32))
    put(nginx, "onerange/many.zt", build)
    with ztensor.open(nginx.url + "/onerange/many.zt") as f:
        assert np.array_equal(f["t3999"], np.full(8, 3999, np.float32))
        assert f.verify() == (4000, 0)


def test_bearer_token(nginx, monkeypatch):
    put(nginx, "auth/secret.zt", lambda w: w.add("x", np.ones(3, np.float32)))
    url = nginx.url + "/auth/secret.zt?X-Signature=abcdef"
    with pytest.raises(ztensor.Error) as e:
        ztensor.open(url)
    assert "HTTP 401" in e.value.message
    assert "abcdef" not in e.value.message  # the query string is never shown
    with ztensor.File.from_url(url, headers={"Authorization": "Bearer s3cret"}) as f:
        assert f["x"].sum() == 3
    monkeypatch.setenv("ZT_HTTP_BEARER_TOKEN", "s3cret")
    with ztensor.open(url) as f:
        assert f["x"].sum() == 3


def test_file_replaced_while_open(nginx):
    path = put(nginx, "moving.zt", lambda w: w.add("x", rng(8, (512, 512))))
    f = ztensor.open(nginx.url + "/moving.zt")
    replacement = path + ".new"
    with ztensor.Writer(replacement) as w:
        w.add("x", rng(9, (512, 512)))
    os.utime(replacement, (1, 1))  # another Last-Modified, hence another ETag
    os.replace(replacement, path)
    with pytest.raises(ztensor.Error) as e:
        f["x"]
    assert e.value.status_name == "ZT_ERR_IO"
    assert "changed on the server" in e.value.message
    f.close()


def test_server_stopped_mid_session(tmp_path):
    n = servers.Nginx(str(tmp_path)).start()
    try:
        put(n, "gone.zt", lambda w: w.add("x", rng(10, (512, 512))))
        f = ztensor.File.from_url(n.url + "/gone.zt", retries=1, timeout=2)
    finally:
        n.stop()
    with pytest.raises(ztensor.Error) as e:
        f["x"]
    assert e.value.status_name == "ZT_ERR_IO"
    assert "/gone.zt:" in e.value.message
    f.close()


@pytest.fixture
def faults(tmp_path):
    s = servers.FaultServer(str(tmp_path)).start()
    yield s
    s.stop()


def test_500_then_success_is_retried(faults, tmp_path):
    with ztensor.Writer(str(tmp_path / "f.zt")) as w:
        w.add("x", rng(11, (300, 300)))
        w.add("y", rng(13, (300, 300)))
    with ztensor.open(faults.url + "/f.zt") as f:
        faults.fail_next = [500, 503]
        before = len(faults.requests)
        assert np.array_equal(f["x"], rng(11, (300, 300)))
        assert len(faults.requests) - before == 3  # two failures, then the data
        faults.fail_next = [500] * 10
        with pytest.raises(ztensor.Error) as e:
            f["y"]  # not in the cache: fetched, and failing 4 times
        assert "HTTP 500" in e.value.message


def test_a_failed_shard_open_is_tried_again(faults, tmp_path):
    """#42 item 2: a shard whose open fails (a 503, no retries left) is
    asked again by the next read, which then succeeds; before, the failure
    was kept for the reader's life."""
    parts = {f"w{i}": rng(40 + i, (64, 256)) for i in range(4)}
    with ztensor.Writer(str(tmp_path / "m.zt"), file_version=2, shard_bytes=150 << 10) as w:
        for name, a in parts.items():
            w.add(name, a)
    with ztensor.File.from_url(faults.url + "/m.zt", retries=0) as f:
        faults.fail_next = [503]
        with pytest.raises(ztensor.Error) as e:
            f.decode_many(["w3"])  # one call: the shard's open, answered 503
        assert "503" in e.value.message
        asked = len(faults.requests)
        assert np.array_equal(f.decode_many(["w3"])["w3"], parts["w3"])  # the shard is asked again
        assert len(faults.requests) > asked
        # f[name] (zt_component_map) reports the failure, asking once: it
        # used to swallow it and open the shard again in the same call.
        faults.fail_next = [503]
        asked = len(faults.requests)
        with pytest.raises(ztensor.Error) as e:
            f["w0"]
        assert "503" in e.value.message
        assert len(faults.requests) - asked == 1
        assert all(np.array_equal(f[k], v) for k, v in parts.items())


def test_the_shards_a_batch_reads_are_opened_side_by_side(faults, tmp_path):
    """A remote v2 model's shards open at their first read, each with a
    request for its footer: the shards one zt_decode_many call reads are
    opened at once (one after another, eight shards on a link of 100 ms
    would take 0.8 s before the first byte)."""
    parts = {f"w{i}": rng(60 + i, (64, 256)) for i in range(8)}  # 64 KiB each, two a shard at most
    with ztensor.Writer(str(tmp_path / "m.zt"), file_version=2, shard_bytes=150 << 10) as w:
        for name, a in parts.items():
            w.add(name, a)
    assert len(os.listdir(tmp_path)) >= 5
    with ztensor.File.from_url(faults.url + "/m.zt") as f:
        faults.delay = 0.1
        got = f.decode_many(list(parts), threads=4)
        assert all(np.array_equal(got[k], a) for k, a in parts.items())
        assert faults.most_in_flight["tail"] >= 2, faults.requests


def test_a_short_answer_to_the_open_is_retried_or_reported(faults, tmp_path):
    """#42 item 10: an open whose answer carries fewer bytes than its
    Content-Range (Content-Length agreeing with the short body) is retried,
    and reported as such when it stays short; before, the bytes were taken
    at the wrong place and the open failed with 'bad footer magic'."""
    with ztensor.Writer(str(tmp_path / "o.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    faults.short_next = 1
    with ztensor.File.from_url(faults.url + "/o.zt", retries=2) as f:  # retried once
        assert f["x"][99] == 99
    faults.short_next = 10
    with pytest.raises(ztensor.Error) as e:
        ztensor.File.from_url(faults.url + "/o.zt", retries=1)
    assert e.value.status_name == "ZT_ERR_IO" and "announced" in e.value.message, e.value.message
    assert "magic" not in e.value.message


def test_an_encoded_answer_is_refused(faults, tmp_path):
    """#42, also noticed: a 206 with Content-Encoding: gzip (never asked
    for) was taken as the file's bytes."""
    with ztensor.Writer(str(tmp_path / "g.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    faults.gzip = True
    with pytest.raises(ztensor.Error) as e:
        ztensor.File.from_url(faults.url + "/g.zt", retries=0)
    assert e.value.status_name == "ZT_ERR_IO" and "Content-Encoding: gzip" in e.value.message


def open_in_a_thread(url, wait):
    """Opens `url` (timeout 2 s, no retries) on a thread of its own, waiting
    at most `wait` seconds: ({"opened": True} or {"error": e}, seconds)."""
    import threading
    import time
    outcome = {}

    def open_it():
        try:
            ztensor.File.from_url(url, retries=0, timeout=2)
            outcome["opened"] = True
        except ztensor.Error as e:
            outcome["error"] = e
    start = time.monotonic()
    t = threading.Thread(target=open_it, daemon=True)
    t.start()
    t.join(wait)
    assert not t.is_alive(), "the open of %s was still going after %d s" % (url, wait)
    return outcome, time.monotonic() - start


def test_a_trickling_server_is_cut_off(faults, tmp_path):
    """#42, also noticed: a server sending a byte now and then held a read
    open for as long as it liked (only a full stall timed out). A transfer
    slower than 1 KiB/s over the timeout is cut off."""
    with ztensor.Writer(str(tmp_path / "t.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    faults.trickle = 0.05  # 20 bytes a second
    outcome, seconds = open_in_a_thread(faults.url + "/t.zt", 30)
    assert "error" in outcome and outcome["error"].status_name == "ZT_ERR_IO", outcome
    assert seconds < 15


def test_a_redirect_whose_body_never_ends_is_not_read(faults, tmp_path):
    """A 302 whose chunked body never ended held the open for ever: libcurl
    read a redirect it followed to its end, past the library's body cap,
    and bytes kept coming above the stall limit. Redirects are followed by
    the library now, their bodies unread."""
    with ztensor.Writer(str(tmp_path / "r.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    faults.endless_redirect = True
    outcome, seconds = open_in_a_thread(faults.url + "/r.zt", 60)
    assert outcome == {"opened": True}, outcome
    assert seconds < 30
    assert [p for p, _ in faults.requests[-2:]] == ["/r.zt", "/r.zt"]  # the 302, then the file


def test_the_callers_headers_go_to_the_urls_own_origin_only(faults, tmp_path):
    """libcurl drops Authorization and Cookie when a redirect leads to
    another host, but sent every other header the caller gave (an API key
    in X-Api-Key reached whatever host a server redirected to). The library
    follows redirects itself now: the caller's headers go to the URL's own
    origin (scheme, host, port) only."""
    with ztensor.Writer(str(tmp_path / "h.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    other = servers.FaultServer(str(tmp_path)).start()
    try:
        faults.redirect_to = other.url  # another port: another origin
        secret = {"X-Api-Key": "APIKEY-not-for-others", "Authorization": "Bearer TOKEN-not-for-others"}
        with ztensor.File.from_url(faults.url + "/h.zt", headers=secret, retries=0) as f:
            assert f["x"][99] == 99
        assert faults.headers_seen and all(h.get("x-api-key") == "APIKEY-not-for-others"
                                           for h in faults.headers_seen)
        assert other.headers_seen
        for h in other.headers_seen:
            assert "x-api-key" not in h and "authorization" not in h, h
        # Within one origin they go along.
        faults.redirect_to = None
        same = servers.FaultServer(str(tmp_path)).start()
        try:
            same.redirect_to = same.url + "/sub/.."
            before = len(same.headers_seen)
            with pytest.raises(ztensor.Error) as e:  # redirects to itself: more than 5
                ztensor.File.from_url(same.url + "/h.zt", headers=secret, retries=0)
            assert "more than 5 redirects" in e.value.message
            assert all(h.get("x-api-key") == "APIKEY-not-for-others"
                       for h in same.headers_seen[before:])
        finally:
            same.stop()
    finally:
        other.stop()


def test_body_cut_short(faults, tmp_path):
    with ztensor.Writer(str(tmp_path / "c.zt")) as w:
        w.add("x", rng(12, (300, 300)))
    f = ztensor.File.from_url(faults.url + "/c.zt", retries=2)
    faults.cut = 1000
    before = len(faults.requests)
    with pytest.raises(ztensor.Error) as e:
        f["x"]
    assert e.value.status_name == "ZT_ERR_IO"
    assert len(faults.requests) - before == 3  # tried, retried twice
    faults.cut = 0
    assert np.array_equal(f["x"], rng(12, (300, 300)))  # the reader is still good
    f.close()


def test_a_signed_file_opens_though_its_config_is_refused(faults, tmp_path):
    """A pre-signed URL signs one file: config.json beside it, asked for
    without the query, is refused (403). That is no config, as a missing
    one is, not a failed open; and the file's own requests keep the query."""
    a = np.arange(6, dtype="<f4")
    write_safetensors(tmp_path / "m.safetensors", {"a": a})
    (tmp_path / "config.json").write_text('{"model_type": "x"}')
    for status in (401, 403):
        faults.refuse = {"/config.json": status}
        faults.requests.clear()
        with ztensor.open(faults.url + "/m.safetensors?sig=SECRET", allow_foreign=True) as f:
            assert list(f) == ["a"]
            np.testing.assert_array_equal(f["a"], a)
        asked = [p for p, _ in faults.requests]
        assert "/config.json" in asked, asked
        assert all(p == "/m.safetensors?sig=SECRET" for p in asked if p.startswith("/m."))
    # Any other refusal still fails the open, naming config.json, not the query.
    faults.refuse = {"/config.json": 500}
    with pytest.raises(ztensor.Error) as e:
        ztensor.File.from_url(faults.url + "/m.safetensors?sig=SECRET", allow_foreign=True, retries=0)
    assert "config.json" in e.value.message and "SECRET" not in e.value.message, e.value.message


def test_a_status_line_without_a_reason_phrase_is_read(faults, tmp_path):
    """"HTTP/1.1 206" with no reason phrase is valid HTTP: it was read as
    status 0, and every request to such a server failed."""
    with ztensor.Writer(str(tmp_path / "n.zt")) as w:
        w.add("x", np.arange(100, dtype=np.float32))
    faults.no_reason = True
    with ztensor.File.from_url(faults.url + "/n.zt", retries=0) as f:
        assert f["x"][99] == 99


def test_a_bad_config_or_empty_file_is_refused_remotely_as_locally(faults, tmp_path):
    """The same refusal locally and over HTTP: a config.json cut short (a
    quantized checkpoint would open ungrouped), an empty config.json, an
    empty safetensors file (the server answers 416 "bytes */0"); a server's
    own page at config.json's address is no config."""
    a = np.arange(6, dtype="<f4")
    write_safetensors(tmp_path / "m.safetensors", {"a": a})

    def outcome(open_it):
        try:
            with open_it() as f:
                return ("ok", sorted(f))
        except ztensor.Error as e:
            return ("error", e.status_name)

    for config in ('{"quantization_config": {', "", "x"):
        (tmp_path / "config.json").write_text(config)
        local = outcome(lambda: ztensor.open(str(tmp_path / "m.safetensors"), allow_foreign=True))
        remote = outcome(lambda: ztensor.File.from_url(faults.url + "/m.safetensors", allow_foreign=True,
                                                       retries=0))
        assert local == remote == ("error", "ZT_ERR_FORMAT"), (config, local, remote)
    (tmp_path / "config.json").write_text("<html><body>Not here</body></html>")
    remote = outcome(lambda: ztensor.File.from_url(faults.url + "/m.safetensors", allow_foreign=True))
    assert remote == ("ok", ["a"]), remote
    os.unlink(tmp_path / "config.json")
    (tmp_path / "e.safetensors").write_bytes(b"")
    local = outcome(lambda: ztensor.open(str(tmp_path / "e.safetensors"), allow_foreign=True))
    remote = outcome(lambda: ztensor.File.from_url(faults.url + "/e.safetensors", allow_foreign=True,
                                                   retries=0))
    assert local == remote == ("error", "ZT_ERR_FORMAT"), (local, remote)
