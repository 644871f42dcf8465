#ifndef PARLEY_CLINUX_SHIM_H
#define PARLEY_CLINUX_SHIM_H
// Linux-only glibc headers that Swift's Glibc module leaves out: epoll, eventfd and prctl (nothing to link).
// Only ParleyIO imports this module: its event loop is the one place Parley waits on descriptors.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// The interest and readiness bits as plain unsigned values (glibc declares them as an enum and macros).
static inline unsigned int clinux_epoll_in(void) { return EPOLLIN; }
static inline unsigned int clinux_epoll_out(void) { return EPOLLOUT; }
static inline unsigned int clinux_epoll_err(void) { return EPOLLERR; }
static inline unsigned int clinux_epoll_hup(void) { return EPOLLHUP; }

// Names the calling thread (at most 15 bytes show; longer names are cut by the kernel). prctl is variadic.
static inline int clinux_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
#endif
