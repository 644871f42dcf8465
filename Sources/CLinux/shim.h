#ifndef PARLEY_CLINUX_SHIM_H
#define PARLEY_CLINUX_SHIM_H
// Linux-only glibc headers that Swift's Glibc module leaves out: epoll, eventfd, prctl, sendmmsg and recvmmsg
// (nothing to link). Only ParleyIO imports this module: its event loop is the one place Parley waits on descriptors.
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
#endif
