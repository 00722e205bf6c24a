/* SPDX-License-Identifier: MIT */
/*
 * -o metrics=FILE: the volume's state in Prometheus text format, for
 * node_exporter's textfile collector, written by a thread of its own
 * every METRICS_PERIOD_S and at each change of state (metrics_poke), to
 * FILE.tmp and renamed over FILE so a reader never sees half a file.
 * Every metric has the label mountpoint; the figures are the health
 * report's (volume.h, health_report.h), and the names are in
 * man/ecfs.8 (METRICS).  The file is removed at unmount: a volume not
 * mounted has no state to report.
 */
#ifndef ECFS_METRICS_H
#define ECFS_METRICS_H

#include "volume.h"

#define METRICS_PERIOD_S 5

typedef struct metrics metrics;

/* The Prometheus text of the health report `health` of the volume
 * mounted at mountpoint, g_malloc'd. */
char *metrics_text(const char *health, const char *mountpoint);
/* Starts the thread writing file (an absolute path); NULL if it cannot
 * start (said in the log). */
metrics *metrics_start(const char *file, volume *v, const char *mountpoint);
/* The state changed: the file is written again now.  Never waits; after
 * metrics_stop, nothing.  NULL: nothing. */
void metrics_poke(metrics *m);
/* Stops the thread (before the online heal stops: the report holds its
 * lines) and removes the file; again: nothing.  NULL: nothing. */
void metrics_stop(metrics *m);
/* Stops it if need be and frees m, once nothing tells events any more
 * (the volume is closed).  NULL: nothing. */
void metrics_free(metrics *m);

#endif
