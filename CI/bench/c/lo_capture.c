/* Captures what a sender put on the wire, for the pacing benchmark: libpcap on IFACE in immediate
 * mode with nanosecond timestamps and a 64 MB buffer, filtered, written to a classic pcap (ns).
 *
 * usage: lo_capture IFACE FILTER OUT.pcap COUNT TIMEOUT_S
 *
 * Prints "ready" once the capture is active, stops after COUNT frames, TIMEOUT_S seconds, or
 * SIGINT/SIGTERM, then prints: captured=N dropped=D (libpcap's ps_drop + ps_ifdrop). */
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pcap_t *p;
static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; pcap_breakloop(p); }

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: %s IFACE FILTER OUT.pcap COUNT TIMEOUT_S\n", argv[0]); return 2; }
    long want = atol(argv[4]);
    double timeout = atof(argv[5]);
    char err[PCAP_ERRBUF_SIZE];
    p = pcap_create(argv[1], err);
    if (!p) { fprintf(stderr, "%s\n", err); return 1; }
    pcap_set_snaplen(p, 2048);
    pcap_set_immediate_mode(p, 1);
    pcap_set_buffer_size(p, 64 << 20);
    pcap_set_timeout(p, 100);
    if (pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) != 0)
        fprintf(stderr, "warning: nanosecond timestamps not available\n");
    if (pcap_activate(p) < 0) { fprintf(stderr, "activate: %s\n", pcap_geterr(p)); return 1; }
    struct bpf_program prog;
    if (pcap_compile(p, &prog, argv[2], 1, PCAP_NETMASK_UNKNOWN) != 0 || pcap_setfilter(p, &prog) != 0) {
        fprintf(stderr, "filter: %s\n", pcap_geterr(p)); return 1;
    }
    pcap_dumper_t *d = pcap_dump_open(p, argv[3]);
    if (!d) { fprintf(stderr, "%s\n", pcap_geterr(p)); return 1; }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("ready\n");
    fflush(stdout);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long got = 0;
    while (!stop && got < want) {
        int n = pcap_dispatch(p, (int)(want - got), pcap_dump, (u_char *)d);
        if (n < 0) break;
        got += n;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > timeout) break;
    }
    struct pcap_stat st = {0};
    pcap_stats(p, &st);
    pcap_dump_close(d);
    pcap_close(p);
    printf("captured=%ld dropped=%u\n", got, st.ps_drop + st.ps_ifdrop);
    return 0;
}
