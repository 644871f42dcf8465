#ifndef PARLEY_CSQLITE_SHIM_H
#define PARLEY_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline void (*csqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic; the one option Parley sets, as a plain function.
static inline int csqlite_enable_defensive(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
}

// sqlite3_config is variadic too. Memory statistics (on by default) take a process-wide mutex around every allocation
// SQLite makes; Parley never reads them. Only valid before SQLite initialises (SQLITE_MISUSE after, harmlessly).
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
