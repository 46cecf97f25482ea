package ztensor

/*
#include <ztensor.h>
*/
import "C"

import (
	"encoding/json"
	"io"
	"unsafe"
)

// Object is one named tensor of a Reader: its name, format and shape
// (copies, usable after Close) and methods that reach its data through the
// Reader. Obtain one from Reader.Objects, Reader.Find or Reader.Object.
type Object struct {
	Name  string
	Index int // position in manifest order, as in Reader.Object
	// Format is the layout in the 1.2 vocabulary: "dense", "sparse_csr",
	// "sparse_coo", "quantized_group", or any other text as written.
	Format string
	// Layout is the layout exactly as written ("zt.sparse_csr/1" in a v2
	// file; the same as Format in a 1.x file).
	Layout string
	Shape  []uint64 // empty for a scalar

	r *Reader
}

// Reader is the reader the object belongs to.
func (o Object) Reader() *Reader { return o.r }

// Components lists the object's components in manifest order ("data" for a
// dense object; "values", "indices", "indptr" for CSR; ...). nil after
// Close.
func (o Object) Components() []Component {
	var out []Component
	o.r.with(func(p *C.zt_reader) error {
		n := int(C.zt_component_count(p, C.size_t(o.Index)))
		out = make([]Component, 0, n)
		for k := 0; k < n; k++ {
			role := goString(C.zt_component_role(p, C.size_t(o.Index), C.size_t(k)))
			if c, err := o.component(p, role); err == nil {
				out = append(out, c)
			}
		}
		return nil
	})
	return out
}

// Component is the component of the given role; StatusNotFound if the
// object has none of that role.
func (o Object) Component(role string) (Component, error) {
	var c Component
	err := o.r.with(func(p *C.zt_reader) (err error) {
		c, err = o.component(p, role)
		return err
	})
	return c, err
}

func (o Object) component(p *C.zt_reader, role string) (Component, error) {
	var cs cstrings
	defer cs.free()
	crole := cs.str("role", role)
	if cs.err != nil {
		return Component{}, cs.err
	}
	i := C.size_t(o.Index)
	var stored, decoded C.uint64_t
	if err := call(func() C.zt_status { return C.zt_component_stored_size(p, i, crole, &stored) }); err != nil {
		return Component{}, err
	}
	known := C.zt_component_decoded_size(p, i, crole, &decoded) == C.ZT_OK
	return Component{
		Role:             role,
		Dtype:            goString(C.zt_component_dtype(p, i, crole)),
		Type:             goString(C.zt_component_type(p, i, crole)),
		Encoding:         goString(C.zt_component_encoding(p, i, crole)),
		EncodingID:       goString(C.zt_component_encoding_id(p, i, crole)),
		Shard:            goString(C.zt_component_shard(p, i, crole)),
		StoredSize:       uint64(stored),
		DecodedSize:      uint64(decoded),
		DecodedSizeKnown: known,
		r:                o.r,
		object:           o.Index,
		objectName:       o.Name,
	}, nil
}

// Attributes are the object's attributes as one encoded CBOR map, exactly
// as stored (a copy); nil without attributes.
func (o Object) Attributes() ([]byte, error) {
	var out []byte
	err := o.r.with(func(p *C.zt_reader) error {
		var data unsafe.Pointer
		var n C.size_t
		if err := call(func() C.zt_status {
			return C.zt_object_attributes_cbor(p, C.size_t(o.Index), &data, &n)
		}); err != nil {
			return err
		}
		var err error
		out, err = copyBytes(data, uint64(n), "object "+o.Name+": attributes")
		return err
	})
	return out, err
}

// AttributesJSON are the object's attributes as a JSON object ("{}"
// without attributes), taken from the manifest JSON. StatusState after
// Close.
func (o Object) AttributesJSON() (json.RawMessage, error) {
	if o.r == nil {
		return nil, errorf(StatusState, "no reader (a zero Object?)")
	}
	if err := o.r.checkOpen(); err != nil {
		return nil, err
	}
	a, err := o.r.jsonAttributes()
	if err != nil {
		return nil, err
	}
	return orEmptyObject(a.Objects[o.Name].Attributes), nil
}

// ElementCount is product(Shape), the logical element count (1 for a
// scalar); StatusLimit if it overflows 64 bits.
func (o Object) ElementCount() (uint64, error) {
	var n C.uint64_t
	err := o.r.with(func(p *C.zt_reader) error {
		return call(func() C.zt_status { return C.zt_object_element_count(p, C.size_t(o.Index), &n) })
	})
	return uint64(n), err
}

// ValueCount is the number of values DecodeFloat32 gives: product(Shape),
// doubled for complex data. StatusUnsupported for objects that cannot be
// decoded.
func (o Object) ValueCount() (uint64, error) {
	var n uint64
	err := o.r.with(func(p *C.zt_reader) (err error) {
		n, err = o.valueCount(p)
		return err
	})
	return n, err
}

func (o Object) valueCount(p *C.zt_reader) (uint64, error) {
	var n C.uint64_t
	err := call(func() C.zt_status { return C.zt_object_value_count(p, C.size_t(o.Index), &n) })
	return uint64(n), err
}

// readRefusal is the library's refusal of reading a component for its size
// (StatusLimit: over the reader's MaxDecodedBytes), asked before a buffer is
// made for what the file claims: Go cannot recover from an allocation the
// system refuses, and the read would be refused anyway.
func readRefusal(p *C.zt_reader, object int, role *C.char) error {
	var n C.uint64_t
	if C.zt_component_read_size(p, C.size_t(object), role, &n) != C.ZT_ERR_LIMIT {
		return nil
	}
	return call(func() C.zt_status { return C.zt_component_read_size(p, C.size_t(object), role, &n) })
}

// readRefusal is readRefusal for every component of the object.
func (o Object) readRefusal(p *C.zt_reader) error {
	count := C.zt_component_count(p, C.size_t(o.Index))
	for k := C.size_t(0); k < count; k++ {
		if err := readRefusal(p, o.Index, C.zt_component_role(p, C.size_t(o.Index), k)); err != nil {
			return err
		}
	}
	return nil
}

// decodeCapacity is the value count the converting object calls need for
// values of F (zt_object_decode_capacity): StatusLimit, with the library's
// message and before anything is allocated, when the values' bytes exceed
// the reader's MaxDecodedBytes. A sparse object of a few hundred bytes may
// claim a shape of 2^50 values; Go cannot recover from an allocation the
// system refuses (make panics or the process dies), so the size is asked
// first.
func decodeCapacity[F float32 | float64](o Object, p *C.zt_reader) (uint64, error) {
	var zero F
	var n C.uint64_t
	err := call(func() C.zt_status {
		return C.zt_object_decode_capacity(p, C.size_t(o.Index), C.size_t(unsafe.Sizeof(zero)), &n)
	})
	return uint64(n), err
}

// objectValues runs one of the converting object calls (capacity: the
// decode capacity) into a new slice. denseOnly: the call reads dense objects
// only, so another object gets no buffer and the call's own refusal.
func objectValues[F float32 | float64](o Object, denseOnly bool, read func(p *C.zt_reader, dst unsafe.Pointer, capacity C.uint64_t, written *C.uint64_t) C.zt_status) ([]F, error) {
	return fillValues[F](o, func(p *C.zt_reader) (uint64, error) {
		if denseOnly && o.Format != "dense" {
			return 0, nil
		}
		return decodeCapacity[F](o, p)
	}, read)
}

// fillValues runs a converting call into a new slice of float32 or float64
// of count(p) values, cut to the values the call wrote.
func fillValues[F float32 | float64](o Object, count func(p *C.zt_reader) (uint64, error), read func(p *C.zt_reader, dst unsafe.Pointer, capacity C.uint64_t, written *C.uint64_t) C.zt_status) ([]F, error) {
	var out []F
	err := o.r.with(func(p *C.zt_reader) error {
		n, err := count(p)
		if err != nil {
			return err
		}
		if err := o.readRefusal(p); err != nil {
			return err
		}
		buf, err := makeValues[F](n, o.Name)
		if err != nil {
			return err
		}
		var written C.uint64_t
		if err := call(func() C.zt_status { return read(p, sliceArg(buf), C.uint64_t(len(buf)), &written) }); err != nil {
			return err
		}
		out = buf[:int(written)]
		return nil
	})
	return out, err
}

// ReadFloat32 converts the data of a dense object of any numeric type
// (integers, bool, f16, bf16, FP8, complex as (real, imag) pairs) to
// float32 (zt_object_read_f32). StatusArgument for an object that is not
// dense; DecodeFloat32 reads any object. StatusLimit, before anything is
// allocated, when the float32s would exceed the reader's MaxDecodedBytes.
func (o Object) ReadFloat32() ([]float32, error) {
	return objectValues[float32](o, true, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_object_read_f32(p, C.size_t(o.Index), (*C.float)(dst), c, w)
	})
}

// ReadFloat64 is ReadFloat32 to float64 (zt_object_read_f64).
func (o Object) ReadFloat64() ([]float64, error) {
	return objectValues[float64](o, true, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_object_read_f64(p, C.size_t(o.Index), (*C.double)(dst), c, w)
	})
}

// DecodeFloat32 gives any object as a dense row-major array of float32
// (zt_object_decode_f32): dense data converted, sparse CSR/COO scattered
// into zeros (duplicates summed), quantized_group dequantised. The result
// is one array of ValueCount float32s: StatusLimit, before anything is
// allocated, when its bytes would exceed the reader's MaxDecodedBytes (a
// sparse object's shape may claim far more than its file holds).
func (o Object) DecodeFloat32() ([]float32, error) {
	return objectValues[float32](o, false, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_object_decode_f32(p, C.size_t(o.Index), (*C.float)(dst), c, w)
	})
}

// DecodeFloat64 is DecodeFloat32 to float64 (zt_object_decode_f64).
func (o Object) DecodeFloat64() ([]float64, error) {
	return objectValues[float64](o, false, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_object_decode_f64(p, C.size_t(o.Index), (*C.double)(dst), c, w)
	})
}

// Component is one component (a blob of elements of one dtype) of an
// object: its description (copies, usable after Close) and methods that
// read it through the Reader.
type Component struct {
	Role  string // "data", "values", "indices", "scales", ...
	Dtype string // storage dtype: "f32", "u64", "bool", ...
	Type  string // logical type ("f8_e4m3fn", "complex64", ...) or ""
	// Encoding is "raw", "zstd", or as written (v2's "zt.zstd-seekable/1"
	// is "zstd"); EncodingID is the v2 id exactly as written ("" for raw
	// parts and 1.x files).
	Encoding, EncodingID string
	Shard                string // the v2 shard holding the bytes, "" for this file
	StoredSize           uint64 // bytes in the file
	// DecodedSize is the decoded byte count when DecodedSizeKnown; some
	// encodings only tell it by decoding (Size does that).
	DecodedSize      uint64
	DecodedSizeKnown bool

	r          *Reader
	object     int
	objectName string
}

func (c Component) withRole(f func(p *C.zt_reader, role *C.char) error) error {
	return c.r.with(func(p *C.zt_reader) error {
		var cs cstrings
		defer cs.free()
		crole := cs.str("role", c.Role)
		if cs.err != nil {
			return cs.err
		}
		return f(p, crole)
	})
}

// mapped is the component's decoded bytes in the reader's memory
// (zt_component_map), for use under the reader's lock only: the copying
// calls read them there. Bytes lends them out.
func (c Component) mapped(p *C.zt_reader, role *C.char) ([]byte, error) {
	return mapComponent(p, c.object, role, c.what())
}

// mapComponent is zt_component_map as a slice of the reader's memory,
// valid under the reader's lock (until Close). Not lent: a caller that hands
// it out goes through Reader.lend.
func mapComponent(p *C.zt_reader, object int, role *C.char, what string) ([]byte, error) {
	var data unsafe.Pointer
	var n C.uint64_t
	if err := call(func() C.zt_status { return C.zt_component_map(p, C.size_t(object), role, &data, &n) }); err != nil {
		return nil, err
	}
	return cBytes(data, uint64(n), what)
}

func (c Component) what() string {
	return "object \"" + c.objectName + "\": component \"" + c.Role + "\""
}

// Bytes are the component's decoded bytes, little-endian elements of
// Dtype, WITHOUT A COPY (zt_component_map): raw data is the file's memory
// mapping itself, other data (zstd, legacy big-endian, copy mode, remote
// readers) is decoded once into a cache the reader owns.
//
// The slice is NOT Go memory. It is valid, unchanged, until the Reader is
// closed, and must not be used after Close: reading it then is a use after
// free that may crash the program. (A Reader that handed it out and is
// dropped without Close is never freed, so the slice stays valid then.) Do not write to it (the mapping is read-only). Copy
// what must outlive the Reader. ReadAt and ReadInto copy instead.
// Elements reinterprets it as numbers without a copy.
func (c Component) Bytes() ([]byte, error) {
	var out []byte
	err := c.withRole(func(p *C.zt_reader, role *C.char) error {
		b, err := c.mapped(p, role)
		if err != nil {
			return err
		}
		out = c.r.handOut(b)
		return nil
	})
	return out, err
}

// Size is the decoded byte count: DecodedSize when known, else the
// length of Bytes (which decodes the component into the reader's cache,
// where it stays until Close; nothing is handed out).
func (c Component) Size() (int64, error) {
	if c.DecodedSizeKnown {
		if c.DecodedSize > maxLen {
			return 0, errorf(StatusLimit, "object %q: component %q: %d bytes", c.objectName, c.Role, c.DecodedSize)
		}
		return int64(c.DecodedSize), nil
	}
	var n int64
	err := c.withRole(func(p *C.zt_reader, role *C.char) error {
		b, err := c.mapped(p, role)
		n = int64(len(b))
		return err
	})
	return n, err
}

// ReadAt copies decoded bytes from offset off into p, with the semantics of
// io.ReaderAt (io.EOF when fewer than len(p) bytes are left). It reads
// from Bytes under the Reader's lock, so it is safe against a concurrent
// Close. The whole component is decoded once (into the reader's cache) on
// first use.
func (c Component) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errorf(StatusArgument, "object %q: component %q: negative offset %d", c.objectName, c.Role, off)
	}
	n := 0
	err := c.withRole(func(rp *C.zt_reader, role *C.char) error {
		b, err := c.mapped(rp, role)
		if err != nil {
			return err
		}
		if off >= int64(len(b)) {
			if len(p) == 0 {
				return nil
			}
			return io.EOF
		}
		n = copy(p, b[off:])
		if n < len(p) {
			return io.EOF
		}
		return nil
	})
	return n, err
}

// NewReader is an io.SectionReader over the decoded bytes (Read, Seek and
// ReadAt), reading through ReadAt.
func (c Component) NewReader() (*io.SectionReader, error) {
	size, err := c.Size()
	if err != nil {
		return nil, err
	}
	return io.NewSectionReader(c, 0, size), nil
}

// ReadInto decodes the whole component into dst, which must hold Size
// bytes (StatusArgument otherwise, nothing written), and returns the byte
// count (zt_component_read). Nothing is cached: this is the call for
// reading a zstd component once without keeping its decoded bytes.
func (c Component) ReadInto(dst []byte) (int, error) {
	var written C.uint64_t
	err := c.withRole(func(p *C.zt_reader, role *C.char) error {
		ptr, capacity := bytesArg(dst)
		var empty [1]byte
		if ptr == nil {
			ptr = unsafe.Pointer(&empty[0]) // "too small" rather than "dst is NULL"
		}
		return call(func() C.zt_status {
			return C.zt_component_read(p, C.size_t(c.object), role, ptr, capacity, &written)
		})
	})
	return int(written), err
}

// componentValues runs a converting component call into a new slice sized
// by the component's storage elements.
func componentValues[F float32 | float64](c Component, read func(p *C.zt_reader, role *C.char, dst unsafe.Pointer, capacity C.uint64_t, written *C.uint64_t) C.zt_status) ([]F, error) {
	var out []F
	err := c.withRole(func(p *C.zt_reader, role *C.char) error {
		if err := readRefusal(p, c.object, role); err != nil {
			return err
		}
		size := c.DecodedSize
		if !c.DecodedSizeKnown {
			b, err := c.mapped(p, role)
			if err != nil {
				return err
			}
			size = uint64(len(b))
		}
		n := uint64(0)
		if w := dtypeWidth(c.Dtype); w > 0 {
			n = size / uint64(w) // a storage element is a value (two make a complex one)
			if c.Type == "f4_e2m1" {
				n *= 2 // two values a byte
			}
		}
		buf, err := makeValues[F](n, c.objectName)
		if err != nil {
			return err
		}
		var written C.uint64_t
		if err := call(func() C.zt_status { return read(p, role, sliceArg(buf), C.uint64_t(len(buf)), &written) }); err != nil {
			return err
		}
		out = buf[:int(written)]
		return nil
	})
	return out, err
}

// Float32s converts the component's elements, whatever its dtype, to
// float32: one value per storage element, two per complex element
// (zt_component_read_f32).
func (c Component) Float32s() ([]float32, error) {
	return componentValues[float32](c, func(p *C.zt_reader, role *C.char, dst unsafe.Pointer, n C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_component_read_f32(p, C.size_t(c.object), role, (*C.float)(dst), n, w)
	})
}

// Float64s is Float32s to float64 (zt_component_read_f64).
func (c Component) Float64s() ([]float64, error) {
	return componentValues[float64](c, func(p *C.zt_reader, role *C.char, dst unsafe.Pointer, n C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_component_read_f64(p, C.size_t(c.object), role, (*C.double)(dst), n, w)
	})
}

// Prefetch hints that the component's stored bytes will be read soon
// (madvise WILLNEED on the mapping; a no-op where there is none).
func (c Component) Prefetch() error {
	return c.withRole(func(p *C.zt_reader, role *C.char) error {
		return call(func() C.zt_status { return C.zt_prefetch(p, C.size_t(c.object), role) })
	})
}

// Evict hints that the component's stored pages may be dropped (madvise
// DONTNEED). Bytes already handed out stay valid: the pages are read
// again when touched.
func (c Component) Evict() error {
	return c.withRole(func(p *C.zt_reader, role *C.char) error {
		return call(func() C.zt_status { return C.zt_evict(p, C.size_t(c.object), role) })
	})
}
