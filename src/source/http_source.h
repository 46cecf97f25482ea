// A file behind an http:// or https:// URL, read with Range requests
// through libcurl: an object store (S3, GCS, Azure Blob through pre-signed
// URLs or a token), a model hub, a CDN, any static file server.
//
// The open is one request for the last bytes of the file (a suffix range;
// the first bytes for a safetensors file), which also tells the size and the version the server
// holds (ETag, or Last-Modified). Every later request is conditional on that version (If-Match /
// If-Unmodified-Since) and checked against it, so a file replaced while open fails reads with
// "changed on the server" rather than mixing two versions. Several ranges go in one request
// (multipart/byteranges), ranges a few KiB apart merged into one. A server
// that ignores Range (200 with the whole body) is refused after its
// headers, without reading the body. 5xx answers and connection failures
// are retried with a doubling backoff; messages name the URL without its
// query string, which may hold a signature.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "source/http_url.h"
#include "source/range_source.h"

namespace zt {

struct HttpOptions {
  std::vector<std::string> headers;  // "Name: value", sent with every request
  uint32_t timeout_ms = 30000;       // connect timeout; longest stall of a transfer
  uint32_t retries = 3;              // after a 5xx or a connection failure
  uint32_t connections = 4;          // requests in flight at once
};

// Opens `url`, fetching the bytes of `window` (fewer for a smaller file).
// The environment variable ZT_HTTP_BEARER_TOKEN adds "Authorization:
// Bearer <token>" unless `opt.headers` has an Authorization header or
// may_send_environment_token(url) says no.
// Errors: Status::io (HTTP status, connection, a server without Range
// support), Status::argument (not an http(s) URL, a header without ':').
Result<RangeOpened> open_http(const std::string& url, const HttpOptions& opt, OpenWindow window);

}  // namespace zt
