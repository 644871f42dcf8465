#ifndef PARLEY_CARES_SHIM_H
#define PARLEY_CARES_SHIM_H
// c-ares (libc-ares-dev), the asynchronous DNS resolver. Only DNSResolver imports this module: it drives c-ares'
// sockets and timeouts from ParleyIO's loop and turns its answers into Swift values.
#include <ares.h>
#include <sys/time.h>
#endif
