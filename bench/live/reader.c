/* reader: the access patterns of bench/live/run.sh, as an unmodified
 * program would issue them (pread of 4 KiB, no hints).
 *   reader reverse FILE   every 4 KiB block, last to first
 *   reader stride FILE    every other 4 KiB block, first to last
 *   reader seq FILE       every 4 KiB block, first to last (256 KiB reads)
 *   reader random FILE N  N 4 KiB blocks at uniform random (seeded) offsets
 * Prints the XOR of the first byte of each block so reads are not elided. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: reader reverse|stride|seq|random FILE [N]\n"); return 2; }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) { perror(argv[2]); return 2; }
    struct stat st; fstat(fd, &st);
    long long blocks = st.st_size / 4096;
    static char buf[256 * 1024];
    unsigned x = 0;
    if (!strcmp(argv[1], "reverse")) {
        for (long long b = blocks - 1; b >= 0; b--) { if (pread(fd, buf, 4096, b * 4096) != 4096) return 1; x ^= buf[0]; }
    } else if (!strcmp(argv[1], "stride")) {
        for (long long b = 0; b < blocks; b += 2) { if (pread(fd, buf, 4096, b * 4096) != 4096) return 1; x ^= buf[0]; }
    } else if (!strcmp(argv[1], "seq")) {
        ssize_t n; while ((n = read(fd, buf, sizeof buf)) > 0) x ^= buf[0];
    } else if (!strcmp(argv[1], "random")) {
        long long n = argc > 3 ? atoll(argv[3]) : 20000;
        unsigned long long s = 88172645463325252ULL;
        for (long long i = 0; i < n; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            long long b = (long long)(s % (unsigned long long)blocks);
            if (pread(fd, buf, 4096, b * 4096) != 4096) return 1; x ^= buf[0];
        }
    } else { fprintf(stderr, "unknown pattern %s\n", argv[1]); return 2; }
    printf("%u\n", x);
    return 0;
}
