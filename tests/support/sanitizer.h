// Whether this test binary runs under ASan or TSan: their shadow memory is mapped as the program
// runs, so a test that sets an address-space limit (RLIMIT_AS) cannot run under them (their own
// mmap fails first, "ERROR: Failed to mmap") and skips.
#pragma once

namespace ragform::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace ragform::testing
