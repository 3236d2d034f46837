/* For the live-ingest benchmark's drain-capacity step: waits until the receive queue of the UDP
 * socket bound to local PORT is empty, reading the kernel's count (rx_queue in /proc/net/udp and
 * /proc/net/udp6) every millisecond from one process, so the watching costs the receiver next to
 * nothing.
 *
 * usage: udp_queue_wait PORT TIMEOUT_S
 *
 * Prints "queued=BYTES" once at the start and "seconds=S" (from the start to the empty queue).
 * Exits 1 when no socket is bound to PORT, 3 when the queue is not empty after TIMEOUT_S. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The rx_queue bytes of sockets on local PORT, summed over udp and udp6; -1 when none is bound. */
static long long queued(unsigned port) {
    const char *files[2] = { "/proc/net/udp", "/proc/net/udp6" };
    long long total = -1;
    char line[512];
    for (int f = 0; f < 2; f++) {
        FILE *in = fopen(files[f], "r");
        if (!in) continue;
        if (!fgets(line, sizeof line, in)) { fclose(in); continue; } /* header */
        while (fgets(line, sizeof line, in)) {
            /* "  sl  local_address rem_address   st tx_queue:rx_queue ..." */
            char local[64], remote[64], st[8], queues[64];
            if (sscanf(line, "%*s %63s %63s %7s %63s", local, remote, st, queues) != 4) continue;
            char *colon = strrchr(local, ':');
            if (!colon || strtoul(colon + 1, NULL, 16) != port) continue;
            char *rx = strchr(queues, ':');
            if (!rx) continue;
            if (total < 0) total = 0;
            total += strtoll(rx + 1, NULL, 16);
        }
        fclose(in);
    }
    return total;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s PORT TIMEOUT_S\n", argv[0]); return 2; }
    unsigned port = (unsigned)atoi(argv[1]);
    double timeout = atof(argv[2]), start = now();
    long long q = queued(port);
    if (q < 0) { fprintf(stderr, "udp_queue_wait: no UDP socket on port %u\n", port); return 1; }
    printf("queued=%lld\n", q);
    fflush(stdout);
    while (q > 0) {
        if (now() - start > timeout) { printf("seconds=timeout queued=%lld\n", q); return 3; }
        usleep(1000);
        q = queued(port);
        if (q < 0) break; /* the socket closed: nothing left queued on it */
    }
    printf("seconds=%.6f\n", now() - start);
    return 0;
}
