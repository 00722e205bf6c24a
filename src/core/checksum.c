/* SPDX-License-Identifier: MIT */
/*
 * Strip checksums with OpenSSL 3 EVP.  Digests use a fetched EVP_MD; MACs
 * keep one initialised EVP_MAC_CTX as a template and duplicate it per call,
 * which costs a memcpy instead of a key schedule (and keeps the template
 * read-only, so many threads can checksum at once).
 */
#include "checksum.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

struct checksum {
	checksum_alg alg;
	EVP_MD *md;
	EVP_MAC *mac;
	EVP_MAC_CTX *tmpl;
};

static const struct {
	checksum_alg alg;
	const char *name;
	size_t size;
} algs[] = {
	{ CHECKSUM_SHA256, "sha256", 32 },
	{ CHECKSUM_BLAKE2B, "blake2b", 32 },
	{ CHECKSUM_BLAKE2S, "blake2s", 32 },
	{ CHECKSUM_GMAC, "gmac", 16 },
	{ CHECKSUM_POLY1305, "poly1305", 16 },
};

checksum_alg checksum_alg_from_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(algs) / sizeof(algs[0]); i++)
		if (strcmp(algs[i].name, name) == 0)
			return algs[i].alg;
	return 0;
}

const char *checksum_alg_name(checksum_alg alg)
{
	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
		if (algs[i].alg == alg)
			return algs[i].name;
	return "unknown";
}

size_t checksum_alg_size(checksum_alg alg)
{
	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
		if (algs[i].alg == alg)
			return algs[i].size;
	return 0;
}

static int init_mac(checksum *c, const uint8_t *key)
{
	/* A fixed IV: the MAC is a corruption detector here, and the strip's
	 * identity, stripe, generation and position are in the MAC input. */
	static const uint8_t iv[12];
	OSSL_PARAM params[3];
	size_t keylen = 32;
	int np = 0;

	if (c->alg == CHECKSUM_GMAC) {
		c->mac = EVP_MAC_fetch(NULL, "GMAC", NULL);
		params[np++] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
		                                                (char *)"AES-128-GCM", 0);
		params[np++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
		                                                 (void *)iv, sizeof(iv));
		keylen = 16;
	} else {
		c->mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
	}
	params[np] = OSSL_PARAM_construct_end();
	if (!c->mac)
		return -1;
	c->tmpl = EVP_MAC_CTX_new(c->mac);
	if (!c->tmpl || !EVP_MAC_init(c->tmpl, key, keylen, params))
		return -1;
	return 0;
}

checksum *checksum_new(checksum_alg alg, const uint8_t *key)
{
	checksum *c = calloc(1, sizeof(*c));
	int ok = -1;

	if (!c)
		return NULL;
	c->alg = alg;
	switch (alg) {
	case CHECKSUM_SHA256: c->md = EVP_MD_fetch(NULL, "SHA256", NULL); break;
	case CHECKSUM_BLAKE2B: c->md = EVP_MD_fetch(NULL, "BLAKE2B-512", NULL); break;
	case CHECKSUM_BLAKE2S: c->md = EVP_MD_fetch(NULL, "BLAKE2S-256", NULL); break;
	case CHECKSUM_GMAC:
	case CHECKSUM_POLY1305: ok = key ? init_mac(c, key) : -1; break;
	default: break;
	}
	if (c->md)
		ok = 0;
	if (ok < 0) {
		checksum_free(c);
		return NULL;
	}
	return c;
}

void checksum_free(checksum *c)
{
	if (!c)
		return;
	EVP_MAC_CTX_free(c->tmpl);
	EVP_MAC_free(c->mac);
	EVP_MD_free(c->md);
	free(c);
}

checksum_alg checksum_get_alg(const checksum *c)
{
	return c->alg;
}

static int digest(const checksum *c, const struct iovec *iov, int cnt, uint8_t *out)
{
	uint8_t full[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestInit_ex2(ctx, c->md, NULL);

	for (int i = 0; ok && i < cnt; i++)
		ok = EVP_DigestUpdate(ctx, iov[i].iov_base, iov[i].iov_len);
	ok = ok && EVP_DigestFinal_ex(ctx, full, &len);
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	memcpy(out, full, len < CHECKSUM_MAX ? len : CHECKSUM_MAX);
	return 0;
}

static int mac(const checksum *c, const struct iovec *iov, int cnt, uint8_t *out)
{
	uint8_t full[64];
	size_t len = 0;
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(c->tmpl);
	int ok = ctx != NULL;

	for (int i = 0; ok && i < cnt; i++)
		ok = EVP_MAC_update(ctx, iov[i].iov_base, iov[i].iov_len);
	ok = ok && EVP_MAC_final(ctx, full, &len, sizeof(full));
	EVP_MAC_CTX_free(ctx);
	if (!ok)
		return -EIO;
	memcpy(out, full, len < CHECKSUM_MAX ? len : CHECKSUM_MAX);
	return 0;
}

int checksum_compute(const checksum *c, const struct iovec *iov, int cnt,
                     uint8_t out[CHECKSUM_MAX])
{
	memset(out, 0, CHECKSUM_MAX);
	return c->md ? digest(c, iov, cnt, out) : mac(c, iov, cnt, out);
}
