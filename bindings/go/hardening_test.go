package ztensor_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

// A sparse object of a few hundred bytes that claims a dense size of 2^50
// values is refused with StatusLimit before anything is allocated (not a
// panic in make, not an allocation the system refuses).
func TestDecodeOfAHugeSparseShapeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	must(t, w.BeginObject("huge", "sparse_csr", []uint64{1, 1 << 50}))
	must(t, ztensor.AddComponentOf(w, "values", []float32{}, ""))
	must(t, ztensor.AddComponentOf(w, "indices", []uint64{}, ""))
	must(t, ztensor.AddComponentOf(w, "indptr", []uint64{0, 0}, ""))
	must(t, w.EndObject())
	must(t, w.Finish())

	for _, opt := range []ztensor.Options{{MaxDecodedBytes: 1 << 20}, {}} {
		r, err := ztensor.OpenWithOptions(path, opt)
		must(t, err)
		o := find(t, r, "huge")
		if n, err := o.ValueCount(); err != nil || n != 1<<50 {
			t.Errorf("ValueCount: %d, %v", n, err)
		}
		what := "MaxDecodedBytes " + strconv.FormatUint(opt.MaxDecodedBytes, 10)
		_, err = o.DecodeFloat32()
		wantStatus(t, err, ztensor.StatusLimit, what+": DecodeFloat32")
		_, err = o.DecodeFloat64()
		wantStatus(t, err, ztensor.StatusLimit, what+": DecodeFloat64")
		// Not dense: the library's own refusal, no buffer made.
		_, err = o.ReadFloat32()
		wantStatus(t, err, ztensor.StatusArgument, what+": ReadFloat32")
		_, err = o.ReadFloat64()
		wantStatus(t, err, ztensor.StatusArgument, what+": ReadFloat64")
		if v, err := component(t, o, "values").Float32s(); err != nil || len(v) != 0 {
			t.Errorf("%s: Float32s of the values: %v, %v", what, v, err)
		}
		must(t, r.Close())
	}
}

// A refused Write ends its ComponentWriter: the library dropped the
// component, and a later Write through the stale writer must not land in
// the next component begun.
func TestRefusedWriteEndsTheComponent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stale.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	defer w.Abort()
	must(t, w.BeginObject("o", "dense", []uint64{4}))
	stale, err := w.BeginComponent("data", "u8", "", 4, "")
	must(t, err)
	if _, err := stale.Write([]byte{1, 2, 3, 4, 5}); err == nil {
		t.Fatal("5 bytes for a component of 4 were accepted")
	}
	fresh, err := w.BeginComponent("data", "u8", "", 4, "")
	must(t, err)
	r := staleThenFresh(t, w, stale, fresh, path, "o", "the refused ComponentWriter")
	defer r.Close()
}

// ZstdLevel outside int32 is refused, not cut; AutoMinRatioZero asks for
// the ratio 0 that the field's zero value (the default) cannot.
func TestWriterOptionsRanges(t *testing.T) {
	dir := t.TempDir()
	if strconv.IntSize == 64 {
		big := int64(1) << 33 // cut to int32, this was 0: the default level
		_, err := ztensor.CreateWithOptions(filepath.Join(dir, "level.zt"), ztensor.WriterOptions{ZstdLevel: int(big)})
		wantStatus(t, err, ztensor.StatusArgument, "ZstdLevel 2^33")
		_, err = ztensor.CreateWithOptions(filepath.Join(dir, "level.zt"), ztensor.WriterOptions{ZstdLevel: int(-big)})
		wantStatus(t, err, ztensor.StatusArgument, "ZstdLevel -2^33")
	}
	_, err := ztensor.CreateWithOptions(filepath.Join(dir, "ratio.zt"), ztensor.WriterOptions{AutoMinRatio: -0.5})
	wantStatus(t, err, ztensor.StatusArgument, "AutoMinRatio -0.5")

	zeros := make([]float32, 1<<14) // compresses very well
	encoding := func(opt ztensor.WriterOptions, name string) string {
		path := filepath.Join(dir, name)
		w, err := ztensor.CreateWithOptions(path, opt)
		must(t, err)
		must(t, ztensor.AddDenseOf(w, "zeros", []uint64{uint64(len(zeros))}, zeros, "auto"))
		must(t, w.Finish())
		r, err := ztensor.Open(path)
		must(t, err)
		defer r.Close()
		return component(t, find(t, r, "zeros"), "data").Encoding
	}
	if e := encoding(ztensor.WriterOptions{}, "default.zt"); e != "zstd" {
		t.Errorf("AutoMinRatio 0 (the default, 0.9): encoding %q", e)
	}
	if e := encoding(ztensor.WriterOptions{AutoMinRatio: ztensor.AutoMinRatioZero}, "zero.zt"); e != "raw" {
		t.Errorf("AutoMinRatioZero: encoding %q", e)
	}
}

// AttributesJSON answers from a copy of the manifest, and still refuses
// after Close, as every call that returns an error does.
func TestAttributesJSONAfterClose(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "attrs.zt"))
	must(t, err)
	m := find(t, r, "m")
	_, err = r.AttributesJSON() // read and kept
	must(t, err)
	_, err = m.AttributesJSON()
	must(t, err)
	must(t, r.Close())
	_, err = r.AttributesJSON()
	wantStatus(t, err, ztensor.StatusState, "Reader.AttributesJSON after Close")
	_, err = m.AttributesJSON()
	if !errors.Is(err, ztensor.StatusState) {
		t.Errorf("Object.AttributesJSON after Close: %v", err)
	}
}
