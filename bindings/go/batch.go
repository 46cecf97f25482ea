package ztensor

/*
#include <stdlib.h>
#include <ztensor.h>

// zt_decode_many with request k's dst at base + at[k] (NULL for an empty
// one). base may be Go memory, passed for this call: the addresses made of
// it live in the requests, C memory, only until the call returns, as cgo
// asks of C code holding Go pointers.
static zt_status ztgo_decode_many_at(const zt_reader* r, zt_decode_request* q, size_t n,
                                     unsigned threads, char* base, const uint64_t* at) {
	for (size_t k = 0; k < n; k++) q[k].dst = q[k].capacity ? base + at[k] : NULL;
	zt_status st = zt_decode_many(r, q, n, threads);
	for (size_t k = 0; k < n; k++) q[k].dst = NULL;
	return st;
}
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

// How DecodeMany places what it decodes. A request's bytes go straight
// into Go memory where it has a place there of its own for the call: a
// caller's Dst of inPlaceFrom bytes or more (decoded alone: a large
// component's raw slices and zstd frames still go to every thread), and
// a nil Dst, which gets a slice of a new allocation: of its own from
// ownFrom bytes, else of one shared with the call's other small ones
// (up to arenaBytes each, places aligned to arenaAlign). Decoding into
// C memory and copying out took a 1.1 GiB model 3x as long (2-core VM,
// ~600 ms against ~200). A caller's smaller Dst is decoded with the others
// into C memory and copied: one call reads neighbours together.
const (
	inPlaceFrom = 1 << 20
	ownFrom     = 4 << 20
	arenaBytes  = 32 << 20
	arenaAlign  = 64
)

// DecodeMany decodes many components on up to threads threads (0: all
// cores), sharing the work out by zstd frame and by slices of raw data, so
// that a whole file, a list of names or one large component all use every
// thread (zt_decode_many). Every request is attempted and gets its own N
// and Err. The error returned is nil if all succeeded, else the first
// failed request's, in order.
//
// A request with a nil Dst gets a new slice of N bytes. Those of 4 MiB or
// more are allocations of their own; smaller ones share allocations of up
// to 32 MiB with the call's other small ones (each slice's capacity is its
// length, so an append copies), and one kept reachable keeps its whole
// allocation: copy a small slice that outlives the others, if that memory
// matters. A Dst of 1 MiB or more is decoded into in place (a request that
// fails may leave it partly written); a smaller Dst is decoded into C
// memory with the other small ones and copied, only when it succeeds.
// A request with a nil Dst for a component whose decoded size is known
// only by decoding it (a zstd stream that does not declare it;
// Component.DecodedSizeKnown false) is decoded on its own into the
// reader's decode cache, as Component.Bytes does, and copied from there:
// those bytes stay in the cache until Close.
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
		for _, g := range placeBatch(reqs, batch, caps) {
			if err := r.decodeBatch(p, reqs, g, roles, caps, threads); err != nil {
				return err
			}
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

// placed is one zt_decode_many call of DecodeMany: requests reqs[idx[k]],
// each decoded at mem[at[k]:] (Go memory: in place), or, with mem nil,
// into C memory and copied out.
type placed struct {
	idx []int
	at  []uint64
	mem []byte
}

// placeBatch shares the requests reqs[batch[k]] out into calls, as the
// constants above say: the copied ones first (one call), then those in
// place, in order. The Go memory for nil Dsts is allocated here.
func placeBatch(reqs []DecodeRequest, batch []int, caps []uint64) []placed {
	var copied placed
	var calls []placed
	var arena *placed // the shared allocation being filled
	var used uint64
	closeArena := func() {
		if arena != nil {
			arena.mem = make([]byte, used)
			calls = append(calls, *arena)
			arena = nil
		}
	}
	for _, i := range batch {
		n := caps[i]
		switch dst := reqs[i].Dst; {
		case dst != nil && n >= inPlaceFrom:
			calls = append(calls, placed{idx: []int{i}, at: []uint64{0}, mem: dst})
		case dst != nil || n == 0:
			copied.idx = append(copied.idx, i)
		case n >= ownFrom:
			calls = append(calls, placed{idx: []int{i}, at: []uint64{0}, mem: make([]byte, n)})
		default:
			at := (used + arenaAlign - 1) &^ (arenaAlign - 1)
			if arena != nil && at+n > arenaBytes {
				closeArena()
			}
			if arena == nil {
				arena, at = &placed{}, 0
			}
			arena.idx = append(arena.idx, i)
			arena.at = append(arena.at, at)
			used = at + n
		}
	}
	closeArena()
	if len(copied.idx) == 0 {
		return calls
	}
	var off uint64
	for _, i := range copied.idx {
		copied.at = append(copied.at, off)
		off += caps[i]
	}
	return append([]placed{copied}, calls...)
}

// decodeBatch runs zt_decode_many for the requests of g and sets their N,
// Dst and Err. It returns an error only for a batch refused as a whole,
// which every request in it gets.
func (r *Reader) decodeBatch(p *C.zt_reader, reqs []DecodeRequest, g placed, roles []*C.char, caps []uint64, threads int) error {
	if len(g.idx) == 0 {
		return nil
	}
	var cmem unsafe.Pointer // mem nil: the C memory decoded into and copied from
	if g.mem == nil {
		var total uint64
		for _, i := range g.idx {
			total += caps[i]
		}
		var err error
		if cmem, err = cAlloc(total, "DecodeMany"); err != nil {
			return err
		}
		defer cFree(cmem)
	}
	creqs, err := cAlloc(uint64(len(g.idx))*uint64(C.sizeof_zt_decode_request), "DecodeMany")
	if err != nil {
		return err
	}
	defer cFree(creqs)
	arr := unsafe.Slice((*C.zt_decode_request)(creqs), len(g.idx))
	for k, i := range g.idx {
		C.zt_decode_request_init(&arr[k])
		if reqs[i].Object < 0 {
			arr[k].object = C.size_t(^uint(0)) // out of range: the library says so
		} else {
			arr[k].object = C.size_t(reqs[i].Object)
		}
		arr[k].role = roles[i]
		arr[k].capacity = C.uint64_t(caps[i])
	}
	at := (*C.uint64_t)(unsafe.Pointer(&g.at[0]))
	err = call(func() C.zt_status {
		if g.mem == nil {
			return C.ztgo_decode_many_at(p, &arr[0], C.size_t(len(arr)), C.uint(threads), (*C.char)(cmem), at)
		}
		// Go memory, passed for the call: the addresses made of it are
		// cleared before the call returns (cgo's rule for C memory).
		return C.ztgo_decode_many_at(p, &arr[0], C.size_t(len(arr)), C.uint(threads), (*C.char)(unsafe.Pointer(&g.mem[0])), at)
	})
	if err != nil && refused(arr) {
		// Refused before any request was attempted (a bad argument).
		for _, i := range g.idx {
			reqs[i].Err = err
		}
		return err
	}
	told := false // zt_decode_many's message is its first failed request's
	for k, i := range g.idx {
		q := &reqs[i]
		if st := Status(arr[k].status); st != StatusOK {
			if !told && err != nil {
				q.Err = err
			} else {
				q.Err = errorf(st, "object %q: component %q failed to decode",
					goString(C.zt_object_name(p, C.size_t(q.Object))), q.Role)
			}
			told = true
			continue
		}
		n := uint64(arr[k].written)
		switch {
		case g.mem == nil:
			if q.Dst == nil {
				q.Dst = make([]byte, n)
			}
			q.N = copy(q.Dst, unsafe.Slice((*byte)(unsafe.Add(cmem, g.at[k])), int(n)))
		case q.Dst == nil:
			q.Dst, q.N = g.mem[g.at[k]:g.at[k]+n:g.at[k]+n], int(n)
		default:
			q.N = int(n)
		}
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
