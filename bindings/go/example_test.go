package ztensor_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

// exampleDir is a fresh directory under os.TempDir for one example.
func exampleDir() string {
	dir, err := os.MkdirTemp(os.TempDir(), "ztensor-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// exampleModel writes the file the examples read: a dense f32 matrix
// "embedding" [2, 3], a CSR matrix "adjacency" [2, 3] ([[1, 0, 2], [0, 0,
// 3]]) and a COO matrix "points" [3, 4].
func exampleModel(dir string) string {
	path := filepath.Join(dir, "model.zt")
	w, err := ztensor.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	check := func(err error) {
		if err != nil {
			w.Abort()
			log.Fatal(err)
		}
	}
	check(w.SetFileAttributesJSON(`{"author": "example"}`))
	check(ztensor.AddDenseOf(w, "embedding", []uint64{2, 3}, []float32{0.5, -1, 2, 3.5, 0, 1}, "zstd"))
	check(w.BeginObject("adjacency", "sparse_csr", []uint64{2, 3}))
	check(ztensor.AddComponentOf(w, "values", []float32{1, 2, 3}, ""))
	check(ztensor.AddComponentOf(w, "indices", []uint64{0, 2, 2}, ""))
	check(ztensor.AddComponentOf(w, "indptr", []uint64{0, 2, 3}, ""))
	check(w.EndObject())
	check(w.BeginObject("points", "sparse_coo", []uint64{3, 4}))
	check(ztensor.AddComponentOf(w, "values", []float32{5, 6, 7}, ""))
	check(ztensor.AddComponentOf(w, "coords", []uint64{0, 1, 2, 3, 1, 0}, ""))
	check(w.EndObject())
	check(w.Finish())
	return path
}

func ExampleOpen() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := exampleModel(dir)

	r, err := ztensor.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println(r.FileVersion(), r.FileFormat(), r.NumObjects())
	// Output: 1.2.0 zt 3
}

func ExampleOpenWithOptions() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := exampleModel(dir)

	// Copy mode: pread(2) instead of a mapping, for a file that may change.
	r, err := ztensor.OpenWithOptions(path, ztensor.Options{CopyMode: true})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	emb, _ := r.Find("embedding")
	v, _ := emb.Dense()
	fmt.Println(v.Dtype, v.Elements, v.ZeroCopy)
	// Output: f32 6 false
}

func ExampleOpenMemory() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	data, err := os.ReadFile(exampleModel(dir))
	if err != nil {
		log.Fatal(err)
	}

	r, err := ztensor.OpenMemory(data) // the reader keeps its own copy
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	adj, _ := r.Find("adjacency")
	dense, _ := adj.DecodeFloat32()
	fmt.Println(dense)
	// Output: [1 0 2 0 0 3]
}

func ExampleOpenSource() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	data, _ := os.ReadFile(exampleModel(dir))

	// Any io.ReaderAt: an object store client, an archive member, ...
	src := bytes.NewReader(data)
	r, err := ztensor.OpenSource(src, src.Size(), ztensor.SourceOptions{Name: "bucket/model.zt"})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	emb, _ := r.Find("embedding")
	rows, _ := emb.DenseRowsFloat32(1, 2)
	fmt.Println(rows)
	// Output: [3.5 0 1]
}

func ExampleOpenURL() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := exampleModel(dir)
	// A server that answers Range requests (here, a local one).
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	r, err := ztensor.OpenURL(srv.URL+"/model.zt", ztensor.HTTPOptions{
		Headers: map[string]string{"Authorization": "Bearer not-a-secret"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	pts, _ := r.Find("points")
	dense, _ := pts.DecodeFloat32()
	fmt.Println(filepath.Base(path), dense)
	// Output: model.zt [0 0 0 5 0 6 0 0 7 0 0 0]
}

func ExampleCreate() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "weights.zt")

	w, err := ztensor.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := ztensor.AddDenseOf(w, "bias", []uint64{3}, []float64{0.1, 0.2, 0.3}, "raw"); err != nil {
		w.Abort()
		log.Fatal(err)
	}
	if err := w.Finish(); err != nil { // nothing is at path before Finish
		log.Fatal(err)
	}

	r, _ := ztensor.Open(path)
	defer r.Close()
	bias, _ := r.Find("bias")
	fmt.Println(bias.Name, bias.Shape)
	// Output: bias [3]
}

func ExampleCreateWithOptions() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "v2.zt")

	w, err := ztensor.CreateWithOptions(path, ztensor.WriterOptions{
		FileVersion: 2, ZstdLevel: 9, Digest: ztensor.DigestSHA256,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = ztensor.AddDenseOf(w, "x", []uint64{4}, []int32{1, 2, 3, 4}, "zstd")
	if err := w.Finish(); err != nil {
		log.Fatal(err)
	}

	r, _ := ztensor.Open(path)
	defer r.Close()
	x, _ := r.Find("x")
	c, _ := x.Component("data")
	digest, _ := r.ContentDigest("sha256")
	fmt.Println(r.FileVersion(), c.Encoding, c.EncodingID, strings.HasPrefix(digest, "sha256:"))
	// Output: 2 zstd zt.zstd-seekable/1 true
}

func ExampleAppend() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "grow.zt")
	w, _ := ztensor.CreateWithOptions(path, ztensor.WriterOptions{FileVersion: 2})
	_ = ztensor.AddDenseOf(w, "step0", []uint64{2}, []float32{1, 2}, "")
	_ = w.Finish()

	// Add an object to the v2 file; until Finish the old file stays as it was.
	w, err := ztensor.Append(path, ztensor.WriterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	_ = ztensor.AddDenseOf(w, "step1", []uint64{2}, []float32{3, 4}, "")
	if err := w.Finish(); err != nil {
		log.Fatal(err)
	}

	r, _ := ztensor.Open(path)
	defer r.Close()
	for _, o := range r.Objects() {
		fmt.Println(o.Name)
	}
	// Output:
	// step0
	// step1
}

func ExampleReader_Objects() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, err := ztensor.Open(exampleModel(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	for _, o := range r.Objects() {
		var roles []string
		for _, c := range o.Components() {
			roles = append(roles, c.Role+":"+c.Dtype+"/"+c.Encoding)
		}
		fmt.Println(o.Name, o.Format, o.Shape, roles)
	}
	// Output:
	// embedding dense [2 3] [data:f32/zstd]
	// adjacency sparse_csr [2 3] [values:f32/raw indices:u64/raw indptr:u64/raw]
	// points sparse_coo [3 4] [values:f32/raw coords:u64/raw]
}

func ExampleReader_Find() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	emb, err := r.Find("embedding")
	fmt.Println(emb.Name, emb.Index, err)
	_, err = r.Find("missing")
	fmt.Println(errors.Is(err, ztensor.StatusNotFound))
	// Output:
	// embedding 0 <nil>
	// true
}

func ExampleReader_Verify() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	checked, unchecked, err := r.Verify()
	fmt.Println(checked, unchecked, err)
	// Output: 6 0 <nil>
}

func ExampleReader_AttributesJSON() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	attrs, _ := r.AttributesJSON()
	fmt.Println(string(attrs))
	// Output: {"author":"example"}
}

func ExampleReader_DecodeMany() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	var reqs []ztensor.DecodeRequest
	for _, o := range r.Objects() {
		for _, c := range o.Components() {
			reqs = append(reqs, ztensor.DecodeRequest{Object: o.Index, Role: c.Role})
		}
	}
	if err := r.DecodeMany(reqs, 0); err != nil { // 0: all cores
		log.Fatal(err)
	}
	for _, q := range reqs {
		fmt.Print(q.N, " ")
	}
	fmt.Println()
	// Output: 24 12 24 24 12 48
}

func ExampleReader_DecodeRanges() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	// A staging buffer outside Go's heap (a device API's pinned memory in a
	// real loader), filled with every component's bytes back to back.
	staging, _ := syscall.Mmap(-1, 0, 1<<16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	defer syscall.Munmap(staging)
	var ranges []ztensor.DecodeRange
	at := uint64(0)
	for _, o := range r.Objects() {
		for _, c := range o.Components() {
			ranges = append(ranges, ztensor.DecodeRange{Object: o.Index, Role: c.Role,
				Length: c.DecodedSize, Dst: unsafe.Pointer(&staging[at])})
			at += c.DecodedSize
		}
	}
	var done atomic.Int64
	err := r.DecodeRanges(ranges, 0, func(i int, err error) {
		done.Add(1) // a real loader starts range i's device copy here
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Load(), "ranges,", at, "bytes")
	// Output: 6 ranges, 144 bytes
}

func ExampleComponent_Bytes() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, err := ztensor.Open(exampleModel(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close() // the bytes below are valid until this Close

	adj, _ := r.Find("adjacency")
	c, _ := adj.Component("indptr")
	b, err := c.Bytes() // zero-copy: the file mapping itself
	if err != nil {
		log.Fatal(err)
	}
	indptr, _ := ztensor.Elements[uint64](b) // still zero-copy
	fmt.Println(len(b), indptr)
	// Output: 24 [0 2 3]
}

func ExampleComponent_ReadAt() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	emb, _ := r.Find("embedding")
	c, _ := emb.Component("data")

	// A Component is an io.ReaderAt over its decoded bytes (copies).
	var ra io.ReaderAt = c
	p := make([]byte, 8)
	n, err := ra.ReadAt(p, 16)
	v, _ := ztensor.Elements[float32](p)
	fmt.Println(n, err, v)
	n, err = ra.ReadAt(p, 20)
	fmt.Println(n, err)
	// Output:
	// 8 <nil> [0 1]
	// 4 EOF
}

func ExampleComponent_Float32s() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	pts, _ := r.Find("points")
	c, _ := pts.Component("coords")

	v, err := c.Float32s() // u64 coordinates converted by the library
	fmt.Println(v, err)
	// Output: [0 1 2 3 1 0] <nil>
}

func ExampleObject_DecodeFloat32() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()

	for _, name := range []string{"embedding", "adjacency", "points"} {
		o, _ := r.Find(name)
		v, err := o.DecodeFloat32() // dense, sparse or quantized: dense values
		fmt.Println(name, v, err)
	}
	// Output:
	// embedding [0.5 -1 2 3.5 0 1] <nil>
	// adjacency [1 0 2 0 0 3] <nil>
	// points [0 0 0 5 0 6 0 0 7 0 0 0] <nil>
}

func ExampleObject_Dense() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	emb, _ := r.Find("embedding")

	v, err := emb.Dense() // zstd data: decoded once into the reader's cache
	if err != nil {
		log.Fatal(err)
	}
	values, _ := ztensor.Elements[float32](v.Data)
	fmt.Println(v.Dtype, v.Shape, v.ZeroCopy, values)
	// Output: f32 [2 3] false [0.5 -1 2 3.5 0 1]
}

func ExampleObject_CSR() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	adj, _ := r.Find("adjacency")

	v, err := adj.CSR()
	if err != nil {
		log.Fatal(err)
	}
	values, _ := ztensor.Elements[float32](v.Values)
	indices, _ := ztensor.Elements[uint64](v.Indices)
	indptr, _ := ztensor.Elements[uint64](v.Indptr)
	for row := uint64(0); row < v.Rows; row++ {
		for k := indptr[row]; k < indptr[row+1]; k++ {
			fmt.Printf("(%d, %d) = %v\n", row, indices[k], values[k])
		}
	}
	// Output:
	// (0, 0) = 1
	// (0, 2) = 2
	// (1, 2) = 3
}

func ExampleObject_COO() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	pts, _ := r.Find("points")

	v, err := pts.COO()
	if err != nil {
		log.Fatal(err)
	}
	values, _ := ztensor.Elements[float32](v.Values)
	coords, _ := ztensor.Elements[uint64](v.Coords)
	for k := uint64(0); k < v.NNZ; k++ {
		fmt.Printf("(%d, %d) = %v\n", coords[k], coords[v.NNZ+k], values[k])
	}
	// Output:
	// (0, 3) = 5
	// (1, 1) = 6
	// (2, 0) = 7
}

func ExampleObject_Quant() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "quant.zt")
	// A 4-bit GPTQ-style weight [2, 8]: one group, q(0, k) = k, q(1, k) = 15 - k.
	w, _ := ztensor.Create(path)
	_ = w.BeginObject("w", "quantized_group", []uint64{2, 8})
	_ = w.SetObjectAttributesJSON(`{"bits": 4, "group_size": 8, "packing": "8_per_i32"}`)
	_ = w.AddComponent("packed_weight", "i32", "", ztensor.AsBytes([]uint32{0x76543210, 0x89ABCDEF}), "")
	_ = ztensor.AddComponentOf(w, "scales", []float32{0.5, 0.25}, "")
	_ = ztensor.AddComponentOf(w, "zeros", []float32{8, 8}, "")
	if err := w.EndObject(); err != nil {
		log.Fatal(err)
	}
	_ = w.Finish()

	r, _ := ztensor.Open(path)
	defer r.Close()
	o, _ := r.Find("w")
	q, _ := o.Quant()
	fmt.Println(q.Bits, q.GroupSize, q.N, q.K, q.ValuesPerWord)
	v, _ := o.DecodeFloat32() // dequantised
	fmt.Println(v)
	// Output:
	// 4 8 2 8 8
	// [-4 -3.5 -3 -2.5 -2 -1.5 -1 -0.5 1.75 1.5 1.25 1 0.75 0.5 0.25 0]
}

func ExampleObject_DenseSlice() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	emb, _ := r.Find("embedding")

	// The box [0, 2) x [1, 3): column 1 and 2 of both rows.
	b, err := emb.DenseSlice([]uint64{0, 1}, []uint64{2, 3})
	if err != nil {
		log.Fatal(err)
	}
	v, _ := ztensor.Elements[float32](b)
	f, _ := emb.DenseSliceFloat32([]uint64{1, 0}, []uint64{2, 2})
	fmt.Println(v, f)
	// Output: [-1 2 0 1] [3.5 0]
}

func ExampleObject_DenseRows() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	r, _ := ztensor.Open(exampleModel(dir))
	defer r.Close()
	emb, _ := r.Find("embedding")

	b, _ := emb.DenseRows(1, 2) // a copy of row 1
	v, _ := ztensor.Elements[float32](b)
	fmt.Println(v)
	// Output: [3.5 0 1]
}

func ExampleWriter_AddDense() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	w, _ := ztensor.Create(filepath.Join(dir, "dense.zt"))
	defer w.Abort() // a no-op after Finish

	// Bytes and a dtype; AsBytes views numbers as bytes without a copy.
	ids := []int64{7, 8, 9, 10}
	err := w.AddDense("ids", "i64", []uint64{2, 2}, ztensor.AsBytes(ids), "zstd")
	fmt.Println(err)
	// bf16 has no Go type: its bit patterns as uint16.
	err = w.AddDense("half", "bf16", []uint64{2}, ztensor.AsBytes([]uint16{0x3f80, 0x4000}), "")
	fmt.Println(err)
	// The size must match the shape.
	err = w.AddDense("bad", "f32", []uint64{3}, make([]byte, 8), "")
	fmt.Println(errors.Is(err, ztensor.StatusArgument))
	fmt.Println(w.Finish())
	// Output:
	// <nil>
	// <nil>
	// true
	// <nil>
}

func ExampleWriter_BeginObject() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sparse.zt")
	w, _ := ztensor.Create(path)

	// [[0, 1.5], [2.5, 0]] as CSR
	_ = w.BeginObject("m", "sparse_csr", []uint64{2, 2})
	_ = w.SetObjectAttributesJSON(`{"source": "example"}`)
	_ = ztensor.AddComponentOf(w, "values", []float64{1.5, 2.5}, "")
	_ = ztensor.AddComponentOf(w, "indices", []uint64{1, 0}, "")
	_ = ztensor.AddComponentOf(w, "indptr", []uint64{0, 1, 2}, "")
	fmt.Println(w.EndObject()) // checks the CSR structure
	fmt.Println(w.Finish())

	r, _ := ztensor.Open(path)
	defer r.Close()
	m, _ := r.Find("m")
	v, _ := m.DecodeFloat64()
	attrs, _ := m.AttributesJSON()
	fmt.Println(v, string(attrs))
	// Output:
	// <nil>
	// <nil>
	// [0 1.5 2.5 0] {"source":"example"}
}

func ExampleWriter_BeginComponent() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "stream.zt")
	w, _ := ztensor.Create(path)

	// Stream 1 MiB of bytes without holding them in memory at once.
	const size = 1 << 20
	_ = w.BeginObject("blob", "dense", []uint64{size})
	cw, err := w.BeginComponent("data", "u8", "", size, "zstd")
	if err != nil {
		log.Fatal(err)
	}
	n, err := io.Copy(cw, io.LimitReader(zeros{}, size)) // any io.Reader
	fmt.Println(n, err)
	fmt.Println(cw.End(), w.EndObject(), w.Finish())

	r, _ := ztensor.Open(path)
	defer r.Close()
	blob, _ := r.Find("blob")
	c, _ := blob.Component("data")
	fmt.Println(c.DecodedSize, c.StoredSize < 1000)
	// Output:
	// 1048576 <nil>
	// <nil> <nil> <nil>
	// 1048576 true
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

func ExampleError() {
	_, err := ztensor.Open(filepath.Join(os.TempDir(), "ztensor-no-such-file.zt"))
	var e *ztensor.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Status == ztensor.StatusIO, e.Message != "")
	}
	fmt.Println(errors.Is(err, ztensor.StatusIO))
	// Output:
	// ZT_ERR_IO true true
	// true
}

func ExampleElements() {
	b := ztensor.AsBytes([]float64{1.5, -2})
	v, err := ztensor.Elements[float64](b) // the same memory, no copy
	fmt.Println(len(b), v, err)
	_, err = ztensor.Elements[float64](b[:12])
	fmt.Println(errors.Is(err, ztensor.StatusArgument))
	// Output:
	// 16 [1.5 -2] <nil>
	// true
}

func ExampleVersion() {
	v := ztensor.Version() // the linked library's, e.g. "1.0.0"
	fmt.Println(len(strings.Split(v, ".")), ztensor.VersionNumber()/10000 == ztensor.HeaderVersionNumber/10000)
	// Output: 3 true
}

func ExampleCPUCount() {
	n := ztensor.CPUCount() // the threads a decode uses by default
	fmt.Println(n >= 1 && n <= runtime.NumCPU())
	// Output: true
}
