// The Go consumer of the installed libztensor.so (formerly tests/ffi/go):
// write a file through the module, reopen it, check shapes and values;
// errors come back as *Error with the status and message.
package ztensor_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

func names(objs []ztensor.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func roles(cs []ztensor.Component) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Role)
	}
	return out
}

func TestWriteReopenCheckShapesAndValues(t *testing.T) {
	path := writeSample(t, t.TempDir(), "model.zt")
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	if got := r.FileVersion(); got != "1.2.0" {
		t.Errorf("file version %q", got)
	}
	if got := r.FileFormat(); got != "zt" {
		t.Errorf("file format %q", got)
	}
	want := []string{"layer.weight", "ids", "m", "c", "q", "z", "scalar"}
	if got := names(r.Objects()); !reflect.DeepEqual(got, want) || r.NumObjects() != len(want) {
		t.Errorf("names %v (%d)", got, r.NumObjects())
	}

	w := find(t, r, "layer.weight")
	if w.Format != "dense" || !reflect.DeepEqual(w.Shape, []uint64{2, 3}) || w.Index != 0 {
		t.Errorf("layer.weight: %+v", w)
	}
	d := component(t, w, "data")
	if d.Dtype != "f32" || d.Encoding != "raw" || d.Type != "" || d.StoredSize != 24 ||
		!d.DecodedSizeKnown || d.DecodedSize != 24 {
		t.Errorf("layer.weight data: %+v", d)
	}
	if got := elements[float32](t, bytesOf(t, d)); !reflect.DeepEqual(got, weight) {
		t.Errorf("layer.weight values %v", got)
	}

	i := find(t, r, "ids")
	di := component(t, i, "data")
	if di.Encoding != "zstd" || !reflect.DeepEqual(i.Shape, []uint64{10, 100}) || di.StoredSize >= 8000 {
		t.Errorf("ids: %+v %v", di, i.Shape)
	}
	if got := elements[int64](t, bytesOf(t, di)); !reflect.DeepEqual(got, ids) {
		t.Errorf("ids values differ")
	}

	m := find(t, r, "m")
	if m.Format != "sparse_csr" || !reflect.DeepEqual(roles(m.Components()), []string{"values", "indices", "indptr"}) {
		t.Errorf("m: %s %v", m.Format, roles(m.Components()))
	}
	for role, want := range map[string][]uint64{"indices": csrIndices, "indptr": csrIndptr} {
		if got := elements[uint64](t, bytesOf(t, component(t, m, role))); !reflect.DeepEqual(got, want) {
			t.Errorf("m.%s = %v, want %v", role, got, want)
		}
	}
	if got := elements[float64](t, bytesOf(t, component(t, m, "values"))); !reflect.DeepEqual(got, csrValues) {
		t.Errorf("m.values = %v", got)
	}

	s := find(t, r, "scalar")
	if len(s.Shape) != 0 {
		t.Errorf("scalar shape %v", s.Shape)
	}
	if v, err := s.ReadFloat64(); err != nil || !reflect.DeepEqual(v, []float64{42}) {
		t.Errorf("scalar: %v %v", v, err)
	}

	checked, unchecked, err := r.Verify()
	must(t, err)
	if checked != 12 || unchecked != 0 {
		t.Errorf("verify: %d checked, %d unchecked; want 12, 0", checked, unchecked)
	}
}

func TestErrorsAreStatusCodesWithAMessage(t *testing.T) {
	dir := t.TempDir()
	_, err := ztensor.Open(filepath.Join(dir, "missing.zt"))
	e := wantStatus(t, err, ztensor.StatusIO, "opening a missing file")
	if e.Status.String() != "ZT_ERR_IO" || !strings.HasPrefix(e.Error(), "ztensor: ZT_ERR_IO: ") {
		t.Errorf("%q / %q", e.Status.String(), e.Error())
	}

	path := filepath.Join(dir, "f.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	x := []float32{1, 2, 3}
	err = ztensor.AddDenseOf(w, "x", []uint64{2, 2}, x, "raw")
	if e := wantStatus(t, err, ztensor.StatusArgument, "size mismatch"); !strings.Contains(e.Message, `"x"`) {
		t.Errorf("the message does not name the object: %q", e.Message)
	}
	must(t, ztensor.AddDenseOf(w, "x", []uint64{3}, x, "raw"))
	must(t, w.BeginObject("bad", "sparse_csr", []uint64{2, 2}))
	must(t, ztensor.AddComponentOf(w, "values", x[:2], ""))
	must(t, ztensor.AddComponentOf(w, "indices", []uint64{0, 7}, "")) // column 7 of 2
	must(t, ztensor.AddComponentOf(w, "indptr", []uint64{0, 1, 2}, ""))
	err = w.EndObject()
	if e := wantStatus(t, err, ztensor.StatusInvalid, "a column out of range"); !strings.Contains(e.Message, "bad") {
		t.Errorf("the message does not name the object: %q", e.Message)
	}
	err = w.AddDense("nul\x00name", "u8", []uint64{1}, []byte{1}, "")
	wantStatus(t, err, ztensor.StatusArgument, "a name with a NUL byte")
	err = w.AddDense("y", "f128", []uint64{1}, []byte{1}, "")
	wantStatus(t, err, ztensor.StatusArgument, "an unknown dtype")
	must(t, w.Finish())
	wantStatus(t, w.Finish(), ztensor.StatusState, "finishing twice")
	wantStatus(t, w.AddDense("z", "u8", []uint64{1}, []byte{1}, ""), ztensor.StatusState, "adding after Finish")

	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	if got := names(r.Objects()); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("names %v", got)
	}
	_, err = r.Find("bad")
	if e := wantStatus(t, err, ztensor.StatusNotFound, "find of a refused object"); !strings.Contains(e.Message, "bad") {
		t.Errorf("the message does not name the object: %q", e.Message)
	}
	_, err = find(t, r, "x").Component("nope")
	if e := wantStatus(t, err, ztensor.StatusNotFound, "an unknown role"); !strings.Contains(e.Message, "nope") {
		t.Errorf("the message does not name the role: %q", e.Message)
	}
	_, err = find(t, r, "x").CSR()
	wantStatus(t, err, ztensor.StatusArgument, "a CSR view of a dense object")
	_, err = r.Object(7)
	wantStatus(t, err, ztensor.StatusNotFound, "an object index out of range")
	var st ztensor.Status
	if !errors.As(err, &st) || st != ztensor.StatusNotFound {
		t.Errorf("errors.As to Status: %v", st)
	}
	if ztensor.Status(99).String() != "ZT_ERR_UNKNOWN" || ztensor.StatusOK.String() != "ZT_OK" {
		t.Errorf("names %q %q", ztensor.Status(99), ztensor.StatusOK)
	}
}

func TestAnAbortedWriterLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := ztensor.Create(filepath.Join(dir, "never.zt"))
	must(t, err)
	must(t, w.AddDense("x", "u8", []uint64{3}, []byte{1, 2, 3}, "raw"))
	w.Abort()
	w.Abort() // idempotent
	wantStatus(t, w.Finish(), ztensor.StatusState, "Finish after Abort")
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestVersion(t *testing.T) {
	v := ztensor.Version()
	if len(strings.Split(v, ".")) != 3 {
		t.Errorf("version %q", v)
	}
	n := ztensor.VersionNumber()
	if n/10000 != ztensor.HeaderVersionNumber/10000 {
		t.Errorf("library %d (%s), header %d: another major version", n, v, ztensor.HeaderVersionNumber)
	}
}
