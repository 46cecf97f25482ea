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
#include "source/range_source.h"

namespace zt {

struct HttpOptions {
  std::vector<std::string> headers;  // "Name: value", sent with every request
  uint32_t timeout_ms = 30000;       // connect timeout; longest stall of a transfer
  uint32_t retries = 3;              // after a 5xx or a connection failure
  uint32_t connections = 4;          // requests in flight at once
};

// Whether `path` is an http:// or https:// URL (what zt_open_url and the
// CLI read over HTTP).
bool is_http_url(std::string_view path);

// The URL without user info, query and fragment: what messages show.
std::string url_for_messages(std::string_view url);
// `name` as one URL path segment: every byte but RFC 3986's unreserved
// characters (letters, digits, - . _ ~) percent-encoded ("a/b" -> "a%2Fb").
std::string percent_encoded_segment(std::string_view name);
// A URL path segment with its %XX escapes decoded (by libcurl): the file
// name a server knows it by ("my%20model.zt" is "my model.zt").
std::string percent_decoded_segment(std::string_view segment);

// What anything that names an input shows of it (the library's messages,
// the CLI, every binding through zt_url_for_messages): an http(s) URL as
// url_for_messages gives it, any other text (a local path) as it is.
std::string location_for_messages(std::string_view path_or_url);

// Why a redirect from `from` (the URL opened) to `to` is not followed, or
// nullopt when it is: `to` is not http or https, or it leads from https
// down to plain http (where anyone on the way may change the bytes).
std::optional<std::string> redirect_refused(const std::string& from, const std::string& to);

// Whether the token in ZT_HTTP_BEARER_TOKEN may be sent to `url`: over
// https, or over plain http only to this machine (localhost, 127.0.0.0/8,
// ::1). A token sent in clear text to another host is a token given away;
// headers the caller passes are sent as asked.
bool may_send_environment_token(const std::string& url);

// Opens `url`, fetching the bytes of `window` (fewer for a smaller file).
// The environment variable ZT_HTTP_BEARER_TOKEN adds "Authorization:
// Bearer <token>" unless `opt.headers` has an Authorization header or
// may_send_environment_token(url) says no.
// Errors: Status::io (HTTP status, connection, a server without Range
// support), Status::argument (not an http(s) URL, a header without ':').
Result<RangeOpened> open_http(const std::string& url, const HttpOptions& opt, OpenWindow window);

}  // namespace zt
