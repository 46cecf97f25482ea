package ztensor_test

import (
	"reflect"
	"testing"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

func TestViews(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "views.zt"))
	must(t, err)
	defer r.Close()

	dv, err := find(t, r, "layer.weight").Dense()
	must(t, err)
	if !dv.ZeroCopy || dv.Elements != 6 || dv.Values != 6 || dv.Dtype != "f32" || dv.Type != "" ||
		!reflect.DeepEqual(dv.Shape, []uint64{2, 3}) || len(dv.Data) != 24 {
		t.Errorf("dense view %+v", dv)
	}
	if got := elements[float32](t, dv.Data); !reflect.DeepEqual(got, weight) {
		t.Errorf("dense view values %v", got)
	}
	// zstd data: decoded into the cache, not zero-copy.
	dz, err := find(t, r, "ids").Dense()
	must(t, err)
	if dz.ZeroCopy || !reflect.DeepEqual(elements[int64](t, dz.Data), ids) {
		t.Errorf("zstd dense view: zero copy %v", dz.ZeroCopy)
	}

	cv, err := find(t, r, "m").CSR()
	must(t, err)
	if cv.Rows != 2 || cv.Cols != 3 || cv.NNZ != 3 || cv.ZeroCopy || cv.ValuesDtype != "f64" ||
		cv.IndicesDtype != "u64" || cv.IndptrDtype != "u64" {
		t.Errorf("csr view %+v", cv)
	}
	if !reflect.DeepEqual(elements[float64](t, cv.Values), csrValues) ||
		!reflect.DeepEqual(elements[uint64](t, cv.Indices), csrIndices) ||
		!reflect.DeepEqual(elements[uint64](t, cv.Indptr), csrIndptr) {
		t.Errorf("csr arrays %v %v %v", cv.Values, cv.Indices, cv.Indptr)
	}

	ov, err := find(t, r, "c").COO()
	must(t, err)
	if ov.NNZ != 3 || !reflect.DeepEqual(ov.Shape, []uint64{3, 4}) || !ov.ZeroCopy || ov.CoordsDtype != "u64" {
		t.Errorf("coo view %+v", ov)
	}
	if !reflect.DeepEqual(elements[float32](t, ov.Values), cooValues) ||
		!reflect.DeepEqual(elements[uint64](t, ov.Coords), cooCoords) {
		t.Errorf("coo arrays")
	}

	qv, err := find(t, r, "q").Quant()
	must(t, err)
	if qv.Bits != 4 || qv.GroupSize != 8 || qv.N != 2 || qv.K != 8 || qv.Groups != 1 || qv.ValuesPerWord != 8 ||
		qv.Bitstream || qv.ZerosPacked || qv.PackedWeightCount != 2 || qv.PackedWeightDtype != "i32" ||
		qv.ScalesCount != 2 || qv.ZerosCount != 2 || qv.ScalesDtype != "f32" {
		t.Errorf("quant view %+v", qv)
	}
	if !reflect.DeepEqual(elements[uint32](t, qv.PackedWeight), quantWords) ||
		!reflect.DeepEqual(elements[float32](t, qv.Scales), quantScales) ||
		!reflect.DeepEqual(elements[float32](t, qv.Zeros), quantZeros) {
		t.Errorf("quant arrays")
	}

	zv, err := find(t, r, "z").Dense()
	must(t, err)
	if zv.Type != "complex64" || zv.Elements != 2 || zv.Values != 4 || len(zv.Data) != 16 {
		t.Errorf("complex view %+v", zv)
	}
}

func TestDecodeEveryKind(t *testing.T) {
	r, err := ztensor.Open(writeSample(t, t.TempDir(), "decode.zt"))
	must(t, err)
	defer r.Close()
	want := map[string][]float32{
		"layer.weight": weight,
		"m":            {1, 0, 2, 0, 0, 3},
		"c":            {0, 0, 0, 5, 0, 6, 0, 0, 7, 0, 0, 0},
		"q":            quantExpected(),
		"z":            {1, 2, 3, -4},
		"scalar":       {42},
	}
	for name, w := range want {
		o := find(t, r, name)
		got, err := o.DecodeFloat32()
		must(t, err)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s decodes to %v, want %v", name, got, w)
		}
		got64, err := o.DecodeFloat64()
		must(t, err)
		for i := range w {
			if float32(got64[i]) != w[i] {
				t.Errorf("%s [%d] as float64: %v", name, i, got64[i])
			}
		}
		if n, err := o.ValueCount(); err != nil || n != uint64(len(w)) {
			t.Errorf("%s value count %d %v", name, n, err)
		}
	}
	idsF, err := find(t, r, "ids").ReadFloat32()
	must(t, err)
	for i, v := range ids {
		if idsF[i] != float32(v) {
			t.Fatalf("ids[%d] = %v, want %d", i, idsF[i], v)
		}
	}
	_, err = find(t, r, "m").ReadFloat32()
	wantStatus(t, err, ztensor.StatusArgument, "ReadFloat32 of a sparse object")
	if n, err := find(t, r, "c").ElementCount(); err != nil || n != 12 {
		t.Errorf("element count %d %v", n, err)
	}

	// Component conversions: one value per storage element.
	vals, err := component(t, find(t, r, "m"), "values").Float32s()
	must(t, err)
	if !reflect.DeepEqual(vals, []float32{1, 2, 3}) {
		t.Errorf("csr values as float32: %v", vals)
	}
	idx, err := component(t, find(t, r, "m"), "indices").Float64s()
	must(t, err)
	if !reflect.DeepEqual(idx, []float64{0, 2, 2}) {
		t.Errorf("csr indices as float64: %v", idx)
	}
	words, err := component(t, find(t, r, "q"), "packed_weight").Float64s()
	must(t, err)
	if words[0] != float64(int32(quantWords[0])) || words[1] != float64(int32(quantWords[1])) {
		t.Errorf("packed words as float64: %v", words)
	}
}

func TestSlicesAndRows(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/slices.zt"
	// a [4, 5, 6] tensor of i32 k = 100*i + 10*j + l, raw and zstd in small frames
	grid := make([]int32, 4*5*6)
	for i := 0; i < 4; i++ {
		for j := 0; j < 5; j++ {
			for l := 0; l < 6; l++ {
				grid[(i*5+j)*6+l] = int32(100*i + 10*j + l)
			}
		}
	}
	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{FrameSize: 1024, ZstdLevel: 1, Threads: 2})
	must(t, err)
	must(t, ztensor.AddDenseOf(w, "raw", []uint64{4, 5, 6}, grid, "raw"))
	must(t, ztensor.AddDenseOf(w, "zstd", []uint64{4, 5, 6}, grid, "zstd"))
	must(t, w.Finish())
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()

	begin, end := []uint64{1, 2, 3}, []uint64{3, 4, 6}
	var want []int32
	var wantF []float32
	for i := 1; i < 3; i++ {
		for j := 2; j < 4; j++ {
			for l := 3; l < 6; l++ {
				want = append(want, int32(100*i+10*j+l))
				wantF = append(wantF, float32(100*i+10*j+l))
			}
		}
	}
	for _, name := range []string{"raw", "zstd"} {
		o := find(t, r, name)
		b, err := o.DenseSlice(begin, end)
		must(t, err)
		if got := elements[int32](t, b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s slice %v", name, got)
		}
		f, err := o.DenseSliceFloat32(begin, end)
		must(t, err)
		if !reflect.DeepEqual(f, wantF) {
			t.Errorf("%s slice as float32 %v", name, f)
		}
		d, err := o.DenseSliceFloat64(begin, end)
		must(t, err)
		if len(d) != len(want) || d[0] != float64(want[0]) {
			t.Errorf("%s slice as float64 %v", name, d)
		}
		empty, err := o.DenseSlice([]uint64{1, 1, 1}, []uint64{1, 5, 6})
		must(t, err)
		if len(empty) != 0 {
			t.Errorf("an empty box gave %d bytes", len(empty))
		}
		_, err = o.DenseSlice([]uint64{0, 0, 0}, []uint64{5, 5, 6})
		wantStatus(t, err, ztensor.StatusArgument, "a box outside the shape")
		_, err = o.DenseSlice([]uint64{0, 0}, []uint64{1, 1})
		wantStatus(t, err, ztensor.StatusArgument, "a box of the wrong rank")
		_, err = o.DenseSlice([]uint64{0, 0, 0}, []uint64{1, 1})
		wantStatus(t, err, ztensor.StatusArgument, "begin and end of different ranks")

		rows, err := o.DenseRows(1, 3)
		must(t, err)
		if got := elements[int32](t, rows); !reflect.DeepEqual(got, grid[30:90]) {
			t.Errorf("%s rows 1..3", name)
		}
		mapped, err := o.DenseRowsMap(2, 4)
		must(t, err)
		if got := elements[int32](t, mapped); !reflect.DeepEqual(got, grid[60:120]) {
			t.Errorf("%s mapped rows 2..4", name)
		}
		rf, err := o.DenseRowsFloat32(3, 4)
		must(t, err)
		rd, err := o.DenseRowsFloat64(3, 4)
		must(t, err)
		if len(rf) != 30 || rf[29] != 345 || len(rd) != 30 || rd[0] != 300 {
			t.Errorf("%s rows as floats %v %v", name, rf, rd)
		}
		_, err = o.DenseRows(3, 5)
		wantStatus(t, err, ztensor.StatusArgument, "rows outside the shape")
	}
}

func TestElementsChecksSizeAndAlignment(t *testing.T) {
	b := make([]byte, 17)
	_, err := ztensor.Elements[uint64](b[:12])
	wantStatus(t, err, ztensor.StatusArgument, "12 bytes as uint64")
	_, err = ztensor.Elements[uint64](b[1:9])
	wantStatus(t, err, ztensor.StatusArgument, "unaligned uint64")
	if v, err := ztensor.Elements[uint16](nil); err != nil || len(v) != 0 {
		t.Errorf("no bytes: %v %v", v, err)
	}
	if ztensor.DtypeOf[float32]() != "f32" || ztensor.DtypeOf[uint8]() != "u8" || ztensor.DtypeOf[int16]() != "i16" {
		t.Errorf("dtypes")
	}
	x := []uint16{0x0102}
	if got := ztensor.AsBytes(x); !reflect.DeepEqual(got, []byte{2, 1}) {
		t.Errorf("AsBytes %v", got)
	}
}
