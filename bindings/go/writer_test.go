package ztensor_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

func TestStreamingComponents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.zt")
	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{FrameSize: 4096, Threads: 2})
	must(t, err)
	const n = 100000
	data := make([]uint32, n)
	for i := range data {
		data[i] = uint32(i * 7)
	}
	for _, enc := range []string{"raw", "zstd"} {
		must(t, w.BeginObject("big."+enc, "dense", []uint64{n}))
		cw, err := w.BeginComponent("data", "u32", "", 4*n, enc)
		must(t, err)
		var sink io.Writer = cw
		// io.Copy in pieces of 1000 bytes
		written, err := io.Copy(sink, io.LimitReader(bytes.NewReader(ztensor.AsBytes(data)), 4*n))
		if err != nil || written != 4*n {
			t.Fatalf("%s: io.Copy %d %v", enc, written, err)
		}
		must(t, cw.End())
		wantStatus(t, cw.End(), ztensor.StatusState, "ending a component twice")
		_, err = cw.Write([]byte{1})
		wantStatus(t, err, ztensor.StatusState, "writing to an ended component")
		must(t, w.EndObject())
	}

	// A component whose pieces do not add up to its size.
	must(t, w.BeginObject("short", "dense", []uint64{4}))
	cw, err := w.BeginComponent("data", "u8", "", 4, "")
	must(t, err)
	_, err = cw.Write([]byte{1, 2, 3})
	must(t, err)
	if err := cw.End(); err == nil {
		t.Error("a component 1 byte short ended")
	}
	if err := w.CancelObject(); err != nil {
		// A failed component may leave the writer failed; then nothing
		// else may be written.
		t.Logf("cancel after a short component: %v", err)
	}
	must(t, w.Finish())

	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	for _, enc := range []string{"raw", "zstd"} {
		c := component(t, find(t, r, "big."+enc), "data")
		if c.Encoding != enc {
			t.Errorf("%s: encoding %q", enc, c.Encoding)
		}
		if got := elements[uint32](t, bytesOf(t, c)); !reflect.DeepEqual(got, data) {
			t.Errorf("%s: streamed values differ", enc)
		}
	}
	if _, err := r.Find("short"); err == nil {
		t.Error("the short object was kept")
	}
}

// A component streamed when its object is cancelled is ended with it: its
// ComponentWriter cannot write into a component begun afterwards.
func TestCancelObjectEndsItsStreamedComponent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cancel.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	must(t, w.BeginObject("a", "dense", []uint64{4}))
	stale, err := w.BeginComponent("data", "u8", "", 4, "")
	must(t, err)
	_, err = stale.Write([]byte{9, 9})
	must(t, err)
	must(t, w.CancelObject())
	must(t, w.BeginObject("b", "dense", []uint64{4}))
	fresh, err := w.BeginComponent("data", "u8", "", 4, "")
	must(t, err)
	r := staleThenFresh(t, w, stale, fresh, path, "b", "the cancelled object's component")
	defer r.Close()
	if _, err := r.Find("a"); err == nil {
		t.Error("the cancelled object was kept")
	}
}

func TestCancelObjectAndAttributesCBOR(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cancel.zt")
	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{Digest: ztensor.DigestSHA256})
	must(t, err)
	wantStatus(t, w.CancelObject(), ztensor.StatusState, "cancel without an object")
	must(t, w.BeginObject("dropped", "dense", []uint64{2}))
	must(t, ztensor.AddComponentOf(w, "data", []float32{1, 2}, ""))
	must(t, w.CancelObject())
	// {"n": 1.0 as a half float}: a CBOR map that JSON would not keep as is.
	attrs := []byte{0xa1, 0x61, 'n', 0xf9, 0x3c, 0x00}
	must(t, w.SetFileAttributesCBOR(attrs))
	must(t, ztensor.AddDenseOf(w, "kept", []uint64{2}, []float32{3, 4}, "auto"))
	wantStatus(t, w.SetFileAttributesCBOR([]byte{0x01}), ztensor.StatusArgument, "CBOR that is not a map")
	must(t, w.BeginObject("o", "dense", []uint64{1}))
	must(t, w.SetObjectAttributesCBOR([]byte{0xa1, 0x61, 'k', 0x40})) // {"k": h''}
	must(t, ztensor.AddComponentOf(w, "data", []uint8{5}, ""))
	must(t, w.EndObject())
	wantStatus(t, w.SetFileAttributesJSON(`{"x": `), ztensor.StatusArgument, "bad JSON")
	wantStatus(t, w.SetObjectAttributesJSON(`{}`), ztensor.StatusState, "object attributes without an object")
	must(t, w.Finish())

	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	if got := names(r.Objects()); !reflect.DeepEqual(got, []string{"kept", "o"}) {
		t.Errorf("objects %v", got)
	}
	if got, err := r.Attributes(); err != nil || !bytes.Equal(got, attrs) {
		t.Errorf("CBOR attributes % x %v", got, err)
	}
	if got, err := find(t, r, "o").Attributes(); err != nil || !bytes.Equal(got, []byte{0xa1, 0x61, 'k', 0x40}) {
		t.Errorf("object CBOR attributes % x %v", got, err)
	}
	checked, unchecked, err := r.Verify()
	if err != nil || checked != 2 || unchecked != 0 {
		t.Errorf("sha256 verify %d %d %v", checked, unchecked, err)
	}
}

func TestWriterOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodigest.zt")
	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{Digest: ztensor.DigestNone, ZstdLevel: 19, AutoMinRatio: 0.5})
	must(t, err)
	must(t, ztensor.AddDenseOf(w, "x", []uint64{1000}, make([]int64, 1000), "auto"))
	must(t, w.Finish())
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	if c := component(t, find(t, r, "x"), "data"); c.Encoding != "zstd" {
		t.Errorf("zeros under auto: %q", c.Encoding)
	}
	if checked, unchecked, err := r.Verify(); err != nil || checked != 0 || unchecked != 1 {
		t.Errorf("verify without digests %d %d %v", checked, unchecked, err)
	}

	_, err = ztensor.CreateWithOptions(filepath.Join(dir, "bad.zt"), ztensor.WriterOptions{FrameSize: 10})
	wantStatus(t, err, ztensor.StatusArgument, "a frame size under 1 KiB")
	_, err = ztensor.CreateWithOptions(filepath.Join(dir, "bad.zt"), ztensor.WriterOptions{ZstdLevel: 99})
	wantStatus(t, err, ztensor.StatusArgument, "zstd level 99")
	_, err = ztensor.CreateWithOptions(filepath.Join(dir, "bad.zt"), ztensor.WriterOptions{Threads: -1})
	wantStatus(t, err, ztensor.StatusArgument, "negative threads")
	_, err = ztensor.Create(filepath.Join(dir, "no", "such", "dir.zt"))
	wantStatus(t, err, ztensor.StatusIO, "a path in a missing directory")
}

func TestAnUnfinishedWriterIsAbortedByItsFinalizer(t *testing.T) {
	dir := t.TempDir()
	func() {
		w, err := ztensor.Create(filepath.Join(dir, "dropped.zt"))
		must(t, err)
		must(t, w.AddDense("x", "u8", []uint64{1}, []byte{1}, ""))
	}()
	for i := 0; i < 50; i++ {
		runtime.GC()
		entries, err := os.ReadDir(dir)
		must(t, err)
		if len(entries) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	entries, _ := os.ReadDir(dir)
	t.Errorf("the temporary file of a dropped writer is still there: %v", entries)
}
