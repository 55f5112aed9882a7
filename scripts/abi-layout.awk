# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# abi-layout.awk include/uapi/kdat_abi.h > layout.c (scripts/cross.sh).
# A C program that prints the layout of every struct of the ABI header
# (sizeof, alignof, each member's offset and size) and every ioctl (its
# direction, type, number and argument size),
# to compare between architectures: a 32-bit process on a 64-bit kernel
# (compat_ptr_ioctl) must see the very same layout.  A member line it
# cannot read becomes an #error, so nothing is skipped silently.
BEGIN {
	print "#include <stdio.h>\n#include <stddef.h>\n#include <uapi/kdat_abi.h>"
	print "#define M(s, m) printf(\"M %s.%s %zu %zu\\n\", #s, #m, offsetof(struct s, m), sizeof(((struct s *)0)->m))"
	print "#define S(s) printf(\"S %s %zu %zu\\n\", #s, sizeof(struct s), _Alignof(struct s))"
	# an ioctl decoded, not its number: the _IOC encoding differs between
	# architectures (powerpc's direction bits), what it encodes must not
	print "#define I(n) printf(\"I %s %c%c type %#x nr %u size %u\\n\", #n, (_IOC_DIR(n) & _IOC_READ) ? 'R' : '-', (_IOC_DIR(n) & _IOC_WRITE) ? 'W' : '-', (unsigned int)_IOC_TYPE(n), (unsigned int)_IOC_NR(n), (unsigned int)_IOC_SIZE(n))"
	print "int main(void)\n{"
}
/^struct kdat_[A-Za-z0-9_]+ \{/ { name = $2; body = 1; print "\tS(" name ");"; next }
body && /^\};/ { body = 0; next }
body {
	line = $0
	gsub(/\/\*.*\*\//, "", line)
	sub(/^[ \t]+/, "", line); sub(/[ \t]+$/, "", line)
	if (line == "" || line ~ /^(\/\*|\*)/)
		next
	# an anonymous union: its members are the struct's, at their offsets
	if (line == "union {" || line == "};")
		next
	if (match(line, /^(__[us](8|16|32|64)|__aligned_u64|char|struct kdat_[a-z0-9_]+) +/) && line ~ /;$/) {
		decl = substr(line, RLENGTH + 1)
		sub(/;$/, "", decl)
		n = split(decl, names, ",")
		for (i = 1; i <= n; i++) {
			m = names[i]
			gsub(/[ \t]/, "", m); sub(/\[.*/, "", m)
			print "\tM(" name ", " m ");"
		}
		next
	}
	print "#error kdat_abi.h: a member this check cannot read: " line
}
/^#define KDAT_IOC_[A-Z0-9_]+[ \t]+_IO/ { print "\tI(" $2 ");" }
END { print "\treturn 0;\n}" }
