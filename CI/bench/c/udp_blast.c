/* The sender for the live-ingest benchmark: COUNT plugin data datagrams at RATE per second to
 * 127.0.0.1:PORT from one socket (so one plugin stream), paced against absolute deadlines every
 * millisecond and sent in sendmmsg batches.
 *
 * usage: udp_blast PORT RATE COUNT
 *
 * Each datagram is the Motion sample's pretty-printed JSON: a sample time `t` (wall clock at the
 * start plus i / RATE, so sample times advance as the datagrams do) and six float64 entries
 * v1/1/yaw … v1/1/z. Prints: sent=N bytes_each=B seconds=S rate=R (achieved). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAXLEN 1024

static const char *names[6] = { "yaw", "pitch", "roll", "x", "y", "z" };
/* 123.456, 789.012, -1.5, 0.25, 9.80665, 42 as big-endian float64, base64. */
static const char *values[6] = { "QF7dLxqfvnc=", "QIioGJN0vGo=", "v/gAAAAAAAA=", "P9AAAAAAAAA=",
                                 "QCOcKrAIMSc=", "QEUAAAAAAAA=" };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s PORT RATE COUNT\n", argv[0]); return 2; }
    int port = atoi(argv[1]);
    double rate = atof(argv[2]);
    uint64_t count = strtoull(argv[3], NULL, 10);
    if (rate <= 0 || count == 0) { fprintf(stderr, "RATE and COUNT must be positive\n"); return 2; }

    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) { perror("socket"); return 1; }
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }

    /* One template; the time string sits at a fixed offset and has a fixed width. */
    static char tmpl[MAXLEN];
    int len = snprintf(tmpl, sizeof tmpl, "{\n  \"t\" : \"0000000000.0000000\",\n  \"d\" : [\n");
    int toff = (int)(strstr(tmpl, "0000000000.") - tmpl);
    for (int i = 0; i < 6; i++)
        len += snprintf(tmpl + len, sizeof tmpl - (size_t)len,
                        "    {\n      \"n\" : \"v1/1/%s\",\n      \"t\" : \"float64\",\n      \"p\" : \"%s\"\n    }%s\n",
                        names[i], values[i], i < 5 ? "," : "");
    len += snprintf(tmpl + len, sizeof tmpl - (size_t)len, "  ]\n}\n");

    static char bufs[BATCH][MAXLEN];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    for (int i = 0; i < BATCH; i++) {
        memcpy(bufs[i], tmpl, (size_t)len);
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = (size_t)len;
        memset(&msgs[i], 0, sizeof msgs[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }

    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t t0ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
    uint64_t periodns = (uint64_t)(1e9 / rate);

    struct timespec tick;
    clock_gettime(CLOCK_MONOTONIC, &tick);
    double start = now();
    uint64_t sent = 0;
    while (sent < count) {
        uint64_t due = (uint64_t)((now() - start) * rate) + 1;
        if (due > count) due = count;
        while (sent < due) {
            int n = (int)(due - sent < BATCH ? due - sent : BATCH);
            for (int i = 0; i < n; i++) {
                uint64_t t = t0ns + (sent + (uint64_t)i) * periodns;
                char ts[20];
                snprintf(ts, sizeof ts, "%010llu.%07llu", (unsigned long long)(t / 1000000000ull),
                         (unsigned long long)((t % 1000000000ull) / 100));
                memcpy(bufs[i] + toff, ts, 18);
            }
            int m = sendmmsg(s, msgs, (unsigned)n, 0);
            if (m < 0) {
                /* ECONNREFUSED reports an ICMP error for an earlier datagram (no receiver then):
                 * that one is lost and the receiver's count shows it; keep sending. */
                if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED) continue;
                perror("sendmmsg");
                return 1;
            }
            sent += (uint64_t)m;
        }
        tick.tv_nsec += 1000000;
        if (tick.tv_nsec >= 1000000000) { tick.tv_sec++; tick.tv_nsec -= 1000000000; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL);
    }
    double secs = now() - start;
    printf("sent=%llu bytes_each=%d seconds=%.6f rate=%.0f\n", (unsigned long long)sent, len, secs,
           (double)sent / secs);
    return 0;
}
