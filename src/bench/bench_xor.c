/* SPDX-License-Identifier: MIT */
/*
 * ecfs-bench --tune and --figures: measurements of the bit-matrix XOR codes.
 *
 * --tune -k K -m M runs the packet-size region search of Plank et al.
 * (FAST'09, section 4.4) for every XOR code and word size that fits [k,m]:
 * a coarse pass over powers of two, then repeated refinement between the
 * best size's neighbours, keeping the fastest.  Every try is printed, and
 * the fastest code, w and packet size is recommended for this machine.
 *
 * --figures writes CSV files for the seed papers' figures (see
 * docs/xor-codes.md): encoding and decoding speed (normalized as FAST'09
 * does) and XOR volume of every code at every legal w <= 32 for [6,2],
 * [14,2], [12,4] and [10,6]; the packet-size curve of RDP [6,2] w=6; and
 * the four XOR orders on Liberation k = w = 11 (Luo et al., Table 2).
 * scripts/paper-figures.sh turns them into PNG with gnuplot.
 *
 * Speeds are data bytes per second of thread CPU time (the machine may be
 * shared), best of a few rounds; 1 GB = 1e9 bytes.
 */
#include "bench_xor.h"

#include "ec.h"
#include "xor_codes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct xb_opts {
	int tune, figures, quick;
	int k, m;
	double seconds;     /* measuring time per point */
	size_t strip;       /* target block length */
	const char *out;    /* figures directory */
	ec_kind only;       /* --code: tune one code */
} xb_opts;

static const ec_kind xor_kinds[] = {
	EC_CAUCHY_ORIG, EC_CAUCHY_GOOD, EC_LIBERATION, EC_BLAUM_ROTH,
	EC_LIBER8TION, EC_EVENODD, EC_RDP, EC_STAR,
};
#define N_KINDS (int)(sizeof(xor_kinds) / sizeof(xor_kinds[0]))

static const char *const order_names[] = { "default", "ppg", "pwg", "dpg", "dwg" };

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One code and a set of buffers to run it on. */
typedef struct xb_case {
	ec_code *code;
	int k, m;
	size_t len;
	uint8_t *mem;
	uint8_t *blocks[64];
} xb_case;

static int case_open(xb_case *c, const ec_params *p, size_t strip)
{
	memset(c, 0, sizeof(*c));
	if (ec_create(p, &c->code) != 0)
		return -1;
	size_t unit = ec_block_align(c->code);
	c->len = strip >= unit ? strip / unit * unit : unit;
	c->k = p->k;
	c->m = p->m;
	c->mem = aligned_alloc(64, (size_t)(p->k + p->m) * c->len);
	if (!c->mem) {
		ec_destroy(c->code);
		return -1;
	}
	uint64_t s = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < (size_t)(p->k + p->m) * c->len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		c->mem[i] = (uint8_t)s;
	}
	for (int b = 0; b < p->k + p->m; b++)
		c->blocks[b] = c->mem + (size_t)b * c->len;
	return 0;
}

static void case_close(xb_case *c)
{
	free(c->mem);
	ec_destroy(c->code);
}

/* Best GB/s of data (k * len per call) over 3 rounds of seconds/3. */
static double measure(xb_case *c, int decode, double seconds)
{
	int erased[64];
	for (int i = 0; i < c->m; i++)
		erased[i] = i; /* the first m data blocks: the costly case */
	double best = 0;
	for (int round = 0; round < 3; round++) {
		long calls = 0;
		double t0 = cpu_now(), t;
		do {
			int rc = decode ? ec_decode(c->code, c->blocks, erased, c->m, c->len)
			                : ec_encode(c->code, (const uint8_t *const *)c->blocks,
			                            c->blocks + c->k, c->len);
			if (rc != 0)
				return -1;
			calls++;
			t = cpu_now() - t0;
		} while (t < seconds / 3);
		double gbps = (double)calls * (double)c->k * (double)c->len / t / 1e9;
		if (gbps > best)
			best = gbps;
	}
	return best;
}

static double normalized(double gbps, int k, int m)
{
	return gbps * (double)m * (double)(k - 1) / (double)k;
}

static int legal(ec_kind kind, int k, int m, int w)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w, .packet_size = 8 };
	ec_code *c = NULL;
	int ok = ec_create(&p, &c) == 0;
	ec_destroy(c);
	return ok;
}

/* Encode speed of one (code, w, packet) point, or -1. */
static double try_point(ec_kind kind, int k, int m, int w, size_t ps, size_t strip,
                        ec_order order, double seconds)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w, .packet_size = ps, .order = order };
	xb_case c;
	if (case_open(&c, &p, strip) != 0)
		return -1;
	double g = measure(&c, 0, seconds);
	case_close(&c);
	return g;
}

/* ---- --tune ---- */

typedef struct best_point {
	ec_kind kind;
	int w;
	size_t ps;
	double gbps;
} best_point;

static double tune_one(const xb_opts *o, ec_kind kind, int w, size_t *best_ps)
{
	double best = -1;
	size_t bps = 0;
	/* Coarse: powers of two from 64 bytes while a group fits 4 strips. */
	for (size_t ps = 64; ps <= 65536 && (size_t)w * ps <= 4 * o->strip; ps *= 2) {
		double g = try_point(kind, o->k, o->m, w, ps, o->strip, EC_ORDER_DEFAULT, o->seconds);
		printf("  try %-12s w=%-2d packet=%-6zu %7.2f GB/s\n", ec_kind_name(kind), w, ps, g);
		if (g > best) {
			best = g;
			bps = ps;
		}
	}
	if (bps == 0)
		return -1;
	/* Region search: probe the midpoints between the best size and its
	 * neighbours, move to the better one, halve the step; stop when the
	 * step is below 1/16 of the size (finer differences are noise). */
	size_t step = bps / 2;
	while (step >= 16 && step * 16 >= bps) {
		step /= 2;
		size_t cand[2] = { bps > step ? bps - step : 0, bps + step };
		for (int i = 0; i < 2; i++) {
			size_t ps = cand[i] / 8 * 8;
			if (ps < 8 || (size_t)w * ps > 4 * o->strip)
				continue;
			double g = try_point(kind, o->k, o->m, w, ps, o->strip, EC_ORDER_DEFAULT,
			                     o->seconds);
			printf("  try %-12s w=%-2d packet=%-6zu %7.2f GB/s (region)\n",
			       ec_kind_name(kind), w, ps, g);
			if (g > best) {
				best = g;
				bps = ps;
			}
		}
	}
	*best_ps = bps;
	return best;
}

static int run_tune(const xb_opts *o)
{
	printf("# ecfs-bench --tune: [k=%d, m=%d], strips of about %zu bytes, encode speed "
	       "(GB/s of data per CPU second), kernel %s, order %s\n",
	       o->k, o->m, o->strip, ec_kernel_name(), order_names[XOR_DEFAULT_ORDER]);
	best_point top = { 0 };
	top.gbps = -1;
	for (int t = 0; t < N_KINDS; t++) {
		ec_kind kind = xor_kinds[t];
		if (o->only && kind != o->only)
			continue;
		int tried = 0;
		for (int w = 1; w <= 32; w++) {
			if (!legal(kind, o->k, o->m, w))
				continue;
			/* Cauchy codes get faster as w shrinks (FAST'09): the
			 * smallest four legal w are enough. */
			if ((kind == EC_CAUCHY_ORIG || kind == EC_CAUCHY_GOOD) && tried >= 4)
				break;
			if (o->quick && tried >= 2)
				break;
			tried++;
			size_t ps = 0;
			double g = tune_one(o, kind, w, &ps);
			if (g < 0)
				continue;
			printf("best %-12s w=%-2d packet=%-6zu %7.2f GB/s  normalized %.2f\n",
			       ec_kind_name(kind), w, ps, g, normalized(g, o->k, o->m));
			if (g > top.gbps)
				top = (best_point){ kind, w, ps, g };
		}
	}
	if (top.gbps < 0) {
		fprintf(stderr, "ecfs-bench: no XOR code fits [k=%d, m=%d]\n", o->k, o->m);
		return 1;
	}
	ec_params p = { .kind = top.kind, .k = o->k, .m = o->m, .w = top.w, .packet_size = top.ps };
	xb_case c;
	double dec = -1;
	if (case_open(&c, &p, o->strip) == 0) {
		dec = measure(&c, 1, o->seconds);
		case_close(&c);
	}
	printf("recommend: code=%s w=%d packet=%zu  (encode %.2f GB/s, normalized %.2f; "
	       "decode of %d data blocks %.2f GB/s)\n",
	       ec_kind_name(top.kind), top.w, top.ps, top.gbps, normalized(top.gbps, o->k, o->m),
	       o->m, dec);
	return 0;
}

/* ---- --figures ---- */

static FILE *open_csv(const xb_opts *o, const char *name, const char *header)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", o->out, name);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "ecfs-bench: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	fprintf(f, "%s\n", header);
	printf("writing %s\n", path);
	return f;
}

/* Packet size of a figure point: blocks of about o->strip bytes cut into
 * w packets, as FAST'09 fixes the data size.  A multiple of 64 bytes where
 * possible: packets that straddle cache lines cost up to 40% here. */
static size_t figure_packet(const xb_opts *o, int w)
{
	size_t ps = o->strip / (size_t)w;
	ps = ps >= 64 ? ps / 64 * 64 : ps / 8 * 8;
	return ps < 8 ? 8 : ps;
}

static int figure_codes(const xb_opts *o, int k, int m)
{
	char name[64];
	snprintf(name, sizeof(name), "codes_%d_%d.csv", k, m);
	FILE *f = open_csv(o, name,
	                   "code,k,m,w,packet,enc_xors_per_word,enc_gb_xored,enc_gbps,enc_normalized,"
	                   "dec_xors_per_word,dec_gb_xored,dec_gbps,dec_normalized");
	if (!f)
		return 1;
	for (int t = 0; t < N_KINDS; t++)
		for (int w = 1; w <= 32; w++) {
			if (!legal(xor_kinds[t], k, m, w))
				continue;
			if (o->quick && w > 16)
				continue;
			ec_params p = { .kind = xor_kinds[t], .k = k, .m = m, .w = w,
			                .packet_size = figure_packet(o, w) };
			xb_case c;
			if (case_open(&c, &p, o->strip) != 0)
				continue;
			int erased[64];
			for (int i = 0; i < m; i++)
				erased[i] = i;
			long ex = ec_xor_count(c.code);
			long dx = xor_code_decode_xor_count(c.code, erased, m);
			double eg = measure(&c, 0, o->seconds), dg = measure(&c, 1, o->seconds);
			/* XORs per coding word; GB XORed per GB of data coded. */
			double words = (double)m * w, data_packets = (double)k * w;
			fprintf(f, "%s,%d,%d,%d,%zu,%.4f,%.4f,%.3f,%.3f,%.4f,%.4f,%.3f,%.3f\n",
			        ec_kind_name(xor_kinds[t]), k, m, w, p.packet_size, ex / words,
			        ex / data_packets, eg, normalized(eg, k, m), dx / words,
			        dx / data_packets, dg, normalized(dg, k, m));
			fflush(f);
			case_close(&c);
		}
	fclose(f);
	return 0;
}

static int figure_packets(const xb_opts *o)
{
	FILE *f = open_csv(o, "packet_rdp_6_2_w6.csv", "packet,order,gbps,normalized");
	if (!f)
		return 1;
	for (size_t ps = 64; ps <= 65536; ps = ps < 1024 ? ps * 2 : ps + ps / 2) {
		size_t pk = ps / 8 * 8;
		for (int order = EC_ORDER_PPG; order <= EC_ORDER_DWG; order++) {
			double g = try_point(EC_RDP, 6, 2, 6, pk, 6 * 65536, (ec_order)order,
			                     o->seconds);
			fprintf(f, "%zu,%s,%.3f,%.3f\n", pk, order_names[order], g, normalized(g, 6, 2));
		}
		fflush(f);
	}
	fclose(f);
	return 0;
}

static int figure_orders(const xb_opts *o)
{
	FILE *f = open_csv(o, "orders_liberation_11.csv", "order,packet,strip,gbps,normalized");
	if (!f)
		return 1;
	const size_t packets[] = { 256, 1024, 4096, 16384 };
	for (int order = EC_ORDER_PPG; order <= EC_ORDER_DWG; order++)
		for (size_t i = 0; i < sizeof(packets) / sizeof(packets[0]); i++) {
			size_t strip = 11 * packets[i] * (packets[i] < 4096 ? 4096 / packets[i] : 1);
			double g = try_point(EC_LIBERATION, 11, 2, 11, packets[i], strip, (ec_order)order,
			                     o->seconds);
			fprintf(f, "%s,%zu,%zu,%.3f,%.3f\n", order_names[order], packets[i], strip, g,
			        normalized(g, 11, 2));
			fflush(f);
		}
	fclose(f);
	return 0;
}

static int run_figures(const xb_opts *o)
{
	if (mkdir(o->out, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "ecfs-bench: %s: %s\n", o->out, strerror(errno));
		return 1;
	}
	printf("# ecfs-bench --figures: kernel %s, strips of about %zu bytes, %.2f s per point\n",
	       ec_kernel_name(), o->strip, o->seconds);
	const int grid[][2] = { { 6, 2 }, { 14, 2 }, { 12, 4 }, { 10, 6 } };
	int rc = 0;
	for (int g = 0; g < 4; g++)
		rc |= figure_codes(o, grid[g][0], grid[g][1]);
	rc |= figure_packets(o);
	rc |= figure_orders(o);
	return rc ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: ecfs-bench --tune -k K -m M [--code NAME] [--strip SIZE] [--seconds S] [--quick]\n"
	        "       ecfs-bench --figures[=DIR] [--out DIR] [--strip SIZE] [--seconds S] [--quick]\n"
	        "  --tune       packet-size region search (Plank et al. FAST'09 4.4) over every\n"
	        "               XOR code and w that fit [k,m]; prints each try and a recommendation\n"
	        "  --figures    CSV files for the XOR-code figures into DIR (default figures/)\n"
	        "  --code NAME  tune only this code\n"
	        "  --strip SIZE block length to aim for, K/M suffixes (default 64K)\n"
	        "  --seconds S  measuring time per point (default 0.06 tune, 0.09 figures)\n"
	        "  --quick      fewer w (a smoke run)\n");
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	return *end ? 0 : (size_t)v;
}

int bench_xor_main(int argc, char **argv)
{
	xb_opts o = { .k = 6, .m = 2, .strip = 65536, .out = "figures", .seconds = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--tune")) {
			o.tune = 1;
		} else if (!strcmp(a, "--figures")) {
			o.figures = 1;
		} else if (!strncmp(a, "--figures=", 10)) {
			o.figures = 1;
			o.out = a + 10;
		} else if (!strcmp(a, "--quick")) {
			o.quick = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (v && !strcmp(a, "-k")) {
			o.k = atoi(v), i++;
		} else if (v && !strcmp(a, "-m")) {
			o.m = atoi(v), i++;
		} else if (v && !strcmp(a, "--out")) {
			o.out = v, i++;
		} else if (v && !strcmp(a, "--seconds")) {
			o.seconds = atof(v), i++;
		} else if (v && !strcmp(a, "--strip")) {
			o.strip = parse_size(v), i++;
		} else if (v && !strcmp(a, "--code")) {
			o.only = ec_kind_from_name(v), i++;
			if (!o.only) {
				fprintf(stderr, "ecfs-bench: unknown code '%s'\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "ecfs-bench: unknown option '%s' for --tune/--figures\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (o.k < 1 || o.m < 1 || o.k + o.m > 64 || o.strip < 8 || o.tune == o.figures) {
		usage(stderr);
		return 2;
	}
	if (o.seconds <= 0)
		o.seconds = o.tune ? 0.06 : 0.09;
	return o.tune ? run_tune(&o) : run_figures(&o);
}
