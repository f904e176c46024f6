#!/usr/bin/env bash
# Installs the Debian packages that building, running and testing idlelab need, if any are
# missing. As root it runs apt-get; otherwise it prints the exact command to run.
set -euo pipefail

packages=(
	build-essential nasm binutils
	qemu-system-x86 grub-pc-bin grub-common xorriso mtools
	python3 python3-pytest python3-matplotlib
	libcmocka-dev zlib1g-dev clang libclang-rt-dev clang-format cppcheck spin
	busybox-static kmod cpio file
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "idlelab: missing packages; run as root:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi
echo "idlelab: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
