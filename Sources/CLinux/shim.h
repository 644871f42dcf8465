#ifndef PARLEY_CLINUX_SHIM_H
#define PARLEY_CLINUX_SHIM_H
// Linux-only glibc headers that Swift's Glibc module leaves out: epoll, eventfd, prctl, sendmmsg and recvmmsg
// (nothing to link). Only ParleyIO imports this module: its event loop is the one place Parley waits on descriptors.
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// The interest and readiness bits as plain unsigned values (glibc declares them as an enum and macros).
static inline unsigned int clinux_epoll_in(void) { return EPOLLIN; }
static inline unsigned int clinux_epoll_out(void) { return EPOLLOUT; }
static inline unsigned int clinux_epoll_err(void) { return EPOLLERR; }
static inline unsigned int clinux_epoll_hup(void) { return EPOLLHUP; }

// Names the calling thread (at most 15 bytes show; longer names are cut by the kernel). prctl is variadic.
static inline int clinux_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

// sendmmsg's and recvmmsg's vector element (struct mmsghdr, which glibc declares only under _GNU_SOURCE; same layout)
// and the calls themselves, made through syscall(2) for the same reason (recvmmsg without a timeout).
struct clinux_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
static inline int clinux_sendmmsg(int fd, struct clinux_mmsghdr *vector, unsigned int count, int flags) {
    return (int)syscall(SYS_sendmmsg, fd, vector, count, flags);
}
static inline int clinux_recvmmsg(int fd, struct clinux_mmsghdr *vector, unsigned int count, int flags) {
    return (int)syscall(SYS_recvmmsg, fd, vector, count, flags, (void *)0);
}
// Asks for ICMP errors on a UDP socket (IP_RECVERR, and IPV6_RECVERR on an IPv6 one, which also carries IPv4-mapped
// peers): the kernel queues them on the socket's error queue with the datagram's destination instead of dropping
// them (an unconnected socket is told nothing otherwise). 0 on success.
static inline int clinux_enable_icmp_errors(int fd, int ipv6) {
    int on = 1;
    int result = setsockopt(fd, IPPROTO_IP, IP_RECVERR, &on, sizeof on);
    if (ipv6) result = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on);
    return result;
}

// The kernel's struct sock_extended_err (linux/errqueue.h, whose kernel headers clash with glibc's in this module),
// and its origins for ICMP.
struct clinux_extended_error {
    uint32_t ee_errno;
    uint8_t ee_origin;
    uint8_t ee_type;
    uint8_t ee_code;
    uint8_t ee_pad;
    uint32_t ee_info;
    uint32_t ee_data;
};
#define CLINUX_EE_ORIGIN_ICMP 2
#define CLINUX_EE_ORIGIN_ICMP6 3

// Takes one error from the socket's error queue: 1 with the destination of the datagram that caused it, its errno
// (ECONNREFUSED: port unreachable; EHOSTUNREACH, ENETUNREACH…) and whether an ICMP message reported it; 0 when the
// queue is empty; -1 on another failure.
static inline int clinux_take_socket_error(int fd, struct sockaddr_storage *destination, int *error, int *from_icmp) {
    char control[512];
    char data[1];
    struct iovec vector = { data, sizeof data };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_name = destination;
    message.msg_namelen = sizeof *destination;
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    if (recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if ((header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_RECVERR)
            || (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_RECVERR)) {
            struct clinux_extended_error report;
            memcpy(&report, CMSG_DATA(header), sizeof report);
            *error = (int)report.ee_errno;
            *from_icmp = report.ee_origin == CLINUX_EE_ORIGIN_ICMP || report.ee_origin == CLINUX_EE_ORIGIN_ICMP6;
            return 1;
        }
    }
    *error = 0;
    *from_icmp = 0;
    return 1;
}

#endif
