#ifndef TETHER_CPCAP_SHIM_H
#define TETHER_CPCAP_SHIM_H
#include <pcap/pcap.h>
#endif
