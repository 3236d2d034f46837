/* The ceiling for the live-ingest benchmark: a UDP socket drained with recvmmsg and nothing else
 * (no parsing, no storage).
 *
 * usage: udp_drain PORT IDLE_MS [RCVBUF_BYTES]
 *
 * Binds 127.0.0.1:PORT, prints "ready" once bound, then receives until IDLE_MS pass with nothing
 * after the first datagram (or 10 s pass with none at all, so a sink nobody sends to ends). RCVBUF_BYTES 0 or absent keeps the kernel's default receive buffer.
 * Prints: received=N bytes=B seconds=S (first to last datagram) drops=D (the kernel's count of
 * datagrams dropped on this socket for lack of buffer space, from SO_RXQ_OVFL). */
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
#define BUFSZ 9216

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s PORT IDLE_MS [RCVBUF_BYTES]\n", argv[0]); return 2; }
    int port = atoi(argv[1]), idle_ms = atoi(argv[2]);
    int rcvbuf = argc > 3 ? atoi(argv[3]) : 0;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) { perror("socket"); return 1; }
    if (rcvbuf > 0 && setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) {
        perror("SO_RCVBUF"); return 1;
    }
    /* Linux reports double the request; below it the kernel capped the buffer at
     * net.core.rmem_max. Root may exceed the cap with SO_RCVBUFFORCE, as `tether serve` does. */
    int got = 0;
    socklen_t got_len = sizeof got;
    if (rcvbuf > 0 && getsockopt(s, SOL_SOCKET, SO_RCVBUF, &got, &got_len) == 0 && got < rcvbuf)
        setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    struct timeval tv = { .tv_sec = idle_ms / 1000, .tv_usec = (idle_ms % 1000) * 1000 };
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) { perror("bind"); return 1; }
    printf("ready\n");
    fflush(stdout);

    static char bufs[BATCH][BUFSZ];
    static char ctl[BATCH][64];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    uint64_t received = 0, bytes = 0;
    uint32_t drops = 0;
    int waits = 0;
    double first = 0, last = 0;
    for (;;) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = bufs[i];
            iov[i].iov_len = BUFSZ;
            memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = ctl[i];
            msgs[i].msg_hdr.msg_controllen = sizeof ctl[i];
        }
        int n = recvmmsg(s, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Before the first datagram, wait up to 10 s (a sender may be slow to start on a
                 * busy machine); after it, IDLE_MS of silence is the end. */
                if (received > 0 || ++waits * idle_ms >= 10000) break;
                continue;
            }
            perror("recvmmsg");
            return 1;
        }
        double t = now();
        if (received == 0) first = t;
        last = t;
        for (int i = 0; i < n; i++) {
            bytes += msgs[i].msg_len;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) memcpy(&drops, CMSG_DATA(c), 4);
        }
        received += (uint64_t)n;
    }
    printf("received=%llu bytes=%llu seconds=%.6f drops=%u\n", (unsigned long long)received,
           (unsigned long long)bytes, last - first, drops);
    return 0;
}
