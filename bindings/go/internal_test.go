package ztensor

// Tests of the package's internals: which calls lend the reader's memory,
// the attribution of ReadAt errors, the C memory helpers, and DecodeMany on
// a component whose size is known only by decoding.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Only the calls that hand out the reader's memory mark it as lent; the
// copying calls leave the finalizer free to close it.
func TestOnlyZeroCopyCallsLend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lend.zt")
	w, err := Create(path)
	mustOK(t, err)
	mustOK(t, AddDenseOf(w, "raw", []uint64{2, 3}, []float32{1, 2, 3, 4, 5, 6}, "raw"))
	mustOK(t, AddDenseOf(w, "z", []uint64{100}, make([]int64, 100), "zstd"))
	mustOK(t, w.Finish())
	r, err := Open(path)
	mustOK(t, err)
	defer r.Close()

	for _, name := range []string{"raw", "z"} {
		o, err := r.Find(name)
		mustOK(t, err)
		c, err := o.Component("data")
		mustOK(t, err)
		buf := make([]byte, 8)
		if _, err := c.ReadAt(buf, 0); err != nil {
			t.Fatalf("%s: ReadAt: %v", name, err)
		}
		sr, err := c.NewReader()
		mustOK(t, err)
		if _, err := io.ReadAll(sr); err != nil {
			t.Fatalf("%s: NewReader: %v", name, err)
		}
		_, err = c.Size()
		mustOK(t, err)
		_, err = c.Float64s()
		mustOK(t, err)
		_, err = o.DecodeFloat32()
		mustOK(t, err)
		_, err = o.DenseRows(0, 1)
		mustOK(t, err)
		mustOK(t, r.DecodeMany([]DecodeRequest{{Object: o.Index, Role: "data"}}, 1))
		if r.lent.Load() {
			t.Fatalf("%s: a copying call marked the reader as lent: the finalizer would never close it", name)
		}
	}
	o, err := r.Find("raw")
	mustOK(t, err)
	c, err := o.Component("data")
	mustOK(t, err)
	_, err = c.Bytes()
	mustOK(t, err)
	if !r.lent.Load() {
		t.Fatal("Bytes did not mark the reader as lent")
	}
}

// A ReadAt error goes only to the call it happened in, and only when that
// call was the one in progress.
func TestReadAtErrorsBelongToTheirCall(t *testing.T) {
	s := &sourceState{}
	explained := func(err error, text string) bool {
		var e *Error
		return errors.As(err, &e) && strings.Contains(e.Message, text)
	}

	// A call whose ReadAt failed but which failed with another status: its
	// ReadAt error must not reach a later call's message.
	a := s.begin()
	s.fail(errors.New("call A's disk on fire"), StatusIO)
	if err := s.end(a, &Error{Status: StatusLimit, Message: "A"}); explained(err, "disk on fire") {
		t.Errorf("A failed with another status, yet got the ReadAt error: %v", err)
	}
	b := s.begin()
	if err := s.end(b, &Error{Status: StatusIO, Message: "B"}); explained(err, "disk on fire") {
		t.Errorf("call B got call A's ReadAt error: %v", err)
	}

	// A call that succeeded despite a ReadAt failure: the same.
	c := s.begin()
	s.fail(errors.New("call C's hiccup"), StatusIO)
	if err := s.end(c, nil); err != nil {
		t.Errorf("a call that succeeded: %v", err)
	}
	d := s.begin()
	if err := s.end(d, &Error{Status: StatusIO, Message: "D"}); explained(err, "hiccup") {
		t.Errorf("call D got call C's ReadAt error: %v", err)
	}

	// The call's own ReadAt error, once.
	e := s.begin()
	s.fail(errors.New("call E's timeout"), StatusIO)
	if err := s.end(e, &Error{Status: StatusIO, Message: "E"}); !explained(err, "call E's timeout") {
		t.Errorf("call E lost its own ReadAt error: %v", err)
	}
	f := s.begin()
	if err := s.end(f, &Error{Status: StatusIO, Message: "F"}); explained(err, "timeout") {
		t.Errorf("call F got call E's ReadAt error: %v", err)
	}

	// Two calls at once: nobody can tell whose it is, so neither gets it.
	g, h := s.begin(), s.begin()
	s.fail(errors.New("whose?"), StatusIO)
	if err := s.end(h, &Error{Status: StatusIO, Message: "H"}); explained(err, "whose?") {
		t.Errorf("overlapping call H: %v", err)
	}
	if err := s.end(g, &Error{Status: StatusIO, Message: "G"}); explained(err, "whose?") {
		t.Errorf("overlapping call G: %v", err)
	}
	// A call begun after the failure of the one in progress is not its owner.
	i := s.begin()
	s.fail(errors.New("call I's"), StatusIO)
	j := s.begin()
	if err := s.end(j, &Error{Status: StatusIO, Message: "J"}); explained(err, "call I's") {
		t.Errorf("call J got call I's ReadAt error: %v", err)
	}
	if err := s.end(i, &Error{Status: StatusIO, Message: "I"}); !explained(err, "call I's") {
		t.Errorf("call I lost its own ReadAt error: %v", err)
	}
	if s.calls != 0 {
		t.Errorf("%d calls left in progress", s.calls)
	}
}

// NULL memory for a size is an error, not an empty slice.
func TestNullMemoryIsAnError(t *testing.T) {
	if b, err := cBytes(nil, 5, "x"); err == nil {
		t.Errorf("cBytes(nil, 5) = %v, nil", b)
	}
	if b, err := copyBytes(nil, 5, "x"); err == nil {
		t.Errorf("copyBytes(nil, 5) = %v, nil", b)
	}
	if b, err := copyBytes(nil, 0, "x"); err != nil || b != nil {
		t.Errorf("copyBytes(nil, 0) = %v, %v", b, err)
	}
	if b, err := cBytes(nil, 0, "x"); err != nil || len(b) != 0 {
		t.Errorf("cBytes(nil, 0) = %v, %v", b, err)
	}
}

// cbor encodes the few CBOR values a 1.1.0 manifest needs: maps (keys
// sorted), arrays, text and unsigned integers.
func cbor(v interface{}) []byte {
	var out []byte
	head := func(major byte, n uint64) {
		switch {
		case n < 24:
			out = append(out, major<<5|byte(n))
		case n < 1<<8:
			out = append(out, major<<5|24, byte(n))
		case n < 1<<16:
			out = append(out, major<<5|25, byte(n>>8), byte(n))
		default:
			out = append(out, major<<5|27)
			out = binary.BigEndian.AppendUint64(out, n)
		}
	}
	var enc func(v interface{})
	enc = func(v interface{}) {
		switch x := v.(type) {
		case uint64:
			head(0, x)
		case int:
			head(0, uint64(x))
		case string:
			head(3, uint64(len(x)))
			out = append(out, x...)
		case []interface{}:
			head(4, uint64(len(x)))
			for _, e := range x {
				enc(e)
			}
		case map[string]interface{}:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			head(5, uint64(len(x)))
			for _, k := range keys {
				enc(k)
				enc(x[k])
			}
		default:
			panic("cbor: unsupported value")
		}
	}
	enc(v)
	return out
}

// unsizedZstdFile is a 1.1.0 file with one object "o" whose component
// "blob" (u8) is a zstd frame of data that declares no content size, without
// uncompressed_length: its size is known only by decoding. blockType 0 is a
// raw block; 3 (reserved) makes the frame corrupt.
func unsizedZstdFile(data []byte, blockType uint32) []byte {
	frame := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x30} // magic, no content size, 64 KiB window
	h := uint32(len(data))<<3 | blockType<<1 | 1        // the last block
	frame = append(frame, byte(h), byte(h>>8), byte(h>>16))
	frame = append(frame, data...)

	file := append([]byte("ZTEN1000"), make([]byte, 56)...) // the blob at 64
	file = append(file, frame...)
	for len(file)%64 != 0 {
		file = append(file, 0)
	}
	manifest := cbor(map[string]interface{}{
		"version": "1.1.0",
		"objects": map[string]interface{}{
			"o": map[string]interface{}{
				"shape":  []interface{}{1},
				"format": "my_format",
				"components": map[string]interface{}{
					"blob": map[string]interface{}{
						"dtype": "u8", "offset": 64, "length": len(frame), "encoding": "zstd",
					},
				},
			},
		},
	})
	file = append(file, manifest...)
	file = binary.LittleEndian.AppendUint64(file, uint64(len(manifest)))
	return append(file, "ZTEN1000"...)
}

// DecodeMany sizes a component known only by decoding with
// zt_component_map, surfaces that call's failure as the request's error,
// and copies without lending.
func TestDecodeManyOfAnUnsizedComponent(t *testing.T) {
	data := bytes.Repeat([]byte("unsized "), 40)
	r, err := OpenMemory(unsizedZstdFile(data, 0))
	mustOK(t, err)
	defer r.Close()
	o, err := r.Find("o")
	mustOK(t, err)
	c, err := o.Component("blob")
	mustOK(t, err)
	if c.DecodedSizeKnown {
		t.Fatal("the component's size is known: the test file is not what it should be")
	}
	reqs := []DecodeRequest{{Object: 0, Role: "blob"}, {Object: 0, Role: "blob", Dst: make([]byte, len(data))}}
	mustOK(t, r.DecodeMany(reqs, 2))
	for i, q := range reqs {
		if q.N != len(data) || !bytes.Equal(q.Dst, data) {
			t.Errorf("request %d: %d bytes %q", i, q.N, q.Dst)
		}
	}
	if n, err := c.Size(); err != nil || n != int64(len(data)) {
		t.Errorf("Size: %d, %v", n, err)
	}
	if v, err := c.Float32s(); err != nil || len(v) != len(data) || v[0] != 'u' {
		t.Errorf("Float32s: %d values, %v", len(v), err)
	}
	if r.lent.Load() {
		t.Error("copying calls marked the reader as lent")
	}

	// A corrupt stream: the request gets zt_component_map's own error.
	bad, err := OpenMemory(unsizedZstdFile(data, 3))
	mustOK(t, err)
	defer bad.Close()
	bo, err := bad.Find("o")
	mustOK(t, err)
	bc, err := bo.Component("blob")
	mustOK(t, err)
	_, want := bc.Bytes()
	var we *Error
	if !errors.As(want, &we) {
		t.Fatalf("Bytes of a corrupt stream: %v", want)
	}
	reqs = []DecodeRequest{{Object: 0, Role: "blob"}}
	err = bad.DecodeMany(reqs, 1)
	if !reflect.DeepEqual(err, want) || !reflect.DeepEqual(reqs[0].Err, want) {
		t.Errorf("DecodeMany of a corrupt unsized stream: %v (request: %v), want %v", err, reqs[0].Err, want)
	}

	// Over the reader's cap, which only decoding tells: StatusLimit, as
	// Bytes says, while the other requests decode.
	path := filepath.Join(t.TempDir(), "unsized.zt")
	mustOK(t, os.WriteFile(path, unsizedZstdFile(data, 0), 0o644))
	capped, err := OpenWithOptions(path, Options{MaxDecodedBytes: 100})
	mustOK(t, err)
	defer capped.Close()
	co, err := capped.Find("o")
	mustOK(t, err)
	cc, err := co.Component("blob")
	mustOK(t, err)
	_, want = cc.Bytes()
	if !errors.Is(want, StatusLimit) {
		t.Fatalf("Bytes over the cap: %v", want)
	}
	reqs = []DecodeRequest{{Object: 0, Role: "blob"}, {Object: 0, Role: "blob", Dst: make([]byte, 10)}}
	err = capped.DecodeMany(reqs, 1)
	if !reflect.DeepEqual(err, want) || !reflect.DeepEqual(reqs[0].Err, want) || reqs[1].Err == nil {
		t.Errorf("DecodeMany over the cap: %v (requests: %v, %v), want %v", err, reqs[0].Err, reqs[1].Err, want)
	}
}

// How DecodeMany shares its requests out (placeBatch): a caller's small
// Dst and empty ones through C memory in one call, a caller's Dst of
// inPlaceFrom bytes or more in place, a nil Dst of ownFrom bytes or more in
// an allocation of its own, the smaller ones packed into shared
// allocations of up to arenaBytes at places aligned to arenaAlign; up to
// regionsPerCall allocations a call.
func TestDecodeManyPlan(t *testing.T) {
	const KiB, MiB = 1 << 10, 1 << 20
	mine, small := make([]byte, 2*MiB), make([]byte, 10)
	reqs := []DecodeRequest{{Dst: small}, {}, {Dst: mine}, {}, {}}
	caps := []uint64{10, KiB + 1, 2 * MiB, 5 * MiB, 0}
	for k := 0; k < 11; k++ { // requests 5 - 15
		reqs = append(reqs, DecodeRequest{})
		caps = append(caps, 3*MiB)
	}
	for k := 0; k < 6; k++ { // requests 16 - 21
		reqs = append(reqs, DecodeRequest{})
		caps = append(caps, 4*MiB)
	}
	batch := make([]int, len(reqs))
	for i := range batch {
		batch[i] = i
	}
	calls := placeBatch(reqs, batch, caps)
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3: %+v", len(calls), calls)
	}
	same := func(what string, g placed, idx []int, reg []uint8, at []uint64, sizes []int) {
		t.Helper()
		if !reflect.DeepEqual(g.idx, idx) || !reflect.DeepEqual(g.reg, reg) || !reflect.DeepEqual(g.at, at) {
			t.Errorf("%s: requests %v in %v at %v, want %v in %v at %v", what, g.idx, g.reg, g.at, idx, reg, at)
		}
		var got []int
		for _, m := range g.mem {
			got = append(got, len(m))
		}
		if !reflect.DeepEqual(got, sizes) {
			t.Errorf("%s: allocations of %v bytes, want %v", what, got, sizes)
		}
	}
	same("copied", calls[0], []int{0, 4}, []uint8{0, 0}, []uint64{0, 10}, nil)
	// The caller's 2 MiB, 5 MiB of its own, then the first shared
	// allocation: 1 KiB + 1 at 0, 3 MiB at 1,088 (the next multiple of 64)
	// and nine more back to back (ten end at 30 MiB + 1,088, an eleventh
	// would pass 32 MiB), closed when request 15 comes; five of the 4 MiB
	// ones make eight allocations.
	idx := []int{2, 3, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19, 20}
	reg := []uint8{0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 4, 5, 6, 7}
	at := []uint64{0, 0, 0}
	for k := uint64(0); k < 10; k++ {
		at = append(at, 1088+k*3*MiB)
	}
	at = append(at, 0, 0, 0, 0, 0)
	same("the first eight allocations", calls[1], idx, reg, at,
		[]int{2 * MiB, 5 * MiB, 30*MiB + 1088, 4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB})
	if &calls[1].mem[0][0] != &mine[0] {
		t.Error("the caller's large Dst is not decoded into in place")
	}
	same("the rest", calls[2], []int{21, 15}, []uint8{0, 1}, []uint64{0, 0}, []int{4 * MiB, 3 * MiB})
}

// DecodeMany's bytes are the same whichever way a request goes (copied,
// in the caller's Dst, in an allocation of its own or a shared one); a
// slice of a shared allocation ends where its bytes do; a request that
// fails in place fails alone.
func TestDecodeManyInPlace(t *testing.T) {
	const MiB = 1 << 20
	pattern := func(n, seed int) []uint8 {
		b := make([]uint8, n)
		for i := range b {
			b[i] = uint8(i*7 + seed + i>>11)
		}
		return b
	}
	want := map[string][]uint8{
		"a": pattern(1025, 1), "z": pattern(3*MiB, 2), "big": pattern(5*MiB, 3),
		"mid": pattern(2*MiB, 4), "tiny": pattern(10, 5), "empty": {}, "short": pattern(2*MiB, 6),
	}
	path := filepath.Join(t.TempDir(), "places.zt")
	w, err := Create(path)
	mustOK(t, err)
	for _, name := range []string{"a", "z", "big", "mid", "tiny", "empty", "short"} {
		encoding := "raw"
		if name == "z" {
			encoding = "zstd"
		}
		mustOK(t, AddDenseOf(w, name, []uint64{uint64(len(want[name]))}, want[name], encoding))
	}
	mustOK(t, w.Finish())
	r, err := Open(path)
	mustOK(t, err)
	defer r.Close()
	index := func(name string) int {
		o, err := r.Find(name)
		mustOK(t, err)
		return o.Index
	}
	mid, tiny, short := make([]byte, 2*MiB), make([]byte, 10), make([]byte, MiB)
	reqs := []DecodeRequest{
		{Object: index("a"), Role: "data"}, {Object: index("z"), Role: "data"},
		{Object: index("big"), Role: "data"}, {Object: index("mid"), Role: "data", Dst: mid},
		{Object: index("tiny"), Role: "data", Dst: tiny}, {Object: index("empty"), Role: "data"},
		{Object: index("short"), Role: "data", Dst: short},
	}
	err = r.DecodeMany(reqs, 2)
	if !errors.Is(err, StatusArgument) || reqs[6].Err != err {
		t.Fatalf("a Dst too short, decoded in place: %v (its request: %v)", err, reqs[6].Err)
	}
	for k, name := range []string{"a", "z", "big", "mid", "tiny", "empty"} {
		q := reqs[k]
		if q.Err != nil || q.N != len(want[name]) || !bytes.Equal(q.Dst[:q.N], want[name]) {
			t.Errorf("%s: %d bytes, %v", name, q.N, q.Err)
		}
	}
	if &reqs[3].Dst[0] != &mid[0] || &reqs[4].Dst[0] != &tiny[0] {
		t.Error("a caller's Dst was replaced")
	}
	a, z := reqs[0].Dst, reqs[1].Dst
	if cap(a) != len(a) || cap(z) != len(z) {
		t.Errorf("capacities %d and %d past the bytes %d and %d", cap(a), cap(z), len(a), len(z))
	}
	if d := uintptr(unsafe.Pointer(&z[0])) - uintptr(unsafe.Pointer(&a[0])); d != 1088 {
		t.Errorf("the small ones are %d bytes apart, not in one allocation at 0 and 1,088", d)
	}
	if uintptr(unsafe.Pointer(&a[0]))%arenaAlign != 0 {
		t.Error("a shared allocation not aligned to 64 bytes")
	}
}
