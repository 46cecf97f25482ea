// Package ztensor is a small cgo binding of libztensor, the way a Go user
// would write one: `#cgo pkg-config: zt` takes the compile and link flags
// from the installed package, and every call goes through the C ABI.
//
// cgo is not allowed in _test.go files, so the binding lives here and the
// test in roundtrip_test.go.
package ztensor

/*
#cgo pkg-config: zt
#include <stdlib.h>
#include <ztensor.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Error is a failing zt_status with the library's message.
type Error struct {
	Status  int
	Name    string
	Message string
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// Status codes this test looks at (zt_status in ztensor.h).
const (
	ErrIO       = int(C.ZT_ERR_IO)
	ErrInvalid  = int(C.ZT_ERR_INVALID)
	ErrNotFound = int(C.ZT_ERR_NOT_FOUND)
	ErrArgument = int(C.ZT_ERR_ARGUMENT)
)

// check turns a status into an error. The message is thread-local in the
// library, so the caller must stay on its OS thread between the call and
// this check: every call below locks it.
func check(s C.zt_status) error {
	if s == C.ZT_OK {
		return nil
	}
	return &Error{
		Status:  int(s),
		Name:    C.GoString(C.zt_status_name(s)),
		Message: C.GoString(C.zt_last_error()),
	}
}

// call runs one C call and its check on one OS thread.
func call(f func() C.zt_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(f())
}

// Version is the linked library's version.
func Version() string { return C.GoString(C.zt_version()) }

// Reader is an open .zt file.
type Reader struct{ r *C.zt_reader }

// Open opens and validates a file.
func Open(path string) (*Reader, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var r *C.zt_reader
	if err := call(func() C.zt_status { return C.zt_open(cpath, &r) }); err != nil {
		return nil, err
	}
	return &Reader{r}, nil
}

// Close releases the file; slices from Bytes die with it.
func (f *Reader) Close() {
	C.zt_close(f.r)
	f.r = nil
}

// FileVersion is the version the file states.
func (f *Reader) FileVersion() string { return C.GoString(C.zt_file_version(f.r)) }

// Names lists the objects in manifest order.
func (f *Reader) Names() []string {
	n := int(C.zt_object_count(f.r))
	names := make([]string, n)
	for i := range names {
		names[i] = C.GoString(C.zt_object_name(f.r, C.size_t(i)))
	}
	return names
}

// Find gives the index of the object called name.
func (f *Reader) Find(name string) (int, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var i C.size_t
	err := call(func() C.zt_status { return C.zt_object_find(f.r, cname, &i) })
	return int(i), err
}

// Format is the object's layout: "dense", "sparse_csr", ...
func (f *Reader) Format(i int) string { return C.GoString(C.zt_object_format(f.r, C.size_t(i))) }

// Shape is the object's shape (empty for a scalar).
func (f *Reader) Shape(i int) []uint64 {
	var ndim C.size_t
	p := C.zt_object_shape(f.r, C.size_t(i), &ndim)
	shape := make([]uint64, int(ndim))
	if ndim > 0 {
		copy(shape, unsafe.Slice((*uint64)(unsafe.Pointer(p)), int(ndim)))
	}
	return shape
}

// Roles lists an object's components in manifest order.
func (f *Reader) Roles(i int) []string {
	n := int(C.zt_component_count(f.r, C.size_t(i)))
	roles := make([]string, n)
	for k := range roles {
		roles[k] = C.GoString(C.zt_component_role(f.r, C.size_t(i), C.size_t(k)))
	}
	return roles
}

// Dtype and Encoding of one component.
func (f *Reader) Dtype(i int, role string) string {
	crole := C.CString(role)
	defer C.free(unsafe.Pointer(crole))
	return C.GoString(C.zt_component_dtype(f.r, C.size_t(i), crole))
}

func (f *Reader) Encoding(i int, role string) string {
	crole := C.CString(role)
	defer C.free(unsafe.Pointer(crole))
	return C.GoString(C.zt_component_encoding(f.r, C.size_t(i), crole))
}

// Bytes is a component's decoded bytes, without a copy: the slice points
// into the file mapping (raw data) or the reader's cache, and is valid
// until Close.
func (f *Reader) Bytes(i int, role string) ([]byte, error) {
	crole := C.CString(role)
	defer C.free(unsafe.Pointer(crole))
	var data unsafe.Pointer
	var n C.uint64_t
	if err := call(func() C.zt_status { return C.zt_component_map(f.r, C.size_t(i), crole, &data, &n) }); err != nil {
		return nil, err
	}
	if n == 0 {
		return []byte{}, nil
	}
	return unsafe.Slice((*byte)(data), int(n)), nil
}

// Verify decodes everything and checks digests and content rules.
func (f *Reader) Verify() (checked, unchecked uint64, err error) {
	var c, u C.uint64_t
	err = call(func() C.zt_status { return C.zt_verify(f.r, &c, &u) })
	return uint64(c), uint64(u), err
}

// Writer writes a .zt file; nothing appears at the path before Finish.
type Writer struct{ w *C.zt_writer }

// Create starts a file at path.
func Create(path string) (*Writer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var w *C.zt_writer
	if err := call(func() C.zt_status { return C.zt_writer_open(cpath, &w) }); err != nil {
		return nil, err
	}
	return &Writer{w}, nil
}

// bytesOf views a slice of fixed-size numbers as bytes (little-endian hosts).
func bytesOf[T any](v []T) (unsafe.Pointer, C.uint64_t) {
	if len(v) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&v[0]), C.uint64_t(uintptr(len(v)) * unsafe.Sizeof(v[0]))
}

func shapeOf(shape []uint64) (*C.uint64_t, C.size_t) {
	if len(shape) == 0 {
		return nil, 0
	}
	return (*C.uint64_t)(unsafe.Pointer(&shape[0])), C.size_t(len(shape))
}

// AddDense adds a dense object; dtype names the element type of data.
func AddDense[T any](f *Writer, name, dtype string, shape []uint64, data []T, encoding string) error {
	cname, cdtype, cenc := C.CString(name), C.CString(dtype), C.CString(encoding)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cdtype))
	defer C.free(unsafe.Pointer(cenc))
	ptr, n := bytesOf(data)
	sp, nd := shapeOf(shape)
	return call(func() C.zt_status { return C.zt_writer_add_dense(f.w, cname, cdtype, sp, nd, ptr, n, cenc) })
}

// BeginObject, AddComponent and EndObject write any other object.
func (f *Writer) BeginObject(name, format string, shape []uint64) error {
	cname, cformat := C.CString(name), C.CString(format)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cformat))
	sp, nd := shapeOf(shape)
	return call(func() C.zt_status { return C.zt_writer_begin_object(f.w, cname, cformat, sp, nd) })
}

func AddComponent[T any](f *Writer, role, dtype string, data []T) error {
	crole, cdtype := C.CString(role), C.CString(dtype)
	defer C.free(unsafe.Pointer(crole))
	defer C.free(unsafe.Pointer(cdtype))
	ptr, n := bytesOf(data)
	return call(func() C.zt_status { return C.zt_writer_add_component(f.w, crole, cdtype, nil, ptr, n, nil) })
}

func (f *Writer) EndObject() error {
	return call(func() C.zt_status { return C.zt_writer_end_object(f.w) })
}

// Finish publishes the file; the writer is spent either way.
func (f *Writer) Finish() error {
	if f.w == nil {
		return fmt.Errorf("writer already finished")
	}
	w := f.w
	f.w = nil
	return call(func() C.zt_status { return C.zt_writer_finish(w) })
}

// Abort drops everything; the path is left as it was.
func (f *Writer) Abort() {
	C.zt_writer_abort(f.w)
	f.w = nil
}
