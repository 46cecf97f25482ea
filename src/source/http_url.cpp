#include "source/http_url.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>

#include <cctype>
#include <memory>

#include "source/http_response.h"

namespace zt {

namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using Url = std::unique_ptr<CURLU, UrlDeleter>;

// `text` as libcurl's own URL parser reads it (the parser requests are
// made with), any scheme allowed; nullptr where it does not parse.
Url parsed_url(const std::string& text) {
  Url u(curl_url());
  if (u &&
      curl_url_set(u.get(), CURLUPART_URL, text.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
    u.reset();
  return u;
}

// The whole URL `u` holds now; "" if libcurl cannot give it.
std::string whole_url(const Url& u) {
  char* s = nullptr;
  if (curl_url_get(u.get(), CURLUPART_URL, &s, 0) != CURLUE_OK) return {};
  std::string out(s);
  curl_free(s);
  return out;
}

}  // namespace

std::optional<std::string> http_origin(const std::string& url) {
  const Url u = parsed_url(url);
  if (!u) return std::nullopt;
  std::string out;
  for (const CURLUPart part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
    char* v = nullptr;
    if (curl_url_get(u.get(), part, &v, CURLU_DEFAULT_PORT) != CURLUE_OK) return std::nullopt;
    std::string piece(v);
    curl_free(v);
    for (char& c : piece) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (part == CURLUPART_SCHEME && piece != "http" && piece != "https") return std::nullopt;
    out += piece;
    out += part == CURLUPART_SCHEME ? "://" : part == CURLUPART_HOST ? ":" : "";
  }
  return out;
}

std::string resolved_reference(const std::string& base, const std::string& reference) {
  const Url u = parsed_url(base);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, reference.c_str(), CURLU_NON_SUPPORT_SCHEME) !=
                CURLUE_OK)
    return {};
  return whole_url(u);
}

std::optional<std::string> redirect_refused(const std::string& from, const std::string& to) {
  const auto origin = http_origin(to);
  if (!origin) return "to a URL that is not http or https";
  const auto home = http_origin(from);
  if (home && home->starts_with("https://") && origin->starts_with("http://"))
    return "from https to plain http, refused";
  return std::nullopt;
}

bool is_http_url(std::string_view path) {
  return http::iequals_prefix(path, "http://") || http::iequals_prefix(path, "https://");
}

std::string url_for_messages(std::string_view url) {
  // Taken apart by libcurl rather than by searching for '@' and '/': a
  // password may hold '/', '@', '?' or '#' unencoded, and "http:///u:p@h"
  // is a URL libcurl fetches.
  const std::string text(url);
  if (const Url u = parsed_url(text)) {
    for (const CURLUPart part : {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS,
                                 CURLUPART_QUERY, CURLUPART_FRAGMENT})
      curl_url_set(u.get(), part, nullptr, 0);
    if (std::string shown = whole_url(u); !shown.empty()) return shown;
  }
  const size_t scheme = text.find("://");
  if (scheme == std::string::npos && !is_http_url(text)) return text;  // a path, not a URL
  // Which part is a secret cannot be told: none of it is shown.
  return text.substr(0, scheme == std::string::npos ? 0 : scheme + 3) +
         "(a URL that does not parse)";
}

std::string percent_encoded_segment(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string percent_decoded_segment(std::string_view segment) {
  int n = 0;
  char* d = curl_easy_unescape(nullptr, segment.data(), static_cast<int>(segment.size()), &n);
  if (!d) return std::string(segment);
  std::string out(d, static_cast<size_t>(n));
  curl_free(d);
  return out;
}

std::string location_for_messages(std::string_view path_or_url) {
  return is_http_url(path_or_url) ? url_for_messages(path_or_url) : std::string(path_or_url);
}

bool may_send_environment_token(const std::string& url) {
  CURLU* u = curl_url();
  if (!u) return false;
  bool ok = false;
  char* scheme = nullptr;
  char* host = nullptr;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    const std::string_view s(scheme), h(host);
    in_addr v4{};
    const bool loopback = h == "localhost" || h == "[::1]" ||
                          (inet_pton(AF_INET, host, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
    ok = s == "https" || (s == "http" && loopback);
  }
  curl_free(scheme);
  curl_free(host);
  curl_url_cleanup(u);
  return ok;
}

}  // namespace zt
