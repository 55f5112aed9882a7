#!/bin/bash
# guest-run.sh - run one command as root inside a throwaway QEMU guest that
# boots the installed Debian kernel and sees the host's own root filesystem
# (read-only 9p + tmpfs overlay), with Soft-RoCE devices rxe0/rxe1 set up by
# tests/vm/guest-init.sh.  The host kernel cannot load modules, so every test
# that needs a kernel module goes through here.  See tests/vm/README.md.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: tests/vm/guest-run.sh [-o OUTDIR] [-t TIMEOUT_SECONDS] [-m MEM] [-k] [-q] -- COMMAND [ARGS...]
       RIG_KERNEL_DIR=DIR tests/vm/guest-run.sh ...   (the debug kernel)

  -o OUTDIR   host directory shared read-write with the guest at the same
              absolute path (default: <repo>/build/vm/out); receives
              console.log, dmesg.txt and status
  -t SECONDS  wall-clock limit for the whole VM run, boot included (default
              300; 1200 with RIG_KERNEL_DIR)
  -m MEM      guest memory, QEMU syntax (default 2048, i.e. MiB; 3072 with
              RIG_KERNEL_DIR: KASAN's shadow and kmemleak's metadata)
  -k          skip the kernel-log check (check-kernel-log.sh) - debugging only
  -q          do not echo the guest console on stdout (still in console.log)

The command runs as root in the guest, in the current directory (which must
not be under /tmp or /run), with stdin from /dev/null and RIG_OUT=OUTDIR in
its environment; the guest stops it after SECONDS-30 (SECONDS/2 if SECONDS
<= 60; SECONDS-300 on the debug kernel, whose boot and kmemleak scans are
slow) so that its status and dmesg still come back.  Exit status: the
command's own, or
  124  timeout (the guest's own limit or the VM was killed), or no status
       came back (guest crash, kernel panic)
  125  the rig itself failed (bad usage, no kernel, qemu error, or the guest
       setup: modprobe, rdma link add, cd ...; see console.log)
  99   the command succeeded but the kernel log has BUG/WARNING/Oops/...
       (on the debug kernel also: a kmemleak report, lockdep switched off)
Environment: KVER selects the kernel version (default: newest directory in
/lib/modules that has a matching /boot/vmlinuz-<ver>); RIG_TRACE=1 traces
guest-init.sh on the console with timestamps; RIG_BOOT_TIMEOUT (150 s, 300 s
on the debug kernel) and RIG_BOOT_TRIES (3, 4 on the debug kernel): a guest
that has not reached its init by then is killed and booted again (a hang in
early boot); RIG_APPEND adds kernel
parameters (e.g. RIG_APPEND=loglevel=8 to see the whole boot on the console).
RIG_KERNEL_DIR=DIR boots the debug kernel that scripts/debug-kernel.sh built
in DIR instead (KASAN, lockdep, kmemleak, UBSAN...; everything the rig needs
is built in, so its initramfs loads no modules): the image is
DIR/src/arch/x86/boot/bzImage (RIG_KERNEL_IMAGE=vmlinux: DIR/src/vmlinux
through PVH, which triple-faults on that build), the version DIR/release, the
guest's /lib/modules/<ver> is DIR/modroot/lib/modules/<ver>.  After the
command the guest runs two kmemleak scans and saves the report in
OUTDIR/kmemleak.txt; an "unreferenced object" there, or lockdep having turned
itself off (OUTDIR/lockdep.txt), counts like a dirty kernel log.
EOF
}

die() { echo "guest-run: $*" >&2; exit 125; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
BUILD_DIR=$REPO_ROOT/build/vm

# The debug kernel (scripts/debug-kernel.sh) when RIG_KERNEL_DIR names its
# build directory; the installed Debian kernel otherwise.
RIG_KERNEL_DIR=${RIG_KERNEL_DIR:-}
OUTDIR=$BUILD_DIR/out
if [[ -n $RIG_KERNEL_DIR ]]; then
	# boot 25-160 s under TCG, everything 2-5x slower, kmemleak's two
	# scans 35-70 s after the command
	TIMEOUT=1200
	MEM=3072
else
	TIMEOUT=300
	MEM=2048
fi
CHECK_LOG=1
QUIET=0
while getopts ":o:t:m:kqh" opt; do
	case $opt in
	o) OUTDIR=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	m) MEM=$OPTARG ;;
	k) CHECK_LOG=0 ;;
	q) QUIET=1 ;;
	h) usage; exit 0 ;;
	:) usage >&2; die "option -$OPTARG needs an argument" ;;
	*) usage >&2; die "unknown option -$OPTARG" ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || { usage >&2; die "no command given"; }
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || die "bad timeout: $TIMEOUT"

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
# The initramfs has no libc, so busybox must be the static build (ldd fails
# on a static binary).
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
	if [[ -x $b ]] && ! ldd "$b" >/dev/null 2>&1; then BUSYBOX=$b; break; fi
done
[[ -n $BUSYBOX ]] || die "a static busybox is needed (apt-get install busybox-static)"

# --- kernel: the Debian one that has both modules and a bootable image -----
# Never hard-code the ABI number: it changes with every Debian kernel update.
find_kver() {
	if [[ -n ${KVER:-} ]]; then
		[[ -d /lib/modules/$KVER && -f /boot/vmlinuz-$KVER ]] ||
			die "KVER=$KVER: need /lib/modules/$KVER and /boot/vmlinuz-$KVER"
		echo "$KVER"
		return
	fi
	local d v best=""
	for d in /lib/modules/*/; do
		v=$(basename "$d")
		[[ -f /boot/vmlinuz-$v && -f $d/modules.dep ]] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	[[ -n $best ]] || die "no /lib/modules/<ver> with a matching /boot/vmlinuz-<ver> (apt-get install linux-image-amd64)"
	echo "$best"
}
DEBUG_KERNEL=0
if [[ -n $RIG_KERNEL_DIR ]]; then
	DEBUG_KERNEL=1
	RIG_KERNEL_DIR=$(cd "$RIG_KERNEL_DIR" 2>/dev/null && pwd -P) ||
		die "RIG_KERNEL_DIR: no such directory"
	[[ -f $RIG_KERNEL_DIR/ok && -s $RIG_KERNEL_DIR/release ]] ||
		die "RIG_KERNEL_DIR=$RIG_KERNEL_DIR is not a finished scripts/debug-kernel.sh build (no ok/release)"
	KVER=$(<"$RIG_KERNEL_DIR/release")
	# the guest links /lib/modules/$KVER to this (modprobe of built-ins
	# needs modules.builtin; out-of-tree modules are insmod'ed by path)
	RIG_MODDIR=$RIG_KERNEL_DIR/modroot/lib/modules/$KVER
	[[ -f $RIG_MODDIR/modules.builtin ]] ||
		die "$RIG_MODDIR/modules.builtin missing (modules_install of the debug kernel)"
	case $RIG_KERNEL_DIR/ in
	/tmp/* | /run/*) die "RIG_KERNEL_DIR under /tmp or /run is hidden in the guest" ;;
	esac
else
	KVER=$(find_kver)
fi
VMLINUZ=/boot/vmlinuz-$KVER

# --- initramfs: busybox + the few modules needed to reach the 9p root ------
# Top-level modules; modprobe --show-depends expands them, dependencies first
# (virtio_ring virtio virtio_pci_* virtio_pci 9pnet 9pnet_virtio netfs
# fscache 9p overlay on Debian 6.1).
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

module_paths() {
	modprobe -S "$KVER" --show-depends -a "${INITRAMFS_MODULES[@]}" |
		awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

# The init script of the initramfs (busybox sh, PID 1).  It is kept here so
# that the cache key below covers it.
read -r -d '' RIG_INIT_SH <<'EOF' || true
#!/bin/busybox sh
# PID 1 of the rig initramfs: load 9p/overlay, mount the host root read-only
# with a tmpfs overlay on top, and hand over to guest-init.sh in the host's
# own Debian userland.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "rig-init: FATAL: $*" >/dev/console
	echo o >/proc/sysrq-trigger
	sleep 10
	poweroff -f
}

for m in $(cat /lib/rig-modules/order); do
	insmod "/lib/rig-modules/$m" || fail "insmod $m failed"
done

# Parameters come base64-encoded on the kernel command line (paths may hold
# spaces).  Read them before /proc is moved away.
param() {
	for w in $(cat /proc/cmdline); do
		case $w in "$1="*) echo "${w#*=}" | base64 -d; return ;; esac
	done
}
RIG_INIT=$(param rig_init)
RIG_CWD=$(param rig_cwd)
RIG_OUT=$(param rig_out)
RIG_CMD_TIMEOUT=$(param rig_cmd_timeout)
RIG_TRACE=$(param rig_trace)
[ -n "$RIG_INIT" ] && [ -n "$RIG_OUT" ] || fail "rig_init/rig_out missing on the kernel command line"

mkdir -p /lower /rw /newroot
# cache=loose: the lower root does not change during a run, and caching
# cuts the cost of exec'ing host binaries over 9p noticeably.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower ||
	fail "cannot mount the host root over 9p"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	fail "cannot mount the overlay root"
for d in proc sys dev; do
	mount --move "/$d" "/newroot/$d" || fail "cannot move /$d"
done
export RIG_CWD RIG_OUT RIG_CMD_TIMEOUT RIG_TRACE
exec chroot /newroot /bin/bash "$RIG_INIT"
EOF

build_initramfs() {
	local out=$1 stage mods=() m src name
	if [[ $DEBUG_KERNEL == 0 ]]; then
		mapfile -t mods < <(module_paths)
		[[ ${#mods[@]} -gt 0 ]] || die "modprobe found none of ${INITRAMFS_MODULES[*]} for $KVER"
	fi

	# Cache key: everything the image is made of.
	local key
	key=$({
		echo "kver=$KVER"
		[[ $DEBUG_KERNEL == 0 ]] || echo "modules=built-in"
		sha256sum "$BUSYBOX"
		printf '%s\n' "$RIG_INIT_SH" | sha256sum
		for m in "${mods[@]}"; do stat -c '%n %s %Y' "$m"; done
	} | sha256sum | cut -d' ' -f1)
	if [[ -f $out && -f $out.key && $(cat "$out.key") == "$key" ]]; then
		return
	fi

	echo "guest-run: building initramfs for $KVER" >&2
	mkdir -p "$BUILD_DIR"
	stage=$(mktemp -d "$BUILD_DIR/initramfs.stage.XXXXXX")
	# shellcheck disable=SC2064 # expand $stage now
	trap "rm -rf '$stage'" RETURN
	mkdir -p "$stage"/{bin,dev,proc,sys,lib/rig-modules}
	cp "$BUSYBOX" "$stage/bin/busybox"
	printf '%s\n' "$RIG_INIT_SH" >"$stage/init"
	chmod 0755 "$stage/init"
	: >"$stage/lib/rig-modules/order"
	for src in "${mods[@]}"; do
		# busybox insmod takes plain .ko only: decompress here, whatever
		# compression the Debian kernel uses for its modules.
		name=$(basename "$src")
		case $src in
		*.ko) cp "$src" "$stage/lib/rig-modules/$name" ;;
		*.ko.xz) name=${name%.xz}; xz -dc "$src" >"$stage/lib/rig-modules/$name" ;;
		*.ko.zst) name=${name%.zst}; zstd -qdc "$src" >"$stage/lib/rig-modules/$name" ;;
		*.ko.gz) name=${name%.gz}; gzip -dc "$src" >"$stage/lib/rig-modules/$name" ;;
		*) die "unknown module format: $src" ;;
		esac
		echo "$name" >>"$stage/lib/rig-modules/order"
	done
	# Write to a temp name and rename: concurrent runs never see half a file.
	(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --quiet | gzip -1) >"$out.tmp.$$"
	mv -f "$out.tmp.$$" "$out"
	echo "$key" >"$out.key"
}

if [[ $DEBUG_KERNEL == 1 ]]; then
	# the same init, an empty module list: 9p, overlay, virtio are built in
	INITRAMFS=$BUILD_DIR/initramfs-$KVER-builtin.cpio.gz
else
	INITRAMFS=$BUILD_DIR/initramfs-$KVER.cpio.gz
fi
build_initramfs "$INITRAMFS"

# --- kernel image: prefer the uncompressed vmlinux, booted through PVH ------
# Debian's bzImage is XZ-compressed; its decompressor runs ~4 s under TCG at
# every boot.  QEMU boots an uncompressed ELF vmlinux directly through its
# PVH entry point (CONFIG_PVH=y), so unpack the payload once and cache it.
# Any failure falls back to the bzImage, which is only slower.
extract_vmlinux() {
	local out=$1 key off magic
	key=$(stat -c '%n %s %Y' "$VMLINUZ")
	if [[ -s $out && -f $out.key && $(cat "$out.key") == "$key" ]]; then
		return 0
	fi
	grep -qx 'CONFIG_PVH=y' "/boot/config-$KVER" 2>/dev/null || return 1
	local -A unpack=(
		['\xFD\x37\x7A\x58\x5A\x00']='xz -dc --single-stream'
		['\x28\xB5\x2F\xFD']='zstd -qdc'
		['\x1F\x8B\x08']='gzip -dc'
	)
	for magic in "${!unpack[@]}"; do
		off=$(LC_ALL=C grep -obUaP "$magic" "$VMLINUZ" 2>/dev/null | head -n1 | cut -d: -f1) || true
		[[ -n $off ]] || continue
		# Trailing data after the stream makes gzip/zstd complain: judge
		# the result by its ELF magic, not by the exit status.
		tail -c +$((off + 1)) "$VMLINUZ" | ${unpack[$magic]} >"$out.tmp.$$" 2>/dev/null || true
		if [[ $(head -c4 "$out.tmp.$$" | od -An -tx1 | tr -d ' ') == 7f454c46 ]]; then
			mv -f "$out.tmp.$$" "$out"
			echo "$key" >"$out.key"
			return 0
		fi
		rm -f "$out.tmp.$$"
	done
	return 1
}
if [[ $DEBUG_KERNEL == 1 ]]; then
	# The bzImage, not the PVH entry of src/vmlinux: that ELF has the PVH
	# note, but this KASAN build triple-faults at once when QEMU enters it
	# (measured: "-d cpu_reset" shows the resets, no console output at
	# all).  RIG_KERNEL_IMAGE=vmlinux tries the PVH entry anyway.
	case ${RIG_KERNEL_IMAGE:-bzImage} in
	vmlinux)
		grep -qx 'CONFIG_PVH=y' "$RIG_KERNEL_DIR/src/.config" ||
			die "$RIG_KERNEL_DIR has no CONFIG_PVH=y: vmlinux cannot be booted"
		KERNEL_IMAGE=$RIG_KERNEL_DIR/src/vmlinux ;;
	bzImage) KERNEL_IMAGE=$RIG_KERNEL_DIR/src/arch/x86/boot/bzImage ;;
	*) die "RIG_KERNEL_IMAGE: vmlinux or bzImage" ;;
	esac
	[[ -s $KERNEL_IMAGE ]] || die "no $KERNEL_IMAGE"
else
	KERNEL_IMAGE=$VMLINUZ
	if extract_vmlinux "$BUILD_DIR/vmlinux-$KVER"; then
		KERNEL_IMAGE=$BUILD_DIR/vmlinux-$KVER
	else
		echo "guest-run: note: booting the compressed $VMLINUZ (slower)" >&2
	fi
fi

# --- the run ---------------------------------------------------------------
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd -P)
CWD=$(pwd -P)
# The guest mounts fresh tmpfs on /tmp and /run (OUTDIR is mounted after
# them, so it may live there; the working directory may not).
case $CWD/ in
/tmp/* | /run/*) die "the current directory $CWD is hidden in the guest (fresh tmpfs there); cd elsewhere" ;;
esac
# One VM per OUTDIR at a time: a second run would clobber the first one's
# status and logs.  The lock is dropped when this script exits.
exec 9>"$OUTDIR/.rig-lock"
flock -n 9 || die "another guest-run is using $OUTDIR; give this one its own -o OUTDIR"
# Clear our own result files only: the command may keep other output here.
rm -f "$OUTDIR/status" "$OUTDIR/dmesg.txt" "$OUTDIR/console.log" "$OUTDIR/.rig-cmd" \
	"$OUTDIR/kmemleak.txt" "$OUTDIR/lockdep.txt" "$OUTDIR/booted" "$OUTDIR"/console.boot-hang-*.log
# argv, NUL-separated: survives any quoting; the guest reads it with mapfile.
printf '%s\0' "$@" >"$OUTDIR/.rig-cmd"

# Let the guest stop the command itself a little before the host kills the
# VM, so that a hung test still leaves dmesg.txt and a status (124) behind.
# The margin covers boot (~5-10 s under TCG) and shutdown; on the debug
# kernel boot (~60 s, more on a busy host) and the two kmemleak scans after
# the command (~50 s each with 3 GiB).
# (Computed per boot: a boot that hung leaves less time to the next.)
cmd_timeout() {
	if [[ $DEBUG_KERNEL == 1 ]]; then
		echo $(($1 > 600 ? $1 - 300 : $1 / 2))
	else
		echo $(($1 > 60 ? $1 - 30 : $1 / 2))
	fi
}

b64() { printf '%s' "$1" | base64 -w0; }
APPEND="console=ttyS0 loglevel=5 panic=-1 log_buf_len=8M"
# Neither hardware nor its security boundaries exist here; the mitigations
# only slow TCG down.  tsc/timer checks are unreliable under emulation.
APPEND+=" mitigations=off tsc=reliable no_timer_check"
APPEND+=" rig_init=$(b64 "$SCRIPT_DIR/guest-init.sh") rig_cwd=$(b64 "$CWD")"
APPEND+=" rig_out=$(b64 "$OUTDIR")"
if [[ $DEBUG_KERNEL == 1 ]]; then
	# kmemleak is on by default in that build; say so anyway, and tell
	# guest-init.sh where the module tree is
	APPEND+=" kmemleak=on rig_moddir=$(b64 "$RIG_MODDIR")"
	# KERN_INFO on the console until guest-init.sh lowers it again: the
	# boot watchdog below waits for "smp: Brought up"
	APPEND+=" loglevel=7"
	# No involuntary preemption and no reschedule in might_sleep()
	# (cond_resched() still yields): closes a deadlock of 6.1's RCU-tasks
	# boot self test, fixed upstream in 6.6, that hung up to two debug
	# boots in three under TCG (tests/vm/README.md has the mechanism, as
	# seen in gdb).  Without SCHED_DEBUG the model is chosen at boot only,
	# so "none" holds for the whole run.
	APPEND+=" preempt=none"
	# The I/O APIC and PCI INTx routing from SeaBIOS's MP table, not
	# ACPI: the debug kernel's AML interpreter runs the i440FX DSDT's
	# _PRT into ACPICA's 30 s loop timeout, once per virtio device (a
	# minute of every boot), and under preempt=none that minute without
	# a reschedule is reported as an RCU stall and a soft lockup
	APPEND+=" acpi=noirq"
fi
# RIG_APPEND: extra kernel parameters (debugging, e.g. loglevel=8; later
# ones win).
[[ -n ${RIG_APPEND:-} ]] && APPEND+=" $RIG_APPEND"
# RIG_TRACE=1: guest-init.sh traces itself (set -x with timestamps).
[[ ${RIG_TRACE:-0} == 1 ]] && APPEND+=" rig_trace=$(b64 1)"

if [[ $QUIET == 1 ]]; then
	CONSOLE=(-chardev "file,id=con,path=$OUTDIR/console.log")
else
	# stdio for the live view, logfile for the record; signal=on keeps
	# Ctrl-C meaning "kill the VM".
	CONSOLE=(-chardev "stdio,id=con,signal=on,logfile=$OUTDIR/console.log")
fi

# KVM is present on these machines but a KVM boot hangs (no nested
# virtualisation), so TCG is used unconditionally.  "-display none -vga none"
# rather than -nographic: the same headless VM, but SeaBIOS gets no serial
# console, so it cannot send the escape codes that clear the screen and turn
# off line wrapping in the terminal of whoever runs this.
# RIG_MONITOR=PATH: QEMU's monitor on a unix socket there (to look at a hung
# guest: info registers -a, info lapic)
# Otherwise the monitor is a FIFO pair (MONDIR/mon.in, mon.out) that the
# stall watch below reads through vcpu-sample.py.
MONDIR=$(mktemp -d "$BUILD_DIR/mon.XXXXXX")
trap 'rm -rf "$MONDIR"' EXIT
if [[ -n ${RIG_MONITOR:-} ]]; then
	MONITOR="unix:$RIG_MONITOR,server,nowait"
else
	mkfifo "$MONDIR/mon.in" "$MONDIR/mon.out"
	MONITOR="pipe:$MONDIR/mon"
fi
QEMU=(qemu-system-x86_64 -accel tcg -smp 2 -m "$MEM" -display none -vga none -no-reboot -nic none
	-kernel "$KERNEL_IMAGE" -initrd "$INITRAMFS"
	"${CONSOLE[@]}" -serial chardev:con -monitor "$MONITOR"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$OUTDIR,mount_tag=rigout,security_model=none,multidevs=remap")

# Boot watchdog: guest-init.sh writes OUTDIR/booted as soon as it has
# mounted OUTDIR.  A guest that has not got there within BOOT_TIMEOUT is
# stuck in early boot, and is killed and booted again, up to BOOT_TRIES
# times in all.  Seen with the debug kernel under TCG: up to two boots in
# three stopped for good right after "Running RCU-tasks wait API self
# tests", a deadlock in the kernel that preempt=none (above) closes; the
# watchdog stays for anything else that hangs a boot (tests/vm/README.md).
# The guest's own time limits start only once it runs the command, so
# this costs nothing to a slow test.
#
# The hang comes before the second CPU is brought up, which a healthy debug
# boot does 5-11 s after QEMU starts (measured, idle host): a guest whose
# console has no "smp: Brought up" after SMP_TIMEOUT is hung, which finds
# it in a fifth of BOOT_TIMEOUT.  BOOT_TIMEOUT stays for later stalls.
if [[ $DEBUG_KERNEL == 1 ]]; then
	BOOT_TIMEOUT=${RIG_BOOT_TIMEOUT:-300}
	BOOT_TRIES=${RIG_BOOT_TRIES:-5}
	SMP_TIMEOUT=${RIG_SMP_TIMEOUT:-60}
else
	BOOT_TIMEOUT=${RIG_BOOT_TIMEOUT:-150}
	BOOT_TRIES=${RIG_BOOT_TRIES:-3}
	SMP_TIMEOUT=0
fi
# Stall watch: a booted guest that wrote nothing to OUTDIR for STALL_S, or
# is about to be killed at the time limit, has its vCPUs sampled through
# the monitor (vcpu-sample.py: RIPs, interrupt flag, HLT, resolved against
# the kernel's System.map, or the running kernel's own symbols in
# OUTDIR/.rig-kallsyms, and the modules in OUTDIR/.rig-modules) into
# OUTDIR/vcpu-samples.txt.  For the stall no guest-side watchdog can see:
# both CPUs busy, no timer waking anyone, nothing on the console.  At most
# STALL_SAMPLES quiet samples, STALL_S apart, plus one before the kill.
STALL_S=${RIG_STALL_S:-$([[ $DEBUG_KERNEL == 1 ]] && echo 600 || echo 300)}
STALL_SAMPLES=2
if [[ $DEBUG_KERNEL == 1 ]]; then
	SYSTEM_MAP=$RIG_KERNEL_DIR/src/System.map
else
	SYSTEM_MAP=/boot/System.map-$KVER
fi
rm -f "$OUTDIR/vcpu-samples.txt" "$OUTDIR/vcpu-sample.log" "$OUTDIR/.rig-text" \
	"$OUTDIR/.rig-modules" "$OUTDIR/.rig-kallsyms"
vcpu_sample() {
	[[ -p $MONDIR/mon.in ]] || return 0
	python3 "$SCRIPT_DIR/vcpu-sample.py" --mon "$MONDIR/mon" \
		--out "$OUTDIR/vcpu-samples.txt" --why "$1" --map "$SYSTEM_MAP" \
		--text "$OUTDIR/.rig-text" --modules "$OUTDIR/.rig-modules" \
		>>"$OUTDIR/vcpu-sample.log" 2>&1 || true
}
stall_watch() {
	local quiet_since now last n=0 final=0 k
	quiet_since=$(date +%s)
	# no final sample for a short run: it would only delay a healthy end
	((TIMEOUT >= 120)) || final=1
	while kill -0 "$qemu_pid" 2>/dev/null; do
		for ((k = 0; k < 5; k++)); do
			sleep 1
			kill -0 "$qemu_pid" 2>/dev/null || return 0
		done
		now=$(date +%s)
		last=$(find "$OUTDIR" -maxdepth 1 -type f -printf '%T@\n' 2>/dev/null |
			sort -n | tail -n 1)
		last=${last%.*}
		((${last:-0} > quiet_since)) && quiet_since=$last
		if ((n < STALL_SAMPLES && now - quiet_since >= STALL_S)); then
			n=$((n + 1))
			vcpu_sample "nothing written to OUTDIR for $((now - quiet_since)) s"
			quiet_since=$(date +%s)
		fi
		if ((!final && now - start >= TIMEOUT - 25)); then
			final=1
			vcpu_sample "the VM is killed at ${TIMEOUT}s"
		fi
	done
}
start=$(date +%s)
set +e
for ((try = 1; ; try++)); do
	rm -f "$OUTDIR/booted"
	# SECONDS is the limit of the whole run, retries included
	left=$((TIMEOUT - ($(date +%s) - start)))
	# --foreground: qemu stays in our process group, so Ctrl-C reaches it.
	timeout --foreground -k 10 "$left" "${QEMU[@]}" \
		-append "$APPEND rig_cmd_timeout=$(b64 "$(cmd_timeout "$left")")" </dev/null &
	qemu_pid=$!
	boot_hung=0
	hang_why="did not reach its init within ${BOOT_TIMEOUT}s"
	for ((i = 0; i < BOOT_TIMEOUT; i++)); do
		[[ -e $OUTDIR/booted ]] && break
		kill -0 "$qemu_pid" 2>/dev/null || break
		if ((SMP_TIMEOUT && i == SMP_TIMEOUT)) &&
			! grep -q 'smp: Brought up' "$OUTDIR/console.log" 2>/dev/null; then
			hang_why="brought up no second CPU within ${SMP_TIMEOUT}s"
			break
		fi
		sleep 1
	done
	boot_s=$i
	if [[ ! -e $OUTDIR/booted ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		boot_hung=1
		kill -TERM "$qemu_pid"
	else
		stall_watch
	fi
	wait "$qemu_pid"
	qemu_rc=$?
	[[ $boot_hung == 1 ]] || break
	cp -f "$OUTDIR/console.log" "$OUTDIR/console.boot-hang-$try.log" 2>/dev/null
	echo "guest-run: the guest $hang_why (early-boot hang; console in $OUTDIR/console.boot-hang-$try.log)" >&2
	if ((try >= BOOT_TRIES || TIMEOUT - ($(date +%s) - start) <= BOOT_TIMEOUT)); then
		set -e
		echo "guest-run: FAILED: no boot in $try tries" >&2
		exit 124
	fi
	echo "guest-run: booting again (try $((try + 1)) of $BOOT_TRIES)" >&2
done
set -e
elapsed=$(($(date +%s) - start))

# a run that failed for want of time: where the stall watch found the vCPUs
report_samples() {
	[[ -s $OUTDIR/vcpu-samples.txt ]] || return 0
	echo "guest-run: where the vCPUs were ($OUTDIR/vcpu-samples.txt):" >&2
	grep -m 40 -E '^(===|vCPU)' "$OUTDIR/vcpu-samples.txt" >&2 || true
}
if [[ $qemu_rc == 124 || $qemu_rc == 137 ]]; then
	report_samples
	echo "guest-run: TIMEOUT: VM killed after ${TIMEOUT}s (see $OUTDIR/console.log)" >&2
	exit 124
fi
if [[ ! -s $OUTDIR/status && $qemu_rc != 0 ]]; then
	# QEMU exits 0 when the guest powers off; anything else is QEMU's own
	# failure (bad option, missing file, killed).
	echo "guest-run: FAILED: qemu exited $qemu_rc; see messages above and $OUTDIR/console.log" >&2
	exit 125
fi
if [[ ! -s $OUTDIR/status ]]; then
	report_samples
	echo "guest-run: FAILED: guest wrote no status (qemu exit $qemu_rc after ${elapsed}s); see $OUTDIR/console.log" >&2
	exit 124
fi
status=$(tr -d '[:space:]' <"$OUTDIR/status")
[[ $status =~ ^[0-9]+$ ]] || { echo "guest-run: FAILED: bad status '$status'" >&2; exit 124; }
[[ $status != 124 ]] || report_samples
echo "guest-run: command exited $status (VM ${elapsed}s, guest init after ~${boot_s}s, $try boot(s), kernel $KVER)" >&2

if [[ $CHECK_LOG == 1 ]]; then
	if [[ ! -f $OUTDIR/dmesg.txt ]]; then
		echo "guest-run: FAILED: no dmesg.txt from the guest" >&2
		exit 124
	fi
	dirty=0
	if ! "$SCRIPT_DIR/check-kernel-log.sh" "$OUTDIR/dmesg.txt" >&2; then
		echo "guest-run: kernel log is dirty: $OUTDIR/dmesg.txt" >&2
		dirty=1
	fi
	if [[ $DEBUG_KERNEL == 1 ]]; then
		# guest-init.sh writes both after the command; a missing file
		# means the checker did not run, which is not a clean result
		if [[ ! -f $OUTDIR/kmemleak.txt ]]; then
			echo "guest-run: FAILED: no kmemleak report from the debug kernel (kmemleak off or its scan failed; see $OUTDIR/console.log)" >&2
			dirty=1
		elif grep -q 'unreferenced object' "$OUTDIR/kmemleak.txt"; then
			echo "guest-run: kmemleak: $(grep -c 'unreferenced object' "$OUTDIR/kmemleak.txt") unreferenced object(s), see $OUTDIR/kmemleak.txt:" >&2
			head -n 40 "$OUTDIR/kmemleak.txt" >&2
			dirty=1
		fi
		# lockdep reports once, then turns itself off for the rest of
		# the run: a run with debug_locks 0 checked less than it claims
		if ! grep -Eq '^ *debug_locks: +1$' "$OUTDIR/lockdep.txt" 2>/dev/null; then
			echo "guest-run: lockdep was off at the end of the run ($(grep -h debug_locks "$OUTDIR/lockdep.txt" 2>/dev/null || echo 'no lockdep.txt')); see $OUTDIR/dmesg.txt" >&2
			dirty=1
		fi
	fi
	[[ $dirty == 1 && $status == 0 ]] && exit 99
fi
exit "$status"
