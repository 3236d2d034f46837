// recvmmsg and struct mmsghdr are GNU extensions, which Swift's Glibc module does not show.
#define _GNU_SOURCE
#include "datagram_batch.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

int tether_receive_batch(int fd, unsigned char *buffer, size_t stride, unsigned count,
                         struct sockaddr_storage *senders, size_t *lengths) {
    if (count > TETHER_BATCH_MAX) count = TETHER_BATCH_MAX;
    if (count == 0) return 0;
#if defined(__linux__)
    struct mmsghdr messages[TETHER_BATCH_MAX];
    struct iovec vectors[TETHER_BATCH_MAX];
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = buffer + (size_t)i * stride;
        vectors[i].iov_len = stride;
        memset(&messages[i].msg_hdr, 0, sizeof messages[i].msg_hdr);
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &senders[i];
        messages[i].msg_hdr.msg_namelen = sizeof senders[i];
    }
    int received;
    do {
        received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    for (int i = 0; i < received; i++) lengths[i] = messages[i].msg_len;
    return received;
#else
    unsigned received = 0;
    while (received < count) {
        struct iovec vector = { .iov_base = buffer + (size_t)received * stride, .iov_len = stride };
        struct msghdr message;
        memset(&message, 0, sizeof message);
        message.msg_name = &senders[received];
        message.msg_namelen = sizeof senders[received];
        message.msg_iov = &vector;
        message.msg_iovlen = 1;
        ssize_t got = recvmsg(fd, &message, MSG_DONTWAIT);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (received > 0) break; // report what came; the error recurs on the next call
            return -1;
        }
        lengths[received] = (size_t)got;
        received++;
    }
    return (int)received;
#endif
}
