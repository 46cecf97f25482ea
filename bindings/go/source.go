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
//
// The library learns only a status from a failed ReadAt; its error is kept
// here to be added to the message of the call that failed through it. The
// callbacks run on the library's threads and carry no call context, so a
// ReadAt error is attributed only where that is certain: to the one call of
// the reader that was in progress when it happened, at that call's end, if
// it failed with the status the callback gave. With calls overlapping, the
// messages go without it (the statuses are still right).
type sourceState struct {
	src  io.ReaderAt
	size int64

	mu    sync.Mutex
	calls int         // calls of the reader in progress (begin .. end)
	fails uint64      // ReadAt failures so far
	last  readFailure // the last of them, until its call takes it
}

// readFailure is one failed ReadAt.
type readFailure struct {
	err    error
	status Status // what the callback gave the library for it
	seq    uint64 // its number among sourceState.fails
	alone  bool   // one call was in progress: it is that call's
}

func (s *sourceState) fail(err error, st Status) {
	s.mu.Lock()
	s.fails++
	s.last = readFailure{err: err, status: st, seq: s.fails, alone: s.calls == 1}
	s.mu.Unlock()
}

// begin starts a call of the reader (the open, or Reader.with); end(start,
// err) ends it.
func (s *sourceState) begin() (start uint64) {
	s.mu.Lock()
	s.calls++
	start = s.fails
	s.mu.Unlock()
	return start
}

// end ends the call begun at start and gives its error, with the ReadAt
// error that caused it added to the message: one that happened during this
// call while it was the only one in progress, of the call's status. That
// ReadAt error is then spent.
func (s *sourceState) end(start uint64, err error) error {
	var e *Error
	isError := errors.As(err, &e)
	s.mu.Lock()
	s.calls--
	last := s.last
	ours := isError && last.err != nil && last.seq > start && last.alone && last.status == e.Status
	if ours || (last.err != nil && s.calls == 0) {
		s.last = readFailure{} // spent, or no call left that it could belong to
	}
	s.mu.Unlock()
	if !ours {
		return err
	}
	return &Error{Status: e.Status, Message: e.Message + " (ReadAt: " + readAtText(last.err) + ")"}
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
	start := state.begin()
	err := call(func() C.zt_status {
		return C.ztgo_open_source(C.uintptr_t(h), cname, flags, &o, &p)
	})
	if err = state.end(start, err); err != nil {
		return nil, err
	}
	return newReader(p, nil, state), nil
}
