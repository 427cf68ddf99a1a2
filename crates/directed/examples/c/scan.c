/*
 * scan.c — liboutrider_directed from C: read the pages of a file in a known random
 * order through outrider_pread, with a callback that supplies the list in
 * batches (libprefetch Fig. 7's shape) and re-plans when the program strays.
 *
 * From the repository root:
 *
 *   cargo build --release -p outrider-directed
 *   cc -O2 -Iinclude crates/directed/examples/c/scan.c -Ltarget/release \
 *      -loutrider_directed -Wl,-rpath,"$PWD/target/release" -o scan
 *   ./scan FILE PAGES
 *
 * Exits 0 when every page was read and the callback contract held; prints
 * the library's counters.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outrider.h"

#define PAGE 4096
#define BATCH 64

struct plan {
    int fd;
    uint64_t *order; /* page numbers in access order */
    size_t n;
    size_t next;    /* next order[] index to hand over */
    int low_calls, stray_calls;
};

/* Hand over up to BATCH entries starting at order[from]; mark every 16th. */
static void give(outrider_client *c, struct plan *p, size_t from, int mode) {
    outrider_entry e[BATCH];
    size_t k = 0;
    for (size_t i = from; i < p->n && k < BATCH; i++, k++) {
        e[k].fd = p->fd;
        e[k].offset = p->order[i] * PAGE;
        e[k].marked = (i % 16) == 0;
    }
    ssize_t got = outrider_request_prefetching(c, e, k, mode);
    if (got < 0) {
        perror("request_prefetching");
        exit(1);
    }
    p->next = from + (size_t)got;
}

static void callback(outrider_client *c, void *user, int reason, int fd,
                     uint64_t offset, int marked_fd, uint64_t marked_offset) {
    struct plan *p = user;
    (void)fd;
    (void)marked_fd;
    (void)marked_offset;
    if (reason == OUTRIDER_LIST_LOW) {
        p->low_calls++;
        give(c, p, p->next, OUTRIDER_APPEND);
    } else if (reason == OUTRIDER_STRAYED) {
        /* The program read something off-plan: restart the list there. */
        p->stray_calls++;
        size_t i = 0;
        while (i < p->n && p->order[i] * PAGE != offset)
            i++;
        give(c, p, i < p->n ? i : p->n, OUTRIDER_REPLACE);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE PAGES\n", argv[0]);
        return 2;
    }
    struct plan p = {0};
    p.n = strtoul(argv[2], NULL, 10);
    p.fd = open(argv[1], O_RDONLY);
    if (p.fd < 0) {
        perror(argv[1]);
        return 2;
    }
    /* A fixed pseudo-random permutation of the pages (LCG shuffle). */
    p.order = malloc(p.n * sizeof *p.order);
    for (size_t i = 0; i < p.n; i++)
        p.order[i] = i;
    uint64_t x = 12345;
    for (size_t i = p.n - 1; i > 0; i--) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t j = (x >> 33) % (i + 1);
        uint64_t t = p.order[i];
        p.order[i] = p.order[j];
        p.order[j] = t;
    }
    outrider_client *c = outrider_register_client(callback, &p);
    if (!c || outrider_configure(c, "low=16,memory=64MiB") != 0 ||
        outrider_register_region(c, p.fd, 0, (uint64_t)p.n * PAGE) != 0) {
        perror("outrider");
        return 1;
    }
    give(c, &p, 0, OUTRIDER_REPLACE);
    char buf[PAGE];
    /* First half in order, then one off-plan read (the last page of the
     * order, read early), then the rest in order. */
    size_t half = p.n / 2;
    for (size_t i = 0; i < p.n; i++) {
        uint64_t page = p.order[i];
        if (i == half) {
            uint64_t off = p.order[p.n - 1];
            if (outrider_pread(c, p.fd, buf, PAGE, (off_t)(off * PAGE)) != PAGE)
                return 1;
        }
        if (outrider_pread(c, p.fd, buf, PAGE, (off_t)(page * PAGE)) != PAGE) {
            perror("pread");
            return 1;
        }
    }
    /* An ignored read of anything must not call back. */
    int before = p.stray_calls;
    outrider_ignore_accesses(c);
    outrider_pread(c, p.fd, buf, PAGE, 0);
    outrider_unignore_accesses(c);
    outrider_stats s;
    outrider_get_stats(c, &s);
    printf("pages=%zu low_calls=%d stray_calls=%d rounds=%llu tracked=%llu round_pages=%llu\n",
           p.n, p.low_calls, p.stray_calls, (unsigned long long)s.rounds,
           (unsigned long long)s.tracked_reads, (unsigned long long)s.round_pages);
    outrider_free_client(c);
    int ok = p.stray_calls >= 1 && p.stray_calls == before && p.low_calls >= 1 &&
             s.low_callbacks == (uint64_t)p.low_calls &&
             s.stray_callbacks == (uint64_t)p.stray_calls;
    return ok ? 0 : 1;
}
