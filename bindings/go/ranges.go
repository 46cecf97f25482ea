package ztensor

/*
#include <stdint.h>
#include <ztensor.h>

// The Go completion callback (ranges_export.go), reached through a C
// function of the type zt_decode_ranges wants. ctx is a runtime/cgo.Handle.
extern void ztgoRangeDone(uintptr_t h, size_t index, int status);

static void ztgo_range_done(void* ctx, size_t index, zt_status status) {
	ztgoRangeDone((uintptr_t)ctx, index, (int)status);
}

static zt_status ztgo_decode_ranges(const zt_reader* r, zt_decode_range* ranges, size_t count,
                                    unsigned threads, uintptr_t h) {
	return zt_decode_ranges(r, ranges, count, threads, h ? ztgo_range_done : NULL, (void*)h);
}
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// DecodeRange is one byte range of a component's decoded bytes for
// DecodeRanges: bytes [Offset, Offset+Length) go to Dst.
type DecodeRange struct {
	Object int    // object index (Object.Index)
	Role   string // component role, e.g. "data"
	Offset uint64 // first decoded byte wanted
	Length uint64 // bytes wanted
	// Dst: Length bytes that the library's threads write, outside Go's
	// heap: C memory (C.malloc), a device API's pinned host buffer, a
	// mapping. Go memory must not be passed (cgo's pointer rules: C threads
	// keep writing it while the call runs). nil only when Length is 0.
	Dst unsafe.Pointer

	Err error // out: nil, or why this range failed
}

// rangesState is what the completion callback reaches through its handle.
type rangesState struct {
	mu     sync.Mutex
	ranges []DecodeRange
	done   func(i int, err error)
	panic  interface{}
}

func rangeError(q *DecodeRange, st Status) error {
	if st == StatusOK {
		return nil
	}
	return errorf(st, "range [%d, %d) of object %d, component %q failed to decode",
		q.Offset, q.Offset+q.Length, q.Object, q.Role)
}

// DecodeRanges decodes byte ranges of components into caller memory on up
// to threads threads (0: all cores), work shared out by slices of raw data
// and by zstd frames (zt_decode_ranges): only what holds a range is read.
// done, if not nil, is called once per range as it completes, with the
// range's index and nil or its error, from the library's threads (several
// at once): it must be safe for concurrent use and return promptly, and
// the range's Dst is final when it is called with nil. That is the pattern
// of a device loader: cut tensors into ranges that fill a staging buffer,
// decode one buffer while the previous one is copied to the device
// (docs/bindings.md, "Loading to a device").
//
// done may call methods of r (and of its Objects and Components); once a
// Close has begun in another goroutine they return StatusState, and the
// Close waits for DecodeRanges to return. done must not call r.Close
// itself: the Close would wait for the call done runs inside.
//
// Every range is attempted and gets its own Err. The error returned is nil
// if all succeeded, else the first failed range's, in order.
func (r *Reader) DecodeRanges(ranges []DecodeRange, threads int, done func(i int, err error)) error {
	if threads < 0 {
		return errorf(StatusArgument, "negative thread count %d", threads)
	}
	if len(ranges) == 0 {
		return nil
	}
	for i := range ranges {
		if ranges[i].Dst == nil && ranges[i].Length > 0 {
			return errorf(StatusArgument, "range %d: Dst is nil for %d bytes", i, ranges[i].Length)
		}
	}
	return r.with(func(p *C.zt_reader) error {
		var cs cstrings
		defer cs.free()
		arrMem, err := cAlloc(uint64(len(ranges))*uint64(C.sizeof_zt_decode_range), "DecodeRanges")
		if err != nil {
			return err
		}
		defer cFree(arrMem)
		arr := unsafe.Slice((*C.zt_decode_range)(arrMem), len(ranges))
		for i := range ranges {
			q := &ranges[i]
			q.Err = nil
			role := cs.str("role", q.Role)
			if cs.err != nil {
				return cs.err
			}
			C.zt_decode_range_init(&arr[i])
			if q.Object < 0 {
				arr[i].object = C.size_t(^uint(0)) // out of range: the library says so
			} else {
				arr[i].object = C.size_t(q.Object)
			}
			arr[i].role = role
			arr[i].offset = C.uint64_t(q.Offset)
			arr[i].length = C.uint64_t(q.Length)
			arr[i].dst = q.Dst
		}
		var h cgo.Handle
		var state *rangesState
		if done != nil {
			state = &rangesState{ranges: ranges, done: done}
			h = cgo.NewHandle(state)
			defer h.Delete()
		}
		err = call(func() C.zt_status {
			return C.ztgo_decode_ranges(p, &arr[0], C.size_t(len(arr)), C.uint(threads), C.uintptr_t(h))
		})
		if state != nil && state.panic != nil {
			panic(state.panic) // re-raised on the caller's goroutine
		}
		if err != nil && refusedRanges(arr) {
			// Refused before any range was attempted (a bad argument).
			for i := range ranges {
				ranges[i].Err = err
			}
			return err
		}
		var first error
		for i := range ranges {
			q := &ranges[i]
			st := Status(arr[i].status)
			if st == StatusOK {
				continue
			}
			if first == nil && err != nil {
				q.Err = err // zt_decode_ranges' message is the first failure's
			} else {
				q.Err = rangeError(q, st)
			}
			if first == nil {
				first = q.Err
			}
		}
		return first
	})
}

// refusedRanges tells a call that zt_decode_ranges refused as a whole (no
// range has a failed status) from one that ran.
func refusedRanges(arr []C.zt_decode_range) bool {
	for i := range arr {
		if arr[i].status != C.ZT_OK {
			return false
		}
	}
	return true
}

func (s *rangesState) complete(i int, st Status) {
	defer func() {
		if p := recover(); p != nil { // a panic must not unwind through C
			s.mu.Lock()
			if s.panic == nil {
				s.panic = fmt.Sprintf("DecodeRanges callback: %v", p)
			}
			s.mu.Unlock()
		}
	}()
	if i < 0 || i >= len(s.ranges) {
		return
	}
	s.done(i, rangeError(&s.ranges[i], st))
}
