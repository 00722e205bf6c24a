/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the gmac checksum's own GHASH (src/core/format/ghash.c): every
 * implementation this CPU runs (one block at a time, 256- and 512-bit
 * vectors) against OpenSSL's GMAC on random keys, lengths, alignments and
 * splits of the input into pieces, and checksum_compute()'s gmac against
 * OpenSSL too.  Which implementations ran is printed: on a CPU without
 * carry-less multiplies none does and checksum.c uses OpenSSL itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "checksum.h"
#include "core_test_util.h"
#include "ghash.h"

#define MAX_LEN (70 * 1024)

/* OpenSSL's GMAC (AES-128, 12 zero bytes of IV) of buf. */
static void reference_gmac(const uint8_t key[16], const uint8_t *buf, size_t len, uint8_t out[16])
{
	static const uint8_t iv[12];
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, (char *)"AES-128-GCM", 0),
		OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, (void *)iv, sizeof(iv)),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "GMAC", NULL);
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	size_t olen = 0;

	assert_true(EVP_MAC_init(ctx, key, 16, params));
	assert_true(EVP_MAC_update(ctx, buf, len));
	assert_true(EVP_MAC_final(ctx, out, &olen, 16));
	assert_int_equal(olen, 16);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
}

static void aes_block(const uint8_t key[16], const uint8_t in[16], uint8_t out[16])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len = 0;

	assert_true(EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL));
	EVP_CIPHER_CTX_set_padding(ctx, 0);
	assert_true(EVP_EncryptUpdate(ctx, out, &len, in, 16));
	EVP_CIPHER_CTX_free(ctx);
}

/* Lengths: every one up to 4200 bytes (partial blocks, every length of
 * a step up to GHASH_POWERS blocks and past it), 64 + 64 KiB (a strip and
 * its record prefix), random. */
static size_t pick_len(int i)
{
	if (i < 4200)
		return (size_t)i;
	return i % 5 == 0 ? 64 + 65536 : (size_t)random() % MAX_LEN;
}

static void check_impl(enum ghash_impl impl, uint8_t *buf)
{
	static const uint8_t zero[16], j0[16] = { [15] = 1 };
	uint8_t key[16], h[16], ek0[16], want[16], got[16];
	ghash_key gk;

	fill_random(key, sizeof(key), 100 + impl);
	aes_block(key, zero, h);
	aes_block(key, j0, ek0);
	assert_int_equal(ghash_key_init(&gk, h, impl), 0);
	for (int i = 0; i < 5000; i++) {
		size_t len = pick_len(i), off = (size_t)random() % 64, done = 0;
		ghash_state st;

		reference_gmac(key, buf + off, len, want);
		ghash_start(&st, &gk);
		while (done < len) { /* pieces of any size, often not whole blocks */
			size_t piece = random() % 3 ? (size_t)random() % 40 : (size_t)random() % (len + 1);
			piece = piece > len - done ? len - done : piece;
			ghash_update(&st, buf + off + done, piece);
			done += piece;
		}
		ghash_final_aad(&st, got);
		for (int b = 0; b < 16; b++)
			got[b] ^= ek0[b];
		if (memcmp(got, want, 16))
			fail_msg("implementation %d, %zu bytes at offset %zu: not OpenSSL's GMAC", impl,
			         len, off);
	}
}

static void test_every_implementation_matches_openssl(void **state)
{
	uint8_t *buf = malloc(MAX_LEN + 64);

	(void)state;
	assert_non_null(buf);
	srandom(16);
	fill_random(buf, MAX_LEN + 64, 16);
	printf("ghash: best implementation here %d (0 none, 1 pclmulqdq, 2 256-bit, 3 512-bit)\n",
	       ghash_impl_available());
	for (enum ghash_impl impl = GHASH_128; impl <= GHASH_512; impl++) {
		ghash_key gk;
		if (impl > ghash_impl_available()) {
			assert_int_equal(ghash_key_init(&gk, buf, impl), -1);
			printf("ghash: implementation %d not run (the CPU lacks it)\n", impl);
			continue;
		}
		check_impl(impl, buf);
	}
	free(buf);
}

/* ghash_tag of (prefix, head, data) on every implementation: OpenSSL's
 * GMAC of the three in a row, in one step or through its fallbacks
 * (a prefix of part of a block, data of no whole number of blocks or of
 * more than a step holds), and the state it is given stays as it was. */
static void test_tag_matches_openssl(void **state)
{
	static const uint8_t zero[16], j0[16] = { [15] = 1 };
	static const size_t prefixes[] = { 0, 5, 16, 64 };
	size_t data_max = 16 * (GHASH_POWERS + 2);
	uint8_t *buf = malloc(64 + 16 + data_max), key[16], h[16], ek0[16], want[16], got[16];

	(void)state;
	assert_non_null(buf);
	srandom(17);
	fill_random(buf, 64 + 16 + data_max, 17);
	fill_random(key, sizeof(key), 18);
	aes_block(key, zero, h);
	aes_block(key, j0, ek0);
	for (enum ghash_impl impl = GHASH_128; impl <= ghash_impl_available(); impl++) {
		ghash_key gk;
		assert_int_equal(ghash_key_init(&gk, h, impl), 0);
		for (int i = 0; i < 600; i++) {
			size_t plen = prefixes[i % 4];
			size_t len = i < 200 ? (size_t)random() % data_max
			             : i < 400 ? 16 * ((size_t)random() % (GHASH_POWERS + 1))
			                       : 4096 - 16 * (size_t)(i % 3);
			ghash_state st, before;
			ghash_start(&st, &gk);
			ghash_update(&st, buf, plen);
			before = st;
			ghash_tag(&st, buf + plen, buf + plen + 16, len, got);
			assert_memory_equal(&st, &before, sizeof(st));
			for (int b = 0; b < 16; b++)
				got[b] ^= ek0[b];
			reference_gmac(key, buf, plen + 16 + len, want);
			if (memcmp(got, want, 16))
				fail_msg("implementation %d, prefix %zu, %zu bytes: not OpenSSL's GMAC",
				         impl, plen, len);
		}
	}
	free(buf);
}

/* The checksum the chunk format stores: whatever computes it, OpenSSL's. */
static void test_checksum_gmac_is_openssl_gmac(void **state)
{
	uint8_t key[CHECKSUM_KEY_SIZE], want[16], got[CHECKSUM_MAX];
	uint8_t *buf = malloc(MAX_LEN);
	checksum *c;

	(void)state;
	assert_non_null(buf);
	fill_random(key, sizeof(key), 3);
	fill_random(buf, MAX_LEN, 4);
	c = checksum_new(CHECKSUM_GMAC, key);
	assert_non_null(c);
	for (size_t len = 0; len < MAX_LEN; len = len * 3 + 17) {
		size_t cut = len / 3;
		struct iovec iov[2] = { { buf, cut }, { buf + cut, len - cut } };
		reference_gmac(key, buf, len, want);
		assert_int_equal(checksum_compute(c, iov, 2, got), 0);
		assert_memory_equal(got, want, 16);
		for (int i = 16; i < CHECKSUM_MAX; i++)
			assert_int_equal(got[i], 0);
	}
	checksum_free(c);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_implementation_matches_openssl),
		cmocka_unit_test(test_tag_matches_openssl),
		cmocka_unit_test(test_checksum_gmac_is_openssl_gmac),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
