package ztensor

/*
#include <ztensor.h>
*/
import "C"

import (
	"math"
	"runtime"
	"sync"
)

// Writer writes a zTensor file. It writes to a temporary file beside the
// path; Finish publishes it with a rename, so a crash, Abort or an
// unfinished Writer never leaves a half-written file at the path.
//
// YOU MUST CALL Finish to keep what was written (or Abort to drop it). A
// Writer dropped unfinished is aborted by a finalizer, which removes the
// temporary file and loses the data.
//
// A Writer is meant for one goroutine at a time, as the C writer is. Its
// methods lock a mutex, so misuse from several goroutines cannot corrupt
// memory, but the order of their objects is then undefined. Data passed in
// is only read during the call.
type Writer struct {
	mu  sync.Mutex
	ptr *C.zt_writer     // nil once finished or aborted
	cw  *ComponentWriter // the component being streamed, if any
}

// Digest is the digest algorithm of a Writer (zt_digest_algo).
type Digest int

const (
	DigestXXH3   Digest = 0 // "xxh3:" + 16 hex digits (XXH3-64), the default
	DigestSHA256 Digest = 1 // "sha256:" + 64 hex digits
	DigestNone   Digest = 2 // no digests
)

// Each constant equals its zt_digest_algo (as for Status).
var (
	_ [0]int = [DigestXXH3 - C.ZT_DIGEST_XXH3]int{}
	_ [0]int = [DigestSHA256 - C.ZT_DIGEST_SHA256]int{}
	_ [0]int = [DigestNone - C.ZT_DIGEST_NONE]int{}
)

// WriterOptions for CreateWithOptions and Append (zt_writer_options). The
// zero value gives the library's defaults.
type WriterOptions struct {
	// ZstdLevel is the zstd compression level (0: the default, 3; negative:
	// fast modes). A level outside int32 is refused with StatusArgument.
	ZstdLevel int
	Threads   int    // compression threads (0: all cores)
	Digest    Digest // DigestXXH3 (default), DigestSHA256 or DigestNone
	FrameSize uint64 // bytes of input per zstd frame (0: 1 MiB; 1 KiB .. 256 MiB)
	// AutoMinRatio: encoding "auto" keeps zstd (or byte planes) only if
	// stored <= ratio x raw, from 0 to 1e6. The zero value means the
	// library's default, 0.9; AutoMinRatioZero asks for a ratio of 0 ("auto"
	// then writes raw). Other negative values are refused with
	// StatusArgument.
	AutoMinRatio float64
	// FileVersion of the container: 0 = spec 1.2.0 (default), 2 = zTensor v2.
	FileVersion int
	// Alignment of blobs in a v2 file, a multiple of 4096 (0: 65536).
	Alignment uint64
	// Canonical writes the v2 canonical form: the same tensors always give
	// the same bytes (objects begun in bytewise name order, components in
	// role order; needs FileVersion 2).
	Canonical bool
	// ShardBytes splits a v2 model into data shards of at most this many
	// bytes beside the root (0: one file).
	ShardBytes uint64
}

// AutoMinRatioZero is the WriterOptions.AutoMinRatio that asks for a
// ratio of 0, which the field's zero value cannot (it means the default):
// encoding "auto" then never keeps zstd or byte planes.
const AutoMinRatioZero = -1.0

func (o WriterOptions) c() (C.zt_writer_options, error) {
	var c C.zt_writer_options
	C.zt_writer_options_init_sized(&c, C.sizeof_zt_writer_options)
	if o.Threads < 0 || o.FileVersion < 0 || (o.AutoMinRatio < 0 && o.AutoMinRatio != AutoMinRatioZero) {
		return c, errorf(StatusArgument, "negative Threads, FileVersion or AutoMinRatio (AutoMinRatioZero asks for 0)")
	}
	if int64(o.ZstdLevel) < math.MinInt32 || int64(o.ZstdLevel) > math.MaxInt32 {
		return c, errorf(StatusArgument, "ZstdLevel %d is outside int32", o.ZstdLevel)
	}
	if o.ZstdLevel != 0 {
		c.zstd_level = C.int32_t(o.ZstdLevel)
	}
	c.threads = clampU32(int64(o.Threads))
	c.digest = C.uint32_t(o.Digest)
	if o.FrameSize != 0 {
		c.frame_size = C.uint64_t(o.FrameSize)
	}
	switch o.AutoMinRatio {
	case 0: // the default
	case AutoMinRatioZero:
		c.auto_min_ratio = 0
	default:
		c.auto_min_ratio = C.double(o.AutoMinRatio)
	}
	c.file_version = clampU32(int64(o.FileVersion))
	c.alignment = C.uint64_t(o.Alignment)
	c.canonical = cBool(o.Canonical)
	c.shard_bytes = C.uint64_t(o.ShardBytes)
	return c, nil
}

// Create starts a file at path with the default options (spec 1.2.0,
// xxh3 digests, zstd level 3). Nothing appears at path before Finish.
func Create(path string) (*Writer, error) {
	var cs cstrings
	defer cs.free()
	cpath := cs.str("path", path)
	if cs.err != nil {
		return nil, cs.err
	}
	var p *C.zt_writer
	if err := call(func() C.zt_status { return C.zt_writer_open(cpath, &p) }); err != nil {
		return nil, err
	}
	return newWriter(p), nil
}

// CreateWithOptions is Create with options (zt_writer_open_ex).
func CreateWithOptions(path string, opt WriterOptions) (*Writer, error) {
	return openWriter(path, opt, false)
}

// Append opens an existing zTensor v2 file to add objects to it
// (zt_writer_open_append): an object of the name of one of the file's own
// objects replaces it. The file is copied beside itself and renamed back at
// Finish, so until then, and after Abort or a failure, the previous
// generation stays as it was. opt.FileVersion must be 0 or 2; Canonical and
// ShardBytes are refused. StatusUnsupported for a 1.x file.
func Append(path string, opt WriterOptions) (*Writer, error) {
	return openWriter(path, opt, true)
}

func openWriter(path string, opt WriterOptions, appending bool) (*Writer, error) {
	var cs cstrings
	defer cs.free()
	cpath := cs.str("path", path)
	if cs.err != nil {
		return nil, cs.err
	}
	o, err := opt.c()
	if err != nil {
		return nil, err
	}
	var p *C.zt_writer
	if err := call(func() C.zt_status {
		if appending {
			return C.zt_writer_open_append(cpath, &o, &p)
		}
		return C.zt_writer_open_ex(cpath, &o, &p)
	}); err != nil {
		return nil, err
	}
	return newWriter(p), nil
}

func newWriter(p *C.zt_writer) *Writer {
	w := &Writer{ptr: p}
	runtime.SetFinalizer(w, (*Writer).Abort)
	return w
}

func errFinished() error {
	return errorf(StatusState, "the writer is finished or aborted")
}

// with runs f with the C writer under the writer's lock.
func (w *Writer) with(f func(p *C.zt_writer, cs *cstrings) error) error {
	if w == nil {
		return errFinished()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ptr == nil {
		return errFinished()
	}
	var cs cstrings
	defer cs.free()
	err := f(w.ptr, &cs)
	runtime.KeepAlive(w)
	return err
}

// AddDense adds a dense object with one "data" component: data holds
// product(shape) little-endian elements of dtype ("f32", "i64", "bf16",
// "bool", ...), shape is empty for a scalar. encoding is "raw", "zstd" or
// "auto" ("" = "raw"). AsBytes turns a []float32 (...) into data;
// AddDenseOf does that and picks the dtype.
func (w *Writer) AddDense(name, dtype string, shape []uint64, data []byte, encoding string) error {
	return w.with(func(p *C.zt_writer, cs *cstrings) error {
		cname, cdtype, cenc := cs.str("object name", name), cs.str("dtype", dtype), cs.opt("encoding", encoding)
		if cs.err != nil {
			return cs.err
		}
		sp, nd := shapeArg(shape)
		ptr, n := bytesArg(data)
		return call(func() C.zt_status { return C.zt_writer_add_dense(p, cname, cdtype, sp, nd, ptr, n, cenc) })
	})
}

// AddDenseOf adds a dense object of numbers, the dtype taken from T
// (float32 -> "f32", ...).
func AddDenseOf[T Number](w *Writer, name string, shape []uint64, data []T, encoding string) error {
	return w.AddDense(name, DtypeOf[T](), shape, AsBytes(data), encoding)
}

// BeginObject starts an object of any format ("dense", "sparse_csr",
// "sparse_coo", "quantized_group", or another): add its components with
// AddComponent or BeginComponent, its attributes with
// SetObjectAttributesJSON, then EndObject (or CancelObject).
func (w *Writer) BeginObject(name, format string, shape []uint64) error {
	return w.with(func(p *C.zt_writer, cs *cstrings) error {
		cname, cformat := cs.str("object name", name), cs.str("format", format)
		if cs.err != nil {
			return cs.err
		}
		sp, nd := shapeArg(shape)
		return call(func() C.zt_status { return C.zt_writer_begin_object(p, cname, cformat, sp, nd) })
	})
}

// AddComponent adds one component to the object begun last: data holds
// little-endian elements of dtype; typ is a logical type ("complex64",
// "f8_e4m3fn", ...) or ""; encoding "raw", "zstd", "auto" or (v2) "planes" ("" = "raw").
func (w *Writer) AddComponent(role, dtype, typ string, data []byte, encoding string) error {
	return w.with(func(p *C.zt_writer, cs *cstrings) error {
		crole, cdtype := cs.str("role", role), cs.str("dtype", dtype)
		ctype, cenc := cs.opt("type", typ), cs.opt("encoding", encoding)
		if cs.err != nil {
			return cs.err
		}
		ptr, n := bytesArg(data)
		return call(func() C.zt_status { return C.zt_writer_add_component(p, crole, cdtype, ctype, ptr, n, cenc) })
	})
}

// AddComponentOf adds a component of numbers, the dtype taken from T.
func AddComponentOf[T Number](w *Writer, role string, data []T, encoding string) error {
	return w.AddComponent(role, DtypeOf[T](), "", AsBytes(data), encoding)
}

// EndObject checks the object against its format (dense size, CSR/COO
// structure, quantized_group sizes and attributes) and keeps it; a broken
// object fails with StatusInvalid and is dropped, the Writer staying
// usable.
func (w *Writer) EndObject() error {
	return w.with(func(p *C.zt_writer, _ *cstrings) error {
		return call(func() C.zt_status { return C.zt_writer_end_object(p) })
	})
}

// CancelObject drops the object begun last with every component added to
// it so far, a component being streamed included: its ComponentWriter is
// ended (StatusState from then on), so that it cannot write into a
// component begun later. StatusState if no object is begun.
func (w *Writer) CancelObject() error {
	return w.with(func(p *C.zt_writer, _ *cstrings) error {
		err := call(func() C.zt_status { return C.zt_writer_cancel_object(p) })
		if err == nil && w.cw != nil {
			w.cw.done = true
			w.cw = nil
		}
		return err
	})
}

// SetFileAttributesJSON sets the file's attributes from a JSON object text,
// stored as CBOR (integers stay integers, floats floats).
func (w *Writer) SetFileAttributesJSON(json string) error {
	return w.setAttributes(json, false)
}

// SetObjectAttributesJSON sets the attributes of the object begun last.
func (w *Writer) SetObjectAttributesJSON(json string) error {
	return w.setAttributes(json, true)
}

func (w *Writer) setAttributes(json string, object bool) error {
	return w.with(func(p *C.zt_writer, cs *cstrings) error {
		cjson := cs.str("attributes JSON", json)
		if cs.err != nil {
			return cs.err
		}
		return call(func() C.zt_status {
			if object {
				return C.zt_writer_set_object_attributes_json(p, cjson)
			}
			return C.zt_writer_set_file_attributes_json(p, cjson)
		})
	})
}

// SetFileAttributesCBOR sets the file's attributes from one encoded CBOR
// map with text keys, stored byte for byte (every CBOR value survives:
// NaN, byte strings, integers to +-2^64). The bytes are copied.
func (w *Writer) SetFileAttributesCBOR(cbor []byte) error {
	return w.setAttributesCBOR(cbor, false)
}

// SetObjectAttributesCBOR sets the attributes of the object begun last
// from one encoded CBOR map.
func (w *Writer) SetObjectAttributesCBOR(cbor []byte) error {
	return w.setAttributesCBOR(cbor, true)
}

func (w *Writer) setAttributesCBOR(cbor []byte, object bool) error {
	return w.with(func(p *C.zt_writer, _ *cstrings) error {
		ptr, n := bytesArg(cbor)
		return call(func() C.zt_status {
			if object {
				return C.zt_writer_set_object_attributes_cbor(p, ptr, C.size_t(n))
			}
			return C.zt_writer_set_file_attributes_cbor(p, ptr, C.size_t(n))
		})
	})
}

// Finish writes the manifest and footer, syncs, and renames the file into
// place. The Writer is spent either way: on failure the temporary file is
// removed and the path left as it was. Calling it again gives StatusState.
func (w *Writer) Finish() error {
	if w == nil {
		return errFinished()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.ptr
	if p == nil {
		return errFinished()
	}
	w.ptr = nil
	if w.cw != nil {
		w.cw.done = true
	}
	runtime.SetFinalizer(w, nil)
	return call(func() C.zt_status { return C.zt_writer_finish(p) })
}

// Abort drops everything written: the temporary file is removed, the path
// left as it was. It does nothing on a finished or aborted Writer.
func (w *Writer) Abort() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ptr != nil {
		C.zt_writer_abort(w.ptr)
		w.ptr = nil
		if w.cw != nil {
			w.cw.done = true
		}
		runtime.SetFinalizer(w, nil)
	}
}

// ComponentWriter streams one component of any size in pieces (an
// io.Writer); peak memory stays at about FrameSize x Threads. End it with
// End.
type ComponentWriter struct {
	w    *Writer
	done bool
}

// BeginComponent starts streaming a component of the object begun last:
// decodedSize is the total byte count the writes will add up to (checked
// at End); typ is a logical type or ""; encoding "raw", "zstd", "auto" or (v2) "planes"
// ("" = "raw").
func (w *Writer) BeginComponent(role, dtype, typ string, decodedSize uint64, encoding string) (*ComponentWriter, error) {
	var cw *ComponentWriter
	err := w.with(func(p *C.zt_writer, cs *cstrings) error {
		crole, cdtype := cs.str("role", role), cs.str("dtype", dtype)
		ctype, cenc := cs.opt("type", typ), cs.opt("encoding", encoding)
		if cs.err != nil {
			return cs.err
		}
		if err := call(func() C.zt_status {
			return C.zt_writer_begin_component(p, crole, cdtype, ctype, cenc, C.uint64_t(decodedSize))
		}); err != nil {
			return err
		}
		if w.cw != nil {
			w.cw.end() // the library allows one component at a time: that one is over
		}
		cw = &ComponentWriter{w: w}
		w.cw = cw
		return nil
	})
	return cw, err
}

// Write adds the next bytes of the component (zt_writer_write). It writes
// all of p or fails, returning 0. A refused Write ends the component: the
// library drops it (its object stays open) or the writer has failed, so
// every later Write and End of this ComponentWriter gives StatusState, and
// none lands in a component begun after it.
func (cw *ComponentWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	err := cw.w.with(func(wp *C.zt_writer, _ *cstrings) error {
		if cw.done {
			return errorf(StatusState, "the component is ended")
		}
		ptr, n := bytesArg(p)
		err := call(func() C.zt_status { return C.zt_writer_write(wp, ptr, n) })
		if err != nil {
			cw.end()
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// End ends the component, checking that the writes added up to its
// decoded size.
func (cw *ComponentWriter) End() error {
	return cw.w.with(func(wp *C.zt_writer, _ *cstrings) error {
		if cw.done {
			return errorf(StatusState, "the component is ended")
		}
		cw.end()
		return call(func() C.zt_status { return C.zt_writer_end_component(wp) })
	})
}

// end marks the component as over, under the writer's lock.
func (cw *ComponentWriter) end() {
	cw.done = true
	if cw.w.cw == cw {
		cw.w.cw = nil
	}
}
