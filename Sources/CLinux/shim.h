#ifndef PARLEY_CLINUX_SHIM_H
#define PARLEY_CLINUX_SHIM_H
// Linux-only glibc headers that Swift's Glibc module leaves out: epoll, eventfd, prctl, sendmmsg and recvmmsg,
// and rtnetlink's address (the route monitor's socket; linux/netlink.h itself clashes with Glibc's socket types)
// (nothing to link). Only ParleyIO imports this module: its event loop is the one place Parley waits on descriptors.
#include <errno.h>
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

// An rtnetlink socket (non-blocking, close-on-exec) that hears the IPv4 and IPv6 route groups (RTMGRP_IPV4_ROUTE,
// RTMGRP_IPV6_ROUTE): its descriptor, or -errno. Made here with struct sockaddr_nl's layout and the kernel's numbers
// (AF_NETLINK 16, NETLINK_ROUTE 0): linux/netlink.h clashes with Glibc's socket types.
struct clinux_sockaddr_nl {
    unsigned short nl_family;
    unsigned short nl_pad;
    unsigned int nl_pid;
    unsigned int nl_groups;
};
static inline int clinux_open_route_socket(void) {
    // SOCK_RAW (3) | SOCK_CLOEXEC (02000000) | SOCK_NONBLOCK (04000), as numbers: naming glibc's __socket_type
    // enumerators in this module's header moves them out of Glibc's sight in Swift.
    int fd = socket(16, 3 | 02000000 | 04000, 0);
    if (fd < 0) return -errno;
    struct clinux_sockaddr_nl address = { 16, 0, 0, 0x40 | 0x400 };
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

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
// The socket levels and options of the ICMP error queue, with Linux's values: this module includes no more glibc
// headers than it did (netinet/in.h here made Swift's Glibc lose declarations, depending on build order).
#define CLINUX_SOL_IP 0
#define CLINUX_SOL_IPV6 41
#define CLINUX_IP_RECVERR 11
#define CLINUX_IPV6_RECVERR 25
// recvmsg's flags, by value too (naming glibc's MSG_* enumerators in this header hid them from Swift files of
// ParleyIO that import only Glibc).
#define CLINUX_MSG_DONTWAIT 0x40
#define CLINUX_MSG_ERRQUEUE 0x2000

// Asks for ICMP errors on a UDP socket (IP_RECVERR, and IPV6_RECVERR on an IPv6 one, which also carries IPv4-mapped
// peers): the kernel queues them on the socket's error queue with the datagram's destination instead of dropping
// them (an unconnected socket is told nothing otherwise). 0 on success.
static inline int clinux_enable_icmp_errors(int fd, int ipv6) {
    int on = 1;
    int result = setsockopt(fd, CLINUX_SOL_IP, CLINUX_IP_RECVERR, &on, sizeof on);
    if (ipv6) result = setsockopt(fd, CLINUX_SOL_IPV6, CLINUX_IPV6_RECVERR, &on, sizeof on);
    return result;
}

// The kernel's struct sock_extended_err (linux/errqueue.h, whose kernel headers clash with glibc's in this module),
// and its origins for ICMP.
struct clinux_extended_error {
    unsigned int ee_errno;
    unsigned char ee_origin;
    unsigned char ee_type;
    unsigned char ee_code;
    unsigned char ee_pad;
    unsigned int ee_info;
    unsigned int ee_data;
};
#define CLINUX_EE_ORIGIN_ICMP 2
#define CLINUX_EE_ORIGIN_ICMP6 3

// Takes one error from the socket's error queue: 1 with the destination of the datagram that caused it, its errno
// (ECONNREFUSED: port unreachable; EHOSTUNREACH, ENETUNREACH…) and whether an ICMP message reported it; 0 when
// there is none (the queue is empty, or it could not be read).
static inline int clinux_take_socket_error(int fd, struct sockaddr_storage *destination, int *error, int *from_icmp) {
    char control[512];
    char data[1];
    struct iovec vector = { data, sizeof data };
    struct msghdr message;
    __builtin_memset(&message, 0, sizeof message);
    message.msg_name = destination;
    message.msg_namelen = sizeof *destination;
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    if (recvmsg(fd, &message, CLINUX_MSG_ERRQUEUE | CLINUX_MSG_DONTWAIT) < 0) return 0;
    // The control messages, walked by hand (cmsghdr headers and data aligned to size_t, as CMSG_* do): the CMSG_NXTHDR
    // macro's inline function, which glibc defines in optimised builds, hid socket declarations from Swift's Glibc.
    size_t align = sizeof(size_t);
    size_t header_size = (sizeof(struct cmsghdr) + align - 1) & ~(align - 1);
    char *cursor = control, *end = control + message.msg_controllen;
    while (cursor + header_size <= end) {
        struct cmsghdr header;
        __builtin_memcpy(&header, cursor, sizeof header);
        if (header.cmsg_len < header_size || cursor + header.cmsg_len > end) break;
        if (((header.cmsg_level == CLINUX_SOL_IP && header.cmsg_type == CLINUX_IP_RECVERR)
                || (header.cmsg_level == CLINUX_SOL_IPV6 && header.cmsg_type == CLINUX_IPV6_RECVERR))
            && header.cmsg_len >= header_size + sizeof(struct clinux_extended_error)) {
            struct clinux_extended_error report;
            __builtin_memcpy(&report, cursor + header_size, sizeof report);
            *error = (int)report.ee_errno;
            *from_icmp = report.ee_origin == CLINUX_EE_ORIGIN_ICMP || report.ee_origin == CLINUX_EE_ORIGIN_ICMP6;
            return 1;
        }
        cursor += (header.cmsg_len + align - 1) & ~(align - 1);
    }
    *error = 0;
    *from_icmp = 0;
    return 1;
}

#endif
