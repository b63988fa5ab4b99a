/* Digests and encodings used for names: veths, ip sets, chains. Over libcrypto. */
#ifndef BRINDLE_HASH_H
#define BRINDLE_HASH_H

#include <stddef.h>
#include <stdint.h>

enum hash_alg {
	HASH_SHA1,
	HASH_SHA224,
	HASH_SHA256
};

/* Writes the digest to @out (at least 32 bytes); returns its length. */
size_t hash_digest(enum hash_alg alg, const void *data, size_t len, uint8_t *out);
/* Lower-case hex of the digest, truncated to @n chars (n < outsz). */
void hash_hex(enum hash_alg alg, const char *s, char *out, size_t n);
/* base64url (no padding) of the digest of @s, truncated to @n chars. */
void hash_b64url(enum hash_alg alg, const char *s, char *out, size_t n);
/* 64-bit FNV-1a: a fast fingerprint to notice changed content (not for security). */
uint64_t hash_fnv1a64(const void *data, size_t len);
/* Standard base64 with padding, for etcd's JSON gateway. Caller frees. */
char *base64_encode(const void *data, size_t len);
/* Returns decoded length or -1; @out must hold len*3/4+3 bytes. */
long base64_decode(const char *s, size_t len, uint8_t *out);

#endif
