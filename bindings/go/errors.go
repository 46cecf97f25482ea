package ztensor

/*
#include <ztensor.h>
*/
import "C"

import "fmt"

// Status is a zt_status: what kind of failure a call had. New values may
// appear in later library versions; treat any value but StatusOK as a
// failure.
//
// Status implements error, so that errors.Is(err, ztensor.StatusNotFound)
// tells the kind of an *Error apart.
type Status int

// The zt_status values of ztensor.h (checked against the header when the
// package is built).
const (
	StatusOK          Status = 0
	StatusIO          Status = 1  // open/read/write/mmap/rename failed, an HTTP error
	StatusFormat      Status = 2  // not a zTensor file, truncated, undecodable CBOR
	StatusInvalid     Status = 3  // well-formed but breaks a rule of the spec
	StatusUnsupported Status = 4  // unknown encoding, format or dtype
	StatusDigest      Status = 5  // stored digest does not match the bytes
	StatusLimit       Status = 6  // a safety limit of the library
	StatusNotFound    Status = 7  // no object / component / attribute of that name
	StatusArgument    Status = 8  // bad argument: size, dtype string, duplicate name, ...
	StatusState       Status = 9  // not valid in this state: closed reader, finished writer
	StatusNoMem       Status = 10 // out of memory
)

// Each constant equals its zt_status: any other value makes an array
// length that does not compile.
var (
	_ [0]int = [StatusOK - C.ZT_OK]int{}
	_ [0]int = [StatusIO - C.ZT_ERR_IO]int{}
	_ [0]int = [StatusFormat - C.ZT_ERR_FORMAT]int{}
	_ [0]int = [StatusInvalid - C.ZT_ERR_INVALID]int{}
	_ [0]int = [StatusUnsupported - C.ZT_ERR_UNSUPPORTED]int{}
	_ [0]int = [StatusDigest - C.ZT_ERR_DIGEST]int{}
	_ [0]int = [StatusLimit - C.ZT_ERR_LIMIT]int{}
	_ [0]int = [StatusNotFound - C.ZT_ERR_NOT_FOUND]int{}
	_ [0]int = [StatusArgument - C.ZT_ERR_ARGUMENT]int{}
	_ [0]int = [StatusState - C.ZT_ERR_STATE]int{}
	_ [0]int = [StatusNoMem - C.ZT_ERR_NOMEM]int{}
)

// String is the status's name in the C ABI ("ZT_ERR_INVALID"), from
// zt_status_name; "ZT_ERR_UNKNOWN" for a value the library does not know.
func (s Status) String() string {
	return C.GoString(C.zt_status_name(C.zt_status(s)))
}

// Error makes a Status usable as the target of errors.Is.
func (s Status) Error() string { return s.String() }

// Error is the error every fallible call returns: the status and the
// library's message, which names the object, component, rule and numbers
// involved. The message is thread-local in the C library; the binding reads
// it on the thread that made the call, so it is always the right one.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "ztensor: " + e.Status.String()
	}
	return "ztensor: " + e.Status.String() + ": " + e.Message
}

// Unwrap gives the Status, so that errors.Is(err, StatusInvalid) and
// errors.As(err, &status) work on wrapped errors.
func (e *Error) Unwrap() error { return e.Status }

// errorf makes an *Error raised by the binding itself.
func errorf(s Status, format string, args ...any) *Error {
	return &Error{Status: s, Message: fmt.Sprintf(format, args...)}
}
