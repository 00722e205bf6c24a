/* SPDX-License-Identifier: MIT */
/*
 * The measuring loop of ecfs-bench (see bench_run.h).  A cell is one
 * [k,m] stripe at one strip size: it builds every coder on shared buffers,
 * verifies each (a wrong coder's speed means nothing, so a mismatch stops
 * the run), times all of them and the baselines interleaved, and prints a
 * row per measurement with the ratio to ISA-L for the same operation.
 */
#include "bench_run.h"

#include "bench_cell.h"
#include "bench_config.h"
#include "bench_coders.h"
#include "bench_report.h"
#include "bench_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CODERS 8
#define MAX_JOBS (2 * MAX_CODERS + 2)

/* Results of one cell that the grid summary needs (rates in GB/s, 0 if
 * not measured), for the cell's first (reference) code. */
typedef struct cell_summary {
	double ours[2], isal[2], jerasure[2]; /* [0] encode, [1] decode */
} cell_summary;

static int header_printed;

static void emit(const bench_config *cfg, const bench_row *row)
{
	if (!header_printed) {
		bench_report_header(stdout, cfg->csv);
		header_printed = 1;
	}
	bench_report_row(stdout, row, cfg->csv);
}

void bench_default_erasures(int k, int n, int *out)
{
	for (int i = 0; i < n; i++)
		out[i] = i; /* data 0..k-1 come first, then parity k.. */
	(void)k;
}

/* Prints a note about a peer to stderr, unless it is the same as the last
 * one for that peer (so a note is not repeated for every cell). */
static void note_once(const char *impl, const char *what)
{
	static char last[2][320];
	int slot = strcmp(impl, "isal") == 0 ? 0 : 1;

	if (strcmp(last[slot], what) == 0)
		return;
	snprintf(last[slot], sizeof(last[slot]), "%s", what);
	fprintf(stderr, "ecfs-bench: note: %s %s\n", impl, what);
}

static void format_erasures(const bench_cell *cell, char *buf, size_t buflen)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int e = 0; e < cell->n_erased && used + 1 < buflen; e++) {
		int n = snprintf(buf + used, buflen - used, "%s%d", e ? "+" : "", cell->erased[e]);
		if (n < 0 || (size_t)n >= buflen - used) {
			/* Too long for the column: mark it cut rather than lie. */
			snprintf(buf + buflen - 4, 4, "...");
			return;
		}
		used += (size_t)n;
	}
}

/* Builds a peer coder; 1 if it does not apply (noted), -1 on failure. */
static int add_peer(bench_cell *cell, const char *impl, bench_coder **coders, int *n)
{
	char err[256];
	bench_coder *c = NULL;
	int rc = 1;

	(void)cell; /* unused when no peer is built in */
	snprintf(err, sizeof(err), "not built in");
#if HAVE_ISAL
	if (strcmp(impl, "isal") == 0)
		rc = bench_isal_new(cell, &c, err, sizeof(err));
#endif
#if HAVE_JERASURE
	if (strcmp(impl, "jerasure") == 0)
		rc = bench_jerasure_new(cell, &c, err, sizeof(err));
#endif
	if (rc == 1) {
		char why[300];
		snprintf(why, sizeof(why), "not measured: %s", err);
		note_once(impl, why);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "ecfs-bench: %s\n", err);
		return -1;
	}
	coders[(*n)++] = c;
	if (bench_coder_verify(c, err, sizeof(err)) < 0) {
		fprintf(stderr, "ecfs-bench: VERIFICATION FAILED: %s\n", err);
		return -1;
	}
	/* Another construction of the same family (Jerasure's bit-matrix
	 * codes): equal parity is a cross-check of both libraries worth
	 * telling, a difference is not an error. */
	if (!c->same_generator && strcmp(c->code, ec_kind_name(cell->ref_kind)) == 0) {
		snprintf(err, sizeof(err), "%s: parity %s ecfs's", c->code,
		         c->parity_matches ? "identical to" : "differs from (another construction)");
		note_once(impl, err);
	}
	return 0;
}

/* Builds the cell's buffers for cfg's erasures.  Returns 0, or -1 after
 * saying so. */
static int init_cell(const bench_config *cfg, bench_cell *cell, int k, int m, size_t strip)
{
	int n_erased;
	/* At most m erasures (checked with the options), so m slots. */
	int *erased = calloc((size_t)m, sizeof(int));

	if (cfg->n_erase_list > 0) {
		n_erased = cfg->n_erase_list;
		if (erased)
			memcpy(erased, cfg->erase_list, (size_t)n_erased * sizeof(int));
	} else {
		n_erased = cfg->n_erasures < 0 ? m : cfg->n_erasures;
		if (erased)
			bench_default_erasures(k, n_erased, erased);
	}
	int rc = erased ? bench_cell_init(cell, k, m, strip, cfg->offset, erased, n_erased, cfg->seed)
	                : -1;
	if (rc < 0)
		fprintf(stderr, "ecfs-bench: out of memory for a [%d,%d] cell of %zu-byte strips\n", k,
		        m, strip);
	free(erased); /* the cell keeps its own sorted copy */
	return rc;
}

/* Builds and verifies the coders of the cell: libec for each code (the
 * first is the reference), then the peers cfg asks for.  Returns 0, or -1
 * after saying why; the coders built are in coders[0..*n) either way. */
static int add_coders(const bench_config *cfg, bench_cell *cell, const ec_params *codes,
                      int n_codes, bench_coder **coders, int *n)
{
	char err[256];

	for (int i = 0; i < n_codes; i++) {
		bench_coder *c;
		if (bench_ecfs_new(cell, &codes[i], &c, err, sizeof(err)) < 0) {
			fprintf(stderr, "ecfs-bench: %s\n", err);
			return -1;
		}
		coders[(*n)++] = c;
		if (i == 0) {
			if (bench_ecfs_make_reference(c) < 0) {
				fprintf(stderr, "ecfs-bench: out of memory\n");
				return -1;
			}
		} else {
			c->same_generator = 0; /* another code: other parity */
		}
		if (bench_coder_verify(c, err, sizeof(err)) < 0) {
			fprintf(stderr, "ecfs-bench: VERIFICATION FAILED: %s\n", err);
			return -1;
		}
	}
	if (cfg->use_isal && add_peer(cell, "isal", coders, n) < 0)
		return -1;
	if (cfg->use_jerasure && add_peer(cell, "jerasure", coders, n) < 0)
		return -1;
	return 0;
}

enum { OP_ENCODE, OP_DECODE, OP_COPY, OP_XOR };

/* What a cell times: a job per coder and operation, then the baselines. */
typedef struct job_list {
	bench_job jobs[MAX_JOBS];
	const bench_coder *coder[MAX_JOBS]; /* NULL for a baseline */
	int op[MAX_JOBS];
	int n;
} job_list;

static void add_job(job_list *l, bench_job job, const bench_coder *coder, int op)
{
	l->jobs[l->n] = job;
	l->coder[l->n] = coder;
	l->op[l->n++] = op;
}

static void plan_jobs(const bench_config *cfg, bench_cell *cell, bench_coder *const *coders,
                      int n_coders, job_list *l)
{
	double bytes = (double)cell->k * (double)cell->len;

	l->n = 0;
	for (int op = OP_ENCODE; op <= OP_DECODE; op++) {
		if ((op == OP_ENCODE && !cfg->do_encode) || (op == OP_DECODE && !cfg->do_decode))
			continue;
		for (int i = 0; i < n_coders; i++)
			add_job(l, (bench_job){ .fn = op == OP_ENCODE ? coders[i]->encode
			                                              : coders[i]->decode,
			                        .ctx = coders[i], .bytes_per_call = bytes },
			        coders[i], op);
	}
	if (cfg->use_baselines) {
		add_job(l, (bench_job){ .fn = bench_baseline_memcpy, .ctx = cell,
		                        .bytes_per_call = bytes }, NULL, OP_COPY);
		add_job(l, (bench_job){ .fn = bench_baseline_xor, .ctx = cell,
		                        .bytes_per_call = bytes }, NULL, OP_XOR);
	}
}

/* Prints a row per timed job, with the ratio to ISA-L's rate for the same
 * operation, and keeps the grid's numbers in *sum (ours: the reference
 * coder). */
static void report_jobs(const bench_config *cfg, const bench_cell *cell, const job_list *l,
                        const bench_coder *reference, cell_summary *sum)
{
	static const char *const op_names[] = { "encode", "decode", "copy", "xor" };
	/* ISA-L's rate per operation, the denominator of vs-isal. */
	double isal_rate[2] = { 0, 0 };

	for (int j = 0; j < l->n; j++)
		if (l->coder[j] && strcmp(l->coder[j]->impl, "isal") == 0)
			isal_rate[l->op[j]] = l->jobs[j].best_rate / 1e9;
	for (int j = 0; j < l->n; j++) {
		const bench_coder *c = l->coder[j];
		int op = l->op[j];
		bench_row row = {
			.impl = c ? c->impl : op == OP_COPY ? "memcpy" : "xor",
			.op = op_names[op],
			.code = c ? c->code : "-",
			.k = cell->k,
			.m = cell->m,
			.w = c ? c->w : 0,
			.strip = cell->len,
			.gbps = l->jobs[j].best_rate / 1e9,
			.normalized = -1,
			.vs_isal = -1,
			.kernel = c && strcmp(c->impl, "ecfs") == 0 ? ec_kernel_name() : "-",
		};
		if (op == OP_DECODE)
			format_erasures(cell, row.erasures, sizeof(row.erasures));
		else
			snprintf(row.erasures, sizeof(row.erasures), "-");
		if (op <= OP_DECODE) {
			row.normalized = bench_normalized(row.gbps, cell->k, cell->m);
			if (isal_rate[op] > 0)
				row.vs_isal = row.gbps / isal_rate[op];
			if (c == reference)
				sum->ours[op] = row.gbps;
			if (strcmp(c->impl, "isal") == 0)
				sum->isal[op] = row.gbps;
			if (strcmp(c->impl, "jerasure") == 0)
				sum->jerasure[op] = row.gbps;
		}
		emit(cfg, &row);
	}
}

/* One cell: every coder built and verified, then timed interleaved with
 * the baselines, and its rows printed.  Returns 0, or 1 after saying why. */
static int run_cell(const bench_config *cfg, const ec_params *codes, int n_codes, size_t strip,
                    cell_summary *sum)
{
	bench_cell cell;
	bench_coder *coders[MAX_CODERS];
	job_list jobs;
	int n_coders = 0, rc = 1;

	memset(sum, 0, sizeof(*sum));
	if (init_cell(cfg, &cell, codes[0].k, codes[0].m, strip) < 0)
		return 1;
	if (add_coders(cfg, &cell, codes, n_codes, coders, &n_coders) < 0)
		goto out;
	plan_jobs(cfg, &cell, coders, n_coders, &jobs);
	bench_jobs_run(jobs.jobs, jobs.n, cfg->seconds, cfg->rounds);
	for (int i = 0; i < n_coders; i++)
		if (coders[i]->failed) {
			fprintf(stderr, "ecfs-bench: %s %s failed during timing\n", coders[i]->impl,
			        coders[i]->code);
			goto out;
		}
	report_jobs(cfg, &cell, &jobs, coders[0], sum);
	rc = 0;
out:
	for (int i = 0; i < n_coders; i++)
		coders[i]->destroy(coders[i]);
	bench_cell_free(&cell);
	return rc;
}

size_t bench_default_packet(int w, size_t strip)
{
	for (size_t p = 2048; p >= 8; p /= 2)
		if (strip % ((size_t)w * p) == 0)
			return p;
	return 0;
}

int bench_run_single(const bench_config *cfg)
{
	cell_summary sum;

	for (int s = 0; s < cfg->n_strips; s++) {
		ec_params p = cfg->params;
		if (ec_kind_is_bitmatrix(p.kind) && p.packet_size == 0) {
			p.packet_size = bench_default_packet(p.w, cfg->strips[s]);
			if (p.packet_size == 0) {
				fprintf(stderr,
				        "ecfs-bench: strip %zu cannot be cut into w=%d packets of a "
				        "power-of-two size; give a strip that is a multiple of "
				        "w x 8 bytes, or --packet\n",
				        cfg->strips[s], p.w);
				return 1;
			}
		}
		if (run_cell(cfg, &p, 1, cfg->strips[s], &sum) != 0)
			return 1;
	}
	return 0;
}

static const int grid_km[][2] = { { 6, 2 }, { 14, 2 }, { 12, 4 }, { 10, 6 }, { 10, 4 } };
#define GRID_ROWS ((int)(sizeof(grid_km) / sizeof(grid_km[0])))

static void print_ratio(double ours, double theirs)
{
	if (ours > 0 && theirs > 0)
		printf(" %7.2f", ours / theirs);
	else
		printf(" %7s", "-");
}

/* A per-cell ratio table (table mode only): ecfs over ISA-L (peer 0) or
 * over Jerasure (peer 1). */
static void print_grid_summary(const bench_config *cfg, cell_summary sums[][32], int peer)
{
	printf("\necfs / %s, rs-cauchy w=8 (kernel %s; decode with m data blocks erased%s)\n",
	       peer ? "Jerasure" : "ISA-L", ec_kernel_name(),
	       peer ? "; Jerasure inverts its decoding matrix on every call" : "");
	printf("%-8s %-6s", "[k,m]", "op");
	for (int s = 0; s < cfg->n_strips; s++) {
		char size[32];
		bench_format_size(cfg->strips[s], size, sizeof(size));
		printf(" %7s", size);
	}
	printf("\n");
	for (int r = 0; r < GRID_ROWS; r++)
		for (int op = 0; op < 2; op++) {
			if ((op == 0 && !cfg->do_encode) || (op == 1 && !cfg->do_decode))
				continue;
			char km[16];
			snprintf(km, sizeof(km), "[%d,%d]", grid_km[r][0], grid_km[r][1]);
			printf("%-8s %-6s", km, op ? "decode" : "encode");
			for (int s = 0; s < cfg->n_strips; s++)
				print_ratio(sums[r][s].ours[op],
				            peer ? sums[r][s].jerasure[op] : sums[r][s].isal[op]);
			printf("\n");
		}
	fflush(stdout);
}

int bench_run_grid(const bench_config *cfg)
{
	static cell_summary sums[GRID_ROWS][32];
	bench_config grid = *cfg;

	/* The bar is about the worst decode: m data blocks lost. */
	grid.n_erase_list = 0;
	grid.n_erasures = -1;
	for (int r = 0; r < GRID_ROWS; r++) {
		ec_params codes[2] = {
			{ .kind = EC_RS_CAUCHY, .k = grid_km[r][0], .m = grid_km[r][1], .w = 8 },
			{ .kind = EC_RS_VANDERMONDE, .k = grid_km[r][0], .m = grid_km[r][1], .w = 8 },
		};
		for (int s = 0; s < grid.n_strips; s++)
			if (run_cell(&grid, codes, 2, grid.strips[s], &sums[r][s]) != 0)
				return 1;
	}
	if (!cfg->csv && cfg->use_isal)
		print_grid_summary(&grid, sums, 0);
	if (!cfg->csv && cfg->use_jerasure)
		print_grid_summary(&grid, sums, 1);
	return 0;
}
