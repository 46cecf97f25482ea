#!/usr/bin/python3
"""zTensor v2 conformance vectors, written from the spec text alone.

    /usr/bin/python3 tests/v2/make_vectors.py OUTDIR

Writes OUTDIR/valid/NAME.zt and OUTDIR/reject/NAME.zt, each with the
NAME.expect.json that ../shared/conformance/check.py reads (--corpus OUTDIR):
valid files with the manifest as zt_manifest_json renders a v2 file (the
1.2 vocabulary, docs/v2.md §2), the sha256 of every decoded component and
the zt_verify counts; reject files with the first call that must notice
(open, map or verify) and its status, one rule of the spec broken per file.
Files are assembled byte by byte with Debian's python3-cbor2 (canonical
encoding: text keys sorted as RFC 8949 deterministic encoding sorts them,
floats shortened), python3-xxhash and python3-zstandard; the seekable zstd
stream and its seek table are built here from the zstd seekable format, and
byte-plane streams from docs/profiles/libztensor.byte_planes-1.md.
Nothing here imports the library under test.
"""
import hashlib
import json
import os
import struct
import sys

import cbor2
import xxhash
import zstandard

MAGIC = b"\x89ZT2\r\n\x1a\n"
ALIGN = 4096


def pad(b, a=ALIGN):
    return b + b"\0" * (-len(b) % a)


def xxh3(b):
    return "xxh3:" + xxhash.xxh3_64_hexdigest(b)


def seekable(raw, frame, checksum=True):
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=checksum, write_content_size=True)
    frames, entries = b"", b""
    pieces = [raw[i:i + frame] for i in range(0, len(raw), frame)]
    for piece in pieces:
        f = cctx.compress(piece)
        frames += f
        entries += struct.pack("<II", len(f), len(piece)) + (f[-4:] if checksum else b"")
    table = entries + struct.pack("<IBI", len(pieces), 0x80 if checksum else 0, 0x8F92EAB1)
    return frames + struct.pack("<II", 0x184D2A5E, len(table)) + table


def byte_planes(raw, width, frame, rotate=True, coded=lambda j: j > 0):
    """libztensor.byte_planes/1 by its profile: frames of `frame` decoded
    bytes; each element (a little-endian integer of `width` bytes) rotated
    left by one bit when `rotate`; plane j of a frame holds byte j of each
    element, one zstd frame (with its content size) where coded(j), else
    stored; then the index (per frame: u32 size | bit 31 when coded, per
    plane; u32 low half of the frame's XXH3-64) and the 16-byte footer."""
    out, index = b"", b""
    frames = [raw[i:i + frame] for i in range(0, len(raw), frame)]
    bits = 8 * width
    for fr in frames:
        vals = [int.from_bytes(fr[i:i + width], "little") for i in range(0, len(fr), width)]
        if rotate:
            vals = [((v << 1) | (v >> (bits - 1))) & ((1 << bits) - 1) for v in vals]
        for j in range(width):
            plane = bytes((v >> (8 * j)) & 0xFF for v in vals)
            if coded(j):
                z = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(plane)
                out += z
                index += struct.pack("<I", len(z) | 1 << 31)
            else:
                out += plane
                index += struct.pack("<I", len(plane))
        index += struct.pack("<I", xxhash.xxh3_64_intdigest(fr) & 0xFFFFFFFF)
    footer = struct.pack("<IIBBHI", len(frames), frame, width, 1 if rotate else 0, 0, 0x5042545A)
    return out + index + footer


PLANES = "libztensor.byte_planes/1"


class File:
    def __init__(self):
        self.data = bytearray(MAGIC + b"\0" * (ALIGN - 8))
        self.decoded = {}  # (object, role) -> decoded bytes

    def blob(self, b):
        self.data = bytearray(pad(bytes(self.data)))
        off = len(self.data)
        self.data += b
        return [off, len(b)]

    def part(self, dtype, raw, digest=True, **extra):
        p = dict(dtype=dtype, blob=self.blob(raw), **extra)
        if digest:
            p["digest"] = xxh3(raw)
        return p, raw

    def seek_part(self, dtype, raw, frame=1000, **extra):
        p = dict(dtype=dtype, blob=self.blob(seekable(raw, frame)), encoding="zt.zstd-seekable/1",
                 decoded_length=len(raw), digest=xxh3(raw), **extra)
        return p, raw

    def planes_part(self, dtype, raw, width, frame, **kw):
        p = dict(dtype=dtype, blob=self.blob(byte_planes(raw, width, frame, **kw)), encoding=PLANES,
                 decoded_length=len(raw), digest=xxh3(raw))
        return p, raw

    def build(self, manifest, manifest_bytes=None, version=2):
        m = manifest_bytes if manifest_bytes is not None else cbor2.dumps(manifest, canonical=True)
        body = pad(bytes(self.data))
        footer = struct.pack("<QQQII", len(body), len(m), xxhash.xxh3_64_intdigest(m), version, 0)
        return body + m + footer + MAGIC


PRESENTED = {"dense": "dense", "zt.sparse_csr/1": "sparse_csr", "zt.sparse_coo/1": "sparse_coo"}


def expected_json(manifest):
    """The manifest as zt_manifest_json shows a v2 file (docs/v2.md §2)."""
    objs = {}
    for name, o in manifest["objects"].items():
        comps = {}
        for role, p in o["parts"].items():
            c = {"dtype": p["dtype"], "offset": p["blob"][0], "length": p["blob"][1]}
            if "type" in p:
                c["type"] = p["type"]
            if "encoding" in p:
                c["encoding"] = "zstd" if p["encoding"] == "zt.zstd-seekable/1" else p["encoding"]
                c["uncompressed_length"] = p["decoded_length"]
            if "digest" in p:
                c["digest"] = p["digest"]
            comps[role] = c
        e = {"shape": o["shape"], "format": PRESENTED.get(o["layout"], o["layout"]), "components": comps}
        if "attributes" in o:
            e["attributes"] = o["attributes"]
        objs[name] = e
    out = {"version": "2", "objects": objs}
    if "attributes" in manifest:
        out["attributes"] = manifest["attributes"]
    return out


def valid_cases():
    cases = {}

    f = File()
    w, wraw = f.part("f32", struct.pack("<6f", 1, 2, 3, 4, 5, 6))
    z, zraw = f.seek_part("u16", bytes(range(256)) * 40, frame=4096)
    flags, fraw = f.part("u8", bytes([0, 1, 1, 0]), type="bool")
    m = {"attributes": {"framework": "test", "n": [1, 2.5, None, True], "nested": {"k": {"x": b"\x01"}}},
         "objects": {"w": {"shape": [2, 3], "layout": "dense", "parts": {"data": w}},
                     "ramp": {"shape": [5120], "layout": "dense", "parts": {"data": z}},
                     "flags": {"shape": [4], "layout": "dense", "parts": {"data": flags},
                               "attributes": {"note": "bool over u8"}}}}
    cases["v2_dense_kinds"] = (f.build(m), m, {("w", "data"): wraw, ("ramp", "data"): zraw,
                                                ("flags", "data"): fraw}, (3, 0))

    f = File()
    vals, vraw = f.part("f32", struct.pack("<3f", 1, 2, 3))
    idx, iraw = f.part("u32", struct.pack("<3I", 0, 2, 1))
    ptr, praw = f.part("u32", struct.pack("<3I", 0, 2, 3))
    cv, cvraw = f.part("f64", struct.pack("<2d", 7, 8), digest=False)
    co, coraw = f.part("u64", struct.pack("<4Q", 0, 1, 2, 0))
    m = {"objects": {"csr": {"shape": [2, 3], "layout": "zt.sparse_csr/1",
                             "parts": {"values": vals, "indices": idx, "indptr": ptr}},
                     "coo": {"shape": [2, 3], "layout": "zt.sparse_coo/1",
                             "parts": {"values": cv, "coords": co}}}}
    cases["v2_sparse"] = (f.build(m), m, {("csr", "values"): vraw, ("csr", "indices"): iraw,
                                          ("csr", "indptr"): praw, ("coo", "values"): cvraw,
                                          ("coo", "coords"): coraw}, (4, 1))

    f = File()
    kv, kvraw = f.part("u8", b"opaque pages", digest=False)
    empty, eraw = f.part("f32", b"", digest=False)
    m = {"zz_future": {"anything": [1, 2]},
         "objects": {"kv": {"shape": [3, 4], "layout": "acme.paged/2", "parts": {"pages": kv},
                            "zz": 1},
                     "e": {"shape": [0, 5], "layout": "dense", "parts": {"data": empty}}}}
    cases["v2_unknown_layout_and_keys"] = (f.build(m), m, {("kv", "pages"): kvraw, ("e", "data"): eraw},
                                           (0, 2))

    # Byte planes (libztensor.byte_planes/1): a bf16 ramp in three frames
    # (the last short), an f32 part without the sign rotation and every
    # plane coded, an FP8-like u8 part of one stored plane.
    f = File()
    bf = b"".join(struct.pack("<f", (i - 700) / 512.0)[2:] for i in range(1500))
    h, hraw = f.planes_part("bf16", bf, 2, 1200)
    fl = struct.pack("<300f", *[(i % 17 - 8) * 0.25 for i in range(300)])
    g, graw = f.planes_part("f32", fl, 4, 1200, rotate=False, coded=lambda j: True)
    b8 = bytes((i * 37) % 251 for i in range(700))
    e, eraw = f.planes_part("u8", b8, 1, 256, rotate=False, coded=lambda j: False)
    m = {"objects": {"h": {"shape": [30, 50], "layout": "dense", "parts": {"data": h}},
                     "g": {"shape": [300], "layout": "dense", "parts": {"data": g}},
                     "e": {"shape": [700], "layout": "dense", "parts": {"data": e}}}}
    cases["v2_byte_planes"] = (f.build(m), m, {("h", "data"): hraw, ("g", "data"): graw,
                                               ("e", "data"): eraw}, (3, 0))
    return cases


def base():
    """A valid one-object file and its manifest, for reject cases to break."""
    f = File()
    p, raw = f.part("f32", struct.pack("<4f", 1, 2, 3, 4))
    return f, {"objects": {"w": {"shape": [4], "layout": "dense", "parts": {"data": p}}}}


def reject_cases():
    cases = {}

    def add(name, data, stage, status, what):
        cases[name] = (data, stage, status, what)

    f, m = base()
    good = cbor2.dumps(m, canonical=True)
    add("v2_footer_version_3", f.build(m, version=3), "open", "ZT_ERR_UNSUPPORTED", "footer version 3")
    bad = bytearray(f.build(m))
    bad[len(bad) - 40 + 16] ^= 1
    add("v2_manifest_hash", bytes(bad), "open", "ZT_ERR_DIGEST", "manifest XXH3-64 differs")
    # Deterministic encoding (§3.1).
    add("v2_cbor_unsorted_keys", f.build(m, manifest_bytes=cbor2.dumps(
        {"objects": m["objects"], "attributes": {"b": 1, "aa": 2}}, canonical=False)),
        "open", "ZT_ERR_FORMAT", "map keys not in encoded order")
    add("v2_cbor_non_shortest", f.build(m, manifest_bytes=good[:1] + b"\x78\x07" + good[2:]),
        "open", "ZT_ERR_FORMAT", "a 7-byte key length in two bytes")
    add("v2_cbor_indefinite", f.build(m, manifest_bytes=b"\xbf" + good[1:] + b"\xff"),
        "open", "ZT_ERR_FORMAT", "indefinite-length root map")
    nan = dict(m, attributes={"x": 0})
    nb = cbor2.dumps(nan, canonical=True)
    nb = nb.replace(b"\x61x\x00", b"\x61x\xfa\x7f\xc0\x00\x00")
    add("v2_cbor_nan_single", f.build(m, manifest_bytes=nb), "open", "ZT_ERR_FORMAT",
        "a NaN as a single float")
    deep = {"k": []}
    for _ in range(31):
        deep = {"k": [deep]}
    add("v2_depth_33", f.build(dict(m, attributes=deep)), "open", "ZT_ERR_FORMAT", "nesting over 32")
    tag = cbor2.dumps(dict(m, attributes={"t": cbor2.CBORTag(1, 0)}), canonical=True)
    add("v2_attribute_tag", f.build(m, manifest_bytes=tag), "open", "ZT_ERR_INVALID", "a tag in attributes")

    def broken(name, mutate, status="ZT_ERR_INVALID", stage="open", what=""):
        f2, m2 = base()
        mutate(f2, m2, m2["objects"]["w"], m2["objects"]["w"]["parts"]["data"])
        add(name, f2.build(m2), stage, status, what)

    broken("v2_blob_misaligned", lambda f, m, o, p: p["blob"].__setitem__(0, p["blob"][0] + 64),
           what="offset not a multiple of 4096")
    broken("v2_blob_three_elements", lambda f, m, o, p: p["blob"].append(0), what="blob of 3")
    broken("v2_blob_into_footer", lambda f, m, o, p: p["blob"].__setitem__(0, 1 << 20),
           what="blob past the data region")
    broken("v2_decoded_length_without_encoding", lambda f, m, o, p: p.__setitem__("decoded_length", 16),
           what="decoded_length iff encoding")
    broken("v2_dtype_bool", lambda f, m, o, p: p.__setitem__("dtype", "bool"), what="bool is not a dtype")
    broken("v2_digest_uppercase", lambda f, m, o, p: p.__setitem__("digest", p["digest"].upper()),
           what="digest hex not lowercase")
    broken("v2_rank_65", lambda f, m, o, p: o.__setitem__("shape", [4] + [1] * 64), what="rank 65")
    broken("v2_shape_overflow", lambda f, m, o, p: o.__setitem__("shape", [1 << 32, 1 << 32]),
           what="shape product overflows")
    broken("v2_layout_without_version", lambda f, m, o, p: o.__setitem__("layout", "zt.sparse_csr"),
           what="profile id without /N")
    broken("v2_dense_size", lambda f, m, o, p: o.__setitem__("shape", [5]), what="dense size equation")
    broken("v2_parts_empty", lambda f, m, o, p: o.__setitem__("parts", {}), what="parts empty")
    broken("v2_unknown_shard", lambda f, m, o, p: p.__setitem__("shard", "s1"), what="shard not declared")
    broken("v2_shard_name_traversal", lambda f, m, o, p: m.__setitem__(
        "shards", {"..": {"size": 8192, "digest": "sha256:" + "0" * 64}}), what="shard name")

    def long_name(f, m, o, p):
        m["objects"]["n" * 1025] = m["objects"].pop("w")
    broken("v2_name_1025_bytes", long_name, what="name over 1024 bytes")

    def overlap_manifest(f, m, o, p):
        o["shape"] = [1]
        p["blob"] = [len(pad(bytes(f.data))), 4]
    broken("v2_blob_overlaps_manifest", overlap_manifest, what="a blob over the manifest")
    broken("v2_digest_over_stored_bytes", lambda f, m, o, p: p.__setitem__("digest", xxh3(b"other")),
           status="ZT_ERR_DIGEST", stage="verify", what="digest mismatch")
    broken("v2_bool_byte_2", lambda f, m, o, p: (o.__setitem__("shape", [2]),
                                                 p.update(f.part("u8", b"\x01\x02", type="bool")[0])),
           stage="verify", what="bool byte 2")

    # Seekable zstd (its profile): refused when decoded, not at open.
    def seek(name, stream, what, decoded_length=4000):
        f2 = File()
        raw = bytes(range(200)) * 20
        p = dict(dtype="u8", blob=f2.blob(stream(raw)), encoding="zt.zstd-seekable/1",
                 decoded_length=decoded_length)
        m2 = {"objects": {"w": {"shape": [decoded_length], "layout": "dense", "parts": {"data": p}}}}
        add(name, f2.build(m2), "map", "ZT_ERR_INVALID", what)
    seek("v2_seekable_no_seek_table", lambda raw: zstandard.ZstdCompressor(write_checksum=True).compress(raw),
         "no seek table")
    seek("v2_seekable_no_checksum", lambda raw: seekable(raw, 1000, checksum=False), "frames without checksum")
    seek("v2_seekable_short", lambda raw: seekable(raw, 1000), "frames hold less than decoded_length",
         decoded_length=4001)

    # Byte planes (their profile): refused when decoded, not at open.
    def planes(name, edit, what, decoded_length=2000):
        f2 = File()
        raw = b"".join(struct.pack("<e", (i % 41 - 20) / 16.0) for i in range(1000))
        stream = bytearray(byte_planes(raw, 2, 800))
        edit(stream)
        p = dict(dtype="f16", blob=f2.blob(bytes(stream)), encoding=PLANES,
                 decoded_length=decoded_length)
        m2 = {"objects": {"w": {"shape": [decoded_length // 2], "layout": "dense", "parts": {"data": p}}}}
        add(name, f2.build(m2), "map", "ZT_ERR_INVALID", what)

    def poke(at, value):
        def edit(s):
            s[at] = value
        return edit
    planes("v2_planes_magic", poke(-1, 0x51), "footer magic not ZTBP")
    planes("v2_planes_reserved", poke(-5, 1), "a reserved footer byte set")
    planes("v2_planes_width_3", poke(-8, 3), "width 3")
    planes("v2_planes_frame_count", lambda s: s.__setitem__(slice(-16, -12), struct.pack("<I", 4)),
           "4 frames where 2000 bytes in frames of 800 need 3")
    planes("v2_planes_odd_frame", lambda s: s.__setitem__(slice(-12, -8), struct.pack("<I", 801)),
           "frames not whole elements")
    planes("v2_planes_checksum", lambda s: s.__setitem__(-17, s[-17] ^ 0x5A),
           "a frame's checksum differs")  # the last frame's
    planes("v2_planes_stored_plane_size", lambda s: s.__setitem__(
        slice(-16 - 36, -16 - 32), struct.pack("<I", 401)), "a stored plane not its element count")
    planes("v2_planes_short", lambda s: None, "frames hold less than decoded_length",
           decoded_length=2002)

    f = File()
    v, _ = f.part("f32", struct.pack("<2f", 1, 2))
    i, _ = f.part("u32", struct.pack("<2I", 1, 1))
    ptr, _ = f.part("u32", struct.pack("<3I", 0, 2, 2))
    m = {"objects": {"csr": {"shape": [2, 3], "layout": "zt.sparse_csr/1",
                             "parts": {"values": v, "indices": i, "indptr": ptr}}}}
    add("v2_csr_repeated_column", f.build(m), "verify", "ZT_ERR_INVALID", "columns not strictly increasing")
    return cases


def main():
    out = sys.argv[1]
    for kind in ("valid", "reject"):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
    for name, (data, manifest, decoded, (checked, unchecked)) in valid_cases().items():
        comps = {}
        for (o, r), raw in decoded.items():
            comps.setdefault(o, {})[r] = {"sha256": hashlib.sha256(raw).hexdigest(), "nbytes": len(raw)}
        expect = {"kind": "valid", "name": name, "public": True, "category": "v2",
                  "description": "zTensor v2, written by tests/v2/make_vectors.py", "version": "2",
                  "manifest": json.loads(json.dumps(expected_json(manifest), default=lambda b: {
                      "$bytes": __import__("base64").b64encode(b).decode()})),
                  "components": comps, "verify": {"status": "ZT_OK", "checked": checked, "unchecked": unchecked}}
        write(out, "valid", name, data, expect)
    for name, (data, stage, status, what) in reject_cases().items():
        expect = {"kind": "reject", "name": name, "public": True, "category": "v2", "description": what,
                  "stage": stage, "status": status}
        if stage == "map":  # the component whose map must fail
            expect.update(object="w", role="data")
        write(out, "reject", name, data, expect)


def write(out, kind, name, data, expect):
    with open(os.path.join(out, kind, name + ".zt"), "wb") as f:
        f.write(data)
    with open(os.path.join(out, kind, name + ".expect.json"), "w") as f:
        json.dump(expect, f, indent=1)


if __name__ == "__main__":
    main()
