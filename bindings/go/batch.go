package ztensor

/*
#include <stdlib.h>
#include <ztensor.h>
*/
import "C"

import (
	"unsafe"
)

// DecodeRequest is one component for DecodeMany.
type DecodeRequest struct {
	Object int    // object index (Object.Index)
	Role   string // component role, e.g. "data"
	// Dst receives the decoded bytes. nil: a slice of the decoded size is
	// allocated. A Dst shorter than the decoded size fails the request
	// with StatusArgument.
	Dst []byte

	N   int   // out: bytes written to Dst
	Err error // out: nil, or why this request failed
}

// DecodeMany decodes many components on up to threads threads (0: all
// cores), sharing the work out by zstd frame and by slices of raw data, so
// that a whole file, a list of names or one large component all use every
// thread (zt_decode_many). Every request is attempted and gets its own N
// and Err. The error returned is nil if all succeeded, else the first
// failed request's, in order.
//
// Go 1.19 cannot pin Go memory for C threads to fill, so each request is
// decoded into C memory and then copied into Dst: it costs a copy and,
// for a moment, twice the memory of the batch.
func (r *Reader) DecodeMany(reqs []DecodeRequest, threads int) error {
	if threads < 0 {
		return errorf(StatusArgument, "negative thread count %d", threads)
	}
	if len(reqs) == 0 {
		return nil
	}
	return r.with(func(p *C.zt_reader) error {
		var cs cstrings
		defer cs.free()
		// Capacities: the caller's, else the decoded size.
		caps := make([]uint64, len(reqs))
		roles := make([]*C.char, len(reqs))
		var total uint64
		count := C.size_t(C.zt_object_count(p))
		for i := range reqs {
			q := &reqs[i]
			q.N, q.Err = 0, nil
			role := cs.str("role", q.Role)
			if cs.err != nil {
				return cs.err
			}
			roles[i] = role
			if q.Dst != nil {
				caps[i] = uint64(len(q.Dst))
			} else if q.Object >= 0 && C.size_t(q.Object) < count {
				// The size a read needs, with the cap applied: a request over
				// MaxDecodedBytes gets no buffer, and the library refuses it
				// alone (StatusLimit) while the others decode.
				var n C.uint64_t
				if st := C.zt_component_read_size(p, C.size_t(q.Object), role, &n); st == C.ZT_OK {
					caps[i] = uint64(n)
				} else if st == C.ZT_ERR_UNSUPPORTED {
					// Known only by decoding: into the reader's cache.
					var data unsafe.Pointer
					if C.zt_component_map(p, C.size_t(q.Object), role, &data, &n) == C.ZT_OK {
						caps[i] = uint64(n)
					}
				}
			}
			if caps[i] > maxLen-total {
				return errorf(StatusLimit, "DecodeMany: the requests add up to more bytes than fit in memory")
			}
			total += caps[i]
		}
		buf, err := cAlloc(total, "DecodeMany")
		if err != nil {
			return err
		}
		defer cFree(buf)
		creqs, err := cAlloc(uint64(len(reqs))*uint64(C.sizeof_zt_decode_request), "DecodeMany")
		if err != nil {
			return err
		}
		defer cFree(creqs)
		arr := unsafe.Slice((*C.zt_decode_request)(creqs), len(reqs))
		var off uint64
		for i := range reqs {
			C.zt_decode_request_init(&arr[i])
			if reqs[i].Object < 0 {
				arr[i].object = C.size_t(^uint(0)) // out of range: the library says so
			} else {
				arr[i].object = C.size_t(reqs[i].Object)
			}
			arr[i].role = roles[i]
			arr[i].dst = unsafe.Add(buf, off)
			arr[i].capacity = C.uint64_t(caps[i])
			off += caps[i]
		}
		err = call(func() C.zt_status {
			return C.zt_decode_many(p, &arr[0], C.size_t(len(arr)), C.uint(threads))
		})
		if err != nil && refused(arr) {
			// Refused before any request was attempted (a bad argument).
			for i := range reqs {
				reqs[i].Err = err
			}
			return err
		}
		mem := unsafe.Slice((*byte)(buf), int(total))
		off = 0
		var first error
		for i := range reqs {
			q := &reqs[i]
			if st := Status(arr[i].status); st != StatusOK {
				if first == nil && err != nil {
					q.Err = err // zt_decode_many's message is the first failure's
				} else {
					q.Err = errorf(st, "object %q: component %q failed to decode",
						goString(C.zt_object_name(p, C.size_t(q.Object))), q.Role)
				}
				if first == nil {
					first = q.Err
				}
			} else {
				n := int(arr[i].written)
				if q.Dst == nil {
					q.Dst = make([]byte, n)
				}
				q.N = copy(q.Dst, mem[off:off+uint64(n)])
			}
			off += caps[i]
		}
		return first
	})
}

// refused tells a batch that zt_decode_many refused as a whole (no request
// has a failed status) from one that ran.
func refused(arr []C.zt_decode_request) bool {
	for i := range arr {
		if arr[i].status != C.ZT_OK {
			return false
		}
	}
	return true
}
