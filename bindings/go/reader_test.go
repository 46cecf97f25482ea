package ztensor_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

func TestOpenMemory(t *testing.T) {
	data, err := os.ReadFile(writeSample(t, t.TempDir(), "mem.zt"))
	must(t, err)
	r, err := ztensor.OpenMemory(data)
	must(t, err)
	defer r.Close()
	// The reader has its own copy: the caller's bytes may change at once.
	for i := range data {
		data[i] = 0xEE
	}
	b := bytesOf(t, component(t, find(t, r, "layer.weight"), "data"))
	if got := elements[float32](t, b); !reflect.DeepEqual(got, weight) {
		t.Errorf("values %v", got)
	}
	got, err := find(t, r, "q").DecodeFloat32()
	must(t, err)
	if !reflect.DeepEqual(got, quantExpected()) {
		t.Errorf("dequantised %v", got)
	}
	_, _, err = r.Verify()
	must(t, err)

	_, err = ztensor.OpenMemory([]byte("not a zTensor file at all, really not"))
	wantStatus(t, err, ztensor.StatusFormat, "OpenMemory of garbage")
	_, err = ztensor.OpenMemory(nil)
	if err == nil {
		t.Errorf("OpenMemory(nil) opened")
	}
}

func TestAttributesAndManifest(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "attrs.zt"))
	must(t, err)
	defer r.Close()

	cbor, err := r.Attributes()
	must(t, err)
	// {"framework": "go", "epoch": 3} in some key order: a map of 2 (0xa2)
	if len(cbor) == 0 || cbor[0] != 0xa2 || !bytes.Contains(cbor, []byte("framework")) ||
		!bytes.Contains(cbor, []byte{0x65, 'e', 'p', 'o', 'c', 'h', 0x03}) {
		t.Errorf("file attributes CBOR % x", cbor)
	}
	j, err := r.AttributesJSON()
	must(t, err)
	var fa map[string]any
	must(t, json.Unmarshal(j, &fa))
	if !reflect.DeepEqual(fa, map[string]any{"framework": "go", "epoch": 3.0}) {
		t.Errorf("file attributes JSON %s", j)
	}
	m := find(t, r, "m")
	ocbor, err := m.Attributes()
	must(t, err)
	if !bytes.Equal(ocbor, []byte{0xa1, 0x64, 'n', 'o', 't', 'e', 0x63, 'c', 's', 'r'}) {
		t.Errorf("object attributes CBOR % x", ocbor)
	}
	oj, err := m.AttributesJSON()
	must(t, err)
	if string(oj) != `{"note":"csr"}` {
		t.Errorf("object attributes JSON %s", oj)
	}
	if a, err := find(t, r, "ids").Attributes(); err != nil || a != nil {
		t.Errorf("no attributes: % x %v", a, err)
	}
	if a, err := find(t, r, "ids").AttributesJSON(); err != nil || string(a) != "{}" {
		t.Errorf("no attributes as JSON: %s %v", a, err)
	}

	mj, err := r.ManifestJSON()
	must(t, err)
	var manifest struct {
		Version string
		Objects map[string]struct {
			Format     string
			Shape      []uint64
			Components map[string]struct{ Dtype, Encoding, Digest string }
		}
	}
	must(t, json.Unmarshal([]byte(mj), &manifest))
	if manifest.Version != "1.2.0" || len(manifest.Objects) != 7 ||
		manifest.Objects["ids"].Components["data"].Encoding != "zstd" ||
		!strings.HasPrefix(manifest.Objects["ids"].Components["data"].Digest, "xxh3:") {
		t.Errorf("manifest %s", mj)
	}
}

func TestReadAtReadIntoAndNewReader(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "readat.zt"))
	must(t, err)
	defer r.Close()
	for _, name := range []string{"layer.weight", "ids"} { // raw and zstd
		c := component(t, find(t, r, name), "data")
		whole := append([]byte(nil), bytesOf(t, c)...)
		size, err := c.Size()
		must(t, err)
		if size != int64(len(whole)) {
			t.Errorf("%s: size %d of %d bytes", name, size, len(whole))
		}

		var ra io.ReaderAt = c
		p := make([]byte, 5)
		n, err := ra.ReadAt(p, 3)
		if n != 5 || err != nil || !bytes.Equal(p, whole[3:8]) {
			t.Errorf("%s: ReadAt(5, 3) = %d %v", name, n, err)
		}
		p = make([]byte, 10)
		n, err = ra.ReadAt(p, size-4)
		if n != 4 || err != io.EOF || !bytes.Equal(p[:4], whole[size-4:]) {
			t.Errorf("%s: ReadAt over the end = %d %v", name, n, err)
		}
		if n, err = ra.ReadAt(p, size); n != 0 || err != io.EOF {
			t.Errorf("%s: ReadAt at the end = %d %v", name, n, err)
		}
		_, err = ra.ReadAt(p, -1)
		wantStatus(t, err, ztensor.StatusArgument, "ReadAt at a negative offset")

		sr, err := c.NewReader()
		must(t, err)
		all, err := io.ReadAll(sr)
		must(t, err)
		if !bytes.Equal(all, whole) {
			t.Errorf("%s: io.ReadAll of NewReader differs", name)
		}

		dst := make([]byte, size)
		n, err = c.ReadInto(dst)
		if err != nil || n != len(whole) || !bytes.Equal(dst, whole) {
			t.Errorf("%s: ReadInto = %d %v", name, n, err)
		}
		_, err = c.ReadInto(dst[:size-1])
		wantStatus(t, err, ztensor.StatusArgument, "ReadInto a short buffer")
		_, err = c.ReadInto(nil)
		wantStatus(t, err, ztensor.StatusArgument, "ReadInto nil")

		must(t, c.Prefetch())
		must(t, c.Evict())
	}
	// The bytes of a raw component are still there after Evict.
	if got := elements[float32](t, bytesOf(t, component(t, find(t, r, "layer.weight"), "data"))); !reflect.DeepEqual(got, weight) {
		t.Errorf("values after Evict %v", got)
	}
}

func TestDecodeMany(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "many.zt"))
	must(t, err)
	defer r.Close()
	w, i, m := find(t, r, "layer.weight"), find(t, r, "ids"), find(t, r, "m")
	own := make([]byte, 24)
	reqs := []ztensor.DecodeRequest{
		{Object: w.Index, Role: "data", Dst: own},
		{Object: i.Index, Role: "data"},
		{Object: m.Index, Role: "indices"},
	}
	must(t, r.DecodeMany(reqs, 2))
	if reqs[0].N != 24 || !reflect.DeepEqual(elements[float32](t, own), weight) {
		t.Errorf("request 0: %d", reqs[0].N)
	}
	if reqs[1].N != 8000 || !reflect.DeepEqual(elements[int64](t, reqs[1].Dst), ids) {
		t.Errorf("request 1: %d", reqs[1].N)
	}
	if !reflect.DeepEqual(elements[uint64](t, reqs[2].Dst[:reqs[2].N]), csrIndices) {
		t.Errorf("request 2")
	}

	bad := []ztensor.DecodeRequest{
		{Object: w.Index, Role: "data"},
		{Object: i.Index, Role: "nope"},
		{Object: i.Index, Role: "data", Dst: make([]byte, 10)},
	}
	err = r.DecodeMany(bad, 0)
	if e := wantStatus(t, err, ztensor.StatusNotFound, "DecodeMany with an unknown role"); !strings.Contains(e.Message, "nope") {
		t.Errorf("message %q", e.Message)
	}
	if bad[0].Err != nil || bad[0].N != 24 || bad[1].Err != err {
		t.Errorf("per request: %v %d %v", bad[0].Err, bad[0].N, bad[1].Err)
	}
	wantStatus(t, bad[2].Err, ztensor.StatusArgument, "a short Dst")
	must(t, r.DecodeMany(nil, 0))
}

func TestDecodeRanges(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "ranges.zt"))
	must(t, err)
	defer r.Close()
	i := find(t, r, "ids")
	whole := []ztensor.DecodeRequest{{Object: i.Index, Role: "data"}}
	must(t, r.DecodeMany(whole, 1))
	// Staging memory outside Go's heap, as a device loader's pinned buffer is.
	mem, err := syscall.Mmap(-1, 0, 8000, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	must(t, err)
	defer syscall.Munmap(mem)
	var ranges []ztensor.DecodeRange
	for off := uint64(0); off < 8000; off += 777 { // cut at odd places
		n := uint64(777)
		if off+n > 8000 {
			n = 8000 - off
		}
		ranges = append(ranges, ztensor.DecodeRange{Object: i.Index, Role: "data", Offset: off, Length: n,
			Dst: unsafe.Pointer(&mem[off])})
	}
	var mu sync.Mutex
	seen := map[int]int{}
	must(t, r.DecodeRanges(ranges, 2, func(k int, err error) {
		mu.Lock()
		defer mu.Unlock()
		seen[k]++
		if err != nil {
			t.Errorf("range %d: %v", k, err)
		}
	}))
	if !bytes.Equal(mem, whole[0].Dst) {
		t.Errorf("the ranges do not stitch back to the component")
	}
	if len(seen) != len(ranges) {
		t.Errorf("callbacks for %d of %d ranges", len(seen), len(ranges))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("range %d told %d times", k, n)
		}
	}
	// A range past the end fails alone; the others are done.
	for k := range mem {
		mem[k] = 0
	}
	bad := []ztensor.DecodeRange{
		{Object: i.Index, Role: "data", Offset: 0, Length: 16, Dst: unsafe.Pointer(&mem[0])},
		{Object: i.Index, Role: "data", Offset: 7990, Length: 16, Dst: unsafe.Pointer(&mem[64])},
	}
	err = r.DecodeRanges(bad, 0, nil)
	wantStatus(t, err, ztensor.StatusArgument, "a range past the end")
	if bad[0].Err != nil || !bytes.Equal(mem[:16], whole[0].Dst[:16]) || bad[1].Err != err {
		t.Errorf("per range: %v %v", bad[0].Err, bad[1].Err)
	}
	wantStatus(t, r.DecodeRanges([]ztensor.DecodeRange{{Object: i.Index, Role: "data", Length: 8}}, 0, nil),
		ztensor.StatusArgument, "a nil Dst")
	must(t, r.DecodeRanges(nil, 0, nil))
}

// A DecodeRanges callback that calls the reader while a Close waits in
// another goroutine: the call is refused (StatusState) instead of waiting
// for the Close, which waits for DecodeRanges (a sync.RWMutex deadlocked
// here: a waiting writer blocks new read locks). The Close then completes.
func TestDecodeRangesCallbackCallsTheReaderWhileCloseWaits(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "ranges_close.zt"))
	must(t, err)
	i := find(t, r, "ids")
	dst, err := syscall.Mmap(-1, 0, 16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	must(t, err)
	defer syscall.Munmap(dst)
	ranges := []ztensor.DecodeRange{{Object: i.Index, Role: "data", Length: 16, Dst: unsafe.Pointer(&dst[0])}}
	closed := make(chan error, 1)
	var inCallback error
	decoded := make(chan error, 1)
	go func() {
		decoded <- r.DecodeRanges(ranges, 1, func(int, error) {
			if _, err := r.ManifestJSON(); err != nil { // before the Close: served
				inCallback = err
				return
			}
			go func() { closed <- r.Close() }()
			// Until the Close has begun, calls are served; then refused.
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if _, inCallback = r.Find("ids"); inCallback != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}()
	select {
	case err := <-decoded:
		must(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("DecodeRanges did not return: its callback and Close deadlocked")
	}
	wantStatus(t, inCallback, ztensor.StatusState, "a call in the callback once Close began")
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("Close did not return after DecodeRanges did")
	}
	if _, err := r.Find("ids"); err == nil {
		t.Error("a closed reader answered")
	}
}

// npy writes a version 1.0 .npy file of little-endian float32.
func npy(t *testing.T, path string, shape string, values []float32) {
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }"
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	must(t, binary.Write(&b, binary.LittleEndian, uint16(len(header))))
	b.WriteString(header)
	must(t, binary.Write(&b, binary.LittleEndian, values))
	must(t, os.WriteFile(path, b.Bytes(), 0o644))
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	path := writeSample(t, dir, "options.zt")

	r, err := ztensor.OpenWithOptions(path, ztensor.Options{CopyMode: true})
	must(t, err)
	dv, err := find(t, r, "layer.weight").Dense()
	must(t, err)
	if dv.ZeroCopy || !reflect.DeepEqual(elements[float32](t, dv.Data), weight) {
		t.Errorf("copy mode: zero copy %v", dv.ZeroCopy)
	}
	must(t, r.Close())

	r, err = ztensor.OpenWithOptions(path, ztensor.Options{MaxDecodedBytes: 100})
	must(t, err)
	_, err = component(t, find(t, r, "ids"), "data").Bytes()
	wantStatus(t, err, ztensor.StatusLimit, "a component over MaxDecodedBytes")
	must(t, r.Close())

	np := filepath.Join(dir, "a.npy")
	npy(t, np, "(2, 3)", weight)
	_, err = ztensor.Open(np)
	if err == nil {
		t.Fatal("a .npy file opened without AllowForeign")
	}
	r, err = ztensor.OpenWithOptions(np, ztensor.Options{AllowForeign: true})
	must(t, err)
	defer r.Close()
	objs := r.Objects()
	if r.FileFormat() != "npy" || r.FileVersion() != "" || len(objs) != 1 ||
		!reflect.DeepEqual(objs[0].Shape, []uint64{2, 3}) {
		t.Fatalf("npy: %q %q %+v", r.FileFormat(), r.FileVersion(), objs)
	}
	got, err := objs[0].DecodeFloat32()
	must(t, err)
	if !reflect.DeepEqual(got, weight) {
		t.Errorf("npy values %v", got)
	}
	checked, unchecked, err := r.Verify()
	if err != nil || checked != 0 || unchecked != 1 {
		t.Errorf("npy verify %d %d %v", checked, unchecked, err)
	}
}

func TestV2AppendShardsAndContentDigest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v2.zt")
	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{FileVersion: 2, Digest: ztensor.DigestXXH3})
	must(t, err)
	must(t, ztensor.AddDenseOf(w, "a", []uint64{2, 3}, weight, "zstd"))
	must(t, w.BeginObject("m", "sparse_csr", []uint64{2, 3}))
	must(t, ztensor.AddComponentOf(w, "values", csrValues, ""))
	must(t, ztensor.AddComponentOf(w, "indices", csrIndices, ""))
	must(t, ztensor.AddComponentOf(w, "indptr", csrIndptr, ""))
	must(t, w.EndObject())
	must(t, w.Finish())

	r, err := ztensor.Open(path)
	must(t, err)
	a := find(t, r, "a")
	d := component(t, a, "data")
	m := find(t, r, "m")
	if r.FileVersion() != "2" || d.Encoding != "zstd" || d.EncodingID != "zt.zstd-seekable/1" ||
		m.Format != "sparse_csr" || m.Layout != "zt.sparse_csr/1" || d.Shard != "" {
		t.Errorf("v2: %q %+v %+v", r.FileVersion(), d, m)
	}
	digest, err := r.ContentDigest("")
	must(t, err)
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != 7+64 {
		t.Errorf("content digest %q", digest)
	}
	x, err := r.ContentDigest("xxh3")
	must(t, err)
	if !strings.HasPrefix(x, "xxh3:") {
		t.Errorf("xxh3 content digest %q", x)
	}
	_, err = r.ContentDigest("md5")
	wantStatus(t, err, ztensor.StatusArgument, "an unknown digest algorithm")
	must(t, r.Close())

	// The same tensors stored raw: the same content digest.
	raw := filepath.Join(dir, "v2raw.zt")
	w, err = ztensor.CreateWithOptions(raw, ztensor.WriterOptions{FileVersion: 2})
	must(t, err)
	must(t, ztensor.AddDenseOf(w, "a", []uint64{2, 3}, weight, "raw"))
	must(t, w.BeginObject("m", "sparse_csr", []uint64{2, 3}))
	must(t, ztensor.AddComponentOf(w, "values", csrValues, "zstd"))
	must(t, ztensor.AddComponentOf(w, "indices", csrIndices, ""))
	must(t, ztensor.AddComponentOf(w, "indptr", csrIndptr, ""))
	must(t, w.EndObject())
	must(t, w.Finish())
	r, err = ztensor.Open(raw)
	must(t, err)
	if d2, err := r.ContentDigest("sha256"); err != nil || d2 != digest {
		t.Errorf("re-encoded content digest %q (%v), want %q", d2, err, digest)
	}
	must(t, r.Close())

	// Append an object and replace one.
	w, err = ztensor.Append(path, ztensor.WriterOptions{})
	must(t, err)
	must(t, ztensor.AddDenseOf(w, "b", []uint64{3}, []uint8{7, 8, 9}, ""))
	must(t, ztensor.AddDenseOf(w, "a", []uint64{1}, []float32{-1}, ""))
	must(t, w.Finish())
	r, err = ztensor.Open(path)
	must(t, err)
	if got := names(r.Objects()); len(got) != 3 {
		t.Errorf("after append: %v", got)
	}
	if v, err := find(t, r, "a").DecodeFloat32(); err != nil || !reflect.DeepEqual(v, []float32{-1}) {
		t.Errorf("replaced a: %v %v", v, err)
	}
	must(t, r.Close())
	_, err = ztensor.Append(writeSample(t, dir, "v1.zt"), ztensor.WriterOptions{})
	wantStatus(t, err, ztensor.StatusUnsupported, "appending to a 1.x file")

	// A sharded model: every part in a shard beside the root.
	root := filepath.Join(dir, "sharded.zt")
	w, err = ztensor.CreateWithOptions(root, ztensor.WriterOptions{FileVersion: 2, ShardBytes: 2 * 65536})
	must(t, err)
	big := make([]float32, 40000)
	for i := range big {
		big[i] = float32(i)
	}
	for _, name := range []string{"s0", "s1", "s2"} {
		must(t, ztensor.AddDenseOf(w, name, []uint64{40000}, big, ""))
	}
	must(t, w.Finish())
	shards, _ := filepath.Glob(filepath.Join(dir, "sharded-*.zt"))
	if len(shards) < 2 {
		t.Errorf("shards: %v", shards)
	}
	r, err = ztensor.Open(root)
	must(t, err)
	defer r.Close()
	c := component(t, find(t, r, "s2"), "data")
	if c.Shard == "" {
		t.Errorf("s2 is not in a shard: %+v", c)
	}
	if got := elements[float32](t, bytesOf(t, c)); !reflect.DeepEqual(got, big) {
		t.Errorf("sharded values differ")
	}
	if _, _, err := r.Verify(); err != nil {
		t.Error(err)
	}
}

func TestFloatConversionsOfSpecialValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "special.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	inf := math.Inf(1)
	must(t, ztensor.AddDenseOf(w, "f64", []uint64{4}, []float64{inf, math.Copysign(0, -1), 1e300, 1.5}, ""))
	// bf16 1.0 = 0x3f80, f16 -2.0 = 0xc000
	must(t, w.AddDense("bf16", "bf16", []uint64{1}, ztensor.AsBytes([]uint16{0x3f80}), ""))
	must(t, w.AddDense("f16", "f16", []uint64{1}, ztensor.AsBytes([]uint16{0xc000}), ""))
	must(t, w.Finish())
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	v, err := find(t, r, "f64").ReadFloat32()
	must(t, err)
	if !math.IsInf(float64(v[0]), 1) || !math.Signbit(float64(v[1])) || !math.IsInf(float64(v[2]), 1) || v[3] != 1.5 {
		t.Errorf("f64 as f32: %v", v)
	}
	if v, err := find(t, r, "bf16").ReadFloat64(); err != nil || v[0] != 1 {
		t.Errorf("bf16: %v %v", v, err)
	}
	if v, err := component(t, find(t, r, "f16"), "data").Float32s(); err != nil || v[0] != -2 {
		t.Errorf("f16: %v %v", v, err)
	}
}

// claimHugeSize rewrites the 1.2 file at path, one zstd f32 object of
// shape [1000], to claim shape [2^47] and 2^49 decoded bytes (512 TiB): no
// allocation of that size can succeed, so only the library's own check
// (the decode cap) can answer.
func claimHugeSize(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	n := binary.LittleEndian.Uint64(data[len(data)-16:])
	head, manifest, tail := data[:len(data)-16-int(n)], data[len(data)-16-int(n):len(data)-16], data[len(data)-8:]
	patch := func(key string, old, huge []byte) {
		k := append([]byte{byte(0x60 + len(key))}, key...)
		from, to := append(append([]byte{}, k...), old...), append(append([]byte{}, k...), huge...)
		if bytes.Count(manifest, from) != 1 {
			t.Fatalf("%s: the pattern is not in the manifest once", key)
		}
		manifest = bytes.Replace(manifest, from, to, 1)
	}
	patch("shape", []byte{0x81, 0x19, 0x03, 0xE8}, []byte{0x81, 0x1B, 0, 0, 0x80, 0, 0, 0, 0, 0})
	patch("uncompressed_length", []byte{0x19, 0x0F, 0xA0}, []byte{0x1B, 0, 0x02, 0, 0, 0, 0, 0, 0})
	out := append(append([]byte{}, head...), manifest...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(manifest)))
	must(t, os.WriteFile(path, append(out, tail...), 0o644))
}

// A size a file claims beyond the cap is the library's StatusLimit on
// every path that makes a buffer for it, before the buffer is made (Go
// cannot recover from an allocation the system refuses).
func TestClaimsOverTheCapAreRefusedBeforeAllocating(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	values := make([]float32, 1000)
	must(t, ztensor.AddDenseOf(w, "a", []uint64{1000}, values, "zstd"))
	must(t, w.Finish())
	claimHugeSize(t, path)
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	o := find(t, r, "a")
	if len(o.Shape) != 1 || o.Shape[0] != 1<<47 {
		t.Fatalf("shape %v: the patch did not take", o.Shape)
	}
	c := component(t, o, "data")
	reads := map[string]func() error{
		"ReadFloat32":      func() error { _, err := o.ReadFloat32(); return err },
		"DecodeFloat64":    func() error { _, err := o.DecodeFloat64(); return err },
		"Float32s":         func() error { _, err := c.Float32s(); return err },
		"DenseRows":        func() error { _, err := o.DenseRows(0, 1<<47); return err },
		"DenseRowsFloat32": func() error { _, err := o.DenseRowsFloat32(0, 1<<47); return err },
		"DenseSlice":       func() error { _, err := o.DenseSlice([]uint64{0}, []uint64{1 << 47}); return err },
		"DecodeMany": func() error {
			reqs := []ztensor.DecodeRequest{{Object: o.Index, Role: "data"}}
			err := r.DecodeMany(reqs, 1)
			if err != nil && reqs[0].Err == nil {
				t.Errorf("DecodeMany: the request has no error of its own")
			}
			return err
		},
	}
	for what, read := range reads {
		e := wantStatus(t, read(), ztensor.StatusLimit, what)
		if e != nil && !strings.Contains(e.Message, "decode limit") {
			t.Errorf("%s: %q does not name the decode limit", what, e.Message)
		}
	}
}
