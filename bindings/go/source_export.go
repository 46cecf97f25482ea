package ztensor

// The callbacks of OpenSource's zt_source, exported to C. A file with
// //export may only declare in its preamble, so the C side (the functions
// of the types zt_source wants) is in source.go.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"runtime/cgo"
	"unsafe"
)

//export ztgoSourceReadAt
func ztgoSourceReadAt(h C.uintptr_t, off C.uint64_t, n C.size_t, buf unsafe.Pointer, done *C.size_t) (status C.int) {
	s := cgo.Handle(h).Value().(*sourceState)
	defer func() {
		if p := recover(); p != nil {
			s.fail(fmt.Errorf("panic: %v", p), StatusIO)
			status = C.int(StatusIO)
		}
	}()
	*done = 0
	if uint64(off) > uint64(s.size) || uint64(n) > maxLen {
		return C.int(StatusIO)
	}
	p := unsafe.Slice((*byte)(buf), int(n))
	got, err := s.src.ReadAt(p, int64(off))
	if got < 0 || got > len(p) {
		s.fail(fmt.Errorf("ReadAt says it read %d of %d bytes", got, len(p)), StatusIO)
		return C.int(StatusIO)
	}
	*done = C.size_t(got)
	if got > 0 || err == nil || err == io.EOF {
		// A short read is asked again from where it stopped; 0 bytes at
		// io.EOF fails the read in the library ("the data ended").
		return C.int(StatusOK)
	}
	st := StatusIO
	var e *Error
	if errors.As(err, &e) && e.Status > StatusOK && e.Status <= StatusNoMem {
		st = e.Status
	}
	s.fail(err, st)
	return C.int(st)
}

//export ztgoSourceSize
func ztgoSourceSize(h C.uintptr_t, size *C.uint64_t) C.int {
	*size = C.uint64_t(cgo.Handle(h).Value().(*sourceState).size)
	return C.int(StatusOK)
}

//export ztgoSourceClose
func ztgoSourceClose(h C.uintptr_t) {
	cgo.Handle(h).Delete()
}
