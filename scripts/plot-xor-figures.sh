#!/bin/sh
# SPDX-License-Identifier: MIT
# Turns the CSV files of `ecfs-bench --figures` into PNG with gnuplot:
#   scripts/plot-xor-figures.sh DIR
# codes_K_M.csv -> encode_K_M.png and decode_K_M.png (normalized speed and
# GB XORed per GB of data, against w, one line per code; ISA-L's RS as a
# dashed line when ref_K_M.csv has it), packet_rdp_6_2_w6.csv ->
# packet_rdp_6_2_w6.png, orders_liberation_11.csv -> orders_liberation_11.png.
set -eu
dir=${1:?usage: plot-xor-figures.sh DIR}
command -v gnuplot >/dev/null || { echo "gnuplot not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

codes="cauchy-orig cauchy-good liberation blaum-roth liber8tion evenodd rdp"

# Column of a CSV row of ref_K_M.csv: impl,op,...,normalized is field 10.
ref_value() { # file impl op
	[ -f "$1" ] || return 0
	awk -F, -v i="$2" -v o="$3" '$1 == i && $2 == o { print $10; exit }' "$1"
}

for f in "$dir"/codes_*.csv; do
	[ -f "$f" ] || continue
	km=$(basename "$f" .csv | sed 's/^codes_//')
	k=${km%_*}
	m=${km#*_}
	for op in enc dec; do
		if [ $op = enc ]; then col=9; xcol=7; name=encode; else col=13; xcol=11; name=decode; fi
		isal=$(ref_value "$dir/ref_$km.csv" isal $name)
		gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,900 font ',10'
set output '$dir/${name}_$km.png'
set multiplot layout 2,1 title "XOR codes, ${name} [k=$k, m=$m], strips of about 64 KiB"
set key outside right
set xlabel 'w'
set ylabel 'normalized speed (GB/s)'
set grid
isal = '$isal'
plot for [c in "$codes"] '$f' using (strcol(1) eq c ? \$4 : NaN):$col with linespoints title c, \
     (isal ne '' ? real(isal) : NaN) with lines dashtype 2 lc rgb 'black' title 'ISA-L RS (GF(2^8))'
set ylabel 'GB XORed per GB of data'
plot for [c in "$codes"] '$f' using (strcol(1) eq c ? \$4 : NaN):$xcol with linespoints title c
unset multiplot
GP
	done
done

if [ -f "$dir/packet_rdp_6_2_w6.csv" ]; then
	gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,500 font ',10'
set output '$dir/packet_rdp_6_2_w6.png'
set title 'RDP [6,2] w=6: encoding speed against packet size'
set logscale x 2
set xlabel 'packet size (bytes)'
set ylabel 'normalized speed (GB/s)'
set grid
set key bottom right
plot for [o in "ppg pwg dpg dwg"] '$dir/packet_rdp_6_2_w6.csv' using (strcol(2) eq o ? \$1 : NaN):4 with linespoints title o
GP
fi

if [ -f "$dir/orders_liberation_11.csv" ]; then
	gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 900,500 font ',10'
set output '$dir/orders_liberation_11.png'
set title 'Liberation k=w=11: the four XOR orders (Luo et al. Table 2)'
set logscale x 2
set xlabel 'packet size (bytes)'
set ylabel 'encoding speed (GB/s of data)'
set grid
set key bottom right
plot for [o in "ppg pwg dpg dwg"] '$dir/orders_liberation_11.csv' using (strcol(1) eq o ? \$2 : NaN):4 with linespoints title o
GP
fi
ls "$dir"/*.png
