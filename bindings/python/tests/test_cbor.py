"""pytest tests of bindings/python/ztensor/_cbor.py, checked against the reference library cbor2.

Run as
    /usr/bin/python3 -m pytest -q bindings/python/tests/test_cbor.py
"""

import copy
import importlib.util
import math
import pathlib
import pickle
import random
import struct
import subprocess
import sys
import time

import cbor2
import pytest

_CBOR_PATH = pathlib.Path(__file__).resolve().parents[1] / "ztensor" / "_cbor.py"


def _load_cbor_module():
    """Load _cbor.py from its file rather than as ztensor._cbor.

    Importing the ztensor package loads libztensor through ctypes at import time, which
    these tests do not need (and which may not be built). The module is registered in
    sys.modules so that pickle can find UNDEFINED and Simple by module name.
    """
    spec = importlib.util.spec_from_file_location("ztensor_cbor", _CBOR_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_cbor = _load_cbor_module()
loads, dumps, UNDEFINED, Undefined, Simple = (_cbor.loads, _cbor.dumps, _cbor.UNDEFINED,
                                              _cbor.Undefined, _cbor.Simple)

# A decode that takes longer than this on inputs of a few bytes or kilobytes has gone
# wrong (work proportional to a claimed length, a loop, deep recursion).
FAST = 1.0

# ---------------------------------------------------------------------------
# helpers


def same(a, b):
    """Strict equality: same types (1 != 1.0 != True), NaN equals NaN, -0.0 != 0.0,
    dict key order matters."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def from_cbor2(value):
    """cbor2's decoded value in this module's terms (tags dropped, as the library does)."""
    if value is cbor2.undefined:
        return UNDEFINED
    if isinstance(value, cbor2.CBORSimpleValue):
        return Simple(value.value)
    if isinstance(value, cbor2.CBORTag):
        return from_cbor2(value.value)
    if isinstance(value, list):
        return [from_cbor2(v) for v in value]
    if isinstance(value, dict):
        return {k: from_cbor2(v) for k, v in value.items()}
    return value


def has_nonfinite(value):
    """Whether a NaN or infinity is in value (cbor2 writes those as half floats)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(has_nonfinite(v) for v in value)
    if isinstance(value, dict):
        return any(has_nonfinite(v) for v in value.values())
    return False


def nested_arrays(containers):
    """An encoding of `containers` arrays nested in each other, the innermost empty."""
    return bytes.fromhex("81" * (containers - 1) + "80")


def nested_list(containers):
    value = []
    for _ in range(containers - 1):
        value = [value]
    return value


def random_text(rng):
    # Code points from ASCII, the rest of the BMP and the astral planes, never surrogates.
    ranges = [(0x20, 0x7E), (0xA0, 0xD7FF), (0xE000, 0x10FFFF)]
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(0, 12)))


def random_int(rng):
    n = rng.getrandbits(rng.randint(0, 64))
    return n if rng.random() < 0.5 else -1 - n  # -2**64 .. 2**64-1


def random_float(rng):
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]
    choice = rng.random()
    if choice < 0.2:
        return rng.choice(specials)
    if choice < 0.6:
        return struct.unpack(">d", rng.randbytes(8))[0]  # any bit pattern, NaN payloads too
    return rng.uniform(-1e6, 1e6)


def random_value(rng, depth=0):
    """A random attribute value: scalars of every kind, lists and dicts up to 5 deep."""
    kinds = ["int", "float", "text", "bytes", "bool", "none"]
    if depth < 5:
        kinds += ["list", "dict"] * 2
    kind = rng.choice(kinds)
    size = rng.choice([rng.randint(0, 5), rng.randint(0, 30)])  # some past 23: 2-byte heads
    if kind == "int":
        return random_int(rng)
    if kind == "float":
        return random_float(rng)
    if kind == "text":
        return random_text(rng)
    if kind == "bytes":
        return rng.randbytes(rng.choice([size, rng.randint(250, 300)]))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(size)]
    return {random_text(rng): random_value(rng, depth + 1) for _ in range(size)}


def timed_loads(data):
    """loads(data), failing the test if it takes longer than FAST."""
    start = time.perf_counter()
    try:
        return loads(data)
    finally:
        assert time.perf_counter() - start < FAST


# ---------------------------------------------------------------------------
# round trips

ROUND_TRIP = [
    0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**53 + 1, 2**63, 2**64 - 1,
    -1, -24, -25, -256, -257, -65536, -65537, -2**32, -2**32 - 1, -2**63, -2**64,
    0.0, -0.0, 1.5, -2.5, 0.1, 5e-324, 1.7976931348623157e308, math.inf, -math.inf, math.nan,
    "", "a", "IETF", "\u00fc", "\u6c34", "\U0001f600", "x" * 23, "x" * 24, "y" * 256,
    "z" * 65536, b"", b"\x00", bytes(range(256)), bytes(70000),
    True, False, None, UNDEFINED, Simple(0), Simple(19), Simple(32), Simple(255),
    [], {}, [[]], [{}], {"": {}}, [1, [2, 3], [4, [5, [6]]]], list(range(1000)),
    {"b": 1, "a": 2, "c": [1.5, None, UNDEFINED]},
    {"z": 0, "y": 1, "x": 2, "w": {"nested": [b"raw", "text", -2**64, math.nan]}},
    {str(i): [i, float(i), str(i), bytes([i % 256])] for i in range(300)},
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=lambda v: repr(v)[:40])
def test_round_trip(value):
    assert same(loads(dumps(value)), value)


def test_round_trip_nan_and_negative_zero_bits():
    assert math.isnan(loads(dumps(math.nan)))
    assert math.copysign(1.0, loads(dumps(-0.0))) == -1.0
    payload_nan = struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0]
    assert dumps(payload_nan) == bytes.fromhex("fb7ff8000000000123")
    assert dumps(loads(dumps(payload_nan))) == dumps(payload_nan)


def test_dict_key_order_preserved():
    value = {k: i for i, k in enumerate(["zeta", "alpha", "mu", "beta", ""])}
    assert list(loads(dumps(value))) == list(value)


def test_tuple_encodes_as_list():
    assert dumps((1, (2, 3))) == dumps([1, [2, 3]])
    assert loads(dumps((1, (2, 3)))) == [1, [2, 3]]


def test_bytes_like_inputs_and_outputs():
    assert dumps(bytearray(b"ab")) == dumps(b"ab") == dumps(memoryview(b"ab"))
    data = dumps({"a": [1, b"x"]})
    assert loads(bytearray(data)) == loads(memoryview(data)) == {"a": [1, b"x"]}
    assert type(loads(dumps(bytearray(b"ab")))) is bytes


# ---------------------------------------------------------------------------
# dumps against cbor2

CBOR2_SAME_BYTES = [
    0, 1, 10, 23, 24, 25, 100, 255, 256, 1000, 65535, 65536, 1000000, 2**32 - 1, 2**32,
    10**12, 2**64 - 1, -1, -10, -24, -25, -100, -256, -257, -1000, -2**32, -2**32 - 1,
    -2**64, "", "a", "IETF", "\"\\", "\u00fc", "\u6c34", "\U00010151", "q" * 300,
    b"", b"\x01\x02\x03\x04", bytes(24), bytes(300), True, False, None,
    [], [1, 2, 3], [1, [2, 3], [4, 5]], list(range(1, 26)), {}, {"a": 1, "b": [2, 3]},
    {"b": 1, "a": 2}, ["a", {"b": "c"}], {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"},
    1.5, -4.1, 0.0, -0.0, 1e300,
]


@pytest.mark.parametrize("value", CBOR2_SAME_BYTES, ids=lambda v: repr(v)[:40])
def test_dumps_matches_cbor2_bytes(value):
    # cbor2 keeps dict insertion order and writes finite floats as doubles when not
    # canonical (it writes NaN and infinities as half floats: see the float test).
    assert dumps(value) == cbor2.dumps(value, canonical=False)


@pytest.mark.parametrize("n", [0, 19, 32, 255])
def test_dumps_simple_matches_cbor2(n):
    assert dumps(Simple(n)) == cbor2.dumps(cbor2.CBORSimpleValue(n))
    assert dumps(UNDEFINED) == cbor2.dumps(cbor2.undefined) == b"\xf7"


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, 0.1, 1e-310, 3.4028234663852886e38,
                                   math.inf, -math.inf, math.nan])
def test_dumps_float_is_always_a_double(value):
    data = dumps(value)
    assert data == b"\xfb" + struct.pack(">d", value)
    assert same(cbor2.loads(data), value)


# ---------------------------------------------------------------------------
# loads against cbor2

CBOR2_SAME_VALUE = [
    # every head size of every major type
    "00", "17", "1818", "18ff", "190100", "19ffff", "1a00010000", "1affffffff",
    "1b0000000100000000", "1bffffffffffffffff",
    "20", "37", "3818", "38ff", "390100", "3a00010000", "3b0000000100000000",
    "3bffffffffffffffff",
    "40", "4401020304", "5801ff", "590002abcd", "5a00000001aa", "5b0000000000000002abcd",
    "60", "6449455446", "7801" "61", "7900026162", "7a000000027a7a", "7b000000000000000161",
    "80", "83010203", "9801" "01", "99000101", "9a0000000101", "9b000000000000000101",
    "a0", "a26161016162820203", "b8016161f6", "b900016161f7",
    "ba000000016161f5", "bb00000000000000016161f4",
    "5818" + "00" * 24, "7818" + "61" * 24, "9818" + "01" * 24,
    # simple values and floats
    "f4", "f5", "f6", "f7", "e0", "f3", "f820", "f8ff",
    "f93c00", "f97c00", "f9fc00", "f97e00", "f90001", "f90400", "f97bff", "f98000", "f9c400",
    "f903ff", "fa47c35000", "fa7f800000", "faff800000", "fa7fc00000", "fa00000001",
    "fb3ff199999999999a", "fb7ff0000000000000", "fbfff0000000000000", "fb7ff8000000000000",
    "fb8000000000000000", "fb0000000000000001",
    # indefinite lengths
    "5f42010243030405ff", "5fff", "5f40ff", "7f657374726561646d696e67ff", "7fff", "7f60ff",
    "9f018202039f0405ffff", "9fff", "9f01820203820405ff", "83019f0203ff820405",
    "bf61610161629f0203ffff", "bfff", "826161bf61626163ff", "bf6346756ef563416d7421ff",
    # a mixed structure
    "a56161614161626142616361436164614461656145",
]


@pytest.mark.parametrize("hexdata", CBOR2_SAME_VALUE)
def test_loads_matches_cbor2(hexdata):
    data = bytes.fromhex(hexdata)
    assert same(loads(data), from_cbor2(cbor2.loads(data)))


@pytest.mark.parametrize("hexdata, expected", [
    ("f93c00", 1.0), ("f97c00", math.inf), ("f9fc00", -math.inf), ("f90001", 5.960464477539063e-08),
    ("f90400", 6.103515625e-05), ("f97bff", 65504.0), ("f98000", -0.0), ("f9c400", -4.0),
    ("f97e00", math.nan), ("fa47c35000", 100000.0), ("fa7f7fffff", 3.4028234663852886e38),
    ("fa7fc00000", math.nan), ("fa00000001", 1.401298464324817e-45),
])
def test_half_and_single_floats(hexdata, expected):
    # same() treats NaN as equal to NaN and tells -0.0 from 0.0.
    assert same(loads(bytes.fromhex(hexdata)), expected)


@pytest.mark.parametrize("hexdata, expected", [
    ("5f42010243030405ff", b"\x01\x02\x03\x04\x05"),
    ("7f657374726561646d696e67ff", "streaming"),
    ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]),
    ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}),
])
def test_indefinite_lengths(hexdata, expected):
    assert same(loads(bytes.fromhex(hexdata)), expected)


@pytest.mark.parametrize("hexdata, expected", [
    ("c11a514b67b0", 1363896240),                 # epoch date: the number itself
    ("c074323031332d30332d32315432303a30343a30305a", "2013-03-21T20:04:00Z"),
    ("c249010000000000000000", b"\x01" + bytes(8)),  # bignums are not interpreted
    ("d864d865820102", [1, 2]),                   # stacked tags
    ("d9d9f7a1616101", {"a": 1}),                 # self-described CBOR
    ("da00010000f5", True), ("db000000010000000060", ""),
    ("9fc101ff", [1]), ("a1d8206161c102", {"a": 2}),  # tags inside containers and on keys
    ("5f4101ff", b"\x01"),
])
def test_tags_are_dropped(hexdata, expected):
    assert same(loads(bytes.fromhex(hexdata)), expected)


def test_long_run_of_tags_is_not_recursion():
    assert timed_loads(bytes.fromhex("c1" * 100000 + "01")) == 1
    assert timed_loads(bytes.fromhex("81" + "d8ff" * 100000 + "f6")) == [None]


def test_tags_match_cbor2_where_cbor2_keeps_them():
    for hexdata in ["d864d865820102", "d9d9f7a1616101", "9fd8ff01ff"]:
        data = bytes.fromhex(hexdata)
        assert same(loads(data), from_cbor2(cbor2.loads(data)))


# ---------------------------------------------------------------------------
# randomized: both directions against cbor2


def random_values():
    rng = random.Random(1234)
    return [random_value(rng) for _ in range(500)]


def test_random_values_against_cbor2():
    for value in random_values():
        assert same(loads(cbor2.dumps(value)), value)
        assert same(from_cbor2(cbor2.loads(dumps(value))), value)
        if not has_nonfinite(value):
            assert dumps(value) == cbor2.dumps(value)


# ---------------------------------------------------------------------------
# malformed input: always ValueError, always fast

MALFORMED = [
    ("", "truncated"),
    ("ff", "break"), ("81ff", "break"), ("bf6161ff", "break"), ("c1ff", "break"),
    ("1c", "reserved"), ("1d", "reserved"), ("1e", "reserved"), ("3c", "reserved"),
    ("5c", "reserved"), ("7d", "reserved"), ("9e", "reserved"), ("bc", "reserved"),
    ("dc", "reserved"), ("fc", "reserved"), ("fd", "reserved"), ("fe", "reserved"),
    ("1f", "indefinite"), ("3f", "indefinite"), ("df", "indefinite"),
    ("5f01ff", "chunk"), ("5f6161ff", "chunk"), ("7f4161ff", "chunk"), ("7f5f", "chunk"),
    ("5f5f4101ffff", "chunk"), ("7f7f6161ffff", "chunk"), ("5fc14100ff", "chunk"),
    ("5f8000ff", "chunk"),
    ("5f", "break"), ("5f4101", "break"), ("7f6161", "break"), ("9f", "break"), ("9f01", "break"),
    ("bf", "break"), ("bf616101", "break"),
    ("62c328", "UTF-8"), ("61ff", "UTF-8"), ("63eda080", "UTF-8"), ("7f62c3a962c328ff", "UTF-8"),
    ("7f61c361a9ff", "UTF-8"),  # a character split across chunks: each chunk must be valid
    ("a10102", "key"), ("a1810000", "key"), ("a1400000", "key"), ("bf0102ff", "key"),
    ("a1f600", "key"), ("a1c10102", "key"),
    ("a2616101616102", "duplicate"), ("bf616101616102ff", "duplicate"),
    ("a26161016761000000", "truncated"),
    ("f810", "simple"), ("f800", "simple"), ("f81f", "simple"),
    ("0000", "trailing"), ("8000", "trailing"), ("f6f6", "trailing"), ("5f40ff00", "trailing"),
    ("18", "truncated"), ("1b000000", "truncated"), ("f9", "truncated"), ("fa0000", "truncated"),
    ("c1", "truncated"), ("d8", "truncated"), ("4201", "truncated"), ("61", "truncated"),
    ("5b7fffffffffffffff", "truncated"), ("5affffffff00", "truncated"),
    ("7b7fffffffffffffff61", "truncated"),
    ("bb000000010000000000", "claims"), ("9b000000010000000000", "claims"),
    ("9bffffffffffffffff00", "claims"), ("bbffffffffffffffff00", "claims"),
    ("830102", "claims"),
]


@pytest.mark.parametrize("hexdata, fragment", MALFORMED)
def test_malformed_raises_value_error(hexdata, fragment):
    with pytest.raises(ValueError, match=fragment):
        timed_loads(bytes.fromhex(hexdata))


def test_error_message_gives_offset():
    with pytest.raises(ValueError, match="at byte 3"):
        loads(bytes.fromhex("83010261"))
    with pytest.raises(ValueError, match="at byte 4"):
        loads(bytes.fromhex("82016361c328"))  # the bad byte, not the string's start


@pytest.mark.parametrize("value", [
    [1, [2, 3], {"a": b"xyz"}], {"key": "value", "n": -2**64}, "streaming text", 2**64 - 1,
    1.5, b"\x00" * 30, [UNDEFINED, Simple(200), None],
])
def test_every_proper_prefix_is_truncated(value):
    data = dumps(value)
    for end in range(len(data)):
        with pytest.raises(ValueError):
            timed_loads(data[:end])
    assert same(loads(data), value)


@pytest.mark.parametrize("hexdata", ["5f42010243030405ff", "9f018202039f0405ffff",
                                     "bf61610161629f0203ffff", "c11a514b67b0"])
def test_every_proper_prefix_of_indefinite_and_tagged_items_is_refused(hexdata):
    data = bytes.fromhex(hexdata)
    for end in range(len(data)):
        with pytest.raises(ValueError):
            timed_loads(data[:end])


def test_depth_limit():
    assert loads(nested_arrays(128)) == nested_list(128)
    with pytest.raises(ValueError, match="nested"):
        loads(nested_arrays(129))
    with pytest.raises(ValueError, match="nested"):
        loads(bytes.fromhex("81" * 129 + "00"))
    maps = bytes.fromhex("a16161" * 127 + "a0")  # 128 maps, each the value of key "a"
    assert loads(maps) is not None
    with pytest.raises(ValueError, match="nested"):
        loads(bytes.fromhex("a16161" * 128 + "a0"))
    with pytest.raises(ValueError, match="nested"):
        loads(bytes.fromhex("9f" * 129 + "ff" * 129))


def test_hostile_nesting_is_refused_quickly():
    with pytest.raises(ValueError, match="nested"):
        timed_loads(bytes.fromhex("81" * 100000))
    with pytest.raises(ValueError, match="nested"):
        timed_loads(bytes.fromhex("9f" * 100000))


def test_huge_claimed_lengths_are_refused_without_allocation():
    # A slice or list sized by 2**63 would raise MemoryError or OverflowError, not ValueError.
    with pytest.raises(ValueError):
        timed_loads(bytes.fromhex("5b7fffffffffffffff"))
    with pytest.raises(ValueError):
        timed_loads(bytes.fromhex("bb0000000100000000") + b"\x00")  # 2**32 entries, 10 bytes


def test_mutations_return_or_raise_value_error():
    rng = random.Random(4321)
    originals = [dumps(v) if i % 2 else cbor2.dumps(v)
                 for i, v in enumerate(random_value(rng) for _ in range(200))]
    for data in originals:
        for _ in range(10):
            mutant = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                where = rng.randrange(len(mutant) + 1)
                action = rng.choice(["flip", "set", "insert", "delete"])
                if action == "insert" or not mutant:
                    mutant.insert(where, rng.randrange(256))
                elif action == "delete":
                    del mutant[min(where, len(mutant) - 1)]
                else:
                    where = min(where, len(mutant) - 1)
                    mutant[where] = (mutant[where] ^ (1 << rng.randrange(8)) if action == "flip"
                                     else rng.randrange(256))
            try:
                timed_loads(bytes(mutant))
            except ValueError:
                pass


def test_loads_rejects_non_bytes():
    with pytest.raises(TypeError):
        loads("00")


# ---------------------------------------------------------------------------
# dumps errors


@pytest.mark.parametrize("value", [2**64, -2**64 - 1, 10**5000, -10**5000],
                         ids=["2**64", "-2**64-1", "10**5000", "-10**5000"])
def test_dumps_int_out_of_range(value):
    with pytest.raises(OverflowError, match=r"-2\*\*64 \.\. 2\*\*64-1"):
        dumps(value)


@pytest.mark.parametrize("value, type_name", [
    ({1: 2}, "int"), ({b"k": 2}, "bytes"), ({("a",): 1}, "tuple"), (object(), "object"),
    (1j, "complex"), ({1, 2}, "set"), ([1, object()], "object"), ({"a": {None: 1}}, "NoneType"),
])
def test_dumps_type_errors(value, type_name):
    with pytest.raises(TypeError, match=type_name):
        dumps(value)


def test_dumps_depth_limit():
    assert loads(dumps(nested_list(128))) == nested_list(128)
    for too_deep in (nested_list(129), nested_list(200)):
        with pytest.raises(ValueError, match="nested"):
            dumps(too_deep)
    deep_dict = {}
    for _ in range(200):
        deep_dict = {"a": deep_dict}
    with pytest.raises(ValueError, match="nested"):
        dumps(deep_dict)


def test_dumps_self_containing_containers():
    cycle = [1]
    cycle.append(cycle)
    with pytest.raises(ValueError, match="itself"):
        dumps(cycle)
    cyclic_dict = {}
    cyclic_dict["me"] = [cyclic_dict]
    with pytest.raises(ValueError, match="itself"):
        dumps(cyclic_dict)


@pytest.mark.parametrize("value", ["\ud800", "ok\udfff", {"\ud800": 1}, ["a", "\udc00"]])
def test_dumps_lone_surrogate(value):
    with pytest.raises(ValueError, match="UTF-8"):
        dumps(value)


# ---------------------------------------------------------------------------
# numpy values and independence from numpy


def test_numpy_values():
    np = pytest.importorskip("numpy")
    assert dumps(np.int64(-5)) == dumps(-5)
    assert dumps(np.uint64(2**64 - 1)) == dumps(2**64 - 1)
    assert dumps(np.int8(100)) == dumps(100)
    assert dumps(np.float32(0.1)) == dumps(float(np.float32(0.1)))
    assert dumps(np.float16(1.5)) == dumps(1.5)
    assert dumps(np.float64(-0.0)) == dumps(-0.0)
    assert dumps(np.bool_(True)) == b"\xf5" and dumps(np.bool_(False)) == b"\xf4"
    assert dumps(np.arange(6).reshape(2, 3)) == dumps([[0, 1, 2], [3, 4, 5]])
    assert dumps({"a": np.array([1.5, np.nan])})[-9:] == dumps(math.nan)
    assert dumps(np.str_("x")) == dumps("x")
    with pytest.raises(TypeError, match="complex"):
        dumps(np.complex64(1))


def test_module_never_imports_numpy():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('c', {str(_CBOR_PATH)!r})\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "assert m.loads(m.dumps([1.5, 'x', {'k': b'v'}])) == [1.5, 'x', {'k': b'v'}]\n"
        "assert 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# UNDEFINED and Simple


def test_undefined_is_a_singleton():
    assert Undefined() is UNDEFINED
    assert repr(UNDEFINED) == "ztensor.UNDEFINED"
    assert not UNDEFINED
    assert copy.copy(UNDEFINED) is UNDEFINED
    assert copy.deepcopy(UNDEFINED) is UNDEFINED
    assert copy.deepcopy([UNDEFINED])[0] is UNDEFINED
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(UNDEFINED, protocol)) is UNDEFINED
    assert loads(b"\xf7") is UNDEFINED
    assert UNDEFINED.__reduce__() == "UNDEFINED"


def test_simple_values():
    assert Simple(5) == Simple(5) and Simple(5) != Simple(6)
    assert Simple(5) != 5
    assert hash(Simple(32)) == hash(Simple(32))
    assert len({Simple(1), Simple(1), Simple(2)}) == 2
    assert repr(Simple(255)) == "ztensor.Simple(255)"
    assert Simple(7).value == 7
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(Simple(200), protocol)) == Simple(200)
    assert copy.deepcopy(Simple(3)) == Simple(3)
    assert loads(b"\xe0") == Simple(0) and loads(b"\xf8\xff") == Simple(255)


@pytest.mark.parametrize("n", [-1, 20, 23, 24, 31, 256])
def test_simple_range(n):
    with pytest.raises(ValueError):
        Simple(n)


def test_simple_is_immutable_and_typed():
    s = Simple(1)
    with pytest.raises(AttributeError):
        s.value = 2
    with pytest.raises(AttributeError):
        del s.value
    with pytest.raises(TypeError):
        Simple(True)
    with pytest.raises(TypeError):
        Simple(1.0)
