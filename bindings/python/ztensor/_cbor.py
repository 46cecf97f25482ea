"""CBOR (RFC 8949) for attribute values: exact values between Python and libztensor.

libztensor keeps an object's attributes as CBOR. This module encodes and decodes them
so that what Python passes is what the library stores, bit for bit where it matters:
NaN, -0.0, infinities, integers beyond 2**53, byte strings, CBOR undefined and the
other simple values all survive a round trip.

Python -> CBOR (dumps):
    None -> null; bool and numpy.bool_ -> false/true; UNDEFINED -> undefined;
    Simple(n) -> simple value n; int and numpy integers -> unsigned/negative integer in
    the shortest head (-2**64 .. 2**64-1); float and numpy floating -> always a 64-bit
    double (as the library writes floats); str -> text; bytes, bytearray, memoryview ->
    byte string; list, tuple -> array; dict with str keys -> map (insertion order);
    a numpy ndarray -> its .tolist() as nested arrays.

CBOR -> Python (loads):
    unsigned/negative integer -> int; byte string -> bytes; text -> str; array -> list;
    map (text keys only, no duplicates) -> dict in encoded order; false/true/null ->
    False/True/None; undefined -> UNDEFINED; other simple values -> Simple(n);
    half/single/double float -> float. Tags are dropped and their content returned,
    as the library drops them. Indefinite lengths are accepted.

Both directions refuse containers nested more than MAX_DEPTH deep, as the library does.
"""

import reprlib
import struct
import sys

__all__ = ["UNDEFINED", "Undefined", "Simple", "loads", "dumps", "MAX_DEPTH"]

# The library's nesting limit (Limits::cbor_depth): the outermost container counts as 1.
MAX_DEPTH = 128

_BREAK = 0xFF
_INDEFINITE = 31
_UINT, _NEGINT, _BYTES, _TEXT, _ARRAY, _MAP, _TAG, _SIMPLE = range(8)


class Undefined:
    """The type of UNDEFINED, CBOR's "undefined" simple value (23); it has one instance."""

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "ztensor.UNDEFINED"

    def __bool__(self):
        return False

    def __reduce__(self):
        # A string makes pickle and copy refer to the module global, keeping identity.
        return "UNDEFINED"


UNDEFINED = Undefined()


class Simple:
    """An immutable CBOR simple value other than false, true, null and undefined.

    Valid values are 0..19 and 32..255; 20..23 are False/True/None/UNDEFINED and
    24..31 are reserved by RFC 8949.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"a simple value is an int: got {type(value).__name__}")
        if not (0 <= value <= 19 or 32 <= value <= 255):
            raise ValueError(f"a simple value is 0..19 or 32..255: got {value}")
        object.__setattr__(self, "value", value)

    def __setattr__(self, name, value):
        raise AttributeError("Simple is immutable")

    def __delattr__(self, name):
        raise AttributeError("Simple is immutable")

    def __eq__(self, other):
        if not isinstance(other, Simple):
            return NotImplemented
        return self.value == other.value

    def __hash__(self):
        return hash((Simple, self.value))

    def __repr__(self):
        return f"ztensor.Simple({self.value})"

    def __reduce__(self):
        return (Simple, (self.value,))


# ---------------------------------------------------------------------------
# decoding


def loads(data):
    """Decode the one CBOR item that is all of `data` (bytes, bytearray or memoryview).

    Raises ValueError, saying what and at which byte offset, for anything that is not
    exactly one well-formed item within the rules in the module docstring.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"CBOR data must be bytes, bytearray or memoryview: got {type(data).__name__}")
    decoder = _Decoder(bytes(data))
    value = decoder.item(0)
    if decoder.pos != len(decoder.data):
        decoder.fail("trailing bytes after the item", decoder.pos)
    return value


class _Decoder:
    """A cursor over the input; item() reads one item (recursing once per container level)."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    @staticmethod
    def fail(what, offset):
        raise ValueError(f"invalid CBOR: {what} at byte {offset}")

    def remaining(self):
        return len(self.data) - self.pos

    def take(self, n, start):
        """The next n bytes; `start` is the offset of the item they belong to."""
        if n > self.remaining():
            self.fail(f"truncated item (needs {n} more bytes, {self.remaining()} left)", start)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def head(self):
        """Read one head: (major type, additional info, argument or None if indefinite, offset)."""
        start = self.pos
        initial = self.take(1, start)[0]
        major, info = initial >> 5, initial & 0x1F
        if info < 24:
            return major, info, info, start
        if info <= 27:
            return major, info, int.from_bytes(self.take(1 << (info - 24), start), "big"), start
        if info < _INDEFINITE:
            self.fail(f"reserved additional information {info}", start)
        if major in (_UINT, _NEGINT, _TAG):
            self.fail(f"indefinite length for major type {major}", start)
        if major == _SIMPLE:
            self.fail("unexpected break (0xFF): not where an indefinite-length item may end", start)
        return major, info, None, start

    def at_break(self, start):
        """True (and consumes it) if the next byte is a break; fails at the end of the data."""
        if self.pos >= len(self.data):
            self.fail("indefinite-length item without a break", start)
        if self.data[self.pos] == _BREAK:
            self.pos += 1
            return True
        return False

    def item(self, depth, key=False):
        """Decode the next item inside `depth` containers; a map key must be text."""
        major, info, arg, start = self.head()
        while major == _TAG:  # tags stack; looping keeps a long run of them off the stack
            major, info, arg, start = self.head()
        if key and major != _TEXT:
            self.fail("map key is not a text string", start)
        if major == _UINT:
            return arg
        if major == _NEGINT:
            return -1 - arg
        if major in (_BYTES, _TEXT):
            return self.string(major, arg, start)
        if major in (_ARRAY, _MAP):
            if depth >= MAX_DEPTH:
                self.fail(f"containers nested more than {MAX_DEPTH} deep", start)
            if major == _ARRAY:
                return self.array(arg, depth + 1, start)
            return self.map(arg, depth + 1, start)
        return self.simple(info, arg, start)

    def string(self, major, length, start):
        if length is not None:
            return self.chunk(major, length, start)
        # Indefinite: definite chunks of the same major type, each decoded on its own.
        chunks = []
        while not self.at_break(start):
            chunk_major, _, chunk_length, chunk_start = self.head()
            if chunk_major != major or chunk_length is None:
                self.fail("indefinite-length string chunk is not a definite string of its type",
                          chunk_start)
            chunks.append(self.chunk(major, chunk_length, chunk_start))
        return ("" if major == _TEXT else b"").join(chunks)

    def chunk(self, major, length, start):
        """A definite string's content; the length is checked before slicing."""
        raw = self.take(length, start)
        if major == _BYTES:
            return raw
        try:
            return raw.decode("utf-8", "strict")
        except UnicodeDecodeError as e:
            self.fail("text is not valid UTF-8", self.pos - length + e.start)

    def more(self, count, done, start):
        """Whether a container of `count` items (None: indefinite) has one after `done`."""
        if count is None:
            return not self.at_break(start)
        return done < count

    def array(self, count, depth, start):
        # Every item takes at least one byte: a larger claim cannot be backed by the data.
        if count is not None and count > self.remaining():
            self.fail(f"truncated array: claims {count} items, {self.remaining()} bytes left", start)
        out = []
        while self.more(count, len(out), start):
            out.append(self.item(depth))
        return out

    def map(self, count, depth, start):
        if count is not None and count * 2 > self.remaining():
            self.fail(f"truncated map: claims {count} entries, {self.remaining()} bytes left", start)
        out = {}
        while self.more(count, len(out), start):
            key_start = self.pos
            key = self.item(depth, key=True)
            if key in out:
                self.fail(f"duplicate map key {reprlib.repr(key)}", key_start)
            out[key] = self.item(depth)
        return out

    def simple(self, info, arg, start):
        if info < 20:
            return Simple(info)
        if info == 20:
            return False
        if info == 21:
            return True
        if info == 22:
            return None
        if info == 23:
            return UNDEFINED
        if info == 24:
            if arg < 32:
                self.fail(f"two-byte simple value {arg} below 32", start)
            return Simple(arg)
        # 25..27: the argument's bytes are a half, single or double float.
        raw = self.data[start + 1:self.pos]
        return struct.unpack({25: ">e", 26: ">f", 27: ">d"}[info], raw)[0]


# ---------------------------------------------------------------------------
# encoding

# The one-byte encodings of the simple values that have a Python value of their own.
_SPECIAL_BYTES = {False: 0xF4, True: 0xF5, None: 0xF6, UNDEFINED: 0xF7}


def dumps(value):
    """Encode an attribute value as CBOR (type mapping in the module docstring).

    Raises TypeError for a type it cannot encode or a non-str map key, OverflowError for
    an int outside -2**64 .. 2**64-1, ValueError for text that is not UTF-8 encodable and
    for containers nested more than MAX_DEPTH deep (which includes one containing itself).
    """
    out = bytearray()
    _encode(value, out, 0)
    return bytes(out)


def _head(out, major, arg):
    """Append a head with the shortest argument encoding."""
    if arg < 24:
        out.append(major << 5 | arg)
    elif arg < 1 << 8:
        out += struct.pack(">BB", major << 5 | 24, arg)
    elif arg < 1 << 16:
        out += struct.pack(">BH", major << 5 | 25, arg)
    elif arg < 1 << 32:
        out += struct.pack(">BI", major << 5 | 26, arg)
    else:
        out += struct.pack(">BQ", major << 5 | 27, arg)


def _encode(value, out, depth):
    """Append `value`, which sits inside `depth` containers."""
    value = _from_numpy(value)
    if value is None or isinstance(value, (bool, Undefined)):
        out.append(_SPECIAL_BYTES[value])
    elif isinstance(value, Simple):
        _head(out, _SIMPLE, value.value)
    elif isinstance(value, int):
        _encode_int(value, out)
    elif isinstance(value, float):
        out += struct.pack(">Bd", 0xFB, value)
    elif isinstance(value, str):
        _encode_text(value, out)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        _head(out, _BYTES, len(raw))
        out += raw
    elif isinstance(value, (list, tuple, dict)):
        if depth >= MAX_DEPTH:
            raise ValueError(f"attribute value nested more than {MAX_DEPTH} containers deep "
                             "(or a container that contains itself)")
        _encode_container(value, out, depth + 1)
    else:
        raise TypeError("attribute values must be None, bool, int, float, str, bytes, list, "
                        f"tuple, dict, UNDEFINED or Simple: got {type(value).__name__}")


def _from_numpy(value):
    """numpy scalars as the Python values they stand for, an ndarray as its .tolist().

    numpy is looked up in sys.modules, not imported: a numpy object cannot exist unless
    numpy was imported already, so this module never imports numpy.
    """
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, (np.generic, np.ndarray)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _encode_int(value, out):
    if 0 <= value < 1 << 64:
        _head(out, _UINT, value)
    elif -(1 << 64) <= value < 0:
        _head(out, _NEGINT, -1 - value)
    else:
        # The value itself is not printed: a huge int may exceed str()'s digit limit.
        sign = "positive" if value > 0 else "negative"
        raise OverflowError(f"CBOR integers are -2**64 .. 2**64-1: got a {sign} int of "
                            f"{value.bit_length()} bits")


def _encode_text(value, out):
    try:
        raw = value.encode("utf-8", "strict")
    except UnicodeEncodeError as e:
        raise ValueError(f"text is not encodable as UTF-8 (a lone surrogate at index {e.start})"
                         ) from None
    _head(out, _TEXT, len(raw))
    out += raw


def _encode_container(value, out, depth):
    """Append a list, tuple or dict whose own depth is `depth`."""
    if not isinstance(value, dict):
        _head(out, _ARRAY, len(value))
        for item in value:
            _encode(item, out, depth)
        return
    _head(out, _MAP, len(value))
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"attribute map keys must be str: got {type(key).__name__}")
        _encode_text(key, out)
        _encode(item, out, depth)
