#ifndef PARLEY_CLIBPQ_SHIM_H
#define PARLEY_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
