#ifndef ORDERLIVE_COPENSSL_SHIM_H
#define ORDERLIVE_COPENSSL_SHIM_H

// OpenSSL libcrypto, for AES-256-GCM at rest (credentials) and, later, HMAC-SHA256 (webhooks).
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>

static inline int orderlive_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, length, tag);
}

static inline int orderlive_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, length, tag);
}

#endif
