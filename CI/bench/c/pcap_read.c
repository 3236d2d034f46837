/* The reference reader for the benchmarks: libpcap's own pcap_next_ex loop.
 *
 * usage: pcap_read read FILE        every frame: count frames and captured bytes
 *        pcap_read udp FILE PORT    also take Ethernet/IPv4/UDP apart and count the datagrams sent
 *                                   to PORT and their payload bytes (what replay needs from a file)
 *
 * Prints one line: frames=N bytes=B datagrams=D payload_bytes=P seconds=S
 * `bytes` is the sum of captured lengths, so MB/s is comparable with Tether's figure; `seconds`
 * covers opening the file through the last frame. */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int udp = argc == 4 && strcmp(argv[1], "udp") == 0;
    if (!(argc == 3 && strcmp(argv[1], "read") == 0) && !udp) {
        fprintf(stderr, "usage: %s read FILE | udp FILE PORT\n", argv[0]);
        return 2;
    }
    unsigned port = udp ? (unsigned)strtoul(argv[3], NULL, 10) : 0;
    char err[PCAP_ERRBUF_SIZE];
    double t0 = now();
    pcap_t *p = pcap_open_offline_with_tstamp_precision(argv[2], PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) { fprintf(stderr, "%s\n", err); return 1; }
    if (udp && pcap_datalink(p) != DLT_EN10MB) { fprintf(stderr, "udp mode needs Ethernet\n"); return 1; }
    struct pcap_pkthdr *h;
    const u_char *d;
    uint64_t frames = 0, bytes = 0, datagrams = 0, payload = 0, tsum = 0;
    int rc;
    while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
        frames++;
        bytes += h->caplen;
        tsum += (uint64_t)h->ts.tv_usec;
        if (!udp) continue;
        if (h->caplen < 42 || d[12] != 0x08 || d[13] != 0x00) continue;
        const u_char *ip = d + 14;
        unsigned ihl = (ip[0] & 0x0f) * 4u;
        if ((ip[0] >> 4) != 4 || ip[9] != 17 || ihl < 20 || 14u + ihl + 8u > h->caplen) continue;
        if ((ip[6] & 0x3f) != 0 || ip[7] != 0) continue; /* fragments: not in these files */
        const u_char *u = ip + ihl;
        unsigned dport = (unsigned)u[2] << 8 | u[3], ulen = (unsigned)u[4] << 8 | u[5];
        if (dport != port || ulen < 8 || 14u + ihl + ulen > h->caplen) continue;
        datagrams++;
        payload += ulen - 8;
    }
    double secs = now() - t0;
    if (rc == -1) { fprintf(stderr, "%s\n", pcap_geterr(p)); return 1; }
    pcap_close(p);
    printf("frames=%llu bytes=%llu datagrams=%llu payload_bytes=%llu seconds=%.6f check=%llu\n",
           (unsigned long long)frames, (unsigned long long)bytes, (unsigned long long)datagrams,
           (unsigned long long)payload, secs, (unsigned long long)(tsum & 0xffff));
    return 0;
}
