// Whether this test binary is built with a sanitizer: memory figures mean
// nothing there (shadow memory, redzones, quarantine), big inputs are slow,
// and the sanitizer's own handler reports a SIGBUS and exits instead of
// dying of it. Tests shrink or skip only what a sanitizer cannot measure.
#pragma once

namespace zt::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace zt::test
