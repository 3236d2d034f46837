#ifndef TETHER_CBLUETOOTH_SHIM_H
#define TETHER_CBLUETOOTH_SHIM_H
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#endif
