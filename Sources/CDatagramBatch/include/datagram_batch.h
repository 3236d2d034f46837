#ifndef TETHER_DATAGRAM_BATCH_H
#define TETHER_DATAGRAM_BATCH_H

#include <stddef.h>
#include <sys/socket.h>

/// The most datagrams one `tether_receive_batch` call takes.
#define TETHER_BATCH_MAX 64

/// Receives up to `count` (at most TETHER_BATCH_MAX) datagrams from the non-blocking socket `fd`
/// without waiting: datagram i goes to `buffer + i * stride` (at most `stride` bytes; a longer one
/// is cut to `stride`), its length to `lengths[i]`, its sender to `senders[i]`.
/// One `recvmmsg` call on Linux, a `recvfrom` loop elsewhere.
/// Returns how many were received (0 when none was waiting), or -1 with errno set.
int tether_receive_batch(int fd, unsigned char *buffer, size_t stride, unsigned count,
                         struct sockaddr_storage *senders, size_t *lengths);

#endif
