package ztensor

// The one place that names the C library: `#cgo pkg-config: zt` takes the
// compile and link flags of the installed package (zt.pc); they apply to
// every cgo file of the package. The helpers below are shared by all of
// them.

/*
#cgo pkg-config: zt
#include <stdlib.h>
#include <ztensor.h>

// Memory for OpenMemory and DecodeMany: 64-byte aligned, as data in a file
// is, so that views of it are aligned for every dtype.
static void* ztgo_alloc(size_t n) {
	void* p = NULL;
	if (posix_memalign(&p, 64, n ? n : 1) != 0) return NULL;
	return p;
}
*/
import "C"

import (
	"math"
	"runtime"
	"strings"
	"unsafe"
)

// maxLen is the largest length of a Go slice of bytes on this platform.
const maxLen = uint64(math.MaxInt)

// call runs one fallible C call and turns its status into an error. The
// library's message is thread-local, so the goroutine stays on its OS
// thread from the call until the message has been read.
func call(f func() C.zt_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := f(); s != C.ZT_OK {
		return &Error{Status: Status(s), Message: C.GoString(C.zt_last_error())}
	}
	return nil
}

// cstrings converts Go strings to C strings for one call and frees them
// afterwards. A string with a NUL byte cannot cross as what it says (C
// would see a shorter one), so it is refused with StatusArgument; the first
// such failure is kept in err.
type cstrings struct {
	ptrs []unsafe.Pointer
	err  error
}

// str converts s; what names it in the error.
func (c *cstrings) str(what, s string) *C.char {
	if strings.IndexByte(s, 0) >= 0 {
		if c.err == nil {
			c.err = errorf(StatusArgument, "%s %q contains a NUL byte", what, s)
		}
		return nil
	}
	p := C.CString(s)
	c.ptrs = append(c.ptrs, unsafe.Pointer(p))
	return p
}

// opt converts s, or gives NULL for "" (an optional argument left out).
func (c *cstrings) opt(what, s string) *C.char {
	if s == "" {
		return nil
	}
	return c.str(what, s)
}

func (c *cstrings) free() {
	for _, p := range c.ptrs {
		C.free(p)
	}
	c.ptrs = nil
}

// goString copies a C string the reader owns; NULL gives "".
func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// cBytes wraps n bytes of C memory at p as a slice, without a copy.
func cBytes(p unsafe.Pointer, n uint64, what string) ([]byte, error) {
	if n > maxLen {
		return nil, errorf(StatusLimit, "%s: %d bytes do not fit in a Go slice", what, n)
	}
	if n == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, errorf(StatusInvalid, "%s: the library gave no memory for %d bytes", what, n)
	}
	return unsafe.Slice((*byte)(p), int(n)), nil
}

// copyBytes copies n bytes of C memory at p into a new Go slice; nil for
// n == 0. (C.GoBytes takes a C int, which would cut sizes of 2 GiB and
// more.)
func copyBytes(p unsafe.Pointer, n uint64, what string) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := cBytes(p, n, what)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// shapeArg passes a []uint64 to C for the duration of a call.
func shapeArg(s []uint64) (*C.uint64_t, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.uint64_t)(unsafe.Pointer(&s[0])), C.size_t(len(s))
}

// bytesArg passes a []byte to C for the duration of a call.
func bytesArg(b []byte) (unsafe.Pointer, C.uint64_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&b[0]), C.uint64_t(len(b))
}

// copyShape copies ndim dimensions the reader owns.
func copyShape(p *C.uint64_t, ndim C.size_t) []uint64 {
	shape := make([]uint64, int(ndim))
	if ndim > 0 && p != nil {
		copy(shape, unsafe.Slice((*uint64)(unsafe.Pointer(p)), int(ndim)))
	}
	return shape
}

// cAlloc allocates n bytes of C memory (64-byte aligned); free with C.free.
func cAlloc(n uint64, what string) (unsafe.Pointer, error) {
	if n > maxLen {
		return nil, errorf(StatusLimit, "%s: %d bytes are too many", what, n)
	}
	p := C.ztgo_alloc(C.size_t(n))
	if p == nil {
		return nil, errorf(StatusNoMem, "%s: cannot allocate %d bytes", what, n)
	}
	return p, nil
}

func cFree(p unsafe.Pointer) { C.free(p) }

func cBool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}
