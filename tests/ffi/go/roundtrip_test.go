// The Go consumer of the installed libztensor.so: write a file through the
// cgo binding, reopen it, check shapes and values; errors come back as
// *Error with the status and message.
package ztensor

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// view reinterprets decoded little-endian bytes as numbers, without a copy.
func view[T any](t *testing.T, b []byte) []T {
	t.Helper()
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b)%size != 0 {
		t.Fatalf("%d bytes are not whole elements of %d bytes", len(b), size)
	}
	if len(b) == 0 {
		return []T{}
	}
	if uintptr(unsafe.Pointer(&b[0]))%unsafe.Alignof(zero) != 0 {
		t.Fatalf("data at %p is not aligned", &b[0])
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteReopenCheckShapesAndValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.zt")
	weight := []float32{0.5, -1.25, 2, 3.5, 0, 1e-7}
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i*i - 500)
	}
	// [[1, 0, 2], [0, 0, 3]] as CSR
	values := []float64{1, 2, 3}
	indices := []uint64{0, 2, 2}
	indptr := []uint64{0, 2, 3}

	w, err := Create(path)
	must(t, err)
	must(t, AddDense(w, "layer.weight", "f32", []uint64{2, 3}, weight, "raw"))
	must(t, AddDense(w, "ids", "i64", []uint64{10, 100}, ids, "zstd"))
	must(t, w.BeginObject("m", "sparse_csr", []uint64{2, 3}))
	must(t, AddComponent(w, "values", "f64", values))
	must(t, AddComponent(w, "indices", "u64", indices))
	must(t, AddComponent(w, "indptr", "u64", indptr))
	must(t, w.EndObject())
	must(t, w.Finish())

	r, err := Open(path)
	must(t, err)
	defer r.Close()
	if got := r.FileVersion(); got != "1.2.0" {
		t.Errorf("file version %q", got)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"layer.weight", "ids", "m"}) {
		t.Errorf("names %v", got)
	}

	wi, err := r.Find("layer.weight")
	must(t, err)
	if r.Format(wi) != "dense" || !reflect.DeepEqual(r.Shape(wi), []uint64{2, 3}) || r.Dtype(wi, "data") != "f32" {
		t.Errorf("layer.weight: %s %v %s", r.Format(wi), r.Shape(wi), r.Dtype(wi, "data"))
	}
	b, err := r.Bytes(wi, "data")
	must(t, err)
	if got := view[float32](t, b); !reflect.DeepEqual(got, weight) {
		t.Errorf("layer.weight values %v", got)
	}

	ii, err := r.Find("ids")
	must(t, err)
	if r.Encoding(ii, "data") != "zstd" || !reflect.DeepEqual(r.Shape(ii), []uint64{10, 100}) {
		t.Errorf("ids: %s %v", r.Encoding(ii, "data"), r.Shape(ii))
	}
	b, err = r.Bytes(ii, "data")
	must(t, err)
	if got := view[int64](t, b); !reflect.DeepEqual(got, ids) {
		t.Errorf("ids values differ")
	}

	mi, err := r.Find("m")
	must(t, err)
	if r.Format(mi) != "sparse_csr" || !reflect.DeepEqual(r.Roles(mi), []string{"values", "indices", "indptr"}) {
		t.Errorf("m: %s %v", r.Format(mi), r.Roles(mi))
	}
	for role, want := range map[string][]uint64{"indices": indices, "indptr": indptr} {
		b, err = r.Bytes(mi, role)
		must(t, err)
		if got := view[uint64](t, b); !reflect.DeepEqual(got, want) {
			t.Errorf("m.%s = %v, want %v", role, got, want)
		}
	}
	b, err = r.Bytes(mi, "values")
	must(t, err)
	if got := view[float64](t, b); !reflect.DeepEqual(got, values) {
		t.Errorf("m.values = %v", got)
	}

	checked, unchecked, err := r.Verify()
	must(t, err)
	if checked != 5 || unchecked != 0 {
		t.Errorf("verify: %d checked, %d unchecked; want 5, 0", checked, unchecked)
	}
}

func TestErrorsAreStatusCodesWithAMessage(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "missing.zt"))
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrIO || e.Name != "ZT_ERR_IO" || e.Message == "" {
		t.Fatalf("opening a missing file: %v", err)
	}

	path := filepath.Join(dir, "f.zt")
	w, err := Create(path)
	must(t, err)
	x := []float32{1, 2, 3}
	err = AddDense(w, "x", "f32", []uint64{2, 2}, x, "raw")
	if !errors.As(err, &e) || e.Status != ErrArgument || !strings.Contains(e.Message, `"x"`) {
		t.Fatalf("size mismatch: %v", err)
	}
	must(t, AddDense(w, "x", "f32", []uint64{3}, x, "raw"))
	must(t, w.BeginObject("bad", "sparse_csr", []uint64{2, 2}))
	must(t, AddComponent(w, "values", "f32", x[:2]))
	must(t, AddComponent(w, "indices", "u64", []uint64{0, 7})) // column 7 of 2
	must(t, AddComponent(w, "indptr", "u64", []uint64{0, 1, 2}))
	if err = w.EndObject(); !errors.As(err, &e) || e.Status != ErrInvalid {
		t.Fatalf("a column out of range: %v", err)
	}
	must(t, w.Finish())
	if err = w.Finish(); err == nil {
		t.Fatal("finished twice")
	}

	r, err := Open(path)
	must(t, err)
	defer r.Close()
	if got := r.Names(); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("names %v", got)
	}
	if _, err = r.Find("bad"); !errors.As(err, &e) || e.Status != ErrNotFound {
		t.Errorf("find of a refused object: %v", err)
	}
}

func TestAnAbortedWriterLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "never.zt"))
	must(t, err)
	must(t, AddDense(w, "x", "u8", []uint64{3}, []uint8{1, 2, 3}, "raw"))
	w.Abort()
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestVersion(t *testing.T) {
	if v := Version(); len(strings.Split(v, ".")) != 3 {
		t.Errorf("version %q", v)
	}
}
