package ztensor

/*
#include <stdint.h>
#include <ztensor.h>

// The Go callbacks (source_export.go), reached through C functions of the
// types zt_source wants. ctx is a runtime/cgo.Handle, an integer.
extern int ztgoSourceReadAt(uintptr_t h, uint64_t off, size_t len, void* buf, size_t* done);
extern int ztgoSourceSize(uintptr_t h, uint64_t* size);
extern void ztgoSourceClose(uintptr_t h);

static zt_status ztgo_read_at(void* ctx, uint64_t off, size_t len, void* buf, size_t* done) {
	return (zt_status)ztgoSourceReadAt((uintptr_t)ctx, off, len, buf, done);
}
static zt_status ztgo_size(void* ctx, uint64_t* size) {
	return (zt_status)ztgoSourceSize((uintptr_t)ctx, size);
}
static void ztgo_close(void* ctx) { ztgoSourceClose((uintptr_t)ctx); }

static zt_status ztgo_open_source(uintptr_t h, const char* name, uint32_t flags,
                                  const zt_open_options* opt, zt_reader** out) {
	zt_source s;
	zt_source_init_sized(&s, sizeof s);
	s.flags = flags;
	s.ctx = (void*)h;
	s.read_at = ztgo_read_at;
	s.size = ztgo_size;
	s.close = ztgo_close;
	s.name = name;
	return zt_open_source(&s, opt, out);
}
*/
import "C"

import (
	"errors"
	"io"
	neturl "net/url"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
)

// SourceOptions for OpenSource. The zero value gives the library's
// defaults.
type SourceOptions struct {
	// Name is what error messages call the source (a URL, a key); "" is
	// "source".
	Name string
	// Serial makes the library call ReadAt from one goroutine at a time.
	// Leave it false for a correct io.ReaderAt, which allows parallel calls.
	Serial bool
	// CacheBytes of fetched ranges kept for reuse (0: 64 MiB).
	CacheBytes uint64
	// MaxDecodedBytes caps one component's decoded size (0: the library's
	// build limit).
	MaxDecodedBytes uint64
}

// sourceState is what the C callbacks reach through their handle.
type sourceState struct {
	src  io.ReaderAt
	size int64

	mu         sync.Mutex
	lastErr    error  // the last error of src.ReadAt, for the failing call
	lastStatus Status // the status the callback gave the library for it
}

func (s *sourceState) fail(err error, st Status) {
	s.mu.Lock()
	s.lastErr, s.lastStatus = err, st
	s.mu.Unlock()
}

// explain adds the last error of the ReaderAt to the message of a call that
// failed with the status it caused: the library only learns a status from
// the callback.
func (s *sourceState) explain(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	s.mu.Lock()
	last, st := s.lastErr, s.lastStatus
	if last != nil && st == e.Status {
		s.lastErr = nil
	}
	s.mu.Unlock()
	if last == nil || st != e.Status {
		return err
	}
	return &Error{Status: e.Status, Message: e.Message + " (ReadAt: " + readAtText(last) + ")"}
}

// readAtText is what a message shows of a ReadAt error: an HTTP client's
// *url.Error names the whole URL it asked, and a pre-signed URL's query is
// its credential, so the URL is shown as every URL is (urlForMessages).
func readAtText(err error) string {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + strconv.Quote(urlForMessages(ue.URL)) + ": " + ue.Err.Error()
	}
	return err.Error()
}

// OpenSource opens a zTensor file read through src, an io.ReaderAt of size
// bytes: an object store, an archive member, a file of another kind of
// storage (zt_open_source). The open reads the last 64 KiB and what else
// the manifest needs; later calls read only their ranges. Foreign formats
// are not read this way.
//
// src is used until the Reader is closed and is not closed by it. Its
// ReadAt may be called from several goroutines at once unless
// opt.Serial is set. A ReadAt error fails the read with StatusIO (or with
// the Status of an *Error it returns); a panic in ReadAt is recovered and
// fails the read the same way. There is no mapping: Component.Bytes and the
// views hand out copies the reader keeps until Close.
func OpenSource(src io.ReaderAt, size int64, opt SourceOptions) (*Reader, error) {
	if src == nil || size < 0 {
		return nil, errorf(StatusArgument, "OpenSource needs a ReaderAt and a size >= 0")
	}
	var cs cstrings
	defer cs.free()
	if strings.IndexByte(opt.Name, 0) >= 0 {
		// Not echoed: the name may be a URL with credentials in it.
		return nil, errorf(StatusArgument, "the source name contains a NUL byte")
	}
	cname := cs.opt("source name", opt.Name)
	if cs.err != nil {
		return nil, cs.err
	}
	o := openOptions()
	o.cache_bytes = C.uint64_t(opt.CacheBytes)
	o.max_decoded_bytes = C.uint64_t(opt.MaxDecodedBytes)
	var flags C.uint32_t
	if !opt.Serial {
		flags = C.ZT_SOURCE_CONCURRENT
	}
	state := &sourceState{src: src, size: size}
	// The library calls close exactly once, at zt_close or before a failing
	// open returns: that deletes the handle.
	h := cgo.NewHandle(state)
	var p *C.zt_reader
	err := call(func() C.zt_status {
		return C.ztgo_open_source(C.uintptr_t(h), cname, flags, &o, &p)
	})
	if err != nil {
		return nil, state.explain(err)
	}
	return newReader(p, nil, state), nil
}
