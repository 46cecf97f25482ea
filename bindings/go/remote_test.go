package ztensor_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ztensor "github.com/libztensor/libztensor/bindings/go"
)

// bigSample is a file over 64 KiB, so that remote readers fetch ranges.
func bigSample(t *testing.T, dir string) (string, []float32) {
	path := filepath.Join(dir, "big.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	big := make([]float32, 50000)
	for i := range big {
		big[i] = float32(i) / 4
	}
	must(t, ztensor.AddDenseOf(w, "big", []uint64{500, 100}, big, "raw"))
	must(t, ztensor.AddDenseOf(w, "bigz", []uint64{500, 100}, big, "zstd"))
	must(t, ztensor.AddDenseOf(w, "small", []uint64{2, 3}, weight, ""))
	must(t, w.Finish())
	return path, big
}

// countingReaderAt counts calls and the most that ran at once.
type countingReaderAt struct {
	r              *bytes.Reader
	calls, running int32
	most           int32
	mu             sync.Mutex
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	atomic.AddInt32(&c.calls, 1)
	n := atomic.AddInt32(&c.running, 1)
	defer atomic.AddInt32(&c.running, -1)
	c.mu.Lock()
	if n > c.most {
		c.most = n
	}
	c.mu.Unlock()
	return c.r.ReadAt(p, off)
}

func TestOpenSource(t *testing.T) {
	path, big := bigSample(t, t.TempDir())
	data, err := os.ReadFile(path)
	must(t, err)
	src := &countingReaderAt{r: bytes.NewReader(data)}
	r, err := ztensor.OpenSource(src, int64(len(data)), ztensor.SourceOptions{Name: "mem://big.zt"})
	must(t, err)
	defer r.Close()
	if got := names(r.Objects()); !reflect.DeepEqual(got, []string{"big", "bigz", "small"}) {
		t.Errorf("objects %v", got)
	}
	atOpen := atomic.LoadInt32(&src.calls)
	s, err := find(t, r, "small").DecodeFloat32()
	must(t, err)
	if !reflect.DeepEqual(s, weight) {
		t.Errorf("small %v", s)
	}
	for _, name := range []string{"big", "bigz"} {
		got := elements[float32](t, bytesOf(t, component(t, find(t, r, name), "data")))
		if !reflect.DeepEqual(got, big) {
			t.Errorf("%s differs", name)
		}
		rows, err := find(t, r, name).DenseRowsFloat32(10, 12)
		must(t, err)
		if !reflect.DeepEqual(rows, big[1000:1200]) {
			t.Errorf("%s rows differ", name)
		}
	}
	reqs := []ztensor.DecodeRequest{{Object: 0, Role: "data"}, {Object: 1, Role: "data"}}
	must(t, r.DecodeMany(reqs, 4))
	if !bytes.Equal(reqs[0].Dst, reqs[1].Dst) || !reflect.DeepEqual(elements[float32](t, reqs[1].Dst), big) {
		t.Errorf("DecodeMany through the source differs")
	}
	if _, _, err := r.Verify(); err != nil {
		t.Error(err)
	}
	t.Logf("ReadAt calls: %d at open, %d in all, at most %d at once", atOpen, atomic.LoadInt32(&src.calls), src.most)
	if atOpen > 3 {
		t.Errorf("the open made %d calls", atOpen)
	}
}

func TestOpenSourceSerial(t *testing.T) {
	path, big := bigSample(t, t.TempDir())
	data, err := os.ReadFile(path)
	must(t, err)
	src := &countingReaderAt{r: bytes.NewReader(data)}
	r, err := ztensor.OpenSource(src, int64(len(data)), ztensor.SourceOptions{Serial: true, CacheBytes: 1 << 20})
	must(t, err)
	defer r.Close()
	reqs := []ztensor.DecodeRequest{{Object: 0, Role: "data"}, {Object: 1, Role: "data"}}
	must(t, r.DecodeMany(reqs, 4))
	if !reflect.DeepEqual(elements[float32](t, reqs[0].Dst), big) || src.most != 1 {
		t.Errorf("serial source: at most %d at once", src.most)
	}
}

// failingReaderAt fails or panics once failing is set.
type failingReaderAt struct {
	r       *bytes.Reader
	failing bool
	err     error
	panic   bool
	short   bool
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if f.failing {
		if f.panic {
			panic("storage exploded")
		}
		return 0, f.err
	}
	if f.short && len(p) > 7 {
		p = p[:7] // short reads: the library asks again
	}
	return f.r.ReadAt(p, off)
}

func TestOpenSourceErrors(t *testing.T) {
	path, big := bigSample(t, t.TempDir())
	data, err := os.ReadFile(path)
	must(t, err)
	size := int64(len(data))

	// Short reads are fine.
	r, err := ztensor.OpenSource(&failingReaderAt{r: bytes.NewReader(data), short: true}, size, ztensor.SourceOptions{})
	must(t, err)
	if got := elements[float32](t, bytesOf(t, component(t, find(t, r, "big"), "data"))); !reflect.DeepEqual(got, big) {
		t.Errorf("short reads: values differ")
	}
	r.Close()

	// The data fails: the error carries the ReadAt error's text.
	f := &failingReaderAt{r: bytes.NewReader(data), err: errors.New("disk on fire")}
	r, err = ztensor.OpenSource(f, size, ztensor.SourceOptions{Name: "flaky", Serial: true})
	must(t, err)
	f.failing = true
	_, err = component(t, find(t, r, "big"), "data").Bytes()
	e := wantStatus(t, err, ztensor.StatusIO, "a failing ReadAt")
	if !strings.Contains(e.Message, "disk on fire") || !strings.Contains(e.Message, "flaky") {
		t.Errorf("message %q", e.Message)
	}
	// An *Error from ReadAt gives its status.
	f.err = &ztensor.Error{Status: ztensor.StatusDigest, Message: "checksum"}
	_, err = component(t, find(t, r, "big"), "data").Float32s()
	wantStatus(t, err, ztensor.StatusDigest, "a ReadAt returning an *Error")
	// A panic in ReadAt is a failed read, not a crash.
	f.panic = true
	_, err = find(t, r, "bigz").DecodeFloat32()
	if e := wantStatus(t, err, ztensor.StatusIO, "a panicking ReadAt"); !strings.Contains(e.Message, "storage exploded") {
		t.Errorf("message %q", e.Message)
	}
	r.Close()

	// A size beyond the data: the read ends early.
	_, err = ztensor.OpenSource(bytes.NewReader(data), size+10, ztensor.SourceOptions{})
	if err == nil {
		t.Error("a source with a wrong size opened")
	}
	_, err = ztensor.OpenSource(bytes.NewReader([]byte("garbage")), 7, ztensor.SourceOptions{})
	wantStatus(t, err, ztensor.StatusFormat, "a source of garbage")
	_, err = ztensor.OpenSource(nil, 0, ztensor.SourceOptions{})
	wantStatus(t, err, ztensor.StatusArgument, "a nil source")
}

// No message shows a credential: not a source name that is a signed URL,
// not the URL an HTTP client's error names, not a URL with a NUL byte.
func TestMessagesShowNoCredentials(t *testing.T) {
	path, _ := bigSample(t, t.TempDir())
	data, err := os.ReadFile(path)
	must(t, err)
	const signed = "https://user:secret@store.example/big.zt?X-Signature=hidden"
	f := &failingReaderAt{r: bytes.NewReader(data),
		err: &url.Error{Op: "Get", URL: signed, Err: errors.New("connection reset")}}
	r, err := ztensor.OpenSource(f, int64(len(data)), ztensor.SourceOptions{Name: signed, Serial: true})
	must(t, err)
	defer r.Close()
	f.failing = true
	_, err = component(t, find(t, r, "big"), "data").Bytes()
	e := wantStatus(t, err, ztensor.StatusIO, "a failing ReadAt")
	if strings.Contains(e.Message, "secret") || strings.Contains(e.Message, "hidden") ||
		!strings.Contains(e.Message, "https://store.example/big.zt") || !strings.Contains(e.Message, "connection reset") {
		t.Errorf("message %q", e.Message)
	}
	// A URL shown longer than it is given (libcurl adds the path; one it
	// cannot parse is named as such) comes whole.
	f.err = &url.Error{Op: "Get", URL: "https://exa mple.com?sig=hidden", Err: errors.New("bad")}
	_, err = component(t, find(t, r, "bigz"), "data").Bytes()
	if e := wantStatus(t, err, ztensor.StatusIO, "a URL that does not parse"); strings.Contains(e.Message, "hidden") ||
		!strings.Contains(e.Message, "(a URL that does not parse)") {
		t.Errorf("message %q", e.Message)
	}
	for what, open := range map[string]func() error{
		"URL": func() error { _, err := ztensor.OpenURL(signed+"\x00", ztensor.HTTPOptions{}); return err },
		"source name": func() error {
			_, err := ztensor.OpenSource(bytes.NewReader(data), int64(len(data)), ztensor.SourceOptions{Name: signed + "\x00"})
			return err
		},
	} {
		if e := wantStatus(t, open(), ztensor.StatusArgument, what+" with a NUL"); strings.Contains(e.Message, "secret") {
			t.Errorf("%s: message %q", what, e.Message)
		}
	}
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	path, big := bigSample(t, dir)
	data, err := os.ReadFile(path)
	must(t, err)
	var requests int32
	var sawHeader int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		atomic.AddInt32(&requests, 1)
		if req.Header.Get("X-Ztensor-Test") == "yes" {
			atomic.AddInt32(&sawHeader, 1)
		}
		switch req.URL.Path {
		case "/big.zt":
			w.Header().Set("ETag", `"v1"`)
			http.ServeContent(w, req, "big.zt", time.Unix(1700000000, 0), bytes.NewReader(data))
		default:
			http.NotFound(w, req)
		}
	}))
	defer srv.Close()

	r, err := ztensor.OpenURL(srv.URL+"/big.zt", ztensor.HTTPOptions{
		Headers:     map[string]string{"X-Ztensor-Test": "yes"},
		Timeout:     5 * time.Second,
		Retries:     -1,
		Connections: 2,
		CacheBytes:  1 << 20,
	})
	must(t, err)
	defer r.Close()
	atOpen := atomic.LoadInt32(&requests)
	if got := names(r.Objects()); !reflect.DeepEqual(got, []string{"big", "bigz", "small"}) {
		t.Errorf("objects %v", got)
	}
	got, err := find(t, r, "bigz").DecodeFloat32()
	must(t, err)
	if !reflect.DeepEqual(got, big) {
		t.Errorf("bigz over HTTP differs")
	}
	s, err := find(t, r, "big").DenseSliceFloat32([]uint64{7, 10}, []uint64{8, 13})
	must(t, err)
	if !reflect.DeepEqual(s, big[710:713]) {
		t.Errorf("a slice over HTTP: %v", s)
	}
	if atOpen != 2 || atomic.LoadInt32(&sawHeader) != atomic.LoadInt32(&requests) {
		t.Errorf("%d requests at open (want 2); header seen on %d of %d", atOpen, sawHeader, requests)
	}

	_, err = ztensor.OpenURL(srv.URL+"/missing.zt", ztensor.HTTPOptions{Retries: -1})
	if e := wantStatus(t, err, ztensor.StatusIO, "a 404"); !strings.Contains(e.Message, "404") {
		t.Errorf("message %q", e.Message)
	}
	_, err = ztensor.OpenURL("ftp://example.invalid/x.zt", ztensor.HTTPOptions{})
	wantStatus(t, err, ztensor.StatusArgument, "an ftp URL")
	_, err = ztensor.OpenURL(srv.URL+"/big.zt", ztensor.HTTPOptions{Headers: map[string]string{"X-Bad": "a\nInjected: 1"}})
	wantStatus(t, err, ztensor.StatusArgument, "a header value with a line break")
	_, err = ztensor.OpenURL(srv.URL+"/big.zt", ztensor.HTTPOptions{Headers: map[string]string{"Bad:Name": "x"}})
	wantStatus(t, err, ztensor.StatusArgument, "a header name with a colon")
}

// A .safetensors URL with AllowForeign: the open's first request brings the
// header, a second asks for config.json beside it (this server has none:
// 404, so the tensors stay as they are; a text that is not a config would
// be refused as a local one is); a tensor costs its own bytes.
func TestOpenURLSafetensors(t *testing.T) {
	values := []float32{1.5, -2, 3.25, 4, 5, 6}
	header, err := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"w":            map[string]any{"dtype": "F32", "shape": []int{2, 3}, "data_offsets": []int{0, 24}},
	})
	must(t, err)
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	var file bytes.Buffer
	must(t, binary.Write(&file, binary.LittleEndian, uint64(len(header))))
	file.Write(header)
	must(t, binary.Write(&file, binary.LittleEndian, values))
	var requests int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		atomic.AddInt32(&requests, 1)
		if strings.HasSuffix(req.URL.Path, "/config.json") {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, req, "m.safetensors", time.Unix(1700000000, 0), bytes.NewReader(file.Bytes()))
	}))
	defer srv.Close()

	_, err = ztensor.OpenURL(srv.URL+"/m.safetensors", ztensor.HTTPOptions{Retries: -1})
	wantStatus(t, err, ztensor.StatusFormat, "a .safetensors URL without AllowForeign")
	atomic.StoreInt32(&requests, 0)
	r, err := ztensor.OpenURL(srv.URL+"/m.safetensors", ztensor.HTTPOptions{AllowForeign: true})
	must(t, err)
	defer r.Close()
	if n := atomic.LoadInt32(&requests); n != 2 {
		t.Errorf("%d requests to open (want 2)", n)
	}
	if got := names(r.Objects()); !reflect.DeepEqual(got, []string{"w"}) {
		t.Errorf("objects %v", got)
	}
	got, err := find(t, r, "w").DecodeFloat32()
	must(t, err)
	if !reflect.DeepEqual(got, values) {
		t.Errorf("values %v", got)
	}
	_, err = ztensor.OpenURL(srv.URL+"/x.npy", ztensor.HTTPOptions{AllowForeign: true})
	wantStatus(t, err, ztensor.StatusUnsupported, "an .npy URL")
}
