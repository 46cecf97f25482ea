package ztensor

/*
#include <stdlib.h>
#include <ztensor.h>

// zt_decode_many with request k's dst at base[region[k]] + at[k] (NULL
// for an empty one), base being b0 ... b7. These may be Go memory, passed
// for this call: the addresses made of them live in the requests, C
// memory, only until the call returns, as cgo asks of C code holding Go
// pointers (Go code may not store them there; each must be an argument).
static zt_status ztgo_decode_many_in(const zt_reader* r, zt_decode_request* q, size_t n,
                                     unsigned threads, const uint8_t* region, const uint64_t* at,
                                     char* b0, char* b1, char* b2, char* b3, char* b4, char* b5,
                                     char* b6, char* b7) {
	char* const base[8] = {b0, b1, b2, b3, b4, b5, b6, b7};
	for (size_t k = 0; k < n; k++) q[k].dst = q[k].capacity ? base[region[k] & 7] + at[k] : NULL;
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
// fails may leave it partly written), so the requests' Dsts must not
// overlap; a smaller Dst is decoded into C memory with the other small
// ones and copied, only when it succeeds.
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
		roleOf := map[string]*C.char{}
		var total uint64
		count := C.size_t(C.zt_object_count(p))
		for i := range reqs {
			q := &reqs[i]
			q.N, q.Err = 0, nil
			role, ok := roleOf[q.Role] // a C string a role, not a request (a model's are all "data")
			if !ok {
				if role = cs.str("role", q.Role); cs.err != nil {
					return cs.err
				}
				roleOf[q.Role] = role
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

// regionsPerCall is how many Go allocations one call decodes into: the
// shim's base arguments. Fewer calls keep every core busy to the end (one
// call's last tasks leave cores idle): 4,096 x 64 KiB into 8 shared
// allocations took 73 ms in 8 calls, 64 in one (2-core VM).
const regionsPerCall = 8

// placed is one zt_decode_many call of DecodeMany: requests reqs[idx[k]],
// each decoded at mem[reg[k]][at[k]:] (Go memory: in place), or, with mem
// nil, into C memory at at[k] and copied out.
type placed struct {
	idx []int
	reg []uint8
	at  []uint64
	mem [][]byte
}

// region is one Go allocation (or caller's Dst) and what goes into it.
type region struct {
	mem []byte
	idx []int
	at  []uint64
}

// placeBatch shares the requests reqs[batch[k]] out into calls, as the
// constants above say: the copied ones first (one call), then those in
// place, regionsPerCall allocations a call. The Go memory for nil Dsts is
// allocated here.
func placeBatch(reqs []DecodeRequest, batch []int, caps []uint64) []placed {
	var copied placed
	var regions []*region
	var arena *region // the shared allocation being filled
	var used uint64
	closeArena := func() {
		if arena != nil {
			arena.mem = make([]byte, used)
			regions = append(regions, arena)
			arena = nil
		}
	}
	for _, i := range batch {
		n := caps[i]
		switch dst := reqs[i].Dst; {
		case dst != nil && n >= inPlaceFrom:
			regions = append(regions, &region{mem: dst, idx: []int{i}, at: []uint64{0}})
		case dst != nil || n == 0:
			copied.idx = append(copied.idx, i)
		case n >= ownFrom:
			regions = append(regions, &region{mem: make([]byte, n), idx: []int{i}, at: []uint64{0}})
		default:
			at := (used + arenaAlign - 1) &^ (arenaAlign - 1)
			if arena != nil && at+n > arenaBytes {
				closeArena()
			}
			if arena == nil {
				arena, at = &region{}, 0
			}
			arena.idx = append(arena.idx, i)
			arena.at = append(arena.at, at)
			used = at + n
		}
	}
	closeArena()
	var calls []placed
	if len(copied.idx) > 0 {
		var off uint64
		for _, i := range copied.idx {
			copied.reg = append(copied.reg, 0)
			copied.at = append(copied.at, off)
			off += caps[i]
		}
		calls = append(calls, copied)
	}
	for len(regions) > 0 {
		n := len(regions)
		if n > regionsPerCall {
			n = regionsPerCall
		}
		var g placed
		for j, rg := range regions[:n] {
			g.mem = append(g.mem, rg.mem)
			g.idx = append(g.idx, rg.idx...)
			g.at = append(g.at, rg.at...)
			for range rg.idx {
				g.reg = append(g.reg, uint8(j))
			}
		}
		calls = append(calls, g)
		regions = regions[n:]
	}
	return calls
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
	// The bases: the C memory, or the call's Go allocations, each passed
	// as an argument (cgo checks each holds no Go pointer).
	var base [regionsPerCall]*C.char
	if g.mem == nil {
		base[0] = (*C.char)(cmem)
	}
	for j, m := range g.mem {
		base[j] = (*C.char)(unsafe.Pointer(&m[0]))
	}
	reg, at := (*C.uint8_t)(unsafe.Pointer(&g.reg[0])), (*C.uint64_t)(unsafe.Pointer(&g.at[0]))
	err = call(func() C.zt_status {
		return C.ztgo_decode_many_in(p, &arr[0], C.size_t(len(arr)), C.uint(threads), reg, at,
			base[0], base[1], base[2], base[3], base[4], base[5], base[6], base[7])
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
			m := g.mem[g.reg[k]]
			q.Dst, q.N = m[g.at[k]:g.at[k]+n:g.at[k]+n], int(n)
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
