/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz harness (tests/fuzz/fuzz_*.c) once on each file of its seed
 * corpus, without libFuzzer: the unit test 'fuzz-<parser>' of every build
 * (and, in the sanitizer build, under ASan and UBSan).
 *   fuzz_<parser> DIR_OR_FILE...
 * Fails if no input was found, so that a corpus cannot vanish unseen.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	gchar *bytes = NULL;
	gsize len = 0;
	GError *err = NULL;

	if (!g_file_get_contents(path, &bytes, &len, &err)) {
		fprintf(stderr, "%s\n", err->message);
		g_error_free(err);
		exit(1);
	}
	LLVMFuzzerTestOneInput((const uint8_t *)bytes, len);
	g_free(bytes);
	printf("ok %s\n", path);
	return 1;
}

int main(int argc, char **argv)
{
	int inputs = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			GDir *d = g_dir_open(argv[i], 0, NULL);
			for (const char *e; d && (e = g_dir_read_name(d));) {
				char *p = g_build_filename(argv[i], e, NULL);
				inputs += run_file(p);
				g_free(p);
			}
			if (d)
				g_dir_close(d);
		} else {
			inputs += run_file(argv[i]);
		}
	}
	if (!inputs) {
		fprintf(stderr, "no input: give the corpus directory\n");
		return 1;
	}
	printf("%d inputs\n", inputs);
	return 0;
}
