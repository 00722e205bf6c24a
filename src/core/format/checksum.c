/* SPDX-License-Identifier: MIT */
/*
 * Strip checksums with OpenSSL 3 EVP.  Digests use a fetched EVP_MD; MACs
 * keep one initialised EVP_MAC_CTX as a template and duplicate it per call,
 * which costs a memcpy instead of a key schedule (and keeps the template
 * read-only, so many threads can checksum at once).  GMAC is computed by
 * ghash.c where the CPU has carry-less multiplies (several times faster
 * than OpenSSL 3.0's), from the hash key and the encrypted counter block
 * OpenSSL's AES gives here; the tags are the same.
 */
#include "checksum.h"
#include "ghash.h"

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
	ghash_key *gk; /* GMAC through ghash.c, or NULL */
	uint8_t ek0[16]; /* GMAC's AES_K(IV || 1) */
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

/* One AES-128 block: out = AES_key(in).  0 or -1. */
static int aes_block(const uint8_t key[16], const uint8_t in[16], uint8_t out[16])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len = 0;
	int ok = ctx && EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL) &&
	         EVP_CIPHER_CTX_set_padding(ctx, 0) && EVP_EncryptUpdate(ctx, out, &len, in, 16) &&
	         len == 16;

	EVP_CIPHER_CTX_free(ctx);
	return ok ? 0 : -1;
}

/* GMAC with ghash.c: the hash key H = AES_K(0) and, the IV being 12
 * zero bytes, the counter block J0 = 0^96 || 1 (SP 800-38D 7.1).  Leaves
 * c->gk NULL (OpenSSL then) if the CPU lacks what ghash.c needs. */
static void init_ghash(checksum *c, const uint8_t *key)
{
	static const uint8_t zero[16];
	static const uint8_t j0[16] = { [15] = 1 };
	uint8_t h[16];
	ghash_key *gk;

	if (ghash_impl_available() == GHASH_NONE || posix_memalign((void **)&gk, 64, sizeof(*gk)))
		return;
	if (aes_block(key, zero, h) < 0 || aes_block(key, j0, c->ek0) < 0 ||
	    ghash_key_init(gk, h, ghash_impl_available()) < 0) {
		free(gk);
		return;
	}
	c->gk = gk;
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
		init_ghash(c, key);
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
	free(c->gk);
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

static void gmac(const checksum *c, const struct iovec *iov, int cnt, uint8_t *out)
{
	ghash_state st;

	ghash_start(&st, c->gk);
	for (int i = 0; i < cnt; i++)
		ghash_update(&st, iov[i].iov_base, iov[i].iov_len);
	ghash_final_aad(&st, out);
	for (int i = 0; i < 16; i++)
		out[i] ^= c->ek0[i];
}

/* The 16 bytes that number block b (checksum_blocks). */
static void block_number(uint64_t b, uint8_t out[16])
{
	memset(out, 0, 16);
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(b >> (8 * i));
}

static void gmac_blocks(const checksum *c, const uint8_t *prefix, size_t plen, uint64_t first,
                        const uint8_t *data, size_t len, size_t bs, size_t cut, uint8_t *out)
{
	ghash_state base;
	uint8_t num[16], tag[16];

	ghash_start(&base, c->gk);
	ghash_update(&base, prefix, plen);
	for (size_t at = 0, b = 0; at < len; at += bs, b++) {
		block_number(first + b, num);
		ghash_tag(&base, num, data + at, len - at < bs ? len - at : bs, tag);
		for (int i = 0; i < 16; i++)
			tag[i] ^= c->ek0[i];
		memcpy(out + b * cut, tag, cut);
	}
}

/* The digests and OpenSSL's MACs: a context past the prefix, copied for
 * each block. */
static int evp_blocks(const checksum *c, const uint8_t *prefix, size_t plen, uint64_t first,
                      const uint8_t *data, size_t len, size_t bs, size_t cut, uint8_t *out)
{
	uint8_t num[16], full[EVP_MAX_MD_SIZE > 64 ? EVP_MAX_MD_SIZE : 64];
	EVP_MD_CTX *mbase = NULL, *mctx = NULL;
	EVP_MAC_CTX *kbase = NULL;
	int ok;

	if (c->md) {
		mbase = EVP_MD_CTX_new();
		mctx = EVP_MD_CTX_new();
		ok = mbase && mctx && EVP_DigestInit_ex2(mbase, c->md, NULL) &&
		     EVP_DigestUpdate(mbase, prefix, plen);
	} else {
		kbase = EVP_MAC_CTX_dup(c->tmpl);
		ok = kbase && EVP_MAC_update(kbase, prefix, plen);
	}
	for (size_t at = 0, b = 0; ok && at < len; at += bs, b++) {
		size_t n = len - at < bs ? len - at : bs, got = 0;
		unsigned int mdlen = 0;
		block_number(first + b, num);
		if (c->md) {
			ok = EVP_MD_CTX_copy_ex(mctx, mbase) && EVP_DigestUpdate(mctx, num, 16) &&
			     EVP_DigestUpdate(mctx, data + at, n) &&
			     EVP_DigestFinal_ex(mctx, full, &mdlen);
			got = mdlen;
		} else {
			EVP_MAC_CTX *k = EVP_MAC_CTX_dup(kbase);
			ok = k && EVP_MAC_update(k, num, 16) && EVP_MAC_update(k, data + at, n) &&
			     EVP_MAC_final(k, full, &got, sizeof(full));
			EVP_MAC_CTX_free(k);
		}
		ok = ok && got >= cut;
		if (ok)
			memcpy(out + b * cut, full, cut);
	}
	EVP_MD_CTX_free(mbase);
	EVP_MD_CTX_free(mctx);
	EVP_MAC_CTX_free(kbase);
	return ok ? 0 : -EIO;
}

int checksum_blocks(const checksum *c, const uint8_t *prefix, size_t plen, uint64_t first,
                    const uint8_t *data, size_t len, size_t bs, size_t cut, uint8_t *out)
{
	if (cut > CHECKSUM_MAX || bs == 0)
		return -EIO;
	if (c->gk) {
		gmac_blocks(c, prefix, plen, first, data, len, bs, cut, out);
		return 0;
	}
	return evp_blocks(c, prefix, plen, first, data, len, bs, cut, out);
}

int checksum_compute(const checksum *c, const struct iovec *iov, int cnt,
                     uint8_t out[CHECKSUM_MAX])
{
	memset(out, 0, CHECKSUM_MAX);
	if (c->gk) {
		gmac(c, iov, cnt, out);
		return 0;
	}
	return c->md ? digest(c, iov, cnt, out) : mac(c, iov, cnt, out);
}
