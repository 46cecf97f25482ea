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
// for a moment, twice the memory of the batch. A request with a nil Dst
// for a component whose decoded size is known only by decoding it (a zstd
// stream that does not declare it; Component.DecodedSizeKnown false) is
// decoded on its own into the reader's decode cache, as Component.Bytes
// does, and copied from there: those bytes stay in the cache until Close.
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
		cached := make([][]byte, len(reqs)) // decoded into the reader's cache
		batch := make([]int, 0, len(reqs))  // the requests zt_decode_many decodes
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
					// Known only by decoding (or not readable at all, which
					// zt_component_map says): decoded once, into the cache.
					what := "object \"" + goString(C.zt_object_name(p, C.size_t(q.Object))) + "\": component \"" + q.Role + "\""
					b, err := mapComponent(p, q.Object, role, what)
					if err != nil {
						q.Err = err
					} else {
						cached[i] = b
					}
					continue
				}
			}
			if caps[i] > maxLen-total {
				return errorf(StatusLimit, "DecodeMany: the requests add up to more bytes than fit in memory")
			}
			total += caps[i]
			batch = append(batch, i)
		}
		if err := r.decodeBatch(p, reqs, batch, roles, caps, total, threads); err != nil {
			return err
		}
		var first error
		for i := range reqs {
			q := &reqs[i]
			if b := cached[i]; b != nil {
				if q.Dst == nil {
					q.Dst = make([]byte, len(b))
				}
				q.N = copy(q.Dst, b)
			}
			if first == nil {
				first = q.Err
			}
		}
		return first
	})
}

// decodeBatch runs zt_decode_many for the requests reqs[batch[k]] and sets
// their N, Dst and Err. It returns an error only for a batch refused as a
// whole, which every request in it gets.
func (r *Reader) decodeBatch(p *C.zt_reader, reqs []DecodeRequest, batch []int, roles []*C.char, caps []uint64, total uint64, threads int) error {
	if len(batch) == 0 {
		return nil
	}
	buf, err := cAlloc(total, "DecodeMany")
	if err != nil {
		return err
	}
	defer cFree(buf)
	creqs, err := cAlloc(uint64(len(batch))*uint64(C.sizeof_zt_decode_request), "DecodeMany")
	if err != nil {
		return err
	}
	defer cFree(creqs)
	arr := unsafe.Slice((*C.zt_decode_request)(creqs), len(batch))
	var off uint64
	for k, i := range batch {
		C.zt_decode_request_init(&arr[k])
		if reqs[i].Object < 0 {
			arr[k].object = C.size_t(^uint(0)) // out of range: the library says so
		} else {
			arr[k].object = C.size_t(reqs[i].Object)
		}
		arr[k].role = roles[i]
		arr[k].dst = unsafe.Add(buf, off)
		arr[k].capacity = C.uint64_t(caps[i])
		off += caps[i]
	}
	err = call(func() C.zt_status {
		return C.zt_decode_many(p, &arr[0], C.size_t(len(arr)), C.uint(threads))
	})
	if err != nil && refused(arr) {
		// Refused before any request was attempted (a bad argument).
		for _, i := range batch {
			reqs[i].Err = err
		}
		return err
	}
	mem := unsafe.Slice((*byte)(buf), int(total))
	off = 0
	told := false // zt_decode_many's message is its first failed request's
	for k, i := range batch {
		q := &reqs[i]
		if st := Status(arr[k].status); st != StatusOK {
			if !told && err != nil {
				q.Err = err
			} else {
				q.Err = errorf(st, "object %q: component %q failed to decode",
					goString(C.zt_object_name(p, C.size_t(q.Object))), q.Role)
			}
			told = true
		} else {
			n := int(arr[k].written)
			if q.Dst == nil {
				q.Dst = make([]byte, n)
			}
			q.N = copy(q.Dst, mem[off:off+uint64(n)])
		}
		off += caps[i]
	}
	return nil
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
