#!/bin/sh
# SPDX-License-Identifier: MIT
# Prints the line every benchmark starts with: the CPU, its class for
# ecfs's figures, and whether libec's kernels are forced.
#   GFNI: AVX-512 (F, BW, VL) and GFNI: libec's fastest kernels run;
#   AVX2: AVX2 without GFNI (or with it, when EC_SIMD=avx2 forces the
#         AVX2 kernels: the figures then stand for that class);
#   other: neither (SSSE3 or scalar kernels).
# docs/PERFORMANCE.md keeps one table per class.
model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
flags=" $(awk -F': ' '/^flags/ { print $2; exit }' /proc/cpuinfo) "
has() { case "$flags" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if has avx512f && has avx512bw && has avx512vl && has gfni; then
	class=GFNI
elif has avx2; then
	class=AVX2
else
	class=other
fi
forced=
case "${EC_SIMD:-}" in
'') ;;
avx2) [ "$class" = GFNI ] && class="AVX2 (GFNI CPU, AVX2 kernels forced: EC_SIMD=avx2)" ;;
*) forced=", libec kernels forced: EC_SIMD=$EC_SIMD" ;;
esac
echo "CPU: ${model:-unknown}, $(nproc) CPUs; class: $class$forced; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
