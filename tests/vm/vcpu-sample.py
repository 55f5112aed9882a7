#!/usr/bin/env python3
"""Where a guest's vCPUs are, read through QEMU's monitor (guest-run.sh).

A guest that stops making progress with its CPUs busy and nothing on its
console (timers no longer waking anyone) can only be looked at from the
host.  This samples `info registers -a` a few times through the monitor's
FIFO pair (-monitor pipe:PATH: PATH.in, PATH.out), adds `info lapic` of
each CPU once, appends the raw text to OUT and a summary: per vCPU, each
RIP seen with its privilege level, interrupt flag and HLT state, resolved
to a symbol where it can be:

  --map SYSTEM_MAP   the guest kernel's System.map; OUTDIR/.rig-text (the
                     running kernel's _text, written by guest-init.sh)
                     gives the KASLR offset
  --modules FILE     lines "name text_addr ko_path" (kernel-tests.sh)

usage: vcpu-sample.py --mon PATH --out FILE --why TEXT [--samples N]
                      [--map MAP] [--text FILE] [--modules FILE]
"""
import argparse
import bisect
import os
import re
import select
import subprocess
import time


def drain(fd, until=None, secs=2.0):
    """Read what the monitor wrote; stop after the prompt or @secs."""
    out = b""
    end = time.monotonic() + secs
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            break
        try:
            d = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not d:
            break
        out += d
        if until and out.rstrip().endswith(until):
            break
    return out.decode(errors="replace")


def ask(fin, fout, cmd):
    drain(fout, secs=0.2)
    os.write(fin, (cmd + "\n").encode())
    txt = drain(fout, until=b"(qemu)", secs=3.0)
    # the monitor's readline echoes the command with cursor moves
    txt = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", txt)
    return "\n".join(l for l in txt.splitlines()
                     if not l.startswith("i") or "info" not in l)


class Symbols:
    def __init__(self):
        self.addrs, self.names = [], []

    def add(self, addr, name):
        self.addrs.append(addr)
        self.names.append(name)

    def done(self):
        order = sorted(range(len(self.addrs)), key=self.addrs.__getitem__)
        self.addrs = [self.addrs[i] for i in order]
        self.names = [self.names[i] for i in order]

    def find(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None
        return "%s+0x%x" % (self.names[i], addr - self.addrs[i])


def kernel_symbols(map_path, text_file):
    syms, text = Symbols(), None
    with open(map_path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                syms.add(int(p[0], 16), p[2])
                if p[2] == "_text":
                    text = int(p[0], 16)
    shift = 0
    if text is not None and text_file and os.path.exists(text_file):
        with open(text_file) as f:
            m = re.search(r"[0-9a-fA-F]{16}", f.read())
        if m:
            shift = int(m.group(0), 16) - text
    syms.addrs = [a + shift for a in syms.addrs]
    syms.done()
    return syms


def readelf(args, ko):
    return subprocess.run(["readelf", "-W"] + args + [ko],
                          capture_output=True, text=True).stdout


def module_symbols(path):
    """[(text_start, text_end, name, Symbols)] from "name addr ko" lines
    (the last line of a module wins: it was loaded again).  Only the
    functions of its .text section, which is where that address points."""
    last = {}
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and os.path.exists(p[2]):
                last[p[0]] = p
    mods = []
    for name, (_, addr, ko) in last.items():
        base = int(addr, 16)
        idx, size = None, 0
        for l in readelf(["-S"], ko).splitlines():
            m = re.match(r"\s*\[\s*(\d+)\]\s+\.text\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)",
                         l)
            if m:
                idx, size = m.group(1), int(m.group(2), 16)
        if idx is None:
            continue
        s = Symbols()
        for l in readelf(["-s"], ko).splitlines():
            q = l.split()
            if len(q) >= 8 and q[3] == "FUNC" and q[6] == idx:
                s.add(base + int(q[1], 16), q[7])
        s.done()
        mods.append((base, base + size, name, s))
    return mods


def resolve(addr, ksyms, mods):
    for lo, hi, name, s in mods:
        if lo <= addr < hi:
            r = s.find(addr)
            return "[%s] %s" % (name, r or "?")
    # Debian's stock System.map is a stub: symbols for the debug kernel
    return (ksyms.find(addr) if ksyms and ksyms.addrs else None) or "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mon", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--why", default="")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--map")
    ap.add_argument("--text")
    ap.add_argument("--modules")
    a = ap.parse_args()

    raw, seen = [], {}
    try:
        sample(a, raw, seen)
    except OSError as e:
        # QEMU gone mid-sample: keep what came
        raw.append("--- sampling stopped: %s\n" % e)
    ksyms = None
    if a.map and os.path.exists(a.map):
        ksyms = kernel_symbols(a.map, a.text)
    # the running kernel's own symbols (guest-init.sh), beside .rig-text
    live = a.text and os.path.join(os.path.dirname(a.text), ".rig-kallsyms")
    if (not ksyms or not ksyms.addrs) and live and os.path.exists(live):
        ksyms = kernel_symbols(live, None)
    mods = module_symbols(a.modules)
    with open(a.out, "a") as f:
        f.write("=== %s: %s\n" % (time.strftime("%H:%M:%S"), a.why))
        for (cpu, rip, state), n in sorted(seen.items()):
            where = ("(user)" if "CPL=3" in state
                     else resolve(rip, ksyms, mods))
            f.write("vCPU %d: %2d of %d samples at %016x %s  %s\n"
                    % (cpu, n, a.samples, rip, state, where))
        f.write("".join(r if r.endswith("\n") else r + "\n" for r in raw))


def sample(a, raw, seen):
    fout = os.open(a.mon + ".out", os.O_RDONLY | os.O_NONBLOCK)
    fin = os.open(a.mon + ".in", os.O_WRONLY | os.O_NONBLOCK)
    for i in range(a.samples):
        txt = ask(fin, fout, "info registers -a")
        raw.append("--- sample %d\n%s" % (i + 1, txt))
        cpu = None
        for line in txt.splitlines():
            m = re.match(r"CPU#(\d+)", line)
            if m:
                cpu = int(m.group(1))
            m = re.search(r"[RE]IP=([0-9a-f]+) [RE]FL=([0-9a-f]+).*CPL=(\d).*HLT=(\d)",
                          line)
            if m and cpu is not None:
                key = (cpu, int(m.group(1), 16),
                       "CPL=%s IF=%d HLT=%s" % (m.group(3),
                                                (int(m.group(2), 16) >> 9) & 1,
                                                m.group(4)))
                seen[key] = seen.get(key, 0) + 1
        time.sleep(0.5)
    for c in range(8):
        txt = ask(fin, fout, "info lapic %d" % c)
        # past the last CPU: "No CPU is selected"
        if "LVT" not in txt:
            break
        raw.append("--- info lapic %d\n%s" % (c, txt))
    os.close(fin)
    os.close(fout)


if __name__ == "__main__":
    main()
