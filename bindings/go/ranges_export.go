package ztensor

// The completion callback of DecodeRanges, exported to C. A file with
// //export may only declare in its preamble, so the C side is in ranges.go.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "runtime/cgo"

//export ztgoRangeDone
func ztgoRangeDone(h C.uintptr_t, index C.size_t, status C.int) {
	cgo.Handle(h).Value().(*rangesState).complete(int(index), Status(status))
}
