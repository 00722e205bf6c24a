/* SPDX-License-Identifier: MIT */
/*
 * Table and CSV output of ecfs-bench (see bench_report.h).  The column set
 * is the contract scripts read; the man page lists it.  Not-applicable
 * values are "-" in the table and empty fields in CSV.
 */
#include "bench_report.h"

double bench_normalized(double gbps, int k, int m)
{
	return gbps * (double)m * (double)(k - 1) / (double)k;
}

void bench_format_size(size_t bytes, char *buf, size_t buflen)
{
	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, buflen, "%zuM", bytes >> 20);
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, buflen, "%zuK", bytes >> 10);
	else
		snprintf(buf, buflen, "%zu", bytes);
}

void bench_report_header(FILE *out, int csv)
{
	if (csv)
		fprintf(out, "impl,op,code,k,m,w,strip,erasures,gbps,normalized,vs_isal,kernel\n");
	else
		fprintf(out, "%-8s %-6s %-14s %3s %3s %3s %7s %-12s %8s %10s %7s %s\n", "impl", "op",
		        "code", "k", "m", "w", "strip", "erasures", "GB/s", "normalized", "vs-isal",
		        "kernel");
	fflush(out);
}

/* A value or the not-applicable mark, with the given decimals. */
static void format_value(char *buf, size_t buflen, double v, int decimals, int csv)
{
	if (v < 0)
		snprintf(buf, buflen, "%s", csv ? "" : "-");
	else
		snprintf(buf, buflen, "%.*f", decimals, v);
}

void bench_report_row(FILE *out, const bench_row *row, int csv)
{
	char norm[32], ratio[32], w[16];

	format_value(norm, sizeof(norm), row->normalized, csv ? 4 : 2, csv);
	format_value(ratio, sizeof(ratio), row->vs_isal, csv ? 4 : 2, csv);
	if (row->w > 0)
		snprintf(w, sizeof(w), "%d", row->w);
	else
		snprintf(w, sizeof(w), "%s", csv ? "" : "-");

	if (csv) {
		fprintf(out, "%s,%s,%s,%d,%d,%s,%zu,%s,%.4f,%s,%s,%s\n", row->impl, row->op,
		        row->code[0] == '-' ? "" : row->code, row->k, row->m, w, row->strip,
		        row->erasures[0] == '-' ? "" : row->erasures, row->gbps, norm, ratio,
		        row->kernel[0] == '-' ? "" : row->kernel);
	} else {
		char strip[32];
		bench_format_size(row->strip, strip, sizeof(strip));
		fprintf(out, "%-8s %-6s %-14s %3d %3d %3s %7s %-12s %8.2f %10s %7s %s\n", row->impl,
		        row->op, row->code, row->k, row->m, w, strip, row->erasures, row->gbps, norm,
		        ratio, row->kernel);
	}
	fflush(out);
}
