/* Writes a large pcapng capture for the read benchmark: one section, one Ethernet interface with
 * nanosecond timestamps (if_tsresol = 9), Enhanced Packet Blocks carrying Ethernet/IPv4/UDP frames
 * of mixed sizes (64 to 1514 bytes). Deterministic: the same arguments give the same file.
 *
 * usage: gen_capture OUT.pcapng SIZE_MB
 *
 * Blocks are assembled in a large buffer and written with few fwrite calls, so generating a
 * gigabyte takes seconds. The sizes follow a fixed mix: 40 % small (64–200 bytes), 30 % medium
 * (200–800), 30 % large (800–1514). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTBUF (8u << 20)

static uint8_t out[OUTBUF];
static size_t used;
static FILE *fp;

static void flush_out(void) {
    if (used && fwrite(out, 1, used, fp) != used) { perror("fwrite"); exit(1); }
    used = 0;
}

static void put32(uint32_t v) { memcpy(out + used, &v, 4); used += 4; }
static void put16(uint16_t v) { memcpy(out + used, &v, 2); used += 2; }

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static uint16_t ip_checksum(const uint8_t *h) {
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (uint32_t)h[i] << 8 | h[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s OUT.pcapng SIZE_MB\n", argv[0]); return 2; }
    uint64_t target = strtoull(argv[2], NULL, 10) << 20;
    fp = fopen(argv[1], "wb");
    if (!fp) { perror(argv[1]); return 1; }

    /* Section Header Block, host byte order (readers detect it from the byte-order magic). */
    put32(0x0A0D0D0A); put32(28); put32(0x1A2B3C4D); put16(1); put16(0);
    put32(0xffffffff); put32(0xffffffff); put32(28);
    /* Interface Description Block: Ethernet, snaplen 65535, if_tsresol = 9 (ns). */
    put32(1); put32(32); put16(1); put16(0); put32(65535);
    put16(9); put16(1); out[used++] = 9; out[used++] = 0; out[used++] = 0; out[used++] = 0;
    put16(0); put16(0); put32(32);

    static uint8_t payload[2048];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)next_rand();

    uint64_t written = used, frames = 0;
    uint64_t ts = 1700000000ull * 1000000000ull;
    uint16_t ipid = 0;
    while (written < target) {
        uint32_t r = next_rand() % 100, len;
        if (r < 40) len = 64 + next_rand() % 137;
        else if (r < 70) len = 200 + next_rand() % 601;
        else len = 800 + next_rand() % 715;
        uint32_t padded = (len + 3) & ~3u, total = 32 + padded;
        if (used + total > OUTBUF) flush_out();
        ts += 1000 + next_rand() % 99000;
        put32(6); put32(total); put32(0); put32((uint32_t)(ts >> 32)); put32((uint32_t)ts);
        put32(len); put32(len);
        uint8_t *f = out + used;
        memset(f, 0, 12);                      /* zero MACs, as on Linux lo */
        f[12] = 0x08; f[13] = 0x00;
        uint8_t *ip = f + 14;
        uint16_t iplen = (uint16_t)(len - 14), udplen = (uint16_t)(len - 34);
        ip[0] = 0x45; ip[1] = 0; ip[2] = iplen >> 8; ip[3] = (uint8_t)iplen;
        ip[4] = ipid >> 8; ip[5] = (uint8_t)ipid; ipid++;
        ip[6] = 0x40; ip[7] = 0; ip[8] = 64; ip[9] = 17; ip[10] = 0; ip[11] = 0;
        ip[12] = 127; ip[13] = 0; ip[14] = 0; ip[15] = 1;
        ip[16] = 127; ip[17] = 0; ip[18] = 0; ip[19] = 1;
        uint16_t c = ip_checksum(ip); ip[10] = c >> 8; ip[11] = (uint8_t)c;
        uint8_t *udp = ip + 20;
        uint16_t sport = (uint16_t)(40000 + frames % 8);
        udp[0] = sport >> 8; udp[1] = (uint8_t)sport; udp[2] = 0x30; udp[3] = 0x39; /* 12345 */
        udp[4] = udplen >> 8; udp[5] = (uint8_t)udplen; udp[6] = 0; udp[7] = 0;
        memcpy(udp + 8, payload + (frames % 512), udplen);
        memset(f + len, 0, padded - len);
        used += padded;
        put32(total);
        written += total;
        frames++;
    }
    flush_out();
    if (fclose(fp) != 0) { perror("fclose"); return 1; }
    printf("frames=%llu bytes=%llu\n", (unsigned long long)frames, (unsigned long long)written);
    return 0;
}
