package ztensor_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantStatus fails unless err is an *Error of the given status.
func wantStatus(t testing.TB, err error, s ztensor.Status, what string) *ztensor.Error {
	t.Helper()
	var e *ztensor.Error
	if !errors.As(err, &e) || e.Status != s || !errors.Is(err, s) {
		t.Fatalf("%s: got %v, want an *Error with %v", what, err, s)
	}
	if e.Message == "" {
		t.Errorf("%s: %v has no message", what, err)
	}
	return e
}

// staleThenFresh checks a ComponentWriter the writer ended (stale): its
// Write and End are StatusState, while fresh, begun after it, takes the 4
// bytes 1, 2, 3, 4. It then ends the object, finishes the writer and opens
// path, whose object `name` must hold those bytes; the caller closes the
// Reader.
func staleThenFresh(t testing.TB, w *ztensor.Writer, stale, fresh *ztensor.ComponentWriter,
	path, name, what string) *ztensor.Reader {
	t.Helper()
	_, err := stale.Write([]byte{9, 9, 9, 9})
	wantStatus(t, err, ztensor.StatusState, what+": Write")
	wantStatus(t, stale.End(), ztensor.StatusState, what+": End")
	_, err = fresh.Write([]byte{1, 2, 3, 4})
	must(t, err)
	must(t, fresh.End())
	must(t, w.EndObject())
	must(t, w.Finish())
	r, err := ztensor.Open(path)
	must(t, err)
	if b := bytesOf(t, component(t, find(t, r, name), "data")); !bytes.Equal(b, []byte{1, 2, 3, 4}) {
		t.Errorf("%s: %q holds %v", what, name, b)
	}
	return r
}

func elements[T ztensor.Number](t testing.TB, b []byte) []T {
	t.Helper()
	v, err := ztensor.Elements[T](b)
	must(t, err)
	return v
}

func find(t testing.TB, r *ztensor.Reader, name string) ztensor.Object {
	t.Helper()
	o, err := r.Find(name)
	must(t, err)
	return o
}

func component(t testing.TB, o ztensor.Object, role string) ztensor.Component {
	t.Helper()
	c, err := o.Component(role)
	must(t, err)
	return c
}

func bytesOf(t testing.TB, c ztensor.Component) []byte {
	t.Helper()
	b, err := c.Bytes()
	must(t, err)
	return b
}

// Sample data of every kind, shared by the tests.
var (
	weight = []float32{0.5, -1.25, 2, 3.5, 0, 1e-7}
	ids    = func() []int64 {
		v := make([]int64, 1000)
		for i := range v {
			v[i] = int64(i*i - 500)
		}
		return v
	}()
	// [[1, 0, 2], [0, 0, 3]] as CSR
	csrValues  = []float64{1, 2, 3}
	csrIndices = []uint64{0, 2, 2}
	csrIndptr  = []uint64{0, 2, 3}
	// [[0, 0, 0, 5], [0, 6, 0, 0], [7, 0, 0, 0]] as COO
	cooValues = []float32{5, 6, 7}
	cooCoords = []uint64{0, 1, 2, 3, 1, 0}
	// quantized_group [2, 8], 4 bits, one group, zeros 8, scales 0.5 / 0.25:
	// q(0, k) = k, q(1, k) = 15 - k.
	quantWords  = []uint32{0x76543210, 0x89ABCDEF}
	quantScales = []float32{0.5, 0.25}
	quantZeros  = []float32{8, 8}
)

func quantExpected() []float32 {
	out := make([]float32, 16)
	for k := 0; k < 8; k++ {
		out[k] = float32(k-8) * 0.5
		out[8+k] = float32(7-k) * 0.25
	}
	return out
}

// writeSample writes one object of every kind to dir/name.
func writeSample(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := ztensor.Create(path)
	must(t, err)
	must(t, w.SetFileAttributesJSON(`{"framework": "go", "epoch": 3}`))
	must(t, ztensor.AddDenseOf(w, "layer.weight", []uint64{2, 3}, weight, "raw"))
	must(t, ztensor.AddDenseOf(w, "ids", []uint64{10, 100}, ids, "zstd"))

	must(t, w.BeginObject("m", "sparse_csr", []uint64{2, 3}))
	must(t, ztensor.AddComponentOf(w, "values", csrValues, ""))
	must(t, ztensor.AddComponentOf(w, "indices", csrIndices, "zstd"))
	must(t, ztensor.AddComponentOf(w, "indptr", csrIndptr, ""))
	must(t, w.SetObjectAttributesJSON(`{"note": "csr"}`))
	must(t, w.EndObject())

	must(t, w.BeginObject("c", "sparse_coo", []uint64{3, 4}))
	must(t, ztensor.AddComponentOf(w, "values", cooValues, ""))
	must(t, ztensor.AddComponentOf(w, "coords", cooCoords, ""))
	must(t, w.EndObject())

	must(t, w.BeginObject("q", "quantized_group", []uint64{2, 8}))
	must(t, w.SetObjectAttributesJSON(`{"bits": 4, "group_size": 8, "packing": "8_per_i32"}`))
	must(t, w.AddComponent("packed_weight", "i32", "", ztensor.AsBytes(quantWords), ""))
	must(t, ztensor.AddComponentOf(w, "scales", quantScales, ""))
	must(t, ztensor.AddComponentOf(w, "zeros", quantZeros, ""))
	must(t, w.EndObject())

	// complex64 [2]: (1+2i, 3-4i)
	must(t, w.BeginObject("z", "dense", []uint64{2}))
	must(t, w.AddComponent("data", "f32", "complex64", ztensor.AsBytes([]float32{1, 2, 3, -4}), ""))
	must(t, w.EndObject())

	must(t, ztensor.AddDenseOf(w, "scalar", nil, []float64{42}, ""))
	must(t, w.Finish())
	return path
}
