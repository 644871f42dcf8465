#ifndef PARLEY_COPENSSL_SHIM_H
#define PARLEY_COPENSSL_SHIM_H
// OpenSSL 3 (libssl, libcrypto) as ParleyIO sees it. Only ParleyIO imports this module.
//
// Many OpenSSL settings are function-like macros over SSL_CTX_ctrl/BIO_ctrl, or constants built from macros
// (SSL_OP_BIT), which Swift cannot import: each one Parley uses is a `static inline` function here.
#include <string.h>
#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
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

// --- ECDSA P-256 device keys (collaboration identity proofs; docs/collaboration.md) ---

// A P-256 public key from its 65-byte X9.63 uncompressed point, or NULL when the bytes are not a point on the curve
// (the quick public check: on the curve and not infinity; P-256's cofactor is 1, so the order check adds nothing).
static inline EVP_PKEY *copenssl_p256_public_key(const unsigned char *point, size_t length) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) { return NULL; }
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"prime256v1", 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, length);
    params[2] = OSSL_PARAM_construct_end();
    int made = EVP_PKEY_fromdata_init(ctx) == 1 && EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!made) { EVP_PKEY_free(pkey); return NULL; }
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int valid = check != NULL && EVP_PKEY_public_check_quick(check) == 1;
    EVP_PKEY_CTX_free(check);
    if (!valid) { EVP_PKEY_free(pkey); return NULL; }
    return pkey;
}

// A new P-256 key pair (EVP_EC_gen is a macro over a variadic function Swift cannot call).
static inline EVP_PKEY *copenssl_p256_generate(void) { return EVP_EC_gen("P-256"); }

// Whether a key is an EC key on P-256.
static inline int copenssl_is_p256(EVP_PKEY *pkey) {
    char name[64] = {0};
    size_t length = 0;
    if (!EVP_PKEY_is_a(pkey, "EC")) { return 0; }
    if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name), &length) != 1) { return 0; }
    return strcmp(name, "prime256v1") == 0;
}

// The key's public point, uncompressed (65 bytes written to `out`); 0 on failure.
static inline int copenssl_p256_public_point(EVP_PKEY *pkey, unsigned char *out) {
    size_t length = 0;
    if (EVP_PKEY_set_utf8_string_param(pkey, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed") != 1) {
        ERR_clear_error();
    }
    if (EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, out, 65, &length) != 1) { return 0; }
    return length == 65 && out[0] == 0x04;
}

// PKCS#8 PEM ("BEGIN PRIVATE KEY") of a private key into a memory BIO.
static inline int copenssl_write_pkcs8(BIO *bio, EVP_PKEY *pkey) {
    return PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL);
}

// No passphrase prompt: an encrypted key is an error, never a question on the terminal.
static inline int copenssl_no_passphrase(char *buffer, int size, int writing, void *context) {
    (void)buffer; (void)size; (void)writing; (void)context;
    return -1;
}

static inline EVP_PKEY *copenssl_read_private_key(BIO *bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, copenssl_no_passphrase, NULL);
}

static inline long copenssl_bio_contents(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

// --- Self-signed certificates for DTLS-SRTP (RFC 5763: the peer checks our certificate's fingerprint, not a CA) ---

// A self-signed X.509 v3 certificate for `key`: subject and issuer CN=`common_name`, a random 64-bit serial, valid
// from a day ago (a peer's clock may lag) for `days` days, signed with SHA-256; NULL on failure.
static inline X509 *copenssl_self_signed(EVP_PKEY *key, const char *common_name, long days) {
    X509 *x509 = X509_new();
    if (x509 == NULL) { return NULL; }
    unsigned char serial[8];
    int ok = X509_set_version(x509, 2) == 1 && RAND_bytes(serial, sizeof serial) == 1;
    if (ok) {
        serial[0] &= 0x7F;  // a positive INTEGER
        BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
        ok = number != NULL && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(x509)) != NULL;
        BN_free(number);
    }
    X509_NAME *name = ok ? X509_get_subject_name(x509) : NULL;
    ok = ok && name != NULL
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0) == 1
        && X509_set_issuer_name(x509, name) == 1
        && X509_gmtime_adj(X509_getm_notBefore(x509), -86400L) != NULL
        && X509_gmtime_adj(X509_getm_notAfter(x509), days * 86400L) != NULL
        && X509_set_pubkey(x509, key) == 1
        && X509_sign(x509, key, EVP_sha256()) > 0;
    if (!ok) { X509_free(x509); return NULL; }
    return x509;
}

// The certificate in PEM ("BEGIN CERTIFICATE") into a memory BIO.
static inline int copenssl_write_certificate(BIO *bio, X509 *x509) { return PEM_write_bio_X509(bio, x509); }

// The first certificate in a PEM text held by a memory BIO, or NULL (no passphrase prompt).
static inline X509 *copenssl_read_certificate(BIO *bio) {
    return PEM_read_bio_X509(bio, NULL, copenssl_no_passphrase, NULL);
}

// The digest of the certificate's DER encoding under `md` (RFC 8122's fingerprint) into `out` (EVP_MAX_MD_SIZE
// bytes); its length, or 0 on failure.
static inline unsigned copenssl_certificate_digest(X509 *x509, const EVP_MD *md, unsigned char *out) {
    unsigned length = 0;
    return X509_digest(x509, md, out, &length) == 1 ? length : 0;
}

// Whether the certificate's public key is `key`'s, and whether it is still valid `days` from now (1 yes, 0 no).
static inline int copenssl_certificate_fits(X509 *x509, EVP_PKEY *key, long seconds_ahead) {
    if (X509_check_private_key(x509, key) != 1) { ERR_clear_error(); return 0; }
    time_t ahead = time(NULL) + seconds_ahead;
    return X509_cmp_time(X509_get0_notAfter(x509), &ahead) > 0;
}

// The `index`th DNS name or IP address among the subjectAltNames of the certificate `ctx` presents, as text into
// `out` (NUL-terminated): its length; 0 for an entry of another kind (or too long, or not text); -1 past the last.
static inline int copenssl_certificate_name(SSL_CTX *ctx, int index, char *out, size_t size) {
    X509 *x509 = SSL_CTX_get0_certificate(ctx);
    if (x509 == NULL || size < 46) { return -1; }
    GENERAL_NAMES *names = X509_get_ext_d2i(x509, NID_subject_alt_name, NULL, NULL);
    if (names == NULL) { return -1; }
    int result = -1;
    if (index < sk_GENERAL_NAME_num(names)) {
        const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, index);
        result = 0;
        if (name->type == GEN_DNS) {
            const unsigned char *text = ASN1_STRING_get0_data(name->d.dNSName);
            int length = ASN1_STRING_length(name->d.dNSName);
            if (length > 0 && (size_t)length < size && memchr(text, 0, (size_t)length) == NULL) {
                memcpy(out, text, (size_t)length);
                out[length] = 0;
                result = length;
            }
        } else if (name->type == GEN_IPADD) {
            int length = ASN1_STRING_length(name->d.iPAddress);
            const unsigned char *bytes = ASN1_STRING_get0_data(name->d.iPAddress);
            int family = length == 4 ? AF_INET : (length == 16 ? AF_INET6 : 0);
            if (family != 0 && inet_ntop(family, bytes, out, (socklen_t)size) != NULL) { result = (int)strlen(out); }
        }
    }
    GENERAL_NAMES_free(names);
    return result;
}

#endif
