#ifndef PARLEY_COPENSSL_SHIM_H
#define PARLEY_COPENSSL_SHIM_H
// OpenSSL 3 (libssl, libcrypto) as ParleyIO sees it. Only ParleyIO imports this module.
//
// Many OpenSSL settings are function-like macros over SSL_CTX_ctrl/BIO_ctrl, or constants built from macros
// (SSL_OP_BIT), which Swift cannot import: each one Parley uses is a `static inline` function here.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// Loads libssl's error strings once per process (OpenSSL 3 initialises itself, but only loads the strings of the
// parts it has used; handshake errors should read as words, not numbers).
static inline int copenssl_initialize(void) {
    return OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
}

// TLS 1.2 as the floor; no compression (CRIME), no renegotiation (a peer-driven CPU sink).
static inline int copenssl_ctx_prepare(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) { return 0; }
    // TLS 1.2: forward-secret key exchange with AEAD ciphers only (no static RSA, no CBC); TLS 1.3 keeps OpenSSL's.
    if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) { return 0; }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    // Buffers of idle connections are released: thousands of SIP connections sit idle most of the time.
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    return 1;
}

static inline int copenssl_filetype_pem(void) { return SSL_FILETYPE_PEM; }

// SNI (RFC 6066) for a client session; `name` must be a DNS name, not an IP literal.
static inline int copenssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

// Hostname or IP check of the peer certificate (RFC 5922 for SIP: the name the request was sent to).
static inline int copenssl_expect_ip(SSL *ssl, const char *ip) {
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip);
}

// An empty memory BIO answers "retry" (-1), not EOF: the socket, not the BIO, says when the peer is gone.
static inline void copenssl_bio_retry_when_empty(BIO *bio) {
    BIO_set_mem_eof_return(bio, -1);
}

// Whether an error from the queue is X509's "key values mismatch" (the key is not the certificate's).
static inline int copenssl_error_is_key_mismatch(unsigned long error) {
    return ERR_GET_LIB(error) == ERR_LIB_X509 && ERR_GET_REASON(error) == X509_R_KEY_VALUES_MISMATCH;
}

static inline size_t copenssl_bio_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

#endif
