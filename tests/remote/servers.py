"""HTTP servers on loopback for the remote-read tests.

Nginx: Debian's nginx-light, started with its own configuration, document
root and logs in a temporary directory, one process (master_process off),
stopped at the end. Its access log ($request $status $body_bytes_sent
"$http_range") shows how many requests and bytes each operation cost.
Locations:
  /            static files, with Range, multipart/byteranges and ETag
  /norange/    max_ranges 0: every Range ignored (HTTP 200, the whole body)
  /onerange/   max_ranges 1: a request for several ranges gets the whole body
  /auth/       401 unless "Authorization: Bearer s3cret"
  /moved.zt    302 to /mixed.zt
and, where openssl can make a self-signed certificate, the same files over
TLS on tls_port (a certificate no client should trust).

Faults: what static nginx cannot be made to do on cue (answer 500 once,
then serve; send less body than its Content-Length) is done by a small
Python server with the same Range semantics for single ranges.
"""

import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONF = """
daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format ranges '$request $status $body_bytes_sent "$http_range"';
  access_log {dir}/access.log ranges;
  client_body_temp_path {dir}/tmp/body;
  proxy_temp_path {dir}/tmp/proxy;
  fastcgi_temp_path {dir}/tmp/fastcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi;
  scgi_temp_path {dir}/tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port};
    root {dir}/www;
    location /norange/ {{ max_ranges 0; }}
    location /onerange/ {{ max_ranges 1; }}
    location /auth/ {{
      if ($http_authorization != "Bearer s3cret") {{ return 401; }}
    }}
    location = /moved.zt {{ return 302 /mixed.zt; }}
  }}
{tls}}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `www` (a directory under `dir`)."""

    def __init__(self, dir):
        self.dir = dir
        self.www = os.path.join(dir, "www")
        for d in ("www", "www/norange", "www/onerange", "www/auth", "tmp"):
            os.makedirs(os.path.join(dir, d), exist_ok=True)
        self.port = free_port()
        self.tls_port = None
        tls = ""
        openssl = shutil.which("openssl")
        if openssl and subprocess.run(
                [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                 "-days", "1", "-keyout", os.path.join(dir, "key.pem"), "-out", os.path.join(dir, "cert.pem")],
                capture_output=True).returncode == 0:
            self.tls_port = free_port()
            tls = (f"  server {{ listen 127.0.0.1:{self.tls_port} ssl; root {dir}/www;\n"
                   f"    ssl_certificate {dir}/cert.pem; ssl_certificate_key {dir}/key.pem; }}\n")
        self.conf = os.path.join(dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(dir=dir, port=self.port, tls=tls))
        self.log = os.path.join(dir, "access.log")
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", self.conf, "-e",
                                      os.path.join(self.dir, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: " + self.proc.stderr.read().decode())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def entries(self):
        """The access log: one (request line, status, body bytes, range) per request."""
        out = []
        if not os.path.exists(self.log):
            return out
        with open(self.log) as f:
            for line in f:
                m = re.match(r'(\S+ \S+ \S+) (\d+) (\d+) "(.*)"$', line.strip())
                if m:
                    out.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)))
        return out

    def settled(self):
        """entries() once the log has stopped growing: nginx writes a line
        after the response has gone, so a client that has its bytes can be
        ahead of the log (on a loaded machine by more than 50 ms: a mark
        taken too early counted the open's last request as a later read's)."""
        entries = self.entries()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.05)
            again = self.entries()
            if len(again) == len(entries):
                break
            entries = again
        return entries

    def mark(self):
        """Where the log is now: entries() after it are what came since."""
        return len(self.settled())

    def since(self, mark, expect=0):
        """The entries after mark; with expect, waits (up to 10 s) for at
        least that many first: a request the client cut short is logged only
        when nginx next finds the connection closed, which on a loaded
        machine comes after the log has looked settled for 50 ms."""
        deadline = time.monotonic() + 10
        while len(self.entries()) - mark < expect and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.settled()[mark:]


class FaultServer:
    """Serves files with single Range requests and an ETag, failing on cue:
    fail_next: statuses to answer before serving (e.g. [500]);
    cut: a body sent short by this many bytes (Content-Length stays whole);
    short_next: this many answers carry half their range's bytes, with a
    Content-Length that matches the half;
    gzip: bodies sent gzip-compressed with Content-Encoding: gzip (never
    asked for: no Accept-Encoding is sent);
    trickle: seconds between the body's bytes, sent one at a time;
    redirect_to: every answer a 302 to this URL prefix and the path asked;
    refuse: {path: status}, answered to every request for that path;
    no_reason: status lines without a reason phrase ("HTTP/1.1 206");
    endless_redirect: the next answer is a 302 to the same path whose
    chunked body never ends (libcurl reads a followed redirect's body
    itself: it never reaches the library's own body cap);
    delay: seconds each request waits before it is answered;
    most_in_flight: the most requests ever being answered at once, by kind:
    "tail" (a suffix range, bytes=-N: an open's) and "other"."""

    def __init__(self, root):
        self.root = root
        self.fail_next = []
        self.cut = 0
        self.short_next = 0
        self.gzip = False
        self.trickle = 0.0
        self.endless_redirect = False
        self.redirect_to = None
        self.refuse = {}
        self.no_reason = False
        self.delay = 0.0
        self.in_flight = {"tail": 0, "other": 0}
        self.most_in_flight = {"tail": 0, "other": 0}
        self.counting = threading.Lock()
        self.requests = []
        self.headers_seen = []  # each request's headers, lower-cased names
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send_response_only(self, code, message=None):
                if not server.no_reason:
                    return super().send_response_only(code, message)
                if not hasattr(self, "_headers_buffer"):
                    self._headers_buffer = []
                self._headers_buffer.append(b"%s %d\r\n" % (self.protocol_version.encode(), code))

            def do_GET(self):
                kind = "tail" if self.headers.get("Range", "").startswith("bytes=-") else "other"
                with server.counting:
                    server.in_flight[kind] += 1
                    server.most_in_flight[kind] = max(server.most_in_flight[kind], server.in_flight[kind])
                try:
                    if server.delay:
                        import time
                        time.sleep(server.delay)
                    self.answer()
                finally:
                    with server.counting:
                        server.in_flight[kind] -= 1

            def answer(self):
                rng = self.headers.get("Range", "")
                server.requests.append((self.path, rng))
                server.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
                if server.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", server.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path.split("?")[0] in server.refuse:
                    self.send_response(server.refuse[self.path.split("?")[0]])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if server.fail_next:
                    status = server.fail_next.pop(0)
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if server.endless_redirect:
                    server.endless_redirect = False
                    self.send_response(302)
                    self.send_header("Location", self.path)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"A" * 65536
                    try:
                        for _ in range(100000):  # 6.5 GB: "never", for a test
                            self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    except OSError:  # the client gave up
                        pass
                    self.close_connection = True
                    return
                path = os.path.join(server.root, self.path.split("?")[0].lstrip("/"))
                if not os.path.isfile(path):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with open(path, "rb") as f:
                    data = f.read()
                size = len(data)
                m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
                if m and size == 0:  # no range of an empty file can be satisfied
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if not m:
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if m.group(1) == "":
                    first, last = max(0, size - int(m.group(2))), size - 1
                else:
                    first = int(m.group(1))
                    last = min(size - 1, int(m.group(2))) if m.group(2) else size - 1
                body = data[first:last + 1]
                if server.short_next:
                    # A body short of its Content-Range, with a Content-Length
                    # that agrees with the short body: only the range tells.
                    server.short_next -= 1
                    body = body[:len(body) // 2]
                if server.gzip:
                    import gzip
                    body = gzip.compress(body)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", '"fixed"')
                if server.gzip:
                    self.send_header("Content-Encoding", "gzip")
                self.end_headers()
                if server.trickle:
                    import time
                    try:
                        for k in range(len(body)):
                            self.wfile.write(body[k:k + 1])
                            self.wfile.flush()
                            time.sleep(server.trickle)
                    except OSError:  # the client gave up
                        pass
                    self.close_connection = True
                    return
                if server.cut:
                    self.wfile.write(body[:max(0, len(body) - server.cut)])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
