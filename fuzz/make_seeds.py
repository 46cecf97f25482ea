#!/usr/bin/python3
"""Regenerates the hand-made seeds of the fuzz corpora.

    /usr/bin/python3 fuzz/make_seeds.py [--conformance DIR]

open_walk: the conformance vectors (valid and reject, every generation)
plus files this script builds byte by byte: 1.0.x (no footer), zstd split
into several frames, frames without a content size, COO, complex and FP8,
attributes of every CBOR kind, indefinite-length CBOR.
writer: programs for fuzz_writer.cpp in its input encoding (see Decoder
there): dense, multi-frame zstd, CSR, COO, quantized_group, streaming,
attributes, abort over an existing target.
shards: sharded v2 models for fuzz_shards.cpp (root, then each shard, after
the separator "ZTSHARD!"): a data shard, a CSR straddling two shards, a base
model with its own manifest serving as a shard.
Needs Debian's python3-cbor2 and python3-zstandard.
"""
import argparse
import glob
import os
import random
import shutil
import struct

import cbor2
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = b"ZTEN1000"


def pad64(b):
    return b + b"\0" * (-len(b) % 64)


class File:
    """A 1.2.0 (or 1.0.x with footer=False) file built blob by blob."""

    def __init__(self):
        self.data = bytearray(MAGIC)

    def blob(self, b):
        self.data = bytearray(pad64(bytes(self.data)))
        off = len(self.data)
        self.data += b
        return off, len(b)

    def raw(self, dtype, b, **extra):
        off, n = self.blob(b)
        return dict(dtype=dtype, offset=off, length=n, **extra)

    def zstd(self, dtype, b, frames=1, content_size=True, **extra):
        cctx = zstandard.ZstdCompressor(level=3, write_content_size=content_size)
        step = max(1, -(-len(b) // frames))
        stored = b"".join(cctx.compress(b[i:i + step]) for i in range(0, max(len(b), 1), step))
        off, n = self.blob(stored)
        return dict(dtype=dtype, offset=off, length=n, encoding="zstd", uncompressed_length=len(b), **extra)

    def build(self, manifest, footer=True, canonical=True):
        body = pad64(bytes(self.data))
        m = cbor2.dumps(manifest, canonical=False) if canonical else manifest
        tail = struct.pack("<Q", len(m)) + (MAGIC if footer else b"")
        return body + m + tail


def f32(*xs):
    return struct.pack("<%df" % len(xs), *xs)


def u64(*xs):
    return struct.pack("<%dQ" % len(xs), *xs)


def indefinite_cbor(v):
    """CBOR with every map, array and text in indefinite-length form."""
    if isinstance(v, dict):
        return b"\xbf" + b"".join(indefinite_cbor(k) + indefinite_cbor(x) for k, x in v.items()) + b"\xff"
    if isinstance(v, list):
        return b"\x9f" + b"".join(indefinite_cbor(x) for x in v) + b"\xff"
    if isinstance(v, str):
        h = len(v) // 2  # chunks split between characters stay UTF-8
        return b"\x7f" + cbor2.dumps(v[:h]) + cbor2.dumps(v[h:]) + b"\xff"
    return cbor2.dumps(v)


def open_walk_seeds():
    seeds = {}
    vals = f32(*[float(i) * 0.5 for i in range(64)])

    f = File()
    data = f.zstd("f32", vals * 8, frames=4)
    seeds["zstd_four_frames"] = f.build({"version": "1.2.0", "objects": {
        "w": {"shape": [32, 16], "format": "dense", "components": {"data": data}}}})

    f = File()
    data = f.zstd("f32", vals, frames=2, content_size=False)
    seeds["zstd_no_content_size"] = f.build({"version": "1.2.0", "objects": {
        "w": {"shape": [64], "format": "dense", "components": {"data": data}}}})

    f = File()
    comps = {"values": f.raw("f32", f32(1, 2, 3)), "coords": f.raw("u64", u64(0, 1, 2, 3, 0, 1))}
    seeds["sparse_coo"] = f.build({"version": "1.2.0", "objects": {
        "c": {"shape": [4, 4], "format": "sparse_coo", "components": comps}}})

    f = File()
    comps = {"values": f.zstd("f32", f32(1, 2, 3)), "indices": f.raw("u64", u64(0, 2, 1)),
             "indptr": f.zstd("u64", u64(0, 2, 2, 3))}
    seeds["sparse_csr_zstd"] = f.build({"version": "1.2.0", "objects": {
        "m": {"shape": [3, 3], "format": "sparse_csr", "components": comps}}})

    f = File()
    seeds["complex_fp8_digests"] = f.build({"version": "1.2.0", "attributes": {"k": [1, -2, 1.5, None, True, b"\x01"]},
        "objects": {
            "z": {"shape": [2], "format": "dense",
                  "components": {"data": f.raw("f32", f32(1, 2, 3, 4), type="complex64",
                                               digest="xxh3:0000000000000000")}},
            "q": {"shape": [4], "format": "dense",
                  "components": {"data": f.raw("u8", bytes([0, 0x38, 0x7f, 0xff]), type="f8_e4m3fn")}},
            "b": {"shape": [3], "format": "dense", "components": {"data": f.raw("bool", bytes([0, 1, 1]))}},
        }})

    f = File()
    data = f.raw("f32", vals[:16])
    manifest = indefinite_cbor({"version": "1.2.0", "objects": {
        "w": {"shape": [2, 2], "format": "dense", "components": {"data": data}}}})
    seeds["indefinite_cbor"] = f.build(manifest, canonical=False)

    # 1.0.x: the same header, no footer; "tensors" with legacy dtype names.
    f = File()
    data = f.raw("float32", vals[:16])
    del data["dtype"]
    zs = f.zstd("float32", vals[:32])
    del zs["dtype"], zs["uncompressed_length"]
    seeds["v100_basic"] = f.build({"version": "1.0", "generator": "seed", "tensors": {
        "w": {"dtype": "float32", "shape": [4], "format": "dense", "components": {"data": data}},
        "z": {"dtype": "float32", "shape": [8], "format": "dense", "components": {"data": zs}}}}, footer=False)

    # Quantized, 4 bits in i32 words, 2 x 8 weights, groups of 2.
    f = File()
    comps = {"packed_weight": f.raw("i32", struct.pack("<2i", 0x76543210, 0x01234567)),
             "scales": f.raw("f16", struct.pack("<8e", *[0.5] * 8)),
             "zeros": f.raw("f16", struct.pack("<8e", *[8.0] * 8))}
    seeds["quantized_small"] = f.build({"version": "1.2.0", "objects": {
        "q": {"shape": [2, 8], "format": "quantized_group",
              "attributes": {"bits": 4, "group_size": 2, "packing": "8_per_i32"}, "components": comps}}})
    return seeds


# ---- writer programs (see fuzz_writer.cpp, class Decoder) ----
ADD_DENSE, BEGIN_OBJECT, ADD_COMPONENT, END_OBJECT, BEGIN_COMPONENT, WRITE, END_COMPONENT, \
    FILE_ATTRS, OBJECT_ATTRS, FINISH, ABORT, ADD_DENSE_EXACT = range(12)
NAMES = ["w", "b", "layer.0.weight", "x", "", "\xe9t\xe9", "a/b", "w"]
DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool",
          "float32", "f8_e4m3fn", ""]
TYPES = ["f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz", "complex64", "complex128", "mytype"]
FORMATS = ["dense", "sparse_csr", "sparse_coo", "quantized_group", "custom_layout", ""]
ROLES = ["data", "values", "indices", "indptr", "coords", "packed_weight", "scales", "zeros"]
ENCODINGS = ["raw", "zstd", "auto", "lz4"]


def sel(lst, x):
    return bytes([lst.index(x)])


def shape(*dims):
    return bytes([len(dims)]) + bytes(dims)


def explicit(b):
    return bytes([0]) + struct.pack("<H", len(b)) + b


def pattern(n, seed=1):
    return bytes([2]) + struct.pack("<H", n) + bytes([seed])


def exact(seed=3, boolean=False):
    return bytes([0x11 if boolean else 1, seed])


def options(digest=0, level_index=0, preexisting=False, frame_kib=1, ratio=180):
    o = digest | (level_index << 2) | (0x20 if preexisting else 0)
    return bytes([o, frame_kib - 1, ratio])


def add_dense_exact(name, dtype, dims, encoding="raw"):
    return bytes([ADD_DENSE_EXACT]) + sel(NAMES, name) + sel(DTYPES, dtype) + shape(*dims) + exact(boolean=dtype == "bool") + \
        sel(ENCODINGS, encoding)


def add_component(role, dtype, data, encoding="raw", typ=None):
    t = bytes([0]) if typ is None else bytes([next(b for b in range(0x80, 0xF0) if b % 7 == TYPES.index(typ))])
    return bytes([ADD_COMPONENT]) + sel(ROLES, role) + sel(DTYPES, dtype) + t + bytes([0]) + explicit(data) + \
        sel(ENCODINGS, encoding)


def begin_object(name, fmt, dims):
    return bytes([BEGIN_OBJECT]) + sel(NAMES, name) + sel(FORMATS, fmt) + shape(*dims)


def writer_seeds():
    s = {}
    s["dense_raw"] = options() + add_dense_exact("w", "f32", [2, 3]) + add_dense_exact("b", "i8", [5]) + bytes([FINISH])
    s["dense_zstd_frames"] = options(frame_kib=1) + add_dense_exact("w", "u8", [16, 16, 16], "zstd") + \
        add_dense_exact("x", "f16", [3, 16, 16], "auto") + bytes([FINISH])
    s["sha256_scalar"] = options(digest=1) + add_dense_exact("x", "f64", []) + add_dense_exact("b", "bool", [4]) + \
        bytes([FINISH])
    s["csr"] = options(digest=2) + begin_object("x", "sparse_csr", [3, 4]) + \
        add_component("values", "f32", f32(1, 2, 3), "zstd") + add_component("indices", "u64", u64(0, 3, 1)) + \
        add_component("indptr", "u64", u64(0, 2, 2, 3)) + bytes([END_OBJECT, FINISH])
    s["coo"] = options() + begin_object("b", "sparse_coo", [4, 4]) + \
        add_component("values", "f32", f32(1, 2)) + add_component("coords", "u64", u64(0, 3, 1, 2)) + \
        bytes([END_OBJECT, FINISH])
    s["quantized"] = options() + begin_object("w", "quantized_group", [2, 8]) + bytes([OBJECT_ATTRS, 1]) + \
        add_component("packed_weight", "i32", struct.pack("<2i", 0x76543210, 0x01234567)) + \
        add_component("scales", "f16", struct.pack("<8e", *[0.5] * 8)) + \
        add_component("zeros", "f16", struct.pack("<8e", *[8.0] * 8)) + bytes([END_OBJECT, FINISH])
    s["streaming"] = options(frame_kib=1) + begin_object("layer.0.weight", "dense", [16, 16, 16]) + \
        bytes([BEGIN_COMPONENT]) + sel(ROLES, "data") + sel(DTYPES, "f32") + bytes([0]) + sel(ENCODINGS, "zstd") + \
        bytes([0xFF]) + struct.pack("<Q", 16384) + \
        b"".join(bytes([WRITE, 0]) + pattern(4096, i) for i in range(4)) + bytes([END_COMPONENT, END_OBJECT]) + \
        bytes([FILE_ATTRS, 4]) + bytes([FINISH])
    s["typed"] = options() + begin_object("x", "dense", [2]) + add_component("data", "f32", f32(1, 2, 3, 4), typ="complex64") + \
        bytes([END_OBJECT]) + begin_object("b", "dense", [3]) + add_component("data", "u8", bytes([1, 2, 3]), typ="f8_e5m2") + \
        bytes([END_OBJECT, FINISH])
    s["abort_existing"] = options(preexisting=True) + add_dense_exact("w", "f32", [8]) + bytes([ABORT])
    s["unfinished_object"] = options(preexisting=True) + begin_object("w", "dense", [2]) + bytes([FINISH])
    return s


# ---- foreign formats ----
def safetensors_file(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)]"""
    import json
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dt, shape, b in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(kvs, tensors, alignment=32):
    """kvs: [(key, type, packed value)]; tensors: [(name, dims innermost first, ggml type, bytes)]"""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gguf_string(k) + struct.pack("<I", t) + v
    offset, blobs = 0, b""
    for name, dims, t, b in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, offset)
        blobs += b + b"\0" * (-len(b) % alignment)
        offset = len(blobs)
    out += b"\0" * (-len(out) % alignment)
    return out + blobs


def foreign_seeds():
    import io
    import numpy as np
    s = {"format_safetensors": {}, "format_gguf": {}, "format_npy": {}, "format_npz": {}}
    st = s["format_safetensors"]
    st["basic"] = safetensors_file([("w", "F32", [2, 2], f32(1, 2, 3, 4)), ("b", "I64", [2], struct.pack("<2q", -1, 7))],
                                   {"format": "pt"})
    st["types"] = safetensors_file([("h", "F16", [2], struct.pack("<2e", 1, -2)), ("bf", "BF16", [1], b"\x80\x3f"),
                                    ("q", "F8_E4M3", [3], bytes([0, 0x38, 0x7f])), ("z", "BOOL", [2], bytes([0, 1])),
                                    ("c", "C64", [1], f32(1, 2)), ("e", "U8", [0], b""), ("s", "F64", [], struct.pack("<d", 3.5))])
    st["f4"] = safetensors_file([("p", "F4", [2, 4], bytes([0x21, 0x43, 0x65, 0x87]))])
    # Quantized layers; fuzz_format_hf_quantized writes the config.json its
    # first byte picks (0 mxfp4, 1 GPTQ 4-bit g32, 2 GPTQ v2 2-bit, 3 AWQ,
    # 4 FP8 blocks of [2, 3], 5 NVFP4, 6 compressed-tensors blocks of [2, 2],
    # 7 pack-quantized int4 symmetric g8, 8 pack-quantized int4 asymmetric
    # by channel).
    def i32(*v):
        return struct.pack(f"<{len(v)}i", *v)
    gptq = [("l.qweight", "I32", [4, 8], i32(*range(-16, 16))), ("l.qzeros", "I32", [1, 1], i32(0x76543210)),
            ("l.scales", "F16", [1, 8], struct.pack("<8e", *[0.5] * 8)), ("l.g_idx", "I32", [32], i32(*[0] * 32)),
            ("l.bias", "F32", [2], f32(1, 2))]
    awq = [("l.qweight", "I32", [16, 1], i32(*range(16))), ("l.qzeros", "I32", [1, 1], i32(0x01234567)),
           ("l.scales", "F16", [1, 8], struct.pack("<8e", *[0.25] * 8))]
    s["format_hf_quantized"] = {
        "mxfp4": b"\0" + safetensors_file([("e.down_proj_blocks", "U8", [2, 1, 16], bytes(range(32))),
                                           ("e.down_proj_scales", "U8", [2, 1], bytes([126, 128])),
                                           ("norm", "F32", [2], f32(1, 2))]),
        "lone_half": b"\0" + safetensors_file([("w_blocks", "U8", [1, 16], bytes(16))]),
        "gptq": b"\1" + safetensors_file(gptq),
        "gptq_v2_2bit": b"\2" + safetensors_file([("l.qweight", "I32", [1, 16], i32(*range(16))),
                                                  ("l.qzeros", "I32", [1, 1], i32(7)),
                                                  ("l.scales", "F16", [1, 16], struct.pack("<16e", *[1.0] * 16)),
                                                  ("l.g_idx", "I32", [16], i32(*[0] * 15, 1))]),
        "awq": b"\3" + safetensors_file(awq),
        "fp8_blocks": b"\4" + safetensors_file([("l.weight", "F8_E4M3", [3, 4], bytes(range(0x30, 0x3c))),
                                                ("l.weight_scale_inv", "F32", [2, 2], f32(1, 2, 0.5, 4))]),
        "nvfp4": b"\5" + safetensors_file([("x.weight", "U8", [2, 8], bytes(range(16))),
                                           ("x.weight_scale", "F8_E4M3", [2, 1], bytes([0x38, 0x40])),
                                           ("x.weight_scale_2", "F32", [], f32(0.5)),
                                           ("x.input_scale", "F32", [1], f32(2))]),
        "ct_tensor": b"\6" + safetensors_file([("l.weight", "I8", [2, 2], bytes([1, 2, 3, 0xff])),
                                               ("l.weight_scale", "F32", [], f32(0.25))]),
        "pack_quantized": b"\7" + safetensors_file([
            ("l.weight_packed", "I32", [2, 2], i32(0x76543210, -1, 0x01234567, 8)),
            ("l.weight_scale", "F16", [2, 2], struct.pack("<4e", 0.5, 1, 2, 4)),
            ("l.weight_shape", "I64", [2], struct.pack("<2q", 2, 16))]),
        "pack_quantized_zeros": b"\x08" + safetensors_file([
            ("l.weight_packed", "I32", [8, 1], i32(*range(8))),
            ("l.weight_scale", "F32", [8, 1], f32(*[0.5] * 8)),
            ("l.weight_zero_point", "I32", [1, 1], i32(0x12345678)),
            ("l.weight_shape", "I32", [2], i32(8, 8))]),
    }
    gg = s["format_gguf"]
    kvs = [("general.architecture", 8, gguf_string("llama")), ("general.alignment", 4, struct.pack("<I", 32)),
           ("llama.block_count", 4, struct.pack("<I", 1)),
           ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + gguf_string("a") + gguf_string("b")),
           ("f", 6, struct.pack("<f", 0.5)), ("flag", 7, b"\x01"), ("big", 10, struct.pack("<Q", 2**63))]
    q4_0 = struct.pack("<e", 0.25) + bytes(range(16))  # one block of 32 weights
    gg["basic"] = gguf_file(kvs, [("tok.weight", [4, 2], 0, f32(*range(8))), ("h", [3], 1, struct.pack("<3e", 1, 2, 3)),
                                  ("q", [32, 2], 2, q4_0 * 2), ("i", [2], 26, struct.pack("<2i", -5, 5))])
    npy = s["format_npy"]
    for name, arr in [("f4", np.arange(6, dtype="<f4").reshape(2, 3)), ("be_i2", np.arange(5, dtype=">i2")),
                      ("fortran", np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3))),
                      ("c8", np.array([1 + 2j, 3 - 1j], dtype="<c8")), ("bool", np.array([True, False])),
                      ("scalar", np.array(7, dtype="<u4"))]:
        bio = io.BytesIO()
        np.save(bio, arr)
        npy[name] = bio.getvalue()
    npz = s["format_npz"]
    for name, fn in [("stored", np.savez), ("deflated", np.savez_compressed)]:
        bio = io.BytesIO()
        fn(bio, a=np.arange(4, dtype="<f4"), b=np.array([[1, 2], [3, 4]], dtype="<i8"))
        npz[name] = bio.getvalue()
    # A deflated member over 64 KiB: its data is inflated as it is read.
    bio = io.BytesIO()
    np.savez_compressed(bio, z=np.zeros(24 << 10, dtype="<f4"), a=np.arange(4, dtype="<f4"))
    npz["deflated_read_lazily"] = bio.getvalue()
    # Member lists that fuzz_format_npz builds into an archive itself
    # (flags, name length, name, data length, data; see the target).
    def member(name, data, deflate=False):
        n = name.encode()
        return bytes([1 if deflate else 0, len(n)]) + n + struct.pack("<H", len(data)) + data
    a, b = npy["f4"], npy["be_i2"]
    npz["members_stored"] = member("a.npy", a) + member("b.npy", b)
    npz["members_deflated"] = member("w.npy", a, True) + member("dir/x.npy", npy["bool"], True)
    npz["members_odd_names"] = member("a", a) + member("a.npy", b) + member("c.txt", b"not npy")
    npz["members_duplicate"] = member("a.npy", a) + member("a.npy", b)  # refused (#42 item 8)
    s["format_pytorch"] = pytorch_seeds(member)
    return s


def pytorch_seeds(member):
    """torch.save files (zip and legacy) written by the real torch, and the
    same archives as member lists; without python3-torch, none."""
    import io
    import zipfile
    try:
        import torch
    except ImportError:
        print("make_seeds: python3-torch is not installed: no format_pytorch seeds")
        return {}
    torch.manual_seed(0)
    w = torch.randn(3, 4)
    sd = {"w": w, "t": w.t(), "h": torch.arange(4).half(), "b": torch.tensor([True, False]),
          "c": torch.ones(1, dtype=torch.complex64), "s": torch.tensor(7), "e": torch.zeros(0, 2),
          "slice": torch.arange(10.0)[3:7], "tied": w}
    ck = {"model": torch.nn.Linear(2, 1).state_dict(), "epoch": 3, "opt": {"state": {0: {"step": 1}}},
          "lr": [1e-3, (0.9, 0.999)], "name": "run", "none": None}
    seeds = {}
    for name, obj in [("state_dict", sd), ("checkpoint", ck)]:
        for zip_format, proto in [(True, 2), (False, 2), (True, 4)]:
            bio = io.BytesIO()
            torch.save(obj, bio, pickle_protocol=proto, _use_new_zipfile_serialization=zip_format)
            blob = bio.getvalue()
            kind = "zip" if zip_format else "legacy"
            seeds["%s_%s_p%d" % (name, kind, proto)] = blob
            if zip_format and proto == 2:
                with zipfile.ZipFile(io.BytesIO(blob)) as z:
                    seeds["%s_members" % name] = b"".join(member(i.filename, z.read(i)) for i in z.infolist())
    # Issue #42 items 5 and 6: a memoised text encoded over and over (the
    # byte budget), and names that grow past the limit under a shared key.
    text = b"x" * 16384  # a member holds at most 64 KiB in this encoding
    copies = (b"\x80\x02]q\x00(c_codecs\nencode\nq\x01X" + struct.pack("<I", len(text)) + text +
              b"q\x02X\x06\x00\x00\x00latin1q\x03\x86R" + b"h\x01h\x02h\x03\x86R" * 63 + b"e.")
    seeds["copies_members"] = member("archive/data.pkl", copies)
    key = "k" * 4096
    deep = cur = {}
    for _ in range(20):
        cur[key] = {}
        cur = cur[key]
    cur["w"] = torch.ones(2)
    bio = io.BytesIO()
    torch.save(deep, bio)
    seeds["deep_names_zip"] = bio.getvalue()
    # torch >= 2.1's _rebuild_tensor_v3 (float8, uint16-64, float4): the
    # fixture torch 2.11 wrote (#45 part 1).
    today = os.path.join(HERE, "..", "tests", "fixtures", "today", "torch_dtypes.pt")
    if os.path.exists(today):
        with open(today, "rb") as f:
            seeds["torch211_v3_dtypes_zip"] = f.read()
    # Issue #42 item 8: a decoy local header of the storage before the
    # real one, its CRC-32 forged (the member is found through the central
    # directory, never by searching for a header).
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python", "tests"))
    import zip_forgery
    bio = io.BytesIO()
    torch.save({"w": torch.arange(16, dtype=torch.float32)}, bio)
    seeds["decoy_member_zip"] = zip_forgery.with_decoy(bio.getvalue(), "/data/0", bytes(64))
    return seeds


MAGIC_V2 = b"\x89ZT2\r\n\x1a\n"


class FileV2:
    """A zTensor v2 file: blobs at multiples of 4096, a deterministic-CBOR
    manifest (cbor2's canonical encoding sorts text keys as RFC 8949
    deterministic encoding does, and shortens floats) and the 40-byte
    footer with the manifest's XXH3-64."""

    def __init__(self):
        self.data = bytearray(MAGIC_V2 + b"\0" * (4096 - 8))

    def blob(self, b):
        self.data += b"\0" * (-len(self.data) % 4096)
        off = len(self.data)
        self.data += b
        return [off, len(b)]

    def raw(self, dtype, b, **extra):
        return dict(dtype=dtype, blob=self.blob(b), **extra)

    def build(self, manifest):
        import xxhash
        m = cbor2.dumps(manifest, canonical=True)
        body = bytes(self.data) + b"\0" * (-len(self.data) % 4096)
        footer = struct.pack("<QQQII", len(body), len(m), xxhash.xxh3_64_intdigest(m), 2, 0)
        return body + m + footer + MAGIC_V2

    def build_data_shard(self):
        """A data shard (§7.2): magic, blobs, a footer with no manifest."""
        return bytes(self.data) + struct.pack("<QQQII", 0, 0, 0, 2, 0) + MAGIC_V2


# fuzz_shards.cpp splits its input here: the root file, then its shards.
SHARD_SEPARATOR = b"ZTSHARD!"


def shard_identity(b, algo="sha256"):
    import hashlib
    import xxhash
    hexdigest = hashlib.sha256(b).hexdigest() if algo == "sha256" else xxhash.xxh3_64_hexdigest(b)
    return {"size": len(b), "digest": algo + ":" + hexdigest}


def in_shard(part, name):
    return dict(part, shard=name)


def shard_seeds():
    """Sharded v2 models for fuzz_shards: root + SHARD_SEPARATOR + shard 00001 + ..."""
    out = {}
    # One data shard holding a dense part; another part in the root.
    s1 = FileV2()
    w = in_shard(s1.raw("f32", f32(1, 2, 3, 4)), "00001")
    shard1 = s1.build_data_shard()
    root = FileV2()
    local = root.raw("i64", struct.pack("<3q", -1, 0, 1))
    out["one_shard"] = root.build({
        "shards": {"00001": shard_identity(shard1)},
        "objects": {"w": dict(shape=[2, 2], layout="dense", parts={"data": w}),
                    "local": dict(shape=[3], layout="dense", parts={"data": local})}}) + SHARD_SEPARATOR + shard1
    # A CSR straddling two shards, the second identified by xxh3.
    s1, s2 = FileV2(), FileV2()
    values = in_shard(s1.raw("f32", f32(1, 2)), "00001")
    indices = in_shard(s2.raw("u32", struct.pack("<2I", 0, 2)), "00002")
    indptr = in_shard(s2.raw("u32", struct.pack("<3I", 0, 1, 2)), "00002")
    a, b = s1.build_data_shard(), s2.build_data_shard()
    out["straddling_csr"] = FileV2().build({
        "shards": {"00001": shard_identity(a), "00002": shard_identity(b, "xxh3")},
        "objects": {"m": dict(shape=[2, 3], layout="zt.sparse_csr/1",
                              parts={"values": values, "indices": indices, "indptr": indptr})}}) \
        + SHARD_SEPARATOR + a + SHARD_SEPARATOR + b
    # A base model with its own manifest serving as the shard of an adapter,
    # and seekable zstd in the shard.
    base = FileV2()
    raw = bytes(range(32)) * 4
    z = dict(dtype="u8", blob=base.blob(seekable(raw, 50)), encoding="zt.zstd-seekable/1",
             decoded_length=len(raw))
    base_bytes = base.build({"objects": {"z": dict(shape=[128], layout="dense", parts={"data": z})}})
    out["base_as_shard"] = FileV2().build({
        "shards": {"00001": shard_identity(base_bytes)},
        "objects": {"z": dict(shape=[128], layout="dense", parts={"data": in_shard(z, "00001")})}}) \
        + SHARD_SEPARATOR + base_bytes
    return out


def byte_planes(raw, width, frame):
    """libztensor.byte_planes/1 by its profile (docs/profiles/): frames of
    `frame` bytes, the sign rotated to bit 0, plane 0 stored, the others one
    zstd frame each; the index and footer."""
    import xxhash
    import zstandard
    planes_out, index = b"", b""
    frames = [raw[i:i + frame] for i in range(0, len(raw), frame)]
    for fr in frames:
        n = len(fr) // width
        vals = [int.from_bytes(fr[i * width:(i + 1) * width], "little") for i in range(n)]
        bits = 8 * width
        vals = [((v << 1) | (v >> (bits - 1))) & ((1 << bits) - 1) for v in vals]
        for j in range(width):
            plane = bytes((v >> (8 * j)) & 0xFF for v in vals)
            if j == 0:
                planes_out += plane
                index += struct.pack("<I", len(plane))
            else:
                z = zstandard.ZstdCompressor(write_content_size=True).compress(plane)
                planes_out += z
                index += struct.pack("<I", len(z) | 1 << 31)
        index += struct.pack("<I", xxhash.xxh3_64_intdigest(fr) & 0xFFFFFFFF)
    return planes_out + index + struct.pack("<IIBBHI", len(frames), frame, width, 1, 0, 0x5042545A)


def seekable(raw, frame):
    """The zstd seekable format by its spec: checksummed frames, then the
    seek table (skippable frame 0x184D2A5E, entries with checksums, footer)."""
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    frames, entries = b"", b""
    pieces = [raw[i:i + frame] for i in range(0, len(raw), frame)]
    for piece in pieces:
        f = cctx.compress(piece)
        frames += f
        entries += struct.pack("<II", len(f), len(piece)) + f[-4:]
    table = entries + struct.pack("<IBI", len(pieces), 0x80, 0x8F92EAB1)
    return frames + struct.pack("<II", 0x184D2A5E, len(table)) + table


def v2_seeds():
    out = {}
    f = FileV2()
    data = f32(1, 2, 3, 4, 5, 6)
    objs = {"w": dict(shape=[2, 3], layout="dense",
                      parts={"data": f.raw("f32", data, digest="xxh3:" + __import__("xxhash").xxh3_64_hexdigest(data))})}
    out["v2_dense"] = f.build({"objects": objs, "attributes": {"k": [1, 2.5, "x", {"n": None}]}})
    f = FileV2()
    csr = {"values": f.raw("f32", f32(1, 2)), "indices": f.raw("u32", struct.pack("<2I", 0, 2)),
           "indptr": f.raw("u32", struct.pack("<3I", 0, 1, 2))}
    coo = {"values": f.raw("f32", f32(7)), "coords": f.raw("u32", struct.pack("<2I", 1, 2))}
    out["v2_sparse"] = f.build({"objects": {
        "csr": dict(shape=[2, 3], layout="zt.sparse_csr/1", parts=csr),
        "coo": dict(shape=[2, 3], layout="zt.sparse_coo/1", parts=coo)}})
    f = FileV2()
    raw = bytes(range(64)) * 8
    z = seekable(raw, 200)
    parts = {"data": dict(dtype="u8", blob=f.blob(z), encoding="zt.zstd-seekable/1",
                          decoded_length=len(raw))}
    other = {"data": f.raw("u8", b"\x12" * 16, type="f4_e2m1"),
             "scales": f.raw("u8", b"\x7f", type="f8_e8m0")}
    out["v2_encoded_and_unknown"] = f.build({"objects": {
        "z": dict(shape=[512], layout="dense", parts=parts),
        "m": dict(shape=[32], layout="zt.mx/1", parts=other,
                  attributes={"block_size": 32, "scale_form": "e8m0_exponent"})}})
    f = FileV2()
    halves = struct.pack("<8e", 0.5, -0.25, 1.5, 2.0, -3.0, 0.125, 7.0, -0.0625)
    planes = dict(dtype="f16", blob=f.blob(byte_planes(halves, 2, 8)), encoding="libztensor.byte_planes/1",
                  decoded_length=len(halves))
    out["v2_byte_planes"] = f.build({"objects": {"h": dict(shape=[8], layout="dense", parts={"data": planes})}})
    f = FileV2()
    part = dict(dtype="u8", blob=[4096, 10], shard="00001")
    out["v2_shards"] = f.build({"shards": {"00001": {"size": 16384, "digest": "sha256:" + "0" * 64}},
                                "objects": {"w": dict(shape=[10], layout="dense", parts={"data": part})}})
    return out


def http_response_seeds():
    """fuzz_http_response: a mode byte, the ranges asked, the open's window
    and a piece-size seed, then an HTTP response (see the target's header)."""
    def ranges(*rs):  # (offset / 64 after the previous end, length)
        return bytes([len(rs)]) + b"".join(struct.pack("<HB", o, n - 1) for o, n in rs)

    def tail(window=0xFFFF, seed=7):
        return struct.pack("<HB", window, seed)

    body = bytes(range(256)) * 4
    part = lambda first, last, total, data: (
        b"--XYZ\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Range: bytes %d-%d/%d\r\n\r\n" % (first, last, total) + data + b"\r\n")
    return {
        "open_tail": b"\x01" + tail(199) + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 800-999/1000\r\nETag: \"v1\"\r\nContent-Length: 200\r\n\r\n" + body[:200],
        "open_head": b"\x03" + tail(99) + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 0-99/1000\r\nLast-Modified: Thu, 26 Nov 2026 10:00:00 GMT\r\n\r\n" + body[:100],
        "open_small_whole": b"\x01" + tail() + b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
        "open_redirect": b"\x01" + tail(9) + b"HTTP/1.1 302 Found\r\nLocation: /y.zt\r\n"
        b"Content-Range: bytes 0-0/1\r\n\r\nHTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 90-99/100\r\n\r\n" + body[:10],
        "one_range": b"\x04" + ranges((1, 100)) + tail() + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 64-163/1048576\r\n\r\n" + body[:100],
        "multipart": b"\x04" + ranges((0, 50), (10, 30)) + tail() + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Type: multipart/byteranges; boundary=XYZ\r\n\r\n\r\n"
        + part(0, 49, 1048576, body[:50]) + part(690, 719, 1048576, body[50:80]) + b"--XYZ--\r\n",
        "multipart_quoted_boundary": b"\x00" + ranges((0, 8), (100, 8)) + tail()
        + b"HTTP/1.1 206 Partial Content\r\nContent-Type: multipart/byteranges; boundary=\"XYZ\"\r\n\r\n"
        + part(0, 7, 7000, body[:8]) + part(6408, 6415, 7000, body[8:16]) + b"--XYZ--\r\n",
        "ignored_range": b"\x04" + ranges((0, 16)) + tail() + b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n"
        + body[:64],
        "changed": b"\x04" + ranges((0, 16)) + tail() + b"HTTP/1.1 412 Precondition Failed\r\n\r\ngone",
        "server_error": b"\x04" + ranges((0, 16)) + tail() + b"HTTP/1.1 503 Service Unavailable\r\n"
        b"Retry-After: 1\r\n\r\nbusy",
        # Issue #42: an open answered short of its Content-Range (item 10),
        # and a range sent encoded though no encoding was asked for.
        "open_short": b"\x01" + tail(199) + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 800-999/1000\r\nContent-Length: 100\r\n\r\n" + body[:100],
        "encoded": b"\x04" + ranges((1, 100)) + tail() + b"HTTP/1.1 206 Partial Content\r\n"
        b"Content-Range: bytes 64-163/1048576\r\nContent-Encoding: gzip\r\n\r\n" + body[:100],
    }


def byte_planes_seeds():
    """fuzz_byte_planes: a control byte, the decoded length (20 bits), then
    a stream to decode (bit 0 clear) or bytes to encode (bit 0 set)."""
    def head(control, length):
        return bytes([control, length & 0xFF, (length >> 8) & 0xFF, (length >> 16) & 0x0F])
    rng = random.Random(46)
    f32 = b"".join(struct.pack("<f", rng.gauss(0, 0.02)) for _ in range(1024))
    bf16 = b"".join(f32[i + 2:i + 4] for i in range(0, len(f32), 4))
    return {
        "bf16_two_frames": head(0, len(bf16)) + byte_planes(bf16, 2, 1024),
        "f32_three_frames": head(0, len(f32)) + byte_planes(f32, 4, 1536),
        "fp8_one_frame": head(0, 512) + byte_planes(bf16[:512], 1, 512),
        "length_mismatch": head(0, 100) + byte_planes(bf16[:128], 2, 64),
        "round_trip_bf16": bytes([0x02 | 1 | 0x30]) + b"\0\0\0" + bf16,
        "round_trip_f64_plain": bytes([0x06 | 1 | 0x08]) + b"\0\0\0" + f32,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conformance", default="/work/shared/conformance/corpus")
    args = ap.parse_args()
    ow = os.path.join(HERE, "corpus", "open_walk")
    wr = os.path.join(HERE, "corpus", "writer")
    os.makedirs(ow, exist_ok=True)
    os.makedirs(wr, exist_ok=True)
    for kind in ("valid", "reject"):
        for p in sorted(glob.glob(os.path.join(args.conformance, kind, "*.zt"))):
            shutil.copyfile(p, os.path.join(ow, "conf_%s_%s" % (kind, os.path.basename(p))))
    for name, b in open_walk_seeds().items():
        with open(os.path.join(ow, "gen_%s.zt" % name), "wb") as f:
            f.write(b)
    for name, b in v2_seeds().items():
        with open(os.path.join(ow, "gen_%s.zt" % name), "wb") as f:
            f.write(b)
    for name, b in writer_seeds().items():
        with open(os.path.join(wr, "seed_%s" % name), "wb") as f:
            f.write(b)
    shards = os.path.join(HERE, "corpus", "shards")
    os.makedirs(shards, exist_ok=True)
    for name, b in shard_seeds().items():
        with open(os.path.join(shards, "seed_%s" % name), "wb") as f:
            f.write(b)
    d = os.path.join(HERE, "corpus", "http_response")
    os.makedirs(d, exist_ok=True)
    for name, b in http_response_seeds().items():
        with open(os.path.join(d, "seed_%s" % name), "wb") as f:
            f.write(b)
    d = os.path.join(HERE, "corpus", "byte_planes")
    os.makedirs(d, exist_ok=True)
    for name, b in byte_planes_seeds().items():
        with open(os.path.join(d, "seed_%s" % name), "wb") as f:
            f.write(b)
    for target, seeds in foreign_seeds().items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, b in seeds.items():
            with open(os.path.join(d, "seed_%s" % name), "wb") as f:
                f.write(b)


if __name__ == "__main__":
    main()
