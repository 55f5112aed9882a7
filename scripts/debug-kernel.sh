#!/usr/bin/env bash
# debug-kernel.sh - build, once per machine, the Debian kernel the guest
# boots (same upstream version, from Debian's linux-source-6.1) with the
# kernel's own checkers: KASAN, lockdep (PROVE_LOCKING, PROVE_RCU),
# kmemleak, UBSAN, KFENCE, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, DEBUG_OBJECTS.
# Everything the rig needs (virtio, 9p, overlay, rxe, veth) is built in.
#
#   scripts/debug-kernel.sh          build if needed, print the cache dir
#   scripts/debug-kernel.sh --path   print the cache dir, build nothing
#
# The cache lives outside the clone (KDAT_DEBUG_KERNEL_CACHE, default
# /var/cache/kdat/debug-kernel), keyed by the source package version and
# this script's config list, so a machine builds it once (~25 min on 2
# cores).  The cache dir holds:
#   src/            the built tree (M= builds of out-of-tree modules use it)
#   modroot/        modules_install output (the guest finds modules.builtin)
#   release         the kernel release string
#   ok              written last: the build is complete
set -euo pipefail

CACHE_ROOT=${KDAT_DEBUG_KERNEL_CACHE:-/var/cache/kdat/debug-kernel}
TARBALL=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null || true)

# y: built in; n: off.  Checked after olddefconfig: a silently dropped
# option fails the build instead of giving a kernel that checks less.
CONFIG_Y=(
	# the rig: virtio 9p root with an overlay, serial console, PVH boot
	VIRTIO VIRTIO_PCI VIRTIO_NET NET_9P NET_9P_VIRTIO 9P_FS OVERLAY_FS
	TMPFS DEVTMPFS CONFIGFS_FS DEBUG_FS PVH BLK_DEV_INITRD
	# RDMA: ib_core, uverbs, rdma_cm, Soft-RoCE over veth
	INFINIBAND INFINIBAND_USER_ACCESS INFINIBAND_ADDR_TRANS RDMA_RXE
	VETH CRYPTO_CRC32 CRYPTO_CRC32C IPV6 NET_NS MEMCG CGROUP_RDMA
	MODULES MODULE_UNLOAD
	# the tests: a copy to user memory that stalls until the test says
	# (kdat_race's userfaultfd write-protected pages)
	USERFAULTFD
	# the checkers
	KASAN KASAN_GENERIC KASAN_INLINE
	PROVE_LOCKING DEBUG_LOCKDEP PROVE_RCU DEBUG_ATOMIC_SLEEP
	DEBUG_KMEMLEAK UBSAN UBSAN_BOUNDS KFENCE DEBUG_LIST
	DEBUG_OBJECTS DEBUG_OBJECTS_FREE DEBUG_OBJECTS_WORK
	DEBUG_OBJECTS_RCU_HEAD DEBUG_OBJECTS_TIMERS
	DETECT_HUNG_TASK SOFTLOCKUP_DETECTOR
	DEBUG_INFO_NONE
)
CONFIG_N=(
	KASAN_OUTLINE DRM SOUND USB_SUPPORT WLAN HID MODULE_SIG DEBUG_KMEMLEAK_AUTO_SCAN
	DEBUG_KMEMLEAK_DEFAULT_OFF DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT
	NFS_FS AGP INPUT_TOUCHSCREEN INPUT_JOYSTICK INPUT_TABLET
	SECURITY_SELINUX
)

ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || echo none)
key=$(printf '%s\n' "$ver" "${CONFIG_Y[@]}" -- "${CONFIG_N[@]}" |
	sha256sum | cut -c1-16)
DIR=$CACHE_ROOT/$ver-$key

if [[ ${1:-} == --path ]]; then
	echo "$DIR"
	exit 0
fi
if [[ -f $DIR/ok ]]; then
	echo "$DIR"
	exit 0
fi
[[ -n $TARBALL ]] || {
	echo "debug-kernel: /usr/src/linux-source-6.1.tar.xz missing (apt-get install linux-source-6.1 flex bison bc libelf-dev libssl-dev dwarves)" >&2
	exit 1
}

mkdir -p "$CACHE_ROOT"
exec 8>"$CACHE_ROOT/.lock"
flock 8 # one build at a time; a second caller waits and reuses it
if [[ -f $DIR/ok ]]; then
	echo "$DIR"
	exit 0
fi

log() { echo "debug-kernel: $*" >&2; }
start=$(date +%s)
rm -rf "$DIR"
mkdir -p "$DIR"
log "extracting $TARBALL ($ver) into $DIR"
tar -C "$DIR" -xf "$TARBALL"
mv "$DIR"/linux-source-6.1 "$DIR/src"
cd "$DIR/src"

make -s x86_64_defconfig >&2
args=()
for c in "${CONFIG_Y[@]}"; do args+=(-e "$c"); done
for c in "${CONFIG_N[@]}"; do args+=(-d "$c"); done
scripts/config "${args[@]}" --set-str LOCALVERSION "-kdat-debug" \
	-d LOCALVERSION_AUTO --set-val DEBUG_KMEMLEAK_MEM_POOL_SIZE 40000
make -s olddefconfig >&2
bad=()
for c in "${CONFIG_Y[@]}"; do
	grep -qx "CONFIG_$c=y" .config || bad+=("$c=y")
done
for c in "${CONFIG_N[@]}"; do
	grep -qx "CONFIG_$c=[ym]" .config && bad+=("$c=n")
done
if [[ ${#bad[@]} -gt 0 ]]; then
	log "config did not take: ${bad[*]}"
	exit 1
fi

log "building (about 25 minutes on 2 cores)"
make -j"$(nproc)" -s vmlinux bzImage modules >"$DIR/build.log" 2>&1 || {
	tail -40 "$DIR/build.log" >&2
	exit 1
}
make -s modules_install INSTALL_MOD_PATH="$DIR/modroot" >>"$DIR/build.log" 2>&1
make -s kernelrelease >"$DIR/release"
touch "$DIR/ok"
log "built $(cat "$DIR/release") in $(($(date +%s) - start)) s"
echo "$DIR"
