/*
 * outrider.h — application-directed prefetching (liboutrider_directed.so), after
 * libprefetch (VanDeBogart, Frost & Kohler, USENIX ATC 2009), Fig. 6.
 *
 * A program that knows what it will read registers a client with a
 * callback, registers the file regions whose reads it wants tracked, hands
 * over its access list with outrider_request_prefetching(), and reads
 * through outrider_read/pread/readv. The library prefetches the list one
 * reorder buffer at a time in disk order (FIEMAP, C-LOOK, infill measured
 * per device, at most 32 KiB),
 * sizes the buffer with an AIMD controller (90% of the page-cache memory
 * the process's cgroup allows, +10%, halve on premature eviction), and calls
 * back when the list runs low or the program strays from it.
 *
 * Settings: the OUTRIDER_DIRECTED environment variable or
 * outrider_configure(), "k=v,..." with keys buffer, infill, aimd, charge,
 * min, list, low, threads, memory, drop, wait, shadow (e.g. "aimd=off,infill=0";
 * infill=auto, the default, probes the device at the first round with gaps
 * to fill, on a region of at least 16 MiB: infill=32KiB is the paper's
 * setting).
 *
 * A client is not thread-safe: use it from one thread at a time.
 */
#ifndef OUTRIDER_H
#define OUTRIDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct outrider_client outrider_client;

/* One access-list entry: the page holding byte `offset` of `fd`. */
typedef struct {
    int fd;
    uint64_t offset;
    int marked; /* non-zero: a landmark reported to the callback */
} outrider_entry;

/* request_prefetching modes (libprefetch §4.2). */
enum {
    OUTRIDER_REPLACE = 0,    /* replace the whole list */
    OUTRIDER_APPEND = 1,     /* append to the list */
    OUTRIDER_AFTER_MARK = 2, /* replace what follows the last accessed marked entry */
    OUTRIDER_DONE = 0x100,   /* or-ed in: the whole list has been handed over */
};

/* Callback reasons. */
enum {
    OUTRIDER_LIST_LOW = 1, /* few entries left ahead of the position */
    OUTRIDER_STRAYED = 2,  /* a registered page not on the list was read */
};

/* Called from a tracked read. fd/offset: the access that triggered it;
 * marked_fd/marked_offset: the last accessed marked entry (marked_fd -1 if
 * none). The callback may call outrider_request_prefetching and
 * outrider_(un)ignore_accesses, and read registered data between
 * ignore/unignore. */
typedef void (*outrider_callback)(outrider_client *c, void *user, int reason,
                                  int fd, uint64_t offset, int marked_fd,
                                  uint64_t marked_offset);

typedef struct {
    uint64_t tracked_reads, rounds, premature_rounds, low_callbacks,
        stray_callbacks, round_pages, infill_pages, dropped_pages,
        buffer_pages, infill_limit_pages, readahead_rounds;
} outrider_stats;

/* NULL (errno EINVAL) if OUTRIDER_DIRECTED holds a bad setting. */
outrider_client *outrider_register_client(outrider_callback cb, void *user);
/* Right after register_client; resets regions and list. 0 or -1 (EINVAL). */
int outrider_configure(outrider_client *c, const char *params);
/* 0 or -1 with errno. The fd is duplicated for the I/O workers. */
int outrider_register_region(outrider_client *c, int fd, uint64_t offset,
                             uint64_t len);
/* Number of entries accepted (fewer once the list buffer is full), -1 on a
 * bad mode. */
ssize_t outrider_request_prefetching(outrider_client *c,
                                     const outrider_entry *entries, size_t n,
                                     int mode);
void outrider_ignore_accesses(outrider_client *c);
void outrider_unignore_accesses(outrider_client *c);
ssize_t outrider_read(outrider_client *c, int fd, void *buf, size_t n);
ssize_t outrider_pread(outrider_client *c, int fd, void *buf, size_t n,
                       off_t offset);
ssize_t outrider_readv(outrider_client *c, int fd, const struct iovec *iov,
                       int iovcnt);
int outrider_get_stats(const outrider_client *c, outrider_stats *out);
void outrider_free_client(outrider_client *c);

#ifdef __cplusplus
}
#endif
#endif
