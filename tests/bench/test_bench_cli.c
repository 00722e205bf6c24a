/* SPDX-License-Identifier: MIT */
/*
 * Runs the ecfs-bench program (path in $ECFS_BENCH) on a tiny cell and
 * checks its contract with scripts: CSV mode prints exactly one header line
 * and then well-formed rows with positive rates, the rows match the cell
 * asked for, and bad options are refused with exit status 2 and nothing on
 * stdout.  Each run measures for about 10 ms per row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CSV_HEADER "impl,op,code,k,m,w,strip,erasures,gbps,normalized,vs_isal,kernel"
#define N_FIELDS 12
#define MAX_ROWS 64

typedef struct run_result {
	int status; /* exit status, or -1 if killed */
	char out[16384];
	char err[4096];
} run_result;

/* Reads a whole pipe into buf (NUL-terminated, truncated to fit). */
static void slurp(int fd, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;

	while ((n = read(fd, buf + used, size - 1 - used)) > 0) {
		used += (size_t)n;
		if (used == size - 1)
			break;
	}
	buf[used] = '\0';
}

/* Runs ecfs-bench with the NULL-terminated arguments. */
static void run_bench(run_result *r, const char *const *args)
{
	const char *bench = getenv("ECFS_BENCH");
	const char *argv[32];
	int out[2], err[2], n = 0;

	assert_non_null(bench);
	argv[n++] = bench;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execv(bench, (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	/* The outputs are small; stdout is read first and stderr fits in
	 * its pipe buffer, so the child never blocks on a full pipe. */
	slurp(out[0], r->out, sizeof(r->out));
	slurp(err[0], r->err, sizeof(r->err));
	close(out[0]);
	close(err[0]);
	int wstatus;
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

typedef struct csv_row {
	char *f[N_FIELDS];
} csv_row;

/* Splits CSV output into rows (in place); checks the header and that every
 * line has exactly N_FIELDS fields.  Returns the number of data rows. */
static int parse_csv(char *text, csv_row *rows, int max)
{
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);
	int n = 0;

	assert_non_null(line);
	assert_string_equal(line, CSV_HEADER);
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		assert_true(n < max);
		int nf = 0;
		char *p = line;
		for (;;) {
			assert_true(nf < N_FIELDS);
			rows[n].f[nf++] = p;
			char *comma = strchr(p, ',');
			if (!comma)
				break;
			*comma = '\0';
			p = comma + 1;
		}
		assert_int_equal(nf, N_FIELDS);
		n++;
	}
	return n;
}

enum { F_IMPL, F_OP, F_CODE, F_K, F_M, F_W, F_STRIP, F_ERASURES, F_GBPS, F_NORM, F_VS, F_KERNEL };

static const csv_row *find_row(const csv_row *rows, int n, const char *impl, const char *op)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rows[i].f[F_IMPL], impl) == 0 && strcmp(rows[i].f[F_OP], op) == 0)
			return &rows[i];
	return NULL;
}

static double num(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	assert_true(end != s && *end == '\0');
	return v;
}

static void test_csv_rows(void **state)
{
	(void)state;
	static run_result r;
	static const char *const args[] = { "--csv", "--seconds", "0.01", "--rounds", "1",
		                            "-k", "4", "-m", "2", "--strip", "4K", NULL };
	csv_row rows[MAX_ROWS];

	run_bench(&r, args);
	assert_int_equal(r.status, 0);
	int n = parse_csv(r.out, rows, MAX_ROWS);
	assert_true(n >= 4);

	static const char *const wanted[][2] = {
		{ "ecfs", "encode" }, { "ecfs", "decode" }, { "memcpy", "copy" }, { "xor", "xor" }
	};
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		assert_non_null(find_row(rows, n, wanted[i][0], wanted[i][1]));

	for (int i = 0; i < n; i++) {
		const csv_row *row = &rows[i];
		assert_int_equal((int)num(row->f[F_K]), 4);
		assert_int_equal((int)num(row->f[F_M]), 2);
		assert_int_equal((int)num(row->f[F_STRIP]), 4096);
		double gbps = num(row->f[F_GBPS]);
		assert_true(gbps > 0);
		int coding = strcmp(row->f[F_OP], "encode") == 0 || strcmp(row->f[F_OP], "decode") == 0;
		if (coding) {
			/* normalized = GB/s x m(k-1)/k = GB/s x 1.5 here */
			double norm = num(row->f[F_NORM]);
			assert_true(fabs(norm - gbps * 1.5) <= 1e-3 + 1e-3 * norm);
			assert_int_equal((int)num(row->f[F_W]), 8);
		} else {
			assert_string_equal(row->f[F_NORM], "");
		}
		if (strcmp(row->f[F_OP], "decode") == 0)
			assert_string_equal(row->f[F_ERASURES], "0+1"); /* m data blocks */
		else
			assert_string_equal(row->f[F_ERASURES], "");
		if (strcmp(row->f[F_IMPL], "ecfs") == 0) {
			assert_string_equal(row->f[F_CODE], "rs-cauchy");
			assert_true(strlen(row->f[F_KERNEL]) > 0);
		}
		if (strcmp(row->f[F_IMPL], "isal") == 0)
			assert_true(fabs(num(row->f[F_VS]) - 1.0) < 1e-9);
	}
}

static void test_erase_list_decode_only(void **state)
{
	(void)state;
	static run_result r;
	static const char *const args[] = { "--csv", "--seconds", "0.01", "--rounds", "1",
		                            "-k", "4", "-m", "2", "--strip", "8K", "--erase",
		                            "1,5", "--peers", "none", "--no-baselines", NULL };
	csv_row rows[MAX_ROWS];

	run_bench(&r, args);
	assert_int_equal(r.status, 0);
	int n = parse_csv(r.out, rows, MAX_ROWS);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].f[F_IMPL], "ecfs");
	assert_string_equal(rows[0].f[F_OP], "decode");
	assert_string_equal(rows[0].f[F_ERASURES], "1+5");
	assert_int_equal((int)num(rows[0].f[F_STRIP]), 8192);
	assert_true(num(rows[0].f[F_GBPS]) > 0);
}

/* Each of these command lines is a usage error: exit 2, a message on
 * stderr, nothing on stdout. */
static void test_usage_errors(void **state)
{
	(void)state;
	static const char *const bad[][8] = {
		{ "--no-such-option", NULL },
		{ "-k", "0", NULL },
		{ "--code", "no-such-code", NULL },
		{ "--strip", "0", NULL },
		{ "--strip", "12Q", NULL },
		{ "-k", "4", "-m", "2", "--erase", "6", NULL },
		{ "-k", "4", "-m", "2", "--erase", "1,1", NULL },
		{ "-k", "4", "-m", "2", "--decode", "3", NULL },
		{ "--kernel", "no-such-kernel", NULL },
		{ "--peers", "nobody", NULL },
		{ "--seconds", "-1", NULL },
		{ "--clock", "sundial", NULL },
		/* the XOR tuner's own parser, or "not built": 2 either way */
		{ "--tune", "--no-such-option", NULL },
		{ "stray-argument", NULL },
	};
	static run_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run_bench(&r, bad[i]);
		if (r.status != 2)
			fail_msg("'%s %s' exited %d, not 2", bad[i][0], bad[i][1] ? bad[i][1] : "",
			         r.status);
		assert_string_equal(r.out, "");
		assert_true(strlen(r.err) > 0);
	}
}

static void test_help(void **state)
{
	(void)state;
	static run_result r;
	static const char *const args[] = { "--help", NULL };

	run_bench(&r, args);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "--grid"));
	assert_non_null(strstr(r.out, "rs-cauchy"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_rows),
		cmocka_unit_test(test_erase_list_decode_only),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
