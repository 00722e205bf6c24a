/* SPDX-License-Identifier: MIT */
/*
 * ecfs-bench: measures libec's encoding and decoding throughput, single
 * threaded, for a code, [k,m], w and a list of strip sizes, and in the same
 * run the same work done by ISA-L and Jerasure (when the build found them)
 * on the same buffers, plus memcpy and plain XOR as speed references.
 * `--grid` runs the project's performance bar.  This file is only the
 * command line: options, their checks, and the choice of what to run; the
 * measuring is in bench_run.c.  Usage errors exit 2, failures 1.
 */
#include "bench_config.h"
#include "bench_report.h"
#include "bench_run.h"
#include "bench_timer.h"
#include "bench_xor.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define MAX_KERNELS 16

static const ec_kind all_kinds[] = {
	EC_RS_VANDERMONDE, EC_RS_CAUCHY,  EC_RAID6_PQ, EC_CAUCHY_ORIG, EC_CAUCHY_GOOD, EC_LIBERATION,
	EC_BLAUM_ROTH,     EC_LIBER8TION, EC_EVENODD,  EC_RDP,         EC_STAR,
};

static void print_usage(FILE *out)
{
	fprintf(out,
	        "Usage: ecfs-bench [OPTION]...\n"
	        "Measures erasure-coding throughput of libec (single thread), beside ISA-L and\n"
	        "Jerasure when built with them, with memcpy and XOR as references.\n"
	        "\n"
	        "  --code NAME         code (default rs-cauchy); --help lists the names\n"
	        "  -k N                data blocks (default 10)\n"
	        "  -m N                parity blocks (default 4)\n"
	        "  -w N                word size in bits (default 8; liberation, blaum-roth,\n"
	        "                      evenodd, rdp, star: the smallest libec accepts)\n"
	        "  --strip SIZE[,SIZE...]  strip (block) sizes, K/M/G suffixes\n"
	        "                      (default 4K,64K,1M)\n"
	        "  --packet SIZE       packet size of bit-matrix codes (default: the largest\n"
	        "                      power of two up to 2K that divides strip/w)\n"
	        "  --order NAME        XOR order of bit-matrix codes: ppg, pwg, dpg, dwg\n"
	        "  --encode            measure encoding (with --decode: both; default: both)\n"
	        "  --decode[=N]        measure decoding with N blocks erased (default m),\n"
	        "                      data blocks first\n"
	        "  --erase LIST        decode with exactly these blocks erased (0..k-1 data,\n"
	        "                      k..k+m-1 parity), e.g. 0,3,11\n"
	        "  --kernel NAME[,NAME...]  libec SIMD kernel(s) to run, or 'all'\n"
	        "  --peers LIST        isal, jerasure, both (default: all built) or none\n"
	        "  --no-baselines      leave out the memcpy and XOR rows\n"
	        "  --seconds S         measuring time per row (default 0.3)\n"
	        "  --rounds N          rounds per row, best reported (default 5)\n"
	        "  --clock cpu|wall    time by the thread's CPU time (default) or wall time\n"
	        "  --unaligned[=N]     put blocks N bytes (default 1) past 64-byte alignment\n"
	        "  --seed N            seed of the random data (default fixed)\n"
	        "  --grid              the performance bar: rs-cauchy and rs-vandermonde w=8,\n"
	        "                      [6,2] [14,2] [12,4] [10,6] [10,4], m data erased\n"
	        "  --csv               machine-readable rows (one header line, then rows)\n"
	        "  --tune, --figures   XOR-code packet-size search and paper figures, with\n"
	        "                      options of their own: ecfs-bench --tune --help\n"
	        "  -h, --help          this help\n"
	        "  -V, --version       version, peers and kernels of this build\n"
	        "\n"
	        "Codes:");
	for (size_t i = 0; i < sizeof(all_kinds) / sizeof(all_kinds[0]); i++)
		fprintf(out, " %s", ec_kind_name(all_kinds[i]));
	fprintf(out, "\nEnvironment: EC_SIMD forces libec's kernel (scalar, ssse3, avx2, avx512, gfni);\n"
	             "ECFS_BENCH_ISAL_KERNEL=avx2 calls ISA-L's AVX2 kernel directly.\n"
	             "See ecfs-bench(1).\n");
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ecfs-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'ecfs-bench --help' for more information.\n");
	exit(EXIT_USAGE);
}

static long parse_int(const char *opt, const char *s, long lo, long hi)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage_error("%s: '%s' is not an integer from %ld to %ld", opt, s, lo, hi);
	return v;
}

/* A byte count with an optional K, M or G suffix (powers of 1024),
 * optionally followed by "iB" or "B". */
static size_t parse_size(const char *opt, const char *s)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		usage_error("%s: '%s' is not a size", opt, s);
	unsigned long long unit = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': unit = 1ULL << 10; end++; break;
	case 'M': unit = 1ULL << 20; end++; break;
	case 'G': unit = 1ULL << 30; end++; break;
	default: break;
	}
	if (unit > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
		end += strlen(end);
	if (*end || v == 0 || v > (1ULL << 30) / unit)
		usage_error("%s: '%s' is not a size from 1 byte to 1G", opt, s);
	return (size_t)(v * unit);
}

/* Splits a comma list in place; returns the number of items. */
static int split_list(char *s, char **items, int max, const char *opt)
{
	int n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		if (n == max)
			usage_error("%s: at most %d items", opt, max);
		items[n++] = tok;
	}
	if (n == 0)
		usage_error("%s: empty list", opt);
	return n;
}

/* The code's own w for k and m (libec's rule); 8 when none works, so that
 * the code check below says why. */
static int default_w(ec_kind kind, int k, int m)
{
	int w = ec_kind_default_w(kind, k, m);

	return w > 0 ? w : 8;
}

/* Which libec kernels to run: none named means the one in force. */
static int parse_kernels(char *arg, const char **out)
{
	char *items[MAX_KERNELS];
	int n = split_list(arg, items, MAX_KERNELS, "--kernel"), count = 0;
	const char *const *names = ec_kernel_names();

	for (int i = 0; i < n; i++) {
		if (strcmp(items[i], "all") == 0) {
			for (int j = 0; names[j] && count < MAX_KERNELS; j++)
				if (ec_kernel_available(names[j]))
					out[count++] = names[j];
			continue;
		}
		int known = 0;
		for (int j = 0; names[j]; j++)
			if (strcmp(names[j], items[i]) == 0) {
				known = 1;
				out[count++] = names[j];
			}
		if (!known) {
			fprintf(stderr, "ecfs-bench: --kernel: unknown kernel '%s'; this build has:",
			        items[i]);
			for (int j = 0; names[j]; j++)
				fprintf(stderr, " %s", names[j]);
			fprintf(stderr, ", or all\n");
			exit(EXIT_USAGE);
		}
	}
	return count;
}

static void print_version(void)
{
	printf("ecfs-bench (ecfs) %s\n", BENCH_VERSION);
	printf("peers:%s%s%s\n", HAVE_ISAL ? " isal" : "", HAVE_JERASURE ? " jerasure" : "",
	       HAVE_ISAL || HAVE_JERASURE ? "" : " none");
	printf("kernels:");
	for (const char *const *k = ec_kernel_names(); *k; k++)
		printf(" %s%s", *k, ec_kernel_available(*k) ? "" : "(unavailable)");
	printf("\nxor tuner: built in\n");
}

/* --tune and --figures belong to the XOR-code tuner (bench_xor.c), which
 * has its own options, so the whole command line goes to it. */
static int wants_xor_tuner(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strncmp(argv[i], "--tune", 6) == 0 && (argv[i][6] == '\0' || argv[i][6] == '='))
			return 1;
		if (strncmp(argv[i], "--figures", 9) == 0 &&
		    (argv[i][9] == '\0' || argv[i][9] == '='))
			return 1;
	}
	return 0;
}

/* An optional argument given as the next word ("--decode 3"). */
static const char *optional_arg(int argc, char **argv)
{
	if (optarg)
		return optarg;
	if (optind < argc && isdigit((unsigned char)argv[optind][0]))
		return argv[optind++];
	return NULL;
}

enum {
	OPT_CODE = 256, OPT_STRIP, OPT_PACKET, OPT_ORDER, OPT_ENCODE, OPT_DECODE, OPT_ERASE,
	OPT_KERNEL, OPT_PEERS, OPT_NO_BASELINES, OPT_SECONDS, OPT_ROUNDS, OPT_UNALIGNED,
	OPT_SEED, OPT_GRID, OPT_CSV, OPT_CLOCK,
};

static const struct option long_options[] = {
	{ "code", required_argument, NULL, OPT_CODE },
	{ "strip", required_argument, NULL, OPT_STRIP },
	{ "packet", required_argument, NULL, OPT_PACKET },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "encode", no_argument, NULL, OPT_ENCODE },
	{ "decode", optional_argument, NULL, OPT_DECODE },
	{ "erase", required_argument, NULL, OPT_ERASE },
	{ "kernel", required_argument, NULL, OPT_KERNEL },
	{ "peers", required_argument, NULL, OPT_PEERS },
	{ "no-baselines", no_argument, NULL, OPT_NO_BASELINES },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "clock", required_argument, NULL, OPT_CLOCK },
	{ "unaligned", optional_argument, NULL, OPT_UNALIGNED },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "grid", no_argument, NULL, OPT_GRID },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void parse_peers(char *arg, bench_config *cfg)
{
	char *items[4];
	int n = split_list(arg, items, 4, "--peers");

	cfg->use_isal = cfg->use_jerasure = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(items[i], "none") == 0)
			continue;
		if (strcmp(items[i], "isal") == 0) {
			if (!HAVE_ISAL)
				usage_error("--peers isal: this ecfs-bench was built without ISA-L "
				            "(install libisal-dev and configure with -Disal=enabled)");
			cfg->use_isal = 1;
		} else if (strcmp(items[i], "jerasure") == 0) {
			if (!HAVE_JERASURE)
				usage_error("--peers jerasure: this ecfs-bench was built without Jerasure "
				            "(install libjerasure-dev and configure with -Djerasure=enabled)");
			cfg->use_jerasure = 1;
		} else {
			usage_error("--peers: unknown peer '%s' (isal, jerasure or none)", items[i]);
		}
	}
}

static ec_order parse_order(const char *s)
{
	static const char *const names[] = { "default", "ppg", "pwg", "dpg", "dwg" };

	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0)
			return (ec_order)i;
	usage_error("--order: '%s' is not one of default, ppg, pwg, dpg, dwg", s);
}

/* The erasure list against k and m (known only after all options). */
static void check_erasures(const bench_config *cfg)
{
	int k = cfg->params.k, m = cfg->params.m;

	if (cfg->n_erase_list > m)
		usage_error("--erase: %d blocks erased but the code corrects at most m = %d",
		            cfg->n_erase_list, m);
	for (int i = 0; i < cfg->n_erase_list; i++) {
		if (cfg->erase_list[i] >= k + m)
			usage_error("--erase: block %d does not exist (blocks are 0..%d)",
			            cfg->erase_list[i], k + m - 1);
		for (int j = 0; j < i; j++)
			if (cfg->erase_list[j] == cfg->erase_list[i])
				usage_error("--erase: block %d is listed twice", cfg->erase_list[i]);
	}
	if (cfg->n_erasures > m)
		usage_error("--decode: %d erasures but the code corrects at most m = %d",
		            cfg->n_erasures, m);
}

/* Creates the code once up front so that bad parameters are a usage error
 * with libec's reason, not a failure in the middle of a table. */
static void check_code(const bench_config *cfg)
{
	ec_params p = cfg->params;
	ec_code *code;

	if (ec_kind_is_bitmatrix(p.kind) && p.packet_size == 0)
		p.packet_size = 8; /* any packet will do to check k, m, w */
	int rc = ec_create(&p, &code);
	if (rc == EC_ENOKERNEL) {
		const char *env = getenv("EC_SIMD");
		fprintf(stderr, "ecfs-bench: libec cannot run: EC_SIMD=%s names a kernel that is "
		                "unknown or that this CPU lacks\n",
		        env ? env : "(unset)");
		exit(EXIT_FAILURE);
	}
	if (rc != 0)
		usage_error("%s with k=%d m=%d w=%d: %s", ec_kind_name(p.kind), p.k, p.m, p.w,
		            ec_strerror(rc));
	ec_destroy(code);
}

/* The default strips (4K, 64K, 1M) rounded down to whole stripes of w
 * packets, for bit-matrix codes whose w is not a power of two: a strip
 * must hold w packets exactly, so 4096 bytes cannot be a liberation w=7
 * strip, but 3584 (7 x 512) can. */
static void fit_default_strips(bench_config *cfg)
{
	size_t w = (size_t)cfg->params.w;

	for (int i = 0; i < cfg->n_strips; i++) {
		size_t target = cfg->strips[i], packet = cfg->params.packet_size;
		if (bench_default_packet(cfg->params.w, target) != 0 && packet == 0)
			continue; /* already fits */
		if (packet == 0)
			for (packet = 2048; packet > 8 && w * packet > target; packet /= 2)
				;
		size_t unit = w * packet;
		cfg->strips[i] = target >= unit ? target / unit * unit : unit;
	}
}

/* What the command line asks beyond the bench_config. */
typedef struct bench_cli {
	const char *kernels[MAX_KERNELS];
	int n_kernels, grid, strips_given, wall_clock;
	int want_encode, want_decode;
} bench_cli;

/* The options that say what to measure: the code, its strips and the
 * operations.  Returns 0 if opt is not one of them. */
static int parse_work_option(int opt, int argc, char **argv, bench_config *cfg, bench_cli *cli)
{
	const char *arg;
	char *items[256];
	int n;

	switch (opt) {
	case 'k':
		cfg->params.k = (int)parse_int("-k", optarg, 1, 65535);
		break;
	case 'm':
		cfg->params.m = (int)parse_int("-m", optarg, 1, 65535);
		break;
	case 'w':
		cfg->params.w = (int)parse_int("-w", optarg, 1, 64);
		break;
	case OPT_CODE:
		cfg->params.kind = ec_kind_from_name(optarg);
		if (cfg->params.kind == 0)
			usage_error("--code: unknown code '%s' (--help lists them)", optarg);
		break;
	case OPT_STRIP:
		n = split_list(optarg, items, 32, "--strip");
		for (int i = 0; i < n; i++)
			cfg->strips[i] = parse_size("--strip", items[i]);
		cfg->n_strips = n;
		cli->strips_given = 1;
		break;
	case OPT_PACKET:
		cfg->params.packet_size = parse_size("--packet", optarg);
		break;
	case OPT_ORDER:
		cfg->params.order = parse_order(optarg);
		break;
	case OPT_ENCODE:
		cli->want_encode = 1;
		break;
	case OPT_DECODE:
		cli->want_decode = 1;
		arg = optional_arg(argc, argv);
		if (arg)
			cfg->n_erasures = (int)parse_int("--decode", arg, 1, 65535);
		break;
	case OPT_ERASE:
		cli->want_decode = 1;
		n = split_list(optarg, items, 256, "--erase");
		for (int i = 0; i < n; i++)
			cfg->erase_list[i] = (int)parse_int("--erase", items[i], 0, 65535);
		cfg->n_erase_list = n;
		break;
	default:
		return 0;
	}
	return 1;
}

/* The options that say how to measure and what to print.  Returns 0 if
 * opt is not one of them. */
static int parse_run_option(int opt, int argc, char **argv, bench_config *cfg, bench_cli *cli)
{
	const char *arg;
	char *end;

	switch (opt) {
	case OPT_KERNEL:
		cli->n_kernels = parse_kernels(optarg, cli->kernels);
		break;
	case OPT_PEERS:
		parse_peers(optarg, cfg);
		break;
	case OPT_NO_BASELINES:
		cfg->use_baselines = 0;
		break;
	case OPT_SECONDS:
		cfg->seconds = strtod(optarg, &end);
		if (end == optarg || *end || !(cfg->seconds > 0) || cfg->seconds > 3600)
			usage_error("--seconds: '%s' is not a time from 0 to 3600 s", optarg);
		break;
	case OPT_ROUNDS:
		cfg->rounds = (int)parse_int("--rounds", optarg, 1, 64);
		break;
	case OPT_CLOCK:
		if (strcmp(optarg, "cpu") == 0)
			cli->wall_clock = 0;
		else if (strcmp(optarg, "wall") == 0)
			cli->wall_clock = 1;
		else
			usage_error("--clock: '%s' is neither cpu nor wall", optarg);
		break;
	case OPT_UNALIGNED:
		arg = optional_arg(argc, argv);
		cfg->offset = arg ? (size_t)parse_int("--unaligned", arg, 0, 63) : 1;
		break;
	case OPT_SEED:
		cfg->seed = (uint64_t)parse_int("--seed", optarg, 0, 0x7fffffffffffffffL);
		break;
	case OPT_GRID:
		cli->grid = 1;
		break;
	case OPT_CSV:
		cfg->csv = 1;
		break;
	default:
		return 0;
	}
	return 1;
}

/* main() goes on: no exit status yet. */
#define GO_ON (-1)

/* Reads the options (a usage error exits).  Returns GO_ON, or the exit
 * status after --help, --version or getopt's complaint. */
static int parse_options(int argc, char **argv, bench_config *cfg, bench_cli *cli)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "k:m:w:hV", long_options, NULL)) != -1) {
		if (parse_work_option(opt, argc, argv, cfg, cli) ||
		    parse_run_option(opt, argc, argv, cfg, cli))
			continue;
		switch (opt) {
		case 'h':
			print_usage(stdout);
			return 0;
		case 'V':
			print_version();
			return 0;
		default:
			/* getopt_long has already said what was wrong. */
			fprintf(stderr, "Try 'ecfs-bench --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	return GO_ON;
}

/* What the options leave to defaults, and the checks that need all of
 * them (a usage error exits).  Returns GO_ON or EXIT_FAILURE. */
static int settle_options(bench_config *cfg, bench_cli *cli)
{
	cfg->do_encode = cli->want_encode || !cli->want_decode;
	cfg->do_decode = cli->want_decode || !cli->want_encode;
	bench_set_clock(cli->wall_clock ? BENCH_CLOCK_WALL : BENCH_CLOCK_CPU);
	if (cfg->params.w == 0)
		cfg->params.w = default_w(cfg->params.kind, cfg->params.k, cfg->params.m);
	if (!cli->grid && !cli->strips_given && ec_kind_is_bitmatrix(cfg->params.kind))
		fit_default_strips(cfg);
	if (!cli->grid) {
		check_erasures(cfg);
		check_code(cfg);
	}
	for (int i = 0; i < cli->n_kernels; i++)
		if (!ec_kernel_available(cli->kernels[i])) {
			fprintf(stderr, "ecfs-bench: --kernel %s: this CPU lacks that kernel\n",
			        cli->kernels[i]);
			return EXIT_FAILURE;
		}
	if (cli->n_kernels == 0) {
		cli->kernels[0] = NULL; /* the one in force (EC_SIMD or the best) */
		cli->n_kernels = 1;
	}
	return GO_ON;
}

/* The comment lines above a table: what ran and what the columns mean. */
static void print_header(const bench_config *cfg, int wall_clock)
{
	printf("# ecfs-bench %s; libec kernels on this CPU:", BENCH_VERSION);
	for (const char *const *k = ec_kernel_names(); *k; k++)
		if (ec_kernel_available(*k))
			printf(" %s", *k);
	printf("; peers:%s%s%s\n", cfg->use_isal ? " isal" : "", cfg->use_jerasure ? " jerasure" : "",
	       cfg->use_isal || cfg->use_jerasure ? "" : " none");
	printf("# GB/s = k x strip bytes of data per call / %s time (1 GB = 1e9 B), best of "
	       "%d rounds of %.3g s;\n# normalized = GB/s x m(k-1)/k (Plank et al., FAST'09); "
	       "vs-isal = GB/s / ISA-L's GB/s\n",
	       wall_clock ? "wall" : "CPU", cfg->rounds, cfg->seconds / cfg->rounds);
	fflush(stdout);
}

/* The measurements, once per kernel asked for.  Returns the exit status. */
static int run_kernels(const bench_config *cfg, const bench_cli *cli)
{
	for (int i = 0; i < cli->n_kernels; i++) {
		if (cli->kernels[i]) {
			int rc = ec_set_kernel(cli->kernels[i]);
			if (rc != 0) {
				fprintf(stderr, "ecfs-bench: --kernel %s: %s\n", cli->kernels[i],
				        ec_strerror(rc));
				return EXIT_FAILURE;
			}
		}
		int rc = cli->grid ? bench_run_grid(cfg) : bench_run_single(cfg);
		if (rc != 0)
			return EXIT_FAILURE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bench_config cfg = {
		.params = { .kind = EC_RS_CAUCHY, .k = 10, .m = 4, .w = 0 },
		.strips = { 4096, 65536, 1 << 20 },
		.n_strips = 3,
		.n_erasures = -1,
		.use_isal = HAVE_ISAL,
		.use_jerasure = HAVE_JERASURE,
		.use_baselines = 1,
		.seconds = 0.3,
		.rounds = 5,
	};
	bench_cli cli = { 0 };

	if (wants_xor_tuner(argc, argv))
		return bench_xor_main(argc, argv);
	int status = parse_options(argc, argv, &cfg, &cli);
	if (status == GO_ON)
		status = settle_options(&cfg, &cli);
	if (status != GO_ON)
		return status;
	if (!cfg.csv)
		print_header(&cfg, cli.wall_clock);
	return run_kernels(&cfg, &cli);
}
