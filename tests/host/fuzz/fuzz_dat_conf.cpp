// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libFuzzer target: libdat's dat.conf parser (user/registry.cpp), linked
// from the library's own sources, unchanged.
//
// Beyond "no crash, no sanitizer report" it checks what the parser
// promises: entries carry increasing line numbers within the text, the IA
// name fits DAT_NAME_MAX_LENGTH, every error names its line, and an entry
// written back in the canonical dat.conf form parses to the same fields
// (the printer below knows the format from registry.hpp, not the parser).
#include "registry.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using kdat::ConfEntry;

static void fail(const char *what, const std::string &detail)
{
	std::fprintf(stderr, "fuzz_dat_conf: %s: %s\n", what, detail.c_str());
	std::abort();
}

static std::string canonical(const ConfEntry &e)
{
	return e.ia_name + " u" + std::to_string(e.dapl_major) + "." +
	       std::to_string(e.dapl_minor) +
	       (e.thread_safe ? " threadsafe" : " nonthreadsafe") +
	       (e.is_default ? " default " : " nondefault ") + e.library + " " +
	       e.vendor + "." + std::to_string(e.provider_major) + "." +
	       std::to_string(e.provider_minor) + " \"" + e.ia_params + "\" \"" +
	       e.platform_params + "\"";
}

static bool same(const ConfEntry &a, const ConfEntry &b)
{
	return a.ia_name == b.ia_name && a.dapl_major == b.dapl_major &&
	       a.dapl_minor == b.dapl_minor && a.thread_safe == b.thread_safe &&
	       a.is_default == b.is_default && a.library == b.library &&
	       a.vendor == b.vendor && a.provider_major == b.provider_major &&
	       a.provider_minor == b.provider_minor &&
	       a.ia_params == b.ia_params &&
	       a.platform_params == b.platform_params;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	std::size_t lines = 1;
	int prev = 0;

	for (char c : text)
		lines += c == '\n';
	kdat::ConfParse p = kdat::parse_dat_conf(text, "fuzz.conf");
	for (const ConfEntry &e : p.entries) {
		if (e.line <= prev || (std::size_t)e.line > lines)
			fail("line numbers", std::to_string(e.line));
		prev = e.line;
		if (e.ia_name.empty() || e.ia_name.size() >= DAT_NAME_MAX_LENGTH)
			fail("ia_name length", e.ia_name);
		if (e.vendor.empty())
			fail("empty vendor", canonical(e));
		DAT_PROVIDER_INFO info = e.info();
		if (std::string(info.ia_name) != e.ia_name)
			fail("info().ia_name", e.ia_name);
		(void)kdat::is_builtin_library(e.library);
		std::string ia = kdat::kernel_ia_name(e);
		if (ia.empty())
			fail("kernel_ia_name empty", canonical(e));

		std::string again = canonical(e), why;
		auto r = kdat::parse_dat_conf_line(again, &why);
		if (!r)
			fail("canonical form refused", again + " (" + why + ")");
		if (!same(*r, e))
			fail("canonical form parses differently", again);
	}
	for (const std::string &err : p.errors)
		if (err.rfind("fuzz.conf:", 0) != 0 ||
		    err.find("; line skipped") == std::string::npos)
			fail("error format", err);
	return 0;
}
