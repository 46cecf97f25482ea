/* LD_PRELOAD shim for the writer's fault tests: makes system calls fail on
 * request, chosen by environment variables read at each call.
 *   ZT_SHIM_FAIL_FSYNC=1   fsync and fdatasync fail with EIO
 *   ZT_SHIM_NO_TMPFILE=1   open(O_TMPFILE) fails with EOPNOTSUPP (as on file
 *                          systems without it), so the writer names its
 *                          temporary file
 *   ZT_SHIM_FAIL_RENAME=1  rename fails with EIO
 *   ZT_SHIM_FAIL_RENAME_ONTO=S  rename fails with EIO when its target ends
 *                          with S (a late failure: the root of a sharded
 *                          model, after its shards were published)
 *   ZT_SHIM_FAIL_LINKAT=1  linkat fails with EIO
 *   ZT_SHIM_NO_PROC=1      paths under /proc do not exist for access and
 *                          linkat (a container or chroot without /proc)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static int wanted(const char* name) {
  const char* v = getenv(name);
  return v && *v && *v != '0';
}

typedef int (*open_fn)(const char*, int, ...);
typedef int (*openat_fn)(int, const char*, int, ...);

static int is_tmpfile(int flags) {
  return (flags & O_TMPFILE) == O_TMPFILE;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || is_tmpfile(flags) ? (mode_t)va_arg(ap, int) : 0;
}

#define SHIM_OPEN(fn)                                        \
  int fn(const char* path, int flags, ...) {                 \
    va_list ap;                                              \
    va_start(ap, flags);                                     \
    const mode_t mode = mode_arg(flags, ap);                 \
    va_end(ap);                                              \
    if (is_tmpfile(flags) && wanted("ZT_SHIM_NO_TMPFILE")) { \
      errno = EOPNOTSUPP;                                    \
      return -1;                                             \
    }                                                        \
    static open_fn real;                                     \
    if (!real) real = (open_fn)dlsym(RTLD_NEXT, #fn);        \
    return real(path, flags, mode);                          \
  }

SHIM_OPEN(open)
SHIM_OPEN(open64)

#define SHIM_OPENAT(fn)                                      \
  int fn(int dirfd, const char* path, int flags, ...) {      \
    va_list ap;                                              \
    va_start(ap, flags);                                     \
    const mode_t mode = mode_arg(flags, ap);                 \
    va_end(ap);                                              \
    if (is_tmpfile(flags) && wanted("ZT_SHIM_NO_TMPFILE")) { \
      errno = EOPNOTSUPP;                                    \
      return -1;                                             \
    }                                                        \
    static openat_fn real;                                   \
    if (!real) real = (openat_fn)dlsym(RTLD_NEXT, #fn);      \
    return real(dirfd, path, flags, mode);                   \
  }

SHIM_OPENAT(openat)
SHIM_OPENAT(openat64)

int fsync(int fd) {
  if (wanted("ZT_SHIM_FAIL_FSYNC")) {
    errno = EIO;
    return -1;
  }
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return real(fd);
}

int fdatasync(int fd) {
  if (wanted("ZT_SHIM_FAIL_FSYNC")) {
    errno = EIO;
    return -1;
  }
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return real(fd);
}

static int ends_with(const char* s, const char* tail) {
  const size_t n = strlen(s), m = strlen(tail);
  return m <= n && strcmp(s + n - m, tail) == 0;
}

int rename(const char* from, const char* to) {
  const char* onto = getenv("ZT_SHIM_FAIL_RENAME_ONTO");
  if (wanted("ZT_SHIM_FAIL_RENAME") || (onto && *onto && ends_with(to, onto))) {
    errno = EIO;
    return -1;
  }
  static int (*real)(const char*, const char*);
  if (!real) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  return real(from, to);
}

static int under_proc(const char* path) {
  return path && strncmp(path, "/proc/", 6) == 0 && wanted("ZT_SHIM_NO_PROC");
}

int access(const char* path, int mode) {
  if (under_proc(path)) {
    errno = ENOENT;
    return -1;
  }
  static int (*real)(const char*, int);
  if (!real) real = (int (*)(const char*, int))dlsym(RTLD_NEXT, "access");
  return real(path, mode);
}

int linkat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
  if (wanted("ZT_SHIM_FAIL_LINKAT")) {
    errno = EIO;
    return -1;
  }
  if (under_proc(oldpath)) {
    errno = ENOENT;
    return -1;
  }
  static int (*real)(int, const char*, int, const char*, int);
  if (!real) real = (int (*)(int, const char*, int, const char*, int))dlsym(RTLD_NEXT, "linkat");
  return real(olddirfd, oldpath, newdirfd, newpath, flags);
}
