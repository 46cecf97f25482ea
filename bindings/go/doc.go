// Package ztensor reads and writes zTensor (.zt) files through libztensor,
// the C library libztensor.so.1 (its C ABI, ztensor.h), with cgo.
//
// A zTensor file holds named tensors (objects): dense, sparse (CSR, COO),
// group-quantized, FP8 or complex, optionally zstd-compressed, with
// digests. The package builds against the installed library through
// pkg-config (`#cgo pkg-config: zt`); see README.md for the set-up.
//
// # Reading
//
//	r, err := ztensor.Open("model.zt")
//	if err != nil { ... }
//	defer r.Close()
//	for _, obj := range r.Objects() {
//		fmt.Println(obj.Name, obj.Format, obj.Shape)
//	}
//	w, err := r.Find("layer.weight")
//	data, err := w.Component("data")
//	b, err := data.Bytes()                 // zero-copy, valid until Close
//	f, err := ztensor.Elements[float32](b) // the same memory as []float32
//	v, err := w.DecodeFloat32()            // any object as dense float32s (a copy)
//
// Open, OpenWithOptions (copy mode, foreign formats such as safetensors or
// GGUF), OpenMemory, OpenURL (HTTP range requests) and OpenSource (any
// io.ReaderAt) give a *Reader. Objects are described by Object values
// (name, format, shape), their components by Component values (role, dtype,
// encoding, sizes). Data comes out as
//   - zero-copy bytes: Component.Bytes, the views Object.Dense, Object.CSR,
//     Object.COO, Object.Quant, and Object.DenseRowsMap;
//   - copies: Component.ReadAt (io.ReaderAt), Component.NewReader,
//     Component.ReadInto, Object.DenseRows, Object.DenseSlice,
//     Reader.DecodeMany (a whole model on every core, decoded straight
//     into Go memory); Reader.DecodeRanges into memory outside Go's heap;
//   - numbers converted by the library: Component.Float32s,
//     Object.ReadFloat32, Object.DecodeFloat32, Object.DenseSliceFloat32,
//     Object.DenseRowsFloat32 and their Float64 twins.
//
// Reader.Verify checks every digest and content rule; Reader.ContentDigest
// identifies a v2 model's tensors.
//
// # Lifetimes
//
// Zero-copy bytes are the library's memory (the file mapping or the
// reader's decode cache), not Go's: they stay valid and unchanged until
// Reader.Close and MUST NOT be used after it. Keep the Reader reachable
// while using them (a deferred Close does that). A Reader dropped without
// Close is closed by a finalizer, unless it handed out zero-copy bytes: Go
// cannot tell whether they are still read, so such a Reader is never freed
// (a leak, not a use after free). Everything else the package returns
// (strings, shapes, copies) is ordinary Go memory.
//
// A Reader is safe for concurrent use by several goroutines. Close waits
// for calls in progress and refuses calls made once it has begun (so a call
// nested in another, as in a DecodeRanges callback, never waits for it);
// calls after Close that return an error fail with StatusState
// (NumObjects gives 0, Objects nil).
//
// # Writing
//
//	w, err := ztensor.Create("model.zt")
//	err = ztensor.AddDenseOf(w, "layer.weight", []uint64{2, 3}, weights, "zstd")
//	err = w.BeginObject("adjacency", "sparse_csr", []uint64{2, 3})
//	err = ztensor.AddComponentOf(w, "values", values, "")
//	...
//	err = w.EndObject()
//	err = w.Finish() // nothing appears at the path before this
//
// A Writer belongs to one goroutine at a time. Large components can be
// streamed with Writer.BeginComponent, whose ComponentWriter is an
// io.Writer. Finish must be called: an unfinished Writer is aborted by a
// finalizer and its data lost.
//
// # Errors
//
// Every fallible call returns an *Error with the library's Status and its
// message (which names the object, component, rule and numbers involved).
// The C library keeps the message per thread; the package reads it on the
// thread that made the call, so callers need not care. Status implements
// error: errors.Is(err, ztensor.StatusNotFound) tests the kind.
package ztensor
