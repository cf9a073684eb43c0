/*===- fault_inject.c - An LD_PRELOAD shim that makes file calls fail -----===//
 *
 * For tests only (libestc_fault_inject.so, never installed): loaded with
 * LD_PRELOAD into an unchanged program, it makes chosen calls of the C
 * library's file interface fail as a full or broken disk would, so that a
 * test can check what the program does then. It is configured by the
 * environment:
 *
 *   ESTC_FAULT_OP     the call that fails:
 *                       write   write, pwrite, pwrite64
 *                       fsync   fsync, fdatasync
 *                       read    read, pread, pread64 (and their _chk forms)
 *                       open    open, open64, openat, openat64, creat,
 *                               creat64 (and their _2 forms)
 *                       close   close (the descriptor is closed, then the
 *                               error is returned, as NFS does)
 *                       rename  rename, renameat
 *   ESTC_FAULT_PATH   an fnmatch(3) pattern ('*' also matches '/') for the
 *                     path as the program passed it to open (for the calls
 *                     on a descriptor) or to rename (either name), e.g.
 *                     "*model.ckpt-8.safetensors.tmp-*"
 *   ESTC_FAULT_ERRNO  what the call does: an errno name (ENOSPC, EIO,
 *                     EDQUOT, EACCES, EROFS, EMFILE, ENOENT, EINTR, ...) or
 *                     a number: it returns -1 with that errno; "short"
 *                     (write, read): it moves only half the bytes asked
 *                     for (at least 1) and returns that count;
 *                     "short:<errno>": the first failing call is short,
 *                     the next ones fail with <errno> (a disk filling up)
 *   ESTC_FAULT_NTH    the first matching call to fail, counted from 1
 *                     (default 1)
 *   ESTC_FAULT_TIMES  how many matching calls fail from there (default 1;
 *                     0: every one)
 *   ESTC_FAULT_LOG    a file the shim appends one line to for each fault
 *                     it injects ("estc-fault: write(<path>) -> ENOSPC
 *                     [call 3]"), so that a test knows its fault happened
 *
 * Without ESTC_FAULT_OP the shim only passes every call through. A bad
 * setting is one line on stderr and exit status 2. Descriptors are tracked
 * from the open calls above (fopen, dup and the like are not followed).
 *
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum Op { OP_NONE, OP_WRITE, OP_FSYNC, OP_READ, OP_OPEN, OP_CLOSE, OP_RENAME };

static struct {
  enum Op op;
  const char *pattern;
  int error;      /* 0: short transfers only */
  int shortFirst; /* the first failing call is a short transfer */
  long nth, times;
  const char *log;
  long calls; /* matching calls of `op` so far */
} config;

static const char *errnoName = "";
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

/* The paths of the descriptors whose path matches the pattern. */
#define MAX_FDS 65536
static char *tracked[MAX_FDS];

/* The C library's own functions. */
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);

static void die(const char *what, const char *value) {
  fprintf(stderr, "estc-fault: error: %s%s\n", what, value ? value : "");
  _exit(2);
}

static void *lookup(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f)
    die("no C library function ", name);
  return f;
}

static const struct {
  const char *name;
  int value;
} kErrnos[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EDQUOT", EDQUOT},
               {"EACCES", EACCES}, {"EROFS", EROFS},   {"EMFILE", EMFILE},
               {"ENOENT", ENOENT}, {"EINTR", EINTR},   {"EFBIG", EFBIG},
               {"EBADF", EBADF},   {"EAGAIN", EAGAIN}, {"EPERM", EPERM}};

static long number(const char *name, const char *text, long fallback) {
  if (!text || !*text)
    return fallback;
  char *end;
  long v = strtol(text, &end, 10);
  if (*end || v < 0) {
    fprintf(stderr, "estc-fault: error: %s=%s: not a number >= 0\n", name,
            text);
    _exit(2);
  }
  return v;
}

static void init(void) {
  real_open = lookup("open");
  real_open64 = lookup("open64");
  real_openat = lookup("openat");
  real_openat64 = lookup("openat64");
  real_close = lookup("close");
  real_write = lookup("write");
  real_pwrite = lookup("pwrite");
  real_pwrite64 = lookup("pwrite64");
  real_read = lookup("read");
  real_pread = lookup("pread");
  real_pread64 = lookup("pread64");
  real_fsync = lookup("fsync");
  real_fdatasync = lookup("fdatasync");
  real_rename = lookup("rename");
  real_renameat = lookup("renameat");

  const char *op = getenv("ESTC_FAULT_OP");
  if (!op || !*op)
    return;
  static const char *const kOps[] = {"",     "write", "fsync", "read",
                                     "open", "close", "rename"};
  for (int i = OP_WRITE; i <= OP_RENAME; ++i)
    if (strcmp(op, kOps[i]) == 0)
      config.op = (enum Op)i;
  if (config.op == OP_NONE)
    die("ESTC_FAULT_OP must be one of write, fsync, read, open, close, "
        "rename; got ",
        op);
  config.pattern = getenv("ESTC_FAULT_PATH");
  if (!config.pattern || !*config.pattern)
    die("ESTC_FAULT_PATH is not set (an fnmatch pattern for the paths)", 0);
  const char *error = getenv("ESTC_FAULT_ERRNO");
  if (!error || !*error)
    die("ESTC_FAULT_ERRNO is not set (e.g. ENOSPC, EIO or short)", 0);
  if (strncmp(error, "short", 5) == 0) {
    if (config.op != OP_WRITE && config.op != OP_READ)
      die("ESTC_FAULT_ERRNO=short is for write and read, not ", op);
    config.shortFirst = 1;
    if (error[5] == ':')
      error += 6;
    else if (error[5])
      die("ESTC_FAULT_ERRNO: expected short or short:<errno>, got ", error);
    else
      error = NULL;
  }
  if (error) {
    errnoName = error;
    config.error = -1;
    for (size_t i = 0; i < sizeof kErrnos / sizeof kErrnos[0]; ++i)
      if (strcmp(error, kErrnos[i].name) == 0)
        config.error = kErrnos[i].value;
    if (config.error < 0)
      config.error = (int)number("ESTC_FAULT_ERRNO", error, -1);
    if (config.error <= 0)
      die("ESTC_FAULT_ERRNO: unknown errno name ", error);
  }
  config.nth = number("ESTC_FAULT_NTH", getenv("ESTC_FAULT_NTH"), 1);
  if (config.nth < 1)
    die("ESTC_FAULT_NTH must be at least 1", 0);
  config.times = number("ESTC_FAULT_TIMES", getenv("ESTC_FAULT_TIMES"), 1);
  config.log = getenv("ESTC_FAULT_LOG");
}

static void ensureInit(void) { pthread_once(&once, init); }

/* Reads the settings when the library is loaded, so that a bad one is
 * reported before the program runs. */
__attribute__((constructor)) static void load(void) { ensureInit(); }

static int matches(const char *path) {
  return config.op != OP_NONE && path && fnmatch(config.pattern, path, 0) == 0;
}

/* Whether this matching call of `op` fails: 0 no, 1 with config.error,
 * 2 with a short transfer. Logs the faults. */
static int inject(enum Op op, const char *call, const char *path) {
  if (config.op != op)
    return 0;
  pthread_mutex_lock(&mutex);
  long n = ++config.calls;
  int fail =
      n >= config.nth && (config.times == 0 || n < config.nth + config.times);
  pthread_mutex_unlock(&mutex);
  if (fail && config.shortFirst && (n == config.nth || !config.error))
    fail = 2;
  if (fail && config.log) {
    char line[4096];
    int len =
        snprintf(line, sizeof line, "estc-fault: %s(%s) -> %s [call %ld]\n",
                 call, path, fail == 2 ? "short" : errnoName, n);
    int fd =
        real_open(config.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (len > (int)sizeof line - 1)
        len = (int)sizeof line - 1;
      ssize_t w = real_write(fd, line, (size_t)len);
      (void)w;
      real_close(fd);
    }
  }
  return fail;
}

/* The matching path of a descriptor, copied into buf; NULL when it has
 * none. */
static const char *pathOf(int fd, char *buf, size_t size) {
  if (config.op == OP_NONE || fd < 0 || fd >= MAX_FDS)
    return NULL;
  pthread_mutex_lock(&mutex);
  const char *p = tracked[fd];
  if (p)
    snprintf(buf, size, "%s", p);
  pthread_mutex_unlock(&mutex);
  return p ? buf : NULL;
}

/* Every open records its descriptor: the path when it matches, else none
 * (the number may have been closed by a call the shim does not see). */
static void track(int fd, const char *path) {
  if (fd < 0 || fd >= MAX_FDS || config.op == OP_NONE)
    return;
  char *copy = matches(path) ? strdup(path) : NULL;
  pthread_mutex_lock(&mutex);
  free(tracked[fd]);
  tracked[fd] = copy;
  pthread_mutex_unlock(&mutex);
}

static void untrack(int fd) {
  if (fd < 0 || fd >= MAX_FDS)
    return;
  pthread_mutex_lock(&mutex);
  free(tracked[fd]);
  tracked[fd] = NULL;
  pthread_mutex_unlock(&mutex);
}

/*===--- open ---------------------------------------------------------===*/

static int modeOf(int flags, va_list args) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
             ? va_arg(args, int)
             : 0;
}

/* dirfd: NO_DIRFD for open and creat. */
#define NO_DIRFD (AT_FDCWD - 1)
static int opened(const char *call, const char *path, int dirfd, int flags,
                  int mode, int large) {
  ensureInit();
  if (matches(path) && inject(OP_OPEN, call, path)) {
    errno = config.error;
    return -1;
  }
  int fd;
  if (dirfd == NO_DIRFD)
    fd = large ? real_open64(path, flags, mode) : real_open(path, flags, mode);
  else
    fd = large ? real_openat64(dirfd, path, flags, mode)
               : real_openat(dirfd, path, flags, mode);
  if (fd >= 0)
    track(fd, path);
  return fd;
}

int open(const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  int mode = modeOf(flags, args);
  va_end(args);
  return opened("open", path, NO_DIRFD, flags, mode, 0);
}

int open64(const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  int mode = modeOf(flags, args);
  va_end(args);
  return opened("open", path, NO_DIRFD, flags, mode, 1);
}

int openat(int dirfd, const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  int mode = modeOf(flags, args);
  va_end(args);
  return opened("openat", path, dirfd, flags, mode, 0);
}

int openat64(int dirfd, const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  int mode = modeOf(flags, args);
  va_end(args);
  return opened("openat", path, dirfd, flags, mode, 1);
}

int creat(const char *path, mode_t mode) {
  return opened("creat", path, NO_DIRFD, O_CREAT | O_WRONLY | O_TRUNC,
                (int)mode, 0);
}

int creat64(const char *path, mode_t mode) {
  return opened("creat", path, NO_DIRFD, O_CREAT | O_WRONLY | O_TRUNC,
                (int)mode, 1);
}

/* What _FORTIFY_SOURCE calls instead of open without O_CREAT. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __open_2(const char *path, int flags) {
  return opened("open", path, NO_DIRFD, flags, 0, 0);
}
int __open64_2(const char *path, int flags) {
  return opened("open", path, NO_DIRFD, flags, 0, 1);
}
int __openat_2(int dirfd, const char *path, int flags) {
  return opened("openat", path, dirfd, flags, 0, 0);
}
int __openat64_2(int dirfd, const char *path, int flags) {
  return opened("openat", path, dirfd, flags, 0, 1);
}

int close(int fd) {
  ensureInit();
  char buf[4096];
  const char *path = pathOf(fd, buf, sizeof buf);
  int fail = path && inject(OP_CLOSE, "close", path);
  untrack(fd);
  int r = real_close(fd);
  if (fail && r == 0) {
    errno = config.error;
    return -1;
  }
  return r;
}

/*===--- write, read, fsync --------------------------------------------===*/

/* -2: pass the call through; -1 (errno set): fail it; else the count to
 * transfer instead of `count`. */
static ssize_t decide(enum Op op, const char *call, int fd, size_t count) {
  ensureInit();
  char buf[4096];
  const char *path = pathOf(fd, buf, sizeof buf);
  int how = path ? inject(op, call, path) : 0;
  if (!how)
    return -2;
  if (how == 1) {
    errno = config.error;
    return -1;
  }
  return count > 1 ? (ssize_t)(count / 2) : (ssize_t)count;
}

ssize_t write(int fd, const void *buf, size_t count) {
  ssize_t d = decide(OP_WRITE, "write", fd, count);
  return d == -1 ? -1 : real_write(fd, buf, d == -2 ? count : (size_t)d);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  ssize_t d = decide(OP_WRITE, "pwrite", fd, count);
  return d == -1 ? -1
                 : real_pwrite(fd, buf, d == -2 ? count : (size_t)d, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
  ssize_t d = decide(OP_WRITE, "pwrite", fd, count);
  return d == -1 ? -1
                 : real_pwrite64(fd, buf, d == -2 ? count : (size_t)d, offset);
}

ssize_t read(int fd, void *buf, size_t count) {
  ssize_t d = decide(OP_READ, "read", fd, count);
  return d == -1 ? -1 : real_read(fd, buf, d == -2 ? count : (size_t)d);
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
  ssize_t d = decide(OP_READ, "pread", fd, count);
  return d == -1 ? -1
                 : real_pread(fd, buf, d == -2 ? count : (size_t)d, offset);
}

ssize_t pread64(int fd, void *buf, size_t count, off64_t offset) {
  ssize_t d = decide(OP_READ, "pread", fd, count);
  return d == -1 ? -1
                 : real_pread64(fd, buf, d == -2 ? count : (size_t)d, offset);
}

/* What _FORTIFY_SOURCE calls instead of read and pread. */
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset,
                    size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t offset,
                      size_t buflen);
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
  (void)buflen;
  return read(fd, buf, count);
}
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset,
                    size_t buflen) {
  (void)buflen;
  return pread(fd, buf, count, offset);
}
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t offset,
                      size_t buflen) {
  (void)buflen;
  return pread64(fd, buf, count, offset);
}

int fsync(int fd) {
  ensureInit();
  char buf[4096];
  const char *path = pathOf(fd, buf, sizeof buf);
  if (path && inject(OP_FSYNC, "fsync", path)) {
    errno = config.error;
    return -1;
  }
  return real_fsync(fd);
}

int fdatasync(int fd) {
  ensureInit();
  char buf[4096];
  const char *path = pathOf(fd, buf, sizeof buf);
  if (path && inject(OP_FSYNC, "fdatasync", path)) {
    errno = config.error;
    return -1;
  }
  return real_fdatasync(fd);
}

/*===--- rename --------------------------------------------------------===*/

int rename(const char *from, const char *to) {
  ensureInit();
  const char *path = matches(to) ? to : from;
  if (matches(path) && inject(OP_RENAME, "rename", path)) {
    errno = config.error;
    return -1;
  }
  return real_rename(from, to);
}

int renameat(int fromDir, const char *from, int toDir, const char *to) {
  ensureInit();
  const char *path = matches(to) ? to : from;
  if (matches(path) && inject(OP_RENAME, "renameat", path)) {
    errno = config.error;
    return -1;
  }
  return real_renameat(fromDir, from, toDir, to);
}
