/*
 * scan.c — live benchmark program for liboutrider_directed (bench/directed.sh).
 *
 *   scan MODE PATTERN FILE [SEED]
 *
 * MODE     stock     plain pread(2), no hints
 *          directed  through liboutrider_directed (settings: OUTRIDER_DIRECTED)
 * PATTERN  random    every 4 KiB page of FILE once, in a seeded random order
 *          seq       every page in file order
 *          index     a secondary-index scan in the shape of libprefetch's
 *                    SQLite benchmark (§5.4): FILE is a table of 512-byte
 *                    rows (8 per page); an index sorted by a random key
 *                    visits every row once, so pages are read 8 times each
 *                    in random order. The program builds its access list
 *                    from the index before scanning and hands it over in
 *                    batches from the callback (libprefetch Fig. 7).
 *
 * Prints one line: mode pattern pages reads seconds checksum [killed=1]
 * [library counters]; on SIGTERM it stops reading and prints what it did.
 * Reads are 4 KiB (index: 512-byte rows, one pread each).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outrider.h"

#define PAGE 4096
#define ROW 512
#define BATCH (1u << 18)

static uint64_t rng = 88172645463325252ULL;

/* SIGTERM (timeout(1), as §5.6 killed runaway runs): stop reading and still
 * print the counters, with killed=1. */
static volatile sig_atomic_t stop;
static void on_term(int sig) {
    (void)sig;
    stop = 1;
}
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct plan {
    int fd;
    uint64_t *off; /* byte offsets in access order */
    size_t n, next;
};

static void give(outrider_client *c, struct plan *p, int mode) {
    static outrider_entry e[BATCH];
    size_t k = 0;
    for (size_t i = p->next; i < p->n && k < BATCH; i++, k++) {
        e[k].fd = p->fd;
        e[k].offset = p->off[i];
        e[k].marked = 0;
    }
    ssize_t got = outrider_request_prefetching(c, e, k, mode);
    if (got > 0)
        p->next += (size_t)got;
    if (p->next == p->n) /* the whole list is handed over */
        outrider_request_prefetching(c, NULL, 0, OUTRIDER_APPEND | OUTRIDER_DONE);
}

static void callback(outrider_client *c, void *user, int reason, int fd,
                     uint64_t offset, int mfd, uint64_t moff) {
    (void)fd;
    (void)mfd;
    (void)moff;
    struct plan *p = user;
    if (reason == OUTRIDER_LIST_LOW) {
        give(c, p, OUTRIDER_APPEND);
    } else {
        /* Strayed: restart the list at this access. */
        size_t i = 0;
        while (i < p->n && p->off[i] / PAGE != offset / PAGE)
            i++;
        p->next = i;
        give(c, p, OUTRIDER_REPLACE);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s stock|directed random|seq|index FILE [SEED]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *pattern = argv[2];
    int directed = strcmp(mode, "directed") == 0;
    if (!directed && strcmp(mode, "stock") != 0) {
        fprintf(stderr, "scan: unknown mode '%s': expected stock or directed\n", mode);
        return 2;
    }
    if (argc > 4)
        rng ^= strtoull(argv[4], NULL, 10) * 0x9E3779B97F4A7C15ULL;
    struct plan p = {0};
    p.fd = open(argv[3], O_RDONLY);
    if (p.fd < 0) {
        perror(argv[3]);
        return 2;
    }
    struct stat st;
    fstat(p.fd, &st);
    uint64_t pages = (uint64_t)st.st_size / PAGE;
    size_t unit = PAGE;
    if (strcmp(pattern, "random") == 0 || strcmp(pattern, "seq") == 0) {
        p.n = pages;
        p.off = malloc(p.n * sizeof *p.off);
        for (size_t i = 0; i < p.n; i++)
            p.off[i] = (uint64_t)i * PAGE;
        if (pattern[0] == 'r')
            for (size_t i = p.n - 1; i > 0; i--) {
                size_t j = next_rand() % (i + 1);
                uint64_t t = p.off[i];
                p.off[i] = p.off[j];
                p.off[j] = t;
            }
    } else if (strcmp(pattern, "index") == 0) {
        /* Index order = a random permutation of the rows. */
        unit = ROW;
        p.n = (size_t)st.st_size / ROW;
        p.off = malloc(p.n * sizeof *p.off);
        for (size_t i = 0; i < p.n; i++)
            p.off[i] = (uint64_t)i * ROW;
        for (size_t i = p.n - 1; i > 0; i--) {
            size_t j = next_rand() % (i + 1);
            uint64_t t = p.off[i];
            p.off[i] = p.off[j];
            p.off[j] = t;
        }
    } else {
        fprintf(stderr, "scan: unknown pattern '%s': expected random, seq or index\n", pattern);
        return 2;
    }
    outrider_client *c = NULL;
    char buf[PAGE];
    uint64_t sum = 0;
    double t0 = now();
    if (directed) {
        c = outrider_register_client(callback, &p);
        if (!c || outrider_register_region(c, p.fd, 0, (uint64_t)st.st_size) != 0) {
            perror("outrider");
            return 1;
        }
        give(c, &p, OUTRIDER_REPLACE);
    }
    signal(SIGTERM, on_term);
    size_t done = 0;
    for (size_t i = 0; i < p.n && !stop; i++, done++) {
        ssize_t r = directed ? outrider_pread(c, p.fd, buf, unit, (off_t)p.off[i])
                             : pread(p.fd, buf, unit, (off_t)p.off[i]);
        if (r != (ssize_t)unit) {
            perror("pread");
            return 1;
        }
        sum += (unsigned char)buf[0];
    }
    double secs = now() - t0;
    printf("mode=%s pattern=%s pages=%llu reads=%zu seconds=%.3f checksum=%llu", mode, pattern,
           (unsigned long long)pages, done, secs, (unsigned long long)sum);
    if (stop)
        printf(" killed=1");
    if (c) {
        outrider_stats s;
        outrider_get_stats(c, &s);
        printf(" rounds=%llu premature=%llu low_calls=%llu stray_calls=%llu round_pages=%llu infill_pages=%llu dropped=%llu buffer_pages=%llu",
               (unsigned long long)s.rounds, (unsigned long long)s.premature_rounds,
               (unsigned long long)s.low_callbacks, (unsigned long long)s.stray_callbacks,
               (unsigned long long)s.round_pages, (unsigned long long)s.infill_pages,
               (unsigned long long)s.dropped_pages, (unsigned long long)s.buffer_pages);
        printf(" infill_limit_pages=%llu readahead_rounds=%llu",
               (unsigned long long)s.infill_limit_pages, (unsigned long long)s.readahead_rounds);
        outrider_free_client(c);
    }
    printf("\n");
    return 0;
}
