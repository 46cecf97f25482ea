// URLs as text, taken apart and put together by libcurl's own parser (the
// one requests are made with): what may be shown of one (user info, query
// and fragment are secrets), a file's name as one path segment, a
// reference resolved against a base (a file beside another, a redirect's
// Location), an origin, and the rules for redirects and for the
// environment's token. No network.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zt {

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

// A URL's origin (scheme, host, port: default ports filled in) as
// "scheme://host:port", lower case; nullopt for one that does not parse
// or is not http or https.
std::optional<std::string> http_origin(const std::string& url);

// `reference` resolved against `base` (RFC 3986 §5: a relative path beside
// base's file, an absolute URL as it is, any scheme); "" where either does
// not parse.
std::string resolved_reference(const std::string& base, const std::string& reference);

}  // namespace zt
