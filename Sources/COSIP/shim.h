#ifndef PARLEY_COSIP_SHIM_H
#define PARLEY_COSIP_SHIM_H
// libosip2's parser (osipparser2) as SIPMessages sees it. Only SIPMessages imports this module.
//
// <sys/time.h> and <sys/types.h> must come before any osip header: they use struct timeval and size types
// without including what declares them.
#include <sys/time.h>
#include <sys/types.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <osipparser2/osip_port.h>
#include <osipparser2/osip_parser.h>
#include <osipparser2/sdp_message.h>

// Trace output: libosip2 prints "| ERROR |" lines for every bad input. A peer controls those inputs, so the
// trace is a log-flooding vector: every level is switched off, and any trace that still gets through goes nowhere.
static inline void cosip_discard_trace(const char *file, int line, osip_trace_level_t level, const char *format, va_list ap) {
    (void)file; (void)line; (void)level; (void)format; (void)ap;
}

static inline void cosip_prepare(void) {
    osip_trace_initialize_func(END_TRACE_LEVEL, cosip_discard_trace);
    for (int level = TRACE_LEVEL0; level < END_TRACE_LEVEL; level++) {
        osip_trace_disable_level((osip_trace_level_t)level);
    }
    // parser_init() builds the table of known headers; osip_message_parse crashes without it.
    parser_init();
}

// Runs cosip_prepare exactly once per process, whichever thread gets here first. Call before any osip parse.
static inline void cosip_initialize(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cosip_prepare);
}

// osip_free is a macro over the mutable global osip_free_func (which Swift 6 may not touch): one function, for
// memory libosip2 hands over (the *_to_str family). Parsed structures are freed with their osip_*_free functions.
static inline void cosip_free(void *pointer) {
    osip_free(pointer);
}

static inline int cosip_list_size(const osip_list_t *list) {
    return osip_list_size(list);
}

// Lists inside structures, by address (Swift gives no stable address for a field read through `pointee`).
static inline const osip_list_t *cosip_uri_params(const osip_uri_t *uri) { return &uri->url_params; }
static inline const osip_list_t *cosip_uri_headers(const osip_uri_t *uri) { return &uri->url_headers; }
static inline const osip_list_t *cosip_from_params(const osip_from_t *from) { return &from->gen_params; }
static inline const osip_list_t *cosip_via_params(const osip_via_t *via) { return &via->via_params; }
static inline const osip_list_t *cosip_content_type_params(const osip_content_type_t *type) { return &type->gen_params; }

// SDP lists by address.
static inline const osip_list_t *cosip_sdp_medias(const sdp_message_t *sdp) { return &sdp->m_medias; }
static inline const osip_list_t *cosip_sdp_attributes(const sdp_message_t *sdp) { return &sdp->a_attributes; }
static inline const osip_list_t *cosip_sdp_media_payloads(const sdp_media_t *media) { return &media->m_payloads; }
static inline const osip_list_t *cosip_sdp_media_attributes(const sdp_media_t *media) { return &media->a_attributes; }
static inline const osip_list_t *cosip_sdp_media_connections(const sdp_media_t *media) { return &media->c_connections; }

#endif
