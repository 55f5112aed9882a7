// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat's entry points for libdat2's registry: dat_provider_init
// (one call per dat.conf line naming this library) and dat_provider_fini,
// and the DAT 2.0 table they register.
//
// dat.conf line (datinfo --dat2-conf prints them):
//   <ia_name> u2.0 <threadsafe|nonthreadsafe> default libdaplkdat.so.2
//       kdat.2.0 "<kdat IA, e.g. rxe0>" ""
// The ia_params field names the kernel IA (kernel_ia_from_params).
//
// libdat2 keeps only the ia_open entry of what is registered (per IA
// name); dat_ia_close then takes the name from the IA's table
// (device_name) and the version and thread safety from its provider
// attributes.  So every name gets its own copy of the one table
// (Served::table), and ia_query reports the line's version and thread
// safety.
//
// The library pins itself (RTLD_NODELETE) on the first registration:
// libdat2 dlclose()s it when the last IA of a name closes, while objects,
// rings and the handle table of other names may still live.
#include "convert.hpp"

#include "registry.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>

namespace kdat::dat2p {

::dat2::DAT_PROVIDER provider_table;

namespace {

std::mutex served_lock;
std::list<Served> served_list;	/* never shrinks: tables stay valid */
std::once_flag table_once;

DAT_PROVIDER table12;
std::once_flag table12_once;

using AddFn = ::dat2::DAT_RETURN (*)(const ::dat2::DAT_PROVIDER *,
				     const ::dat2::DAT_PROVIDER_INFO *);

/*
 * libdat2's registry function @name (our own libdat's is local).  Only
 * libdat2's: a DAT 1.2 registry (libdat.so.1 reading a u2.0 line) would
 * take the DAT 2.0 table for a DAT 1.2 one.
 */
void *registry_fn(const char *name)
{
	void *dl = dlopen("libdat2.so.2", RTLD_NOLOAD | RTLD_NOW);
	void *f = nullptr;

	if (dl) {
		f = dlsym(dl, name);
		dlclose(dl);
	}
	if (!f) {
		Dl_info info;

		f = dlsym(RTLD_DEFAULT, name);
		if (f && (!dladdr(f, &info) || !info.dli_fname ||
			  !std::strstr(info.dli_fname, "libdat2.so")))
			f = nullptr;
	}
	return f;
}

void pin_self()
{
	Dl_info info;

	if (dladdr((void *)&pin_self, &info) && info.dli_fname) {
		/* the executable itself (static tests) is not a library */
		void *dl = dlopen(info.dli_fname,
				  RTLD_NOLOAD | RTLD_NODELETE | RTLD_NOW);
		if (dl)
			dlclose(dl);	/* NODELETE stays */
	}
}

} // namespace

void fill_provider_table()
{
	std::call_once(table_once, [] {
		std::memset(&provider_table, 0, sizeof(provider_table));
		fill_ia(provider_table);
		fill_evd(provider_table);
		fill_lmr(provider_table);
		fill_ep_srq_cm(provider_table);
		provider_table.device_name = "kdat";
	});
}

DAT_PROVIDER *provider12() noexcept
{
	std::call_once(table12_once, [] {
		fill_builtin_table(table12);
		/* libdaplkdat opens its IAs itself, never through libdat's registry */
		table12.ia_open_func = nullptr;
		table12.device_name = "kdat";
	});
	return &table12;
}

std::string kernel_ia_from_params(const char *params)
{
	std::string s;

	if (!params)
		return s;
	const char *p = params;
	while (*p && (std::isspace((unsigned char)*p) || *p == '"'))
		p++;
	while (*p && !std::isspace((unsigned char)*p) && *p != '"')
		s.push_back(*p++);
	return s;
}

const Served *served(const char *name, bool thread_safe) noexcept
{
	if (!name)
		return nullptr;
	std::lock_guard<std::mutex> g(served_lock);
	for (const Served &s : served_list)
		if (s.name == name && (s.info.is_thread_safe != 0) == thread_safe)
			return &s;
	return nullptr;
}

const Served *served_by_table(const void *face) noexcept
{
	std::lock_guard<std::mutex> g(served_lock);
	for (const Served &s : served_list)
		if (&s.table == face)
			return &s;
	return nullptr;
}

bool is_our_table(const void *face) noexcept
{
	return face == &provider_table || served_by_table(face);
}

const Served *serve(const ::dat2::DAT_PROVIDER_INFO &info, const char *params)
{
	fill_provider_table();
	std::string name(info.ia_name, strnlen(info.ia_name, DAT_NAME_MAX_LENGTH));
	std::string kernel = kernel_ia_from_params(params);

	if (kernel.empty())
		kernel = name;	/* as libdat's own dat.conf lines do */
	const bool ts = info.is_thread_safe != 0;
	std::lock_guard<std::mutex> g(served_lock);
	/*
	 * One record per dat.conf line (name and thread safety: libdat2 keys
	 * its registry, and dat_ia_close, by both), never changed once
	 * published: readers hold pointers into it without the lock.  The
	 * line seen first wins (libdat2 reloading us announces it again).
	 */
	for (Served &s : served_list)
		if (s.name == name && (s.info.is_thread_safe != 0) == ts)
			return &s;
	Served &s = served_list.emplace_back();
	s.table = provider_table;
	s.name = name;
	s.kernel_name = kernel;
	s.info = info;
	s.table.device_name = s.name.c_str();
	s.table.ia_open_func = ia_open_for(ts);
	return &s;
}

} // namespace kdat::dat2p

using namespace kdat::dat2p;

extern "C" __attribute__((visibility("default"))) void
dat_provider_init(const ::dat2::DAT_PROVIDER_INFO *info,
		  const char *instance_data)
{
	if (!info)
		return;
	if (info->dapl_version_major != 2) {
		std::fprintf(stderr, "libdaplkdat: %.*s: a DAT 2.0 provider, "
			     "asked for DAT %u.%u\n", DAT_NAME_MAX_LENGTH,
			     info->ia_name, info->dapl_version_major,
			     info->dapl_version_minor);
		return;
	}
	try {
		const Served *s = serve(*info, instance_data);
		auto add = (AddFn)registry_fn("dat_registry_add_provider");

		pin_self();
		if (!add) {
			std::fprintf(stderr, "libdaplkdat: libdat2's "
				     "dat_registry_add_provider not found\n");
			return;
		}
		::dat2::DAT_RETURN r = add(&s->table, info);
		if (r != ::dat2::DAT_SUCCESS &&
		    (r & 0x3fff0000) != ::dat2::DAT_PROVIDER_ALREADY_REGISTERED)
			std::fprintf(stderr, "libdaplkdat: registering %s "
				     "failed (0x%x)\n", s->name.c_str(),
				     (unsigned)r);
	} catch (...) {
		std::fprintf(stderr, "libdaplkdat: out of memory\n");
	}
}

extern "C" __attribute__((visibility("default"))) void
dat_provider_fini(const ::dat2::DAT_PROVIDER_INFO *info)
{
	if (!info)
		return;
	char name[DAT_NAME_MAX_LENGTH];
	std::memcpy(name, info->ia_name, sizeof(name));
	name[sizeof(name) - 1] = 0;
	const Served *s = served(name, info->is_thread_safe != 0);
	auto remove = (AddFn)registry_fn("dat_registry_remove_provider");

	/* the record stays: an IA of the name may be opened again */
	if (s && remove)
		remove(&s->table, info);
}
