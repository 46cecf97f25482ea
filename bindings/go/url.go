package ztensor

/*
#include <stdlib.h>
#include <ztensor.h>
*/
import "C"

import (
	"math"
	"sort"
	"strings"
	"time"
	"unsafe"
)

// HTTPOptions for OpenURL. The zero value gives the library's defaults.
type HTTPOptions struct {
	// Headers are sent with every request, e.g. {"Authorization": "Bearer
	// TOKEN"}. Without an Authorization header, the environment variable
	// ZT_HTTP_BEARER_TOKEN adds one.
	Headers map[string]string
	// Timeout is the connect timeout and the longest a transfer may stall
	// without a byte (0: 30 s; rounded up to whole milliseconds).
	Timeout time.Duration
	// Retries of a request after a 5xx or 429 answer or a connection error,
	// waiting 100 ms, 200 ms, ... (0: the library's default of 3; negative:
	// none).
	Retries int
	// Connections kept open for reads running at once (0: 4).
	Connections int
	// CacheBytes of fetched ranges kept for reuse (0: 64 MiB).
	CacheBytes uint64
	// MaxDecodedBytes caps one component's decoded size (0: the library's
	// build limit).
	MaxDecodedBytes uint64
	// AllowForeign also reads .safetensors URLs and sharded safetensors
	// .index.json URLs (one request to open); other foreign formats are
	// refused over HTTP.
	AllowForeign bool
}

// headerLines makes the "Name: value" lines of zt_open_options.http_headers,
// sorted by name, refusing what would break the lines apart.
func headerLines(h map[string]string) (string, error) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		value := h[name]
		if name == "" || strings.ContainsAny(name, ":\r\n\x00 \t") {
			return "", errorf(StatusArgument, "HTTP header name %q is not a header name", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return "", errorf(StatusArgument, "HTTP header %s: the value has a line break or NUL byte", name)
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
	}
	return b.String(), nil
}

func clampU32(v int64) C.uint32_t {
	if v > math.MaxUint32 {
		return C.uint32_t(math.MaxUint32)
	}
	return C.uint32_t(v)
}

// OpenURL opens the zTensor file at an http:// or https:// URL
// (zt_open_url, libcurl with Range requests). The open costs two requests;
// later calls fetch only the byte ranges they need. The file is pinned by
// its ETag: if it is replaced on the server, later reads fail with
// StatusIO. There is no mapping: Component.Bytes and the views hand out
// copies the reader keeps until Close.
func OpenURL(url string, opt HTTPOptions) (*Reader, error) {
	if strings.IndexByte(url, 0) >= 0 {
		// Not echoed: a URL may carry credentials (user info, a signed query).
		return nil, errorf(StatusArgument, "the URL contains a NUL byte")
	}
	var cs cstrings
	defer cs.free()
	curl := cs.str("URL", url)
	headers, err := headerLines(opt.Headers)
	if err != nil {
		return nil, err
	}
	o := openOptions()
	o.http_headers = cs.opt("HTTP headers", headers)
	if cs.err != nil {
		return nil, cs.err
	}
	if opt.Timeout < 0 || opt.Connections < 0 {
		return nil, errorf(StatusArgument, "negative HTTP timeout or connection count")
	}
	if opt.Timeout > 0 {
		o.http_timeout_ms = clampU32(int64((opt.Timeout + time.Millisecond - 1) / time.Millisecond))
	}
	switch {
	case opt.Retries < 0:
		o.http_retries = 0
	case opt.Retries > 0:
		o.http_retries = clampU32(int64(opt.Retries))
	}
	o.http_connections = clampU32(int64(opt.Connections))
	o.cache_bytes = C.uint64_t(opt.CacheBytes)
	o.max_decoded_bytes = C.uint64_t(opt.MaxDecodedBytes)
	o.allow_foreign = cBool(opt.AllowForeign)
	var p *C.zt_reader
	if err := call(func() C.zt_status { return C.zt_open_url(curl, &o, &p) }); err != nil {
		return nil, err
	}
	return newReader(p, nil, nil), nil
}

// urlForMessages is what a message shows of a location: an http(s) URL
// without its user info, query and fragment, anything else as it is
// (zt_url_for_messages). A location with a NUL byte is not shown at all.
func urlForMessages(location string) string {
	if strings.IndexByte(location, 0) >= 0 {
		return "(a location with a NUL byte)"
	}
	c := C.CString(location)
	defer C.free(unsafe.Pointer(c))
	// Asked for its length first: the text shown may be longer than the
	// location ("https://h" is "https://h/"; one libcurl cannot parse is
	// named as such).
	n := C.zt_url_for_messages(c, nil, 0)
	buf := make([]byte, int(n)+1)
	C.zt_url_for_messages(c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	return string(buf[:int(n)])
}
