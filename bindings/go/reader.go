package ztensor

/*
#include <stdlib.h>
#include <ztensor.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Reader is an open zTensor file (or a foreign checkpoint, a buffer, a URL,
// a byte source). Open one with Open, OpenWithOptions, OpenMemory, OpenURL
// or OpenSource, and Close it when done.
//
// A Reader is safe for concurrent use by several goroutines, as the C
// reader is. Close waits for calls in progress in other goroutines; calls
// after Close that return an error fail with StatusState instead of touching
// freed memory, NumObjects gives 0 and Objects nil, and FileVersion,
// FileFormat and the descriptions already returned (Object, Component
// values) stay usable.
//
// Memory handed out without a copy (Component.Bytes, the views, DenseRowsMap)
// belongs to the C library and stays valid, unchanged, until Close. Keep
// the Reader reachable while it is used: `defer r.Close()` does that. A
// Reader that is never closed is closed by a finalizer once it becomes
// unreachable, unless it handed out such memory: Go cannot tell whether a
// slice of it is still in use, so that Reader is never freed (its memory
// and descriptors leak) rather than freed under a slice being read.
type Reader struct {
	// mu guards ptr, inUse and closing; idle is signalled when inUse drops
	// to 0. Not a sync.RWMutex: a waiting writer (Close) blocks new read
	// locks, so a call made from inside another (a DecodeRanges callback)
	// deadlocked while a Close waited. Once Close begins, new calls are
	// refused (StatusState) and the ones in progress finish.
	mu      sync.Mutex
	idle    sync.Cond
	inUse   int
	closing bool
	ptr     *C.zt_reader   // nil once closed
	mem     unsafe.Pointer // OpenMemory's copy of the caller's bytes, freed at Close
	src     *sourceState   // OpenSource's callback state (for error messages)
	// lent: memory was handed out without a copy, so the finalizer must
	// not free it (only Close may).
	lent atomic.Bool

	version, format string

	attrsOnce sync.Once
	attrs     *jsonAttributes
	attrsErr  error
}

// Options for OpenWithOptions (zt_open_options). The zero value gives the
// library's defaults.
type Options struct {
	// CopyMode reads data with pread(2) into buffers the reader owns
	// (ZT_IO_COPY) instead of mapping the file: for files that may change
	// while open, where a mapping would raise SIGBUS.
	CopyMode bool
	// MaxDecodedBytes caps one component's decoded size (0: the library's
	// build limit, 64 GiB by default); reads over it fail with StatusLimit.
	MaxDecodedBytes uint64
	// AllowForeign lets a path ending in .safetensors, .gguf, .npy, .npz,
	// .pt, .pth, .bin, .ckpt, .onnx or .index.json (a sharded Hugging Face
	// checkpoint) be read by that format's reader, as a read-only zTensor
	// file (FileFormat names the format); and a Hugging Face model's folder,
	// or its config.json, by the reader of model.safetensors.index.json,
	// else model.safetensors, in it (StatusNotFound when it holds neither).
	AllowForeign bool
}

// openOptions is a zt_open_options with the library's defaults.
func openOptions() C.zt_open_options {
	var o C.zt_open_options
	C.zt_open_options_init_sized(&o, C.sizeof_zt_open_options)
	return o
}

func (o Options) apply(c *C.zt_open_options) {
	if o.CopyMode {
		c.io_mode = C.ZT_IO_COPY
	}
	c.max_decoded_bytes = C.uint64_t(o.MaxDecodedBytes)
	c.allow_foreign = cBool(o.AllowForeign)
}

// Open opens a zTensor file: the container and the whole manifest are
// checked, no data byte is read, and data is served from a read-only
// memory mapping. Files of the 1.x and 0.1 generations and zTensor v2
// files (sharded ones by their root) are read.
func Open(path string) (*Reader, error) {
	var cs cstrings
	defer cs.free()
	cpath := cs.str("path", path)
	if cs.err != nil {
		return nil, cs.err
	}
	var p *C.zt_reader
	if err := call(func() C.zt_status { return C.zt_open(cpath, &p) }); err != nil {
		return nil, err
	}
	return newReader(p, nil, nil), nil
}

// OpenWithOptions is Open with options (zt_open_ex).
func OpenWithOptions(path string, opt Options) (*Reader, error) {
	var cs cstrings
	defer cs.free()
	cpath := cs.str("path", path)
	if cs.err != nil {
		return nil, cs.err
	}
	o := openOptions()
	opt.apply(&o)
	var p *C.zt_reader
	if err := call(func() C.zt_status { return C.zt_open_ex(cpath, &o, &p) }); err != nil {
		return nil, err
	}
	return newReader(p, nil, nil), nil
}

// OpenMemory opens a zTensor file held in memory. The bytes are copied
// into memory the Reader owns (C memory, 64-byte aligned, freed at Close),
// so data may be changed or dropped by the caller as soon as OpenMemory
// returns. Parts of a sharded v2 model cannot be found from memory.
func OpenMemory(data []byte) (*Reader, error) {
	mem, err := cAlloc(uint64(len(data)), "OpenMemory")
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		copy(unsafe.Slice((*byte)(mem), len(data)), data)
	}
	var p *C.zt_reader
	if err := call(func() C.zt_status { return C.zt_open_memory(mem, C.size_t(len(data)), &p) }); err != nil {
		cFree(mem)
		return nil, err
	}
	return newReader(p, mem, nil), nil
}

func newReader(p *C.zt_reader, mem unsafe.Pointer, src *sourceState) *Reader {
	r := &Reader{ptr: p, mem: mem, src: src}
	r.version = goString(C.zt_file_version(p))
	r.format = goString(C.zt_file_format(p))
	runtime.SetFinalizer(r, (*Reader).finalize)
	return r
}

// finalize closes a Reader dropped without Close, unless it lent memory
// (Component.Bytes, the views, DenseRowsMap) that a slice may still be
// reading: then it is left open, a leak instead of a use after free.
func (r *Reader) finalize() {
	if !r.lent.Load() {
		r.Close()
	}
}

// lend wraps n bytes of the reader's memory at p as a slice, without a
// copy, to hand out: see handOut.
func (r *Reader) lend(p unsafe.Pointer, n uint64, what string) ([]byte, error) {
	b, err := cBytes(p, n, what)
	if err != nil {
		return nil, err
	}
	return r.handOut(b), nil
}

// handOut marks the reader as having lent memory, b being the reader's
// memory that a call returns to its caller, and gives b. Only such calls
// (Component.Bytes, the views, DenseRowsMap) mark it: those that read the
// reader's memory under the lock and copy (ReadAt, Size, Float32s,
// DecodeMany) leave the finalizer free to close the reader.
func (r *Reader) handOut(b []byte) []byte {
	if len(b) > 0 {
		r.lent.Store(true)
	}
	return b
}

// Close releases the reader and everything it handed out without a copy
// (Component.Bytes, views, DenseRowsMap). It waits for calls in progress in
// other goroutines. Calling it again does nothing; it always returns nil.
func (r *Reader) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing = true
	r.idle.L = &r.mu
	for r.inUse > 0 {
		r.idle.Wait()
	}
	if r.ptr != nil {
		C.zt_close(r.ptr)
		r.ptr = nil
		runtime.SetFinalizer(r, nil)
	}
	if r.mem != nil {
		cFree(r.mem)
		r.mem = nil
	}
	return nil
}

func errClosed() error {
	return errorf(StatusState, "the reader is closed")
}

// with runs f with the C reader, counted as in use so that Close waits for
// it. Calls may nest (f, or a callback f causes, may call methods of r):
// once Close has begun, a new call is refused instead of waiting. For an
// OpenSource reader, f is one call of the source's error attribution
// (sourceState.begin, end).
func (r *Reader) with(f func(p *C.zt_reader) error) (err error) {
	if r == nil {
		return errorf(StatusState, "no reader (a zero Object or Component?)")
	}
	r.mu.Lock()
	if r.ptr == nil || r.closing {
		r.mu.Unlock()
		return errClosed()
	}
	r.inUse++
	p := r.ptr
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inUse--
		if r.inUse == 0 && r.closing {
			r.idle.Broadcast()
		}
		r.mu.Unlock()
	}()
	if r.src != nil {
		start := r.src.begin()
		defer func() { err = r.src.end(start, err) }()
	}
	err = f(p)
	runtime.KeepAlive(r)
	return err
}

// checkOpen is StatusState after Close, for calls that answer from Go
// copies.
func (r *Reader) checkOpen() error {
	return r.with(func(*C.zt_reader) error { return nil })
}

// Version is the version of the linked library, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.zt_version()) }

// VersionNumber is the linked library's version as MAJOR*10000 +
// MINOR*100 + PATCH.
func VersionNumber() int { return int(C.zt_version_number()) }

// CPUCount is how many threads "all cores" (threads = 0) means in the
// library's calls: the CPUs this process may run on, bounded by its
// cgroup's CPU quota, at least 1; found once per process (zt_cpu_count).
// Go's runtime.NumCPU counts the affinity mask only.
func CPUCount() int { return int(C.zt_cpu_count()) }

// HeaderVersionNumber is the version of the ztensor.h this package was
// built with, as VersionNumber counts it.
const HeaderVersionNumber = C.ZT_VERSION_NUMBER

// FileVersion is the version the file states: "1.2.0", "1.1.0", "1.0",
// "0.1.0", "2" for zTensor v2, "" for a foreign file. It is read at open
// and still answers after Close.
func (r *Reader) FileVersion() string { return r.version }

// FileFormat is what the reader reads: "zt" for a zTensor file, else the
// foreign format ("safetensors", "gguf", "npy", "npz", "pytorch",
// "hf_index"). It is read at open and still answers after Close.
func (r *Reader) FileFormat() string { return r.format }

// ManifestJSON is the whole manifest as one JSON document in the 1.2.0
// vocabulary: {"version", "attributes", "objects": {name: {"shape",
// "format", "attributes", "components": {role: {...}}}}}.
func (r *Reader) ManifestJSON() (string, error) {
	var s string
	err := r.with(func(p *C.zt_reader) error {
		m := C.zt_manifest_json(p)
		if m == nil {
			return errorf(StatusNoMem, "the manifest JSON could not be built")
		}
		s = C.GoString(m)
		return nil
	})
	return s, err
}

// Attributes are the file's attributes as one encoded CBOR map, exactly as
// stored (a copy). nil without attributes. AttributesJSON gives them as
// JSON, which loses the distinctions only CBOR makes (NaN, byte strings,
// integers beyond 2^53).
func (r *Reader) Attributes() ([]byte, error) {
	var out []byte
	err := r.with(func(p *C.zt_reader) error {
		var data unsafe.Pointer
		var n C.size_t
		if err := call(func() C.zt_status { return C.zt_file_attributes_cbor(p, &data, &n) }); err != nil {
			return err
		}
		var err error
		out, err = copyBytes(data, uint64(n), "the file's attributes")
		return err
	})
	return out, err
}

// jsonAttributes are the attributes of the manifest JSON.
type jsonAttributes struct {
	Attributes json.RawMessage `json:"attributes"`
	Objects    map[string]struct {
		Attributes json.RawMessage `json:"attributes"`
	} `json:"objects"`
}

func (r *Reader) jsonAttributes() (*jsonAttributes, error) {
	r.attrsOnce.Do(func() {
		m, err := r.ManifestJSON()
		if err != nil {
			r.attrsErr = err
			return
		}
		var a jsonAttributes
		if err := json.Unmarshal([]byte(m), &a); err != nil {
			r.attrsErr = errorf(StatusFormat, "the manifest JSON does not parse: %v", err)
			return
		}
		r.attrs = &a
	})
	return r.attrs, r.attrsErr
}

func orEmptyObject(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("{}")
	}
	return m
}

// AttributesJSON are the file's attributes as a JSON object ("{}" without
// attributes), taken from ManifestJSON. StatusState after Close.
func (r *Reader) AttributesJSON() (json.RawMessage, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	a, err := r.jsonAttributes()
	if err != nil {
		return nil, err
	}
	return orEmptyObject(a.Attributes), nil
}

// NumObjects is the number of objects (0 after Close).
func (r *Reader) NumObjects() int {
	n := 0
	r.with(func(p *C.zt_reader) error {
		n = int(C.zt_object_count(p))
		return nil
	})
	return n
}

// Objects lists the objects in manifest order (nil after Close). The
// Object values copy the names, formats and shapes; their methods reach
// the data through the Reader.
func (r *Reader) Objects() []Object {
	var objs []Object
	r.with(func(p *C.zt_reader) error {
		objs = make([]Object, int(C.zt_object_count(p)))
		for i := range objs {
			objs[i] = r.object(p, i)
		}
		return nil
	})
	return objs
}

// Object is the object at index i of Objects.
func (r *Reader) Object(i int) (Object, error) {
	var o Object
	err := r.with(func(p *C.zt_reader) error {
		if n := int(C.zt_object_count(p)); i < 0 || i >= n {
			return errorf(StatusNotFound, "object index %d is out of range (%d objects)", i, n)
		}
		o = r.object(p, i)
		return nil
	})
	return o, err
}

// Find is the object called name; StatusNotFound if there is none.
func (r *Reader) Find(name string) (Object, error) {
	var o Object
	err := r.with(func(p *C.zt_reader) error {
		var cs cstrings
		defer cs.free()
		cname := cs.str("object name", name)
		if cs.err != nil {
			return cs.err
		}
		var i C.size_t
		if err := call(func() C.zt_status { return C.zt_object_find(p, cname, &i) }); err != nil {
			return err
		}
		o = r.object(p, int(i))
		return nil
	})
	return o, err
}

func (r *Reader) object(p *C.zt_reader, i int) Object {
	var ndim C.size_t
	shape := C.zt_object_shape(p, C.size_t(i), &ndim)
	return Object{
		Name:   goString(C.zt_object_name(p, C.size_t(i))),
		Index:  i,
		Format: goString(C.zt_object_format(p, C.size_t(i))),
		Layout: goString(C.zt_object_layout(p, C.size_t(i))),
		Shape:  copyShape(shape, ndim),
		r:      r,
	}
}

// Verify is the deep check of the whole file: every component decoded,
// every digest checked, the content rules that need data bytes (CSR/COO
// structure, bool bytes, sizes) checked, and for a sharded v2 model every
// shard hashed. checked and unchecked count the components whose digest
// was verified and those without one (or of an unknown algorithm).
// StatusDigest names the first mismatch, StatusInvalid the first rule
// broken.
func (r *Reader) Verify() (checked, unchecked uint64, err error) {
	err = r.with(func(p *C.zt_reader) error {
		var c, u C.uint64_t
		e := call(func() C.zt_status { return C.zt_verify(p, &c, &u) })
		checked, unchecked = uint64(c), uint64(u)
		return e
	})
	return checked, unchecked, err
}

// ContentDigest is the content digest of a zTensor v2 model,
// "<algorithm>:<hex>", computed from the manifest alone: it identifies the
// tensors whatever their encoding, alignment or sharding. algorithm is
// "sha256" (also for "") or "xxh3". StatusUnsupported for a 1.x file or a
// part without a digest.
func (r *Reader) ContentDigest(algorithm string) (string, error) {
	var out string
	err := r.with(func(p *C.zt_reader) error {
		var cs cstrings
		defer cs.free()
		calgo := cs.opt("algorithm", algorithm)
		if cs.err != nil {
			return cs.err
		}
		var buf [C.ZT_CONTENT_DIGEST_SIZE]C.char
		if err := call(func() C.zt_status {
			return C.zt_content_digest(p, calgo, &buf[0], C.size_t(len(buf)))
		}); err != nil {
			return err
		}
		out = C.GoString(&buf[0])
		return nil
	})
	return out, err
}
