/* H4 ACL ping-pong over TCP, for the h4-tap-latency benchmark: a fake controller that echoes
 * every ACL packet, and a fake host that times round trips.
 *
 * usage: h4_pingpong echo PORT
 *          Listens on 127.0.0.1:PORT, prints "ready", then serves one connection after another
 *          (until killed): reads whole H4 ACL packets (0x02, handle u16 LE, length u16 LE, data)
 *          and writes each one back unchanged.
 *        h4_pingpong ping PORT ROUND_TRIPS PAYLOAD_BYTES [WARMUP]
 *          Connects to 127.0.0.1:PORT, sends WARMUP (default 200) untimed round trips, then
 *          ROUND_TRIPS timed ones: one ACL packet out, the whole echo back (checked byte for
 *          byte). Prints: round_trips=N payload=B p50_ns=… p99_ns=… max_ns=… mean_ns=… packets=P
 *          (P counts every packet sent and received, warm-up included).
 * Both sides set TCP_NODELAY; times are CLOCK_MONOTONIC; quantiles are nearest-rank. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int read_full(int fd, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const unsigned char *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t w = send(fd, buf + done, n - done, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

static void nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int echo(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = loopback(port);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 4) != 0) { perror("listen"); return 1; }
    printf("ready\n");
    fflush(stdout);
    static unsigned char packet[5 + 65535];
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        nodelay(c);
        while (read_full(c, packet, 5) == 0) {
            if (packet[0] != 0x02) { fprintf(stderr, "echo: not an ACL packet (0x%02x)\n", packet[0]); break; }
            size_t length = (size_t)packet[3] | (size_t)packet[4] << 8;
            if (read_full(c, packet + 5, length) != 0 || write_full(c, packet, 5 + length) != 0) break;
        }
        close(c);
    }
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int ping(int port, int rounds, int payload, int warmup) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback(port);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
    nodelay(s);
    size_t size = 5 + (size_t)payload;
    unsigned char *out = malloc(size), *in = malloc(size);
    int64_t *rtt = malloc(sizeof(int64_t) * (size_t)rounds);
    out[0] = 0x02; out[1] = 0x40; out[2] = 0x20;
    out[3] = (unsigned char)(payload & 0xff); out[4] = (unsigned char)(payload >> 8);
    for (int i = 0; i < warmup + rounds; i++) {
        for (int j = 0; j < payload; j++) out[5 + j] = (unsigned char)(i + j);
        int64_t start = now_ns();
        if (write_full(s, out, size) != 0 || read_full(s, in, size) != 0) { fprintf(stderr, "ping: connection lost at round trip %d\n", i); return 1; }
        int64_t end = now_ns();
        if (memcmp(in, out, size) != 0) { fprintf(stderr, "ping: echo differs at round trip %d\n", i); return 1; }
        if (i >= warmup) rtt[i - warmup] = end - start;
    }
    close(s);
    qsort(rtt, (size_t)rounds, sizeof(int64_t), compare);
    double sum = 0;
    for (int i = 0; i < rounds; i++) sum += (double)rtt[i];
    int p50 = (rounds * 50 + 99) / 100 - 1, p99 = (rounds * 99 + 99) / 100 - 1;
    printf("round_trips=%d payload=%d p50_ns=%lld p99_ns=%lld max_ns=%lld mean_ns=%.0f packets=%d\n", rounds, payload,
           (long long)rtt[p50 < 0 ? 0 : p50], (long long)rtt[p99 < 0 ? 0 : p99], (long long)rtt[rounds - 1], sum / rounds,
           2 * (warmup + rounds));
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "echo") == 0) return echo(atoi(argv[2]));
    if (argc >= 5 && strcmp(argv[1], "ping") == 0) {
        int rounds = atoi(argv[3]), payload = atoi(argv[4]), warmup = argc > 5 ? atoi(argv[5]) : 200;
        if (rounds < 1 || payload < 0 || payload > 65535 || warmup < 0) { fprintf(stderr, "bad ROUND_TRIPS, PAYLOAD_BYTES or WARMUP\n"); return 2; }
        return ping(atoi(argv[2]), rounds, payload, warmup);
    }
    fprintf(stderr, "usage: %s echo PORT | %s ping PORT ROUND_TRIPS PAYLOAD_BYTES [WARMUP]\n", argv[0], argv[0]);
    return 2;
}
