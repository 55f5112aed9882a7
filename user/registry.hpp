// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The uDAPL registry: dat.conf, provider registration, dat_ia_open.
//
// dat.conf (from $DAT_OVERRIDE if set, else /etc/dat.conf) lists one IA
// per line in the standard DAT format:
//
//   <ia_name> u<major>.<minor> <threadsafe|nonthreadsafe>
//       <default|nondefault> <library> <vendor>.<major>.<minor>
//       "<ia params>" "<platform params>"
//
// '#' starts a comment.  A malformed line is skipped with a message on
// stderr.  An entry whose library is libdat itself is served by the
// built-in provider (the kernel IA named by the first word of the ia
// params, or the ia_name if they are empty); any other library is
// dlopen()ed and its dat_provider_init() registers the provider.  With no
// dat.conf at all, the built-in provider serves every IA the kernel lists.
#pragma once

#include <dat/udat.h>
#include <uapi/kdat_abi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "handles.hpp"

namespace kdat {

struct ConfEntry {
	std::string ia_name;
	DAT_UINT32 dapl_major = 0, dapl_minor = 0;
	bool thread_safe = true;
	bool is_default = false;
	std::string library;
	std::string vendor;
	DAT_UINT32 provider_major = 0, provider_minor = 0;
	std::string ia_params;
	std::string platform_params;
	int line = 0;
	/* the library is libdat itself (set when the file is loaded) */
	bool builtin = false;

	DAT_PROVIDER_INFO info() const;
};

/*
 * One line of dat.conf.  An entry, or nullopt with *error set for a
 * malformed line, or nullopt with *error empty for a blank or comment line.
 */
std::optional<ConfEntry> parse_dat_conf_line(std::string_view line,
					     std::string *error);

struct ConfParse {
	std::vector<ConfEntry> entries;
	/* "<source>:<line>: <why>; line skipped" */
	std::vector<std::string> errors;
};

ConfParse parse_dat_conf(std::string_view text, std::string_view source);

/* $DAT_OVERRIDE if set and non-empty, else /etc/dat.conf. */
std::string dat_conf_path();

/* The largest dat.conf read (bytes). */
constexpr std::size_t kDatConfMax = 1 << 20;

/*
 * Read a dat.conf: a regular file (symbolic links followed) of at most
 * kDatConfMax bytes.  Never blocks on a FIFO or a device: anything else is
 * refused without reading.  The text, or nullopt with *why set (*missing:
 * the file does not exist).
 */
std::optional<std::string> read_dat_conf(const std::string &path,
					 std::string *why,
					 bool *missing = nullptr);

/* Does @library name libdat itself (the built-in provider)? */
bool is_builtin_library(const std::string &library);

/* The kernel IA a built-in entry opens. */
std::string kernel_ia_name(const ConfEntry &e);

/* dat_ia_close succeeded on @ia (entry as it was before the close). */
void registry_ia_closed(DAT_IA_HANDLE ia, const HandleEntry &e);

/* Tests: forget dat.conf and every registration, read it again later. */
void registry_reset();

/*
 * Fill @t with the built-in provider's entries (the DAT 1.2 table its
 * objects dispatch through; libdaplkdat's IAs use one of their own).
 */
void fill_builtin_table(DAT_PROVIDER &t);

/* Build the provider attributes (ia.cpp). */
void fill_provider_attr(const struct kdat_uia_attr &u, DAT_PROVIDER_ATTR &p);

} // namespace kdat
