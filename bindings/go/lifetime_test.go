package ztensor_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

// Zero-copy bytes (Bytes and the views) are the library's memory: they stay
// valid, at the same address and with the same contents, through garbage
// collections and any other calls, until Close.
func TestZeroCopyBytesStayValidUntilClose(t *testing.T) {
	data, err := os.ReadFile(writeSample(t, t.TempDir(), "life.zt"))
	must(t, err)
	for _, open := range []struct {
		name string
		open func() (*ztensor.Reader, error)
	}{
		{"mapped file", func() (*ztensor.Reader, error) { return ztensor.Open(writeSample(t, t.TempDir(), "life.zt")) }},
		{"memory", func() (*ztensor.Reader, error) { return ztensor.OpenMemory(data) }},
		{"source", func() (*ztensor.Reader, error) {
			return ztensor.OpenSource(bytes.NewReader(data), int64(len(data)), ztensor.SourceOptions{})
		}},
	} {
		t.Run(open.name, func(t *testing.T) {
			r, err := open.open()
			must(t, err)
			raw := bytesOf(t, component(t, find(t, r, "layer.weight"), "data")) // mapping (or copy)
			dec := bytesOf(t, component(t, find(t, r, "ids"), "data"))          // decode cache
			cv, err := find(t, r, "m").CSR()
			must(t, err)
			rows, err := find(t, r, "ids").DenseRowsMap(2, 5)
			must(t, err)
			keep := [][]byte{raw, dec, cv.Values, cv.Indices, cv.Indptr, rows}
			var copies [][]byte
			var addrs []uintptr
			for _, b := range keep {
				copies = append(copies, append([]byte(nil), b...))
				addrs = append(addrs, uintptr(unsafe.Pointer(&b[0])))
			}

			for round := 0; round < 3; round++ {
				// Garbage and collections: none of it is Go memory, so none
				// of it moves or goes away.
				var junk [][]byte
				for i := 0; i < 2000; i++ {
					junk = append(junk, make([]byte, 1024))
				}
				_ = junk
				runtime.GC()
				runtime.GC()
				// Other calls: more decoding, more views, verification.
				for _, o := range r.Objects() {
					if _, err := o.DecodeFloat32(); err != nil {
						t.Fatalf("%s: %v", o.Name, err)
					}
					for _, c := range o.Components() {
						if _, err := c.Bytes(); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, _, err := r.Verify(); err != nil {
					t.Fatal(err)
				}
				for i, b := range keep {
					if !bytes.Equal(b, copies[i]) {
						t.Fatalf("round %d: slice %d changed", round, i)
					}
				}
			}
			// Asked again, the same memory comes back.
			again := [][]byte{
				bytesOf(t, component(t, find(t, r, "layer.weight"), "data")),
				bytesOf(t, component(t, find(t, r, "ids"), "data")),
			}
			for i, b := range again {
				if uintptr(unsafe.Pointer(&b[0])) != addrs[i] {
					t.Errorf("slice %d moved: %#x -> %p", i, addrs[i], &b[0])
				}
			}
			if got := elements[float32](t, raw); !reflect.DeepEqual(got, weight) {
				t.Errorf("values %v", got)
			}
			runtime.KeepAlive(r)
			must(t, r.Close())
			// From here on, raw, dec, ... must not be touched.
			checkClosed(t, r)
		})
	}
}

// checkClosed: every call on a closed reader fails with StatusState instead
// of crashing, and Close stays a no-op.
func checkClosed(t *testing.T, r *ztensor.Reader) {
	t.Helper()
	state := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, ztensor.StatusState) {
			t.Errorf("%s after Close: %v", what, err)
		}
	}
	_, err := r.Find("layer.weight")
	state(err, "Find")
	_, err = r.Object(0)
	state(err, "Object")
	if objs := r.Objects(); objs != nil || r.NumObjects() != 0 {
		t.Errorf("Objects after Close: %v", objs)
	}
	_, _, err = r.Verify()
	state(err, "Verify")
	_, err = r.ManifestJSON()
	state(err, "ManifestJSON")
	_, err = r.Attributes()
	state(err, "Attributes")
	_, err = r.ContentDigest("")
	state(err, "ContentDigest")
	state(r.DecodeMany([]ztensor.DecodeRequest{{Object: 0, Role: "data"}}, 0), "DecodeMany")
	if r.FileVersion() != "1.2.0" || r.FileFormat() != "zt" {
		t.Errorf("FileVersion/FileFormat after Close: %q %q", r.FileVersion(), r.FileFormat())
	}
	must(t, r.Close())
	must(t, r.Close())
}

// Objects and Components taken before Close fail cleanly after it.
func TestCallsAfterCloseReturnErrors(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "closed.zt"))
	must(t, err)
	objs := r.Objects()
	w := find(t, r, "layer.weight")
	c := component(t, w, "data")
	must(t, r.Close())
	checkClosed(t, r)

	state := func(err error, what string) {
		t.Helper()
		var e *ztensor.Error
		if !errors.As(err, &e) || e.Status != ztensor.StatusState {
			t.Errorf("%s after Close: %v", what, err)
		}
	}
	if w.Name != "layer.weight" || len(objs) != 7 || c.Dtype != "f32" {
		t.Errorf("descriptions are Go copies and stay: %+v %+v", w, c)
	}
	_, err = c.Bytes()
	state(err, "Bytes")
	_, err = c.ReadAt(make([]byte, 4), 0)
	state(err, "ReadAt")
	_, err = c.ReadInto(make([]byte, 24))
	state(err, "ReadInto")
	_, err = c.Float32s()
	state(err, "Float32s")
	_, err = c.NewReader() // its size is known without the reader
	if err != nil {
		t.Errorf("NewReader: %v", err)
	}
	state(c.Prefetch(), "Prefetch")
	state(c.Evict(), "Evict")
	_, err = w.Component("data")
	state(err, "Component")
	if cs := w.Components(); cs != nil {
		t.Errorf("Components after Close: %v", cs)
	}
	_, err = w.Attributes()
	state(err, "Attributes")
	_, err = w.AttributesJSON()
	state(err, "AttributesJSON")
	_, err = w.DecodeFloat32()
	state(err, "DecodeFloat32")
	_, err = w.ReadFloat64()
	state(err, "ReadFloat64")
	_, err = w.Dense()
	state(err, "Dense")
	_, err = objs[2].CSR()
	state(err, "CSR")
	_, err = objs[3].COO()
	state(err, "COO")
	_, err = objs[4].Quant()
	state(err, "Quant")
	_, err = w.DenseSlice([]uint64{0, 0}, []uint64{1, 1})
	state(err, "DenseSlice")
	_, err = w.DenseSliceFloat32([]uint64{0, 0}, []uint64{1, 1})
	state(err, "DenseSliceFloat32")
	_, err = w.DenseRows(0, 1)
	state(err, "DenseRows")
	_, err = w.DenseRowsMap(0, 1)
	state(err, "DenseRowsMap")
	_, err = w.ElementCount()
	state(err, "ElementCount")

	// A zero Object or Component has no reader: an error, not a crash.
	var zero ztensor.Object
	_, err = zero.DecodeFloat32()
	state(err, "a zero Object")
	var zc ztensor.Component
	_, err = zc.Bytes()
	state(err, "a zero Component")
}

// The reader is safe for concurrent use: many goroutines read at once.
func TestConcurrentReads(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "concurrent.zt"))
	must(t, err)
	defer r.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				o, err := r.Find([]string{"ids", "layer.weight", "m", "q"}[(g+i)%4])
				if err != nil {
					errs <- err
					return
				}
				c := o.Components()[0]
				b, err := c.Bytes()
				if err != nil {
					errs <- err
					return
				}
				p := make([]byte, len(b))
				if n, err := c.ReadAt(p, 0); err != nil || n != len(b) || !bytes.Equal(p, b) {
					errs <- errors.New("ReadAt differs from Bytes")
					return
				}
				if _, err := o.DecodeFloat32(); err != nil {
					errs <- err
					return
				}
				if o.Name == "ids" {
					got := elements[int64](t, b)
					if got[999] != ids[999] {
						errs <- errors.New("ids differ")
						return
					}
					s, err := o.DenseSlice([]uint64{3, 10}, []uint64{4, 12})
					if err != nil || !reflect.DeepEqual(elements[int64](t, s), ids[310:312]) {
						errs <- errors.New("slice differs")
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Close while other goroutines read: it waits for the calls in progress;
// later calls fail with StatusState. (The goroutines use copying calls
// only: zero-copy bytes must not outlive Close.)
func TestCloseDuringConcurrentReads(t *testing.T) {
	for round := 0; round < 5; round++ {
		r, err := ztensor.Open(writeSample(t, t.TempDir(), "race.zt"))
		must(t, err)
		c := component(t, find(t, r, "ids"), "data")
		o := find(t, r, "q")
		var wg sync.WaitGroup
		start := make(chan struct{})
		bad := make(chan error, 16)
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				p := make([]byte, 8000)
				for i := 0; i < 200; i++ {
					n, err := c.ReadAt(p, 0)
					if err == nil && (n != 8000 || !bytes.Equal(p[8*999:], ztensor.AsBytes(ids[999:]))) {
						bad <- errors.New("ReadAt gave wrong bytes")
						return
					}
					if err != nil && err != io.EOF && !errors.Is(err, ztensor.StatusState) {
						bad <- err
						return
					}
					if _, err := o.DecodeFloat32(); err != nil && !errors.Is(err, ztensor.StatusState) {
						bad <- err
						return
					}
				}
			}()
		}
		close(start)
		runtime.Gosched()
		must(t, r.Close())
		wg.Wait()
		close(bad)
		for err := range bad {
			t.Error(err)
		}
		checkClosed(t, r)
	}
}

// A Reader dropped without Close after it lent memory is not freed by its
// finalizer: Go cannot tell whether the bytes are still read (before, the
// finalizer unmapped the file under the slice, and reading it crashed).
func TestDroppedReaderThatLentMemoryLeaksInsteadOfFreeing(t *testing.T) {
	path := writeSample(t, t.TempDir(), "dropped.zt")
	lendAndDrop := func() []byte {
		r, err := ztensor.Open(path)
		must(t, err)
		return bytesOf(t, component(t, find(t, r, "layer.weight"), "data"))
	}
	b := lendAndDrop()
	want := append([]byte(nil), b...)
	for i := 0; i < 5; i++ {
		runtime.GC() // the Reader is unreachable: its finalizer runs
		time.Sleep(10 * time.Millisecond)
	}
	if !bytes.Equal(b, want) {
		t.Fatal("the bytes changed after the Reader was finalized")
	}
}
