// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The JSON string writer of the tools (datperf --json): any byte string
// becomes one valid JSON string literal (RFC 8259).  Quote and backslash
// are escaped, control characters become \b \f \n \r \t or \u00XX, DEL
// becomes \u007f, well-formed UTF-8 passes through, and every byte that is
// not part of a well-formed UTF-8 sequence (a stray continuation byte, a
// truncated or overlong sequence, a surrogate, beyond U+10FFFF) becomes
// \u00XX: its value as a Latin-1 character, so the output is always valid
// UTF-8 and always parses.  Header-only: the host tests include it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace dattools {

/* Length of the well-formed UTF-8 sequence at s[i], 0 if there is none. */
inline std::size_t utf8_len(std::string_view s, std::size_t i)
{
	const auto b = [&](std::size_t k) { return (unsigned char)s[i + k]; };
	const auto cont = [&](std::size_t k) {
		return i + k < s.size() && (b(k) & 0xc0) == 0x80;
	};
	unsigned char c = b(0);

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return cont(1) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (!cont(1) || !cont(2))
			return 0;
		if (c == 0xe0 && b(1) < 0xa0)		/* overlong */
			return 0;
		if (c == 0xed && b(1) >= 0xa0)		/* surrogate */
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (!cont(1) || !cont(2) || !cont(3))
			return 0;
		if (c == 0xf0 && b(1) < 0x90)		/* overlong */
			return 0;
		if (c == 0xf4 && b(1) >= 0x90)		/* > U+10FFFF */
			return 0;
		return 4;
	}
	return 0;
}

/* @s as a JSON string literal, quotes included. */
inline std::string json_string(std::string_view s)
{
	std::string o = "\"";
	char u[8];

	for (std::size_t i = 0; i < s.size();) {
		unsigned char c = (unsigned char)s[i];
		std::size_t n = utf8_len(s, i);

		if (n > 1) {
			o.append(s.substr(i, n));
			i += n;
			continue;
		}
		i++;
		switch (c) {
		case '"': o += "\\\""; continue;
		case '\\': o += "\\\\"; continue;
		case '\b': o += "\\b"; continue;
		case '\f': o += "\\f"; continue;
		case '\n': o += "\\n"; continue;
		case '\r': o += "\\r"; continue;
		case '\t': o += "\\t"; continue;
		default:
			break;
		}
		if (c < 0x20 || c >= 0x7f) {	/* control, DEL, not UTF-8 */
			std::snprintf(u, sizeof(u), "\\u%04x", c);
			o += u;
		} else {
			o += (char)c;
		}
	}
	return o + "\"";
}

} // namespace dattools
