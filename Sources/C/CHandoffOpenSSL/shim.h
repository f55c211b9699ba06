// CHandoffOpenSSL: the system OpenSSL (libssl-dev, 3.0) as HandoffTLS — and only HandoffTLS — sees it.
//
// Why the shims exist: Swift imports functions, not function-like macros, and OpenSSL spells many of
// the calls we need as macros over SSL_CTX_ctrl/BIO_ctrl/CRYPTO_free. Each wrapper below is the
// macro, typed, with a note on what we use it for. Nothing here adds behaviour.
#ifndef C_HANDOFF_OPENSSL_H
#define C_HANDOFF_OPENSSL_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// TLS 1.3 only: both ends pin the minimum and maximum protocol version.
static inline int handoff_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int handoff_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

// Key exchange groups (X25519 first).
static inline int handoff_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}

// Partial writes and a moving write buffer: our memory-BIO engine writes whatever fits.
static inline long handoff_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

// A cap on the certificate list a peer may send before it is authenticated (pre-auth size limit).
static inline long handoff_SSL_CTX_set_max_cert_list(SSL_CTX *ctx, long bytes) {
    return SSL_CTX_set_max_cert_list(ctx, bytes);
}

// No session cache: every connection is fully authenticated.
static inline long handoff_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

// The index under which a connection's Swift state hangs off its SSL (C callbacks cannot capture).
static inline int handoff_SSL_get_ex_new_index(void) {
    return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

// An empty memory BIO answers "retry" rather than "end of file": more ciphertext may still come.
static inline long handoff_BIO_set_mem_eof_return(BIO *bio, int value) {
    return BIO_set_mem_eof_return(bio, value);
}

// SSL_OP_* are built by a macro (SSL_OP_BIT) Swift cannot evaluate. We turn off compression (CRIME)
// and renegotiation (meaningless in TLS 1.3, but belt and braces for a 1.2 peer being refused).
static inline uint64_t handoff_SSL_OP_hardening(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
}

// Reads the bytes of a memory BIO (PEM output) without copying twice.
static inline long handoff_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

// Frees what OpenSSL allocated for us (i2d output).
static inline void handoff_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

// Extensions are built without a configuration database.
static inline void handoff_X509V3_set_ctx_nodb(X509V3_CTX *ctx) {
    X509V3_set_ctx_nodb(ctx);
}

#endif
