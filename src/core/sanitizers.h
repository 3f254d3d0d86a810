// RLOCK_HAS_ASAN: 1 when AddressSanitizer is on (gcc defines __SANITIZE_ADDRESS__,
// clang answers __has_feature). vfork is off then: ASan's shadow stack is not
// aware of it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define RLOCK_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLOCK_HAS_ASAN 1
#endif
#endif
#ifndef RLOCK_HAS_ASAN
#define RLOCK_HAS_ASAN 0
#endif
