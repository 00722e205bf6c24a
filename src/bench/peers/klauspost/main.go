// SPDX-License-Identifier: MIT

// Command ecfs-peer-klauspost measures github.com/klauspost/reedsolomon on
// the cells of `ecfs-bench --grid` and prints them in ecfs-bench's CSV
// columns, so that scripts/bench-peers.sh can put them beside libec and
// ISA-L.
//
// It measures the way ecfs-bench does (src/bench/bench_timer.c): one
// thread (WithMaxGoroutines(1), the goroutine locked to its OS thread),
// the thread's CPU clock, each job warmed up and its batch sized to about
// a millisecond, then every job of a cell timed in turn for `rounds`
// slices that add up to `seconds`, and the best slice reported.  GB/s are
// 10^9 bytes of data (k x strip per call) per second.  Decoding erases the
// first m data shards, the grid's worst case; the library caches the
// inverted matrix per erasure pattern (its default), as libec and ISA-L do
// in ecfs-bench.  Every result is checked before it is timed and after.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"github.com/klauspost/reedsolomon"
	"golang.org/x/sys/unix"
)

// The grid of ecfs-bench (src/bench/bench_run.c).
var gridKM = [][2]int{{6, 2}, {14, 2}, {12, 4}, {10, 6}, {10, 4}}

const batchSeconds = 1e-3

func threadSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// A job is one operation on one cell, called repeatedly.
type job struct {
	op    string
	call  func() error
	bytes float64 // data bytes per call
	batch int
	best  float64 // bytes per second
}

func (j *job) runBatch(n int) error {
	for i := 0; i < n; i++ {
		if err := j.call(); err != nil {
			return err
		}
	}
	return nil
}

// calibrate warms the job up and grows its batch until one batch takes
// about batchSeconds (at most 16x per step).
func (j *job) calibrate() error {
	if err := j.runBatch(1); err != nil {
		return err
	}
	batch := 1
	for {
		t0 := threadSeconds()
		if err := j.runBatch(batch); err != nil {
			return err
		}
		dt := threadSeconds() - t0
		if dt >= batchSeconds || batch >= 1<<30 {
			break
		}
		grow := 16.0
		if dt > 0 {
			grow = batchSeconds / dt * 1.2
		}
		grow = max(2.0, min(grow, 16.0))
		batch = int(float64(batch) * grow)
	}
	j.batch = batch
	return nil
}

// slice runs the job for at least `seconds` and keeps the best rate.
func (j *job) slice(seconds float64) error {
	calls := 0
	t0 := threadSeconds()
	t := t0
	for t-t0 < seconds {
		if err := j.runBatch(j.batch); err != nil {
			return err
		}
		calls += j.batch
		t = threadSeconds()
	}
	if rate := float64(calls) * j.bytes / (t - t0); rate > j.best {
		j.best = rate
	}
	return nil
}

// cell holds the shards of one [k,m] stripe at one strip size.
type cell struct {
	k, m, strip int
	enc         reedsolomon.Encoder
	shards      [][]byte
	lost        [][]byte // the erased data shards as encoded
}

// avx2Only turns off the library's AVX-512 and GFNI kernels (-simd avx2),
// so that a CPU with them can stand in for one with AVX2 alone.
var avx2Only bool

// stripe gives n shards of strip bytes one after another in one
// page-aligned allocation, as ecfs-bench (and ecfs) lay out a stripe's
// blocks; each shard's capacity ends where the next begins.
func stripe(n, strip int) [][]byte {
	const page = 4096
	buf := make([]byte, n*strip+page)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&buf[0])) % page); r != 0 {
		off = page - r
	}
	s := make([][]byte, n)
	for i := range s {
		lo := off + i*strip
		s[i] = buf[lo : lo+strip : lo+strip]
	}
	return s
}

func newCell(k, m, strip int, seed int64) (*cell, error) {
	opts := []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1)}
	if avx2Only {
		opts = append(opts, reedsolomon.WithAVX512(false), reedsolomon.WithGFNI(false),
			reedsolomon.WithAVXGFNI(false))
	}
	enc, err := reedsolomon.New(k, m, opts...)
	if err != nil {
		return nil, err
	}
	c := &cell{k: k, m: m, strip: strip, enc: enc, shards: make([][]byte, k+m)}
	rnd := rand.New(rand.NewSource(seed))
	data, parity := stripe(k, strip), stripe(m, strip)
	for i := range c.shards {
		if i < k {
			c.shards[i] = data[i]
			rnd.Read(c.shards[i])
		} else {
			c.shards[i] = parity[i-k]
		}
	}
	if err := enc.Encode(c.shards); err != nil {
		return nil, err
	}
	for e := 0; e < m; e++ {
		c.lost = append(c.lost, bytes.Clone(c.shards[e]))
	}
	return c, c.check()
}

func (c *cell) encode() error { return c.enc.Encode(c.shards) }

// decode loses the first m data shards (length 0, capacity kept, so the
// library rebuilds them in place without allocating) and rebuilds them.
func (c *cell) decode() error {
	for e := 0; e < c.m; e++ {
		c.shards[e] = c.shards[e][:0]
	}
	return c.enc.ReconstructData(c.shards)
}

// check: the parity verifies, and a decode gives back the lost shards.
func (c *cell) check() error {
	if ok, err := c.enc.Verify(c.shards); err != nil || !ok {
		return fmt.Errorf("[%d,%d] %d: parity does not verify (%v)", c.k, c.m, c.strip, err)
	}
	if err := c.decode(); err != nil {
		return err
	}
	for e := 0; e < c.m; e++ {
		if !bytes.Equal(c.shards[e], c.lost[e]) || cap(c.shards[e]) != c.strip {
			return fmt.Errorf("[%d,%d] %d: shard %d decoded wrong", c.k, c.m, c.strip, e)
		}
	}
	return nil
}

// kernel names the instruction sets reedsolomon turns on by default on
// this CPU (its own rule, options.go of v1.14.2), best first.
func kernel() string {
	switch {
	case avx2Only && cpuid.CPU.Supports(cpuid.AVX2):
		return "avx2"
	case cpuid.CPU.Supports(cpuid.AVX512F, cpuid.GFNI, cpuid.AVX512DQ):
		return "avx512+gfni"
	case cpuid.CPU.Supports(cpuid.AVX, cpuid.GFNI):
		return "avx+gfni"
	case cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL):
		return "avx512"
	case cpuid.CPU.Supports(cpuid.AVX2):
		return "avx2"
	case cpuid.CPU.Supports(cpuid.SSSE3):
		return "ssse3"
	}
	return "go"
}

// libVersion is the reedsolomon version this binary was built with.
func libVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/klauspost/reedsolomon" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func parseSize(s string) (int, error) {
	unit := 1
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		unit = 1 << 10
	case "M":
		unit = 1 << 20
	}
	if unit > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad strip size %q", s)
	}
	return v * unit, nil
}

func runCell(k, m, strip int, seconds float64, rounds int) error {
	c, err := newCell(k, m, strip, int64(k*1000+m))
	if err != nil {
		return err
	}
	data := float64(k * strip)
	jobs := []*job{
		{op: "encode", call: c.encode, bytes: data},
		{op: "decode", call: c.decode, bytes: data},
	}
	for _, j := range jobs {
		if err := j.calibrate(); err != nil {
			return err
		}
	}
	for r := 0; r < rounds; r++ {
		for _, j := range jobs {
			if err := j.slice(seconds / float64(rounds)); err != nil {
				return err
			}
		}
	}
	if err := c.check(); err != nil {
		return err
	}
	for _, j := range jobs {
		erasures := ""
		if j.op == "decode" {
			var e []string
			for i := 0; i < m; i++ {
				e = append(e, strconv.Itoa(i))
			}
			erasures = strings.Join(e, "+")
		}
		gbps := j.best / 1e9
		norm := gbps * float64(m) * float64(k-1) / float64(k)
		fmt.Printf("klauspost,%s,reedsolomon,%d,%d,8,%d,%s,%.4f,%.4f,,%s\n",
			j.op, k, m, strip, erasures, gbps, norm, kernel())
	}
	return nil
}

func main() {
	seconds := flag.Float64("seconds", 0.3, "measuring time per job and cell")
	rounds := flag.Int("rounds", 5, "slices per job, the best reported")
	strips := flag.String("strip", "4K,64K,1M", "strip sizes, K/M suffixes")
	version := flag.Bool("version", false, "print the library version and kernel")
	simd := flag.String("simd", "", "'avx2': leave the AVX-512 and GFNI kernels out")
	flag.Parse()
	switch *simd {
	case "":
	case "avx2":
		avx2Only = true
	default:
		fmt.Fprintln(os.Stderr, "ecfs-peer-klauspost: -simd takes only avx2")
		os.Exit(2)
	}
	if *version {
		fmt.Printf("klauspost/reedsolomon %s, kernel %s, %s\n", libVersion(), kernel(), runtime.Version())
		return
	}
	if *rounds < 1 || *seconds <= 0 {
		fmt.Fprintln(os.Stderr, "ecfs-peer-klauspost: -rounds and -seconds must be positive")
		os.Exit(2)
	}
	var sizes []int
	for _, s := range strings.Split(*strips, ",") {
		v, err := parseSize(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ecfs-peer-klauspost:", err)
			os.Exit(2)
		}
		sizes = append(sizes, v)
	}
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	fmt.Println("impl,op,code,k,m,w,strip,erasures,gbps,normalized,vs_isal,kernel")
	for _, km := range gridKM {
		for _, s := range sizes {
			if err := runCell(km[0], km[1], s, *seconds, *rounds); err != nil {
				fmt.Fprintln(os.Stderr, "ecfs-peer-klauspost:", err)
				os.Exit(1)
			}
		}
	}
}
