#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs every Debian package ecfs needs to build, test and benchmark.
# This is the one list: .ci/run and the README's setup command both call it.
# clang and its runtime (libclang-rt-<clang's version>-dev, 14 on Debian 12)
# build the fuzzers (-fsanitize=fuzzer, scripts/fuzz.sh).  debhelper,
# dpkg-dev and lintian build and check the Debian package (debian/,
# tests/pkg; its build needs no root, so no fakeroot).
set -eu

PACKAGES="
  build-essential pkg-config meson ninja-build
  libfuse3-dev fuse3
  libglib2.0-dev libssl-dev libcmocka-dev
  attr acl rsync e2fsprogs util-linux mount
  iproute2 openssh-client openssh-server sshfs
  libisal-dev libjerasure-dev libgf-complete-dev liburing-dev
  python3 mergerfs snapraid time
  fio sqlite3
  gnuplot-nox
  clang libclang-rt-14-dev
  debhelper dpkg-dev lintian
"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PACKAGES

# fsx, the file system exerciser of the 'external' test suite, comes from
# crates.io.  Skipped when already installed; without cargo the fsx tests
# skip themselves (exit 77) and say why.
FSX_VERSION=0.3.2
PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
if command -v fsx >/dev/null 2>&1; then
	:
elif command -v cargo >/dev/null 2>&1; then
	cargo install --quiet --locked --version "$FSX_VERSION" fsx ||
		echo "install-deps: cargo install fsx failed: fsx tests will skip" >&2
else
	echo "install-deps: cargo not found: fsx not installed, fsx tests will skip" >&2
fi
