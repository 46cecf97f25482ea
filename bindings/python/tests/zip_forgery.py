"""Zip archives with a decoy: a local header of a member's name placed
before the real one, its data different but its CRC-32 forged to match the
central directory's (issue #42 item 8). Used by test_foreign.py and by
fuzz/make_seeds.py (the fuzz_format_pytorch seed)."""
import io
import struct
import zipfile
import zlib


def forge_crc(data, target):
    """`data` with its last 4 bytes changed so that its CRC-32 is `target`
    (CRC-32 is affine over GF(2): solve for those 32 bits)."""
    n = len(data)
    base = bytearray(data)
    base[-4:] = b"\0\0\0\0"
    zero = zlib.crc32(bytes(n))
    # The linear part of each of the last 32 bits, and of what must change.
    cols = []
    for bit in range(32):
        v = bytearray(n)
        v[n - 4 + bit // 8] = 1 << (bit % 8)
        cols.append(zlib.crc32(bytes(v)) ^ zero)
    want = zlib.crc32(bytes(base)) ^ target
    # Gaussian elimination over GF(2): rows are (column value, bit mask).
    rows = [(c, 1 << i) for i, c in enumerate(cols)]
    basis = []
    for value, mask in rows:
        for b_value, b_mask in basis:
            if value ^ b_value < value:
                value, mask = value ^ b_value, mask ^ b_mask
        if value:
            basis.append((value, mask))
            basis.sort(reverse=True)
    mask = 0
    for b_value, b_mask in basis:
        if want ^ b_value < want:
            want, mask = want ^ b_value, mask ^ b_mask
    assert want == 0
    base[-4:] = mask.to_bytes(4, "little")
    assert zlib.crc32(bytes(base)) == target
    return bytes(base)


def insert_at(zbytes, at, blob):
    """The zip with `blob` inserted at byte `at` (between members), every
    central-directory offset past it moved (gaps between members are
    allowed; libzip, zipfile and torch read such archives)."""
    eocd = zbytes.rfind(b"PK\x05\x06")
    cd_size, cd_off = struct.unpack_from("<II", zbytes, eocd + 12)
    out = bytearray(zbytes[:at] + blob + zbytes[at:])
    shift = len(blob)
    struct.pack_into("<I", out, shift + eocd + 16, cd_off + shift)
    p = shift + cd_off
    while p < shift + cd_off + cd_size:
        assert out[p:p + 4] == b"PK\x01\x02"
        n, m, k = struct.unpack_from("<HHH", out, p + 28)
        off = struct.unpack_from("<I", out, p + 42)[0]
        if off >= at:
            struct.pack_into("<I", out, p + 42, off + shift)
        p += 46 + n + m + k
    return bytes(out)


def with_decoy(zbytes, suffix, decoy):
    """The archive `zbytes`, repacked stored (no zip64 records, as torch
    reads it), with a decoy of the first member whose name ends with
    `suffix` placed before it: `decoy`'s last 4 bytes forged so that its
    CRC-32 is the member's. The real member stays where the central
    directory says."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(zbytes)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for i in src.infolist():
            dst.writestr(i.filename, src.read(i))
    z = out.getvalue()
    with zipfile.ZipFile(io.BytesIO(z)) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith(suffix))
        assert info.compress_type == zipfile.ZIP_STORED
        forged = forge_crc(decoy, info.CRC)
        assert zlib.crc32(forged) == info.CRC
    name = info.filename.encode()
    header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, info.CRC, len(forged),
                         len(forged), len(name), 0)
    return insert_at(z, info.header_offset, header + name + forged)
