#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs every Debian package ecfs needs to build, test and benchmark.
# This is the one list: .ci/run and the README's setup command both call it.
set -eu

PACKAGES="
  build-essential pkg-config meson ninja-build
  libfuse3-dev fuse3
  libglib2.0-dev libssl-dev libcmocka-dev
  attr acl
  libisal-dev libjerasure-dev libgf-complete-dev
"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PACKAGES
