// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The uDAPL registry (see registry.hpp): dat.conf parsing, provider
// registration (dat_registry_add_provider / _remove_provider / 
// _list_providers), loading provider libraries, and dat_ia_openv.
//
// Provider libraries follow the DAT 1.2 registry protocol: the library
// is dlopen()ed when one of its IA names is first opened and its
// dat_provider_init(info, ia_params) registers a provider table for the
// name; once every IA of that name is closed, dat_provider_fini(info) is
// called (and the registration dropped if the provider left it), and the
// library is dlclose()d when none of its names is in use, none of the
// tables its init registered is still registered and no call is running
// in it (Library::pin, Registered::lib, HandleEntry::lib).  So
// dat_provider_fini may run while a call another thread made on a
// closing IA is still inside the provider.
#include "registry.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

#include "dispatch.hpp"
#include "objects.hpp"
#include "unique_fd.hpp"

namespace kdat {

/* ------------------------------------------------------------------ */
/* dat.conf                                                             */

DAT_PROVIDER_INFO ConfEntry::info() const
{
	DAT_PROVIDER_INFO i;

	std::memset(&i, 0, sizeof(i));
	std::strncpy(i.ia_name, ia_name.c_str(), DAT_NAME_MAX_LENGTH - 1);
	i.dapl_version_major = dapl_major;
	i.dapl_version_minor = dapl_minor;
	i.is_thread_safe = thread_safe ? DAT_TRUE : DAT_FALSE;
	return i;
}

namespace {

bool parse_u32(std::string_view s, DAT_UINT32 &out)
{
	if (s.empty())
		return false;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
	return ec == std::errc() && p == s.data() + s.size();
}

struct Token {
	std::string text;
	bool quoted;
};

/* Split a line into words and "quoted strings"; drop the comment. */
bool tokenize(std::string_view line, std::vector<Token> &out,
	      std::string *error)
{
	std::size_t i = 0, n = line.size();

	/*
	 * A NUL or another control byte would end the name C code sees
	 * early: the IA registered would not be the one dat.conf names.
	 */
	for (char c : line) {
		if (std::iscntrl((unsigned char)c) && c != '\t' && c != '\r' &&
		    c != '\n') {
			*error = "control character in the line";
			return false;
		}
	}
	while (i < n) {
		char c = line[i];

		if (std::isspace((unsigned char)c)) {
			i++;
			continue;
		}
		if (c == '#')
			break;
		if (c == '"') {
			std::size_t end = line.find('"', i + 1);

			if (end == std::string_view::npos) {
				*error = "unterminated quoted string";
				return false;
			}
			out.push_back({ std::string(line.substr(i + 1,
								end - i - 1)),
					true });
			i = end + 1;
			if (i < n && !std::isspace((unsigned char)line[i]) &&
			    line[i] != '#') {
				*error = "text right after a quoted string";
				return false;
			}
			continue;
		}
		std::size_t start = i;
		while (i < n && !std::isspace((unsigned char)line[i]) &&
		       line[i] != '#' && line[i] != '"')
			i++;
		if (i < n && line[i] == '"') {
			*error = "quote inside a word";
			return false;
		}
		out.push_back({ std::string(line.substr(start, i - start)),
				false });
	}
	return true;
}

} // namespace

std::optional<ConfEntry> parse_dat_conf_line(std::string_view line,
					     std::string *error)
{
	std::vector<Token> t;
	ConfEntry e;

	error->clear();
	if (!tokenize(line, t, error))
		return std::nullopt;
	if (t.empty())
		return std::nullopt;	/* blank or comment */
	if (t.size() != 8) {
		*error = "expected 8 fields, found " + std::to_string(t.size());
		return std::nullopt;
	}
	for (int i = 0; i < 6; i++) {
		if (t[i].quoted) {
			*error = "field " + std::to_string(i + 1) +
				 " must not be quoted";
			return std::nullopt;
		}
	}

	e.ia_name = t[0].text;
	if (e.ia_name.size() >= DAT_NAME_MAX_LENGTH) {
		*error = "IA name too long";
		return std::nullopt;
	}

	/* u<major>.<minor> */
	const std::string &v = t[1].text;
	std::size_t dot = v.find('.');
	if (v.size() < 4 || v[0] != 'u' || dot == std::string::npos ||
	    !parse_u32(std::string_view(v).substr(1, dot - 1), e.dapl_major) ||
	    !parse_u32(std::string_view(v).substr(dot + 1), e.dapl_minor)) {
		*error = "bad API version '" + v + "' (want u<major>.<minor>)";
		return std::nullopt;
	}

	if (t[2].text == "threadsafe") {
		e.thread_safe = true;
	} else if (t[2].text == "nonthreadsafe") {
		e.thread_safe = false;
	} else {
		*error = "bad thread safety '" + t[2].text +
			 "' (want threadsafe or nonthreadsafe)";
		return std::nullopt;
	}

	if (t[3].text == "default") {
		e.is_default = true;
	} else if (t[3].text == "nondefault") {
		e.is_default = false;
	} else {
		*error = "bad default flag '" + t[3].text +
			 "' (want default or nondefault)";
		return std::nullopt;
	}

	e.library = t[4].text;

	/* <vendor>.<major>.<minor>; the vendor itself may contain dots */
	const std::string &pv = t[5].text;
	std::size_t d2 = pv.rfind('.');
	std::size_t d1 = d2 == std::string::npos || d2 == 0 ?
				 std::string::npos : pv.rfind('.', d2 - 1);
	if (d1 == std::string::npos || d1 == 0 ||
	    !parse_u32(std::string_view(pv).substr(d1 + 1, d2 - d1 - 1),
		       e.provider_major) ||
	    !parse_u32(std::string_view(pv).substr(d2 + 1),
		       e.provider_minor)) {
		*error = "bad provider version '" + pv +
			 "' (want <vendor>.<major>.<minor>)";
		return std::nullopt;
	}
	e.vendor = pv.substr(0, d1);

	if (!t[6].quoted || !t[7].quoted) {
		*error = "ia params and platform params must be quoted";
		return std::nullopt;
	}
	e.ia_params = t[6].text;
	e.platform_params = t[7].text;
	return e;
}

ConfParse parse_dat_conf(std::string_view text, std::string_view source)
{
	ConfParse out;
	std::size_t pos = 0;
	int lineno = 0;

	while (pos <= text.size()) {
		std::size_t nl = text.find('\n', pos);
		std::string_view line = text.substr(
			pos, nl == std::string_view::npos ? std::string_view::npos
							  : nl - pos);
		std::string why;

		lineno++;
		if (auto e = parse_dat_conf_line(line, &why)) {
			e->line = lineno;
			out.entries.push_back(std::move(*e));
		} else if (!why.empty()) {
			out.errors.push_back(std::string(source) + ":" +
					     std::to_string(lineno) + ": " +
					     why + "; line skipped");
		}
		if (nl == std::string_view::npos)
			break;
		pos = nl + 1;
	}
	return out;
}

std::string dat_conf_path()
{
	/* a set-ID program reads /etc/dat.conf, not its caller's choice */
	const char *o = secure_getenv("DAT_OVERRIDE");

	return o && *o ? std::string(o) : std::string("/etc/dat.conf");
}

namespace {

std::string errno_text(int e)
{
	return std::system_category().message(e);
}

const char *not_regular(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory, not a regular file";
	if (S_ISFIFO(m))
		return "a FIFO, not a regular file";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device, not a regular file";
	return "not a regular file";
}

} // namespace

std::optional<std::string> read_dat_conf(const std::string &path,
					 std::string *why, bool *missing)
{
	const std::string too_big = "larger than " +
				    std::to_string(kDatConfMax) + " bytes";
	struct stat st;

	if (missing)
		*missing = false;
	/* refuse a device before opening it: an open may have side effects */
	if (::stat(path.c_str(), &st)) {
		if (missing)
			*missing = errno == ENOENT;
		*why = errno_text(errno);
		return std::nullopt;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = not_regular(st.st_mode);
		return std::nullopt;
	}
	/* O_NONBLOCK: a FIFO swapped in after the stat does not block */
	UniqueFd fd(::open(path.c_str(),
			   O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
	if (fd.get() < 0) {
		if (missing)
			*missing = errno == ENOENT;
		*why = errno_text(errno);
		return std::nullopt;
	}
	/* what was opened is what counts */
	if (::fstat(fd.get(), &st)) {
		*why = errno_text(errno);
		return std::nullopt;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = not_regular(st.st_mode);
		return std::nullopt;
	}
	if (st.st_size < 0 || (std::uint64_t)st.st_size > kDatConfMax) {
		*why = too_big;
		return std::nullopt;
	}
	/* one byte more than allowed: a file that grew is refused too */
	std::string text(kDatConfMax + 1, '\0');
	std::size_t n = 0;
	while (n < text.size()) {
		ssize_t r = ::read(fd.get(), text.data() + n, text.size() - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = errno_text(errno);
			return std::nullopt;
		}
		if (r == 0)
			break;
		n += (std::size_t)r;
	}
	if (n > kDatConfMax) {
		*why = too_big;
		return std::nullopt;
	}
	text.resize(n);
	return text;
}

static std::string own_library_path()
{
	Dl_info info;

	if (dladdr((void *)&own_library_path, &info) && info.dli_fname)
		return info.dli_fname;
	return {};
}

bool is_builtin_library(const std::string &library)
{
	std::size_t slash = library.rfind('/');
	std::string base = slash == std::string::npos ?
				   library : library.substr(slash + 1);

	if (base == "libdat.so" || base.rfind("libdat.so.", 0) == 0)
		return true;

	char a[PATH_MAX], b[PATH_MAX];
	std::string self = own_library_path();
	return !self.empty() && realpath(library.c_str(), a) &&
	       realpath(self.c_str(), b) && !std::strcmp(a, b);
}

std::string kernel_ia_name(const ConfEntry &e)
{
	std::istringstream s(e.ia_params);
	std::string first;

	s >> first;
	return first.empty() ? e.ia_name : first;
}

/* ------------------------------------------------------------------ */
/* The registry                                                         */

namespace {

DAT_RETURN builtin_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			   DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia);

/* One IA name served by the built-in provider. */
struct BuiltinProvider {
	DAT_PROVIDER table;	/* first: objects point here */
	std::string name;
	std::string kernel_name;
};

} // namespace

/*
 * The built-in provider's table: its own implementations (dispatch.hpp),
 * which the core calls with the object already checked and pinned.
 */
void fill_builtin_table(DAT_PROVIDER &t)
{
	std::memset(&t, 0, sizeof(t));
	t.ia_open_func = builtin_ia_open;
	t.ia_query_func = builtin::ia_query;
	t.ia_close_func = builtin::ia_close;
	t.set_consumer_context_func = builtin::set_consumer_context;
	t.get_consumer_context_func = builtin::get_consumer_context;
	t.cno_create_func = builtin::cno_create;
	t.cno_modify_agent_func = builtin::cno_modify_agent;
	t.cno_query_func = builtin::cno_query;
	t.cno_free_func = builtin::cno_free;
	t.cno_wait_func = builtin::cno_wait;
	t.cr_query_func = builtin::cr_query;
	t.cr_accept_func = builtin::cr_accept;
	t.cr_reject_func = builtin::cr_reject;
	t.cr_handoff_func = builtin::cr_handoff;
	t.evd_create_func = builtin::evd_create;
	t.evd_query_func = builtin::evd_query;
	t.evd_modify_cno_func = builtin::evd_modify_cno;
	t.evd_enable_func = builtin::evd_enable;
	t.evd_disable_func = builtin::evd_disable;
	t.evd_wait_func = builtin::evd_wait;
	t.evd_resize_func = builtin::evd_resize;
	t.evd_post_se_func = builtin::evd_post_se;
	t.evd_dequeue_func = builtin::evd_dequeue;
	t.evd_free_func = builtin::evd_free;
	t.ep_create_func = builtin::ep_create;
	t.ep_query_func = builtin::ep_query;
	t.ep_modify_func = builtin::ep_modify;
	t.ep_connect_func = builtin::ep_connect;
	t.ep_dup_connect_func = builtin::ep_dup_connect;
	t.ep_disconnect_func = builtin::ep_disconnect;
	t.ep_post_send_func = builtin::ep_post_send;
	t.ep_post_recv_func = builtin::ep_post_recv;
	t.ep_post_rdma_read_func = builtin::ep_post_rdma_read;
	t.ep_post_rdma_write_func = builtin::ep_post_rdma_write;
	t.ep_get_status_func = builtin::ep_get_status;
	t.ep_free_func = builtin::ep_free;
	t.lmr_create_func = builtin::lmr_create;
	t.lmr_query_func = builtin::lmr_query;
	t.lmr_free_func = builtin::lmr_free;
	t.rmr_create_func = builtin::rmr_create;
	t.psp_create_func = builtin::psp_create;
	t.psp_query_func = builtin::psp_query;
	t.psp_free_func = builtin::psp_free;
	t.rsp_create_func = builtin::rsp_create;
	t.rsp_query_func = builtin::rsp_query;
	t.rsp_free_func = builtin::rsp_free;
	t.pz_create_func = builtin::pz_create;
	t.pz_query_func = builtin::pz_query;
	t.pz_free_func = builtin::pz_free;
	t.psp_create_any_func = builtin::psp_create_any;
	t.ep_reset_func = builtin::ep_reset;
	t.evd_set_unwaitable_func = builtin::evd_set_unwaitable;
	t.evd_clear_unwaitable_func = builtin::evd_clear_unwaitable;
	t.lmr_sync_rdma_read_func = builtin::lmr_sync_rdma_read;
	t.lmr_sync_rdma_write_func = builtin::lmr_sync_rdma_write;
	t.ep_create_with_srq_func = builtin::ep_create_with_srq;
	t.ep_recv_query_func = builtin::ep_recv_query;
	t.ep_set_watermark_func = builtin::ep_set_watermark;
	t.srq_create_func = builtin::srq_create;
	t.srq_free_func = builtin::srq_free;
	t.srq_post_recv_func = builtin::srq_post_recv;
	t.srq_query_func = builtin::srq_query;
	t.srq_resize_func = builtin::srq_resize;
	t.srq_set_lw_func = builtin::srq_set_lw;
	/* registry knowledge, and calls on handles it never makes */
	t.get_handle_type_func = dat_get_handle_type;
	t.rmr_query_func = dat_rmr_query;
	t.rmr_bind_func = dat_rmr_bind;
	t.rmr_free_func = dat_rmr_free;
}

namespace {

bool same_info(const DAT_PROVIDER_INFO &a, const DAT_PROVIDER_INFO &b)
{
	return !std::strncmp(a.ia_name, b.ia_name, DAT_NAME_MAX_LENGTH) &&
	       a.dapl_version_major == b.dapl_version_major &&
	       a.dapl_version_minor == b.dapl_version_minor &&
	       a.is_thread_safe == b.is_thread_safe;
}

/*
 * Does an entry serve a request?  Same name and major version, at least
 * the requested minor; a thread-safe provider also serves a request for a
 * non-thread-safe one.  *why collects the most specific mismatch.
 */
bool info_matches(const DAT_PROVIDER_INFO &have, const char *name,
		  DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN ts,
		  DAT_UINT32 *why)
{
	if (std::strncmp(have.ia_name, name, DAT_NAME_MAX_LENGTH))
		return false;
	if (have.dapl_version_major != major) {
		if (*why == DAT_NAME_NOT_REGISTERED)
			*why = DAT_MAJOR_NOT_FOUND;
		return false;
	}
	if (have.dapl_version_minor < minor) {
		if (*why == DAT_NAME_NOT_REGISTERED ||
		    *why == DAT_MAJOR_NOT_FOUND)
			*why = DAT_MINOR_NOT_FOUND;
		return false;
	}
	if (ts && !have.is_thread_safe) {
		*why = DAT_THREAD_SAFETY_NOT_FOUND;
		return false;
	}
	return true;
}

struct Library {
	/*
	 * The dlopen() handle, dlclose()d when its last holder lets go: the
	 * registry until the library's last name is finalized, each table
	 * its init registered (Registered::lib) and every handle entry of
	 * its providers, so also each call into it (dispatch.hpp copies the
	 * entry for the call) - a dat_ia_close in another thread never
	 * unmaps code a call is running.
	 */
	std::shared_ptr<void> pin;
	DAT_PROVIDER_INIT_FUNC init = nullptr;
	DAT_PROVIDER_FINI_FUNC fini = nullptr;
	int names = 0;		/* names being or staying initialized */
};

struct Registered {
	DAT_PROVIDER *provider;
	DAT_PROVIDER_INFO info;
	/*
	 * The library whose dat_provider_init registered it (its pin), so a
	 * table that outlives the library's dat.conf names keeps its code
	 * mapped; null for the built-in tables and the application's own.
	 */
	std::shared_ptr<void> lib;
};

/*
 * The pin of the library whose dat_provider_init this thread is running
 * (load_library): what that init registers holds the library.  Not on
 * the data path: the default TLS model, no static TLS.
 */
static thread_local const std::shared_ptr<void> *initializing_lib = nullptr;

/* An IA name whose library's dat_provider_init was called. */
struct LoadedName {
	Library *lib;
	DAT_PROVIDER_INFO info;
	int open_ias = 0;	/* open IAs and opens under way */
};

/*
 * The registry's lock guards its tables only: it is never held across a
 * system call (reading dat.conf, /dev/kdat), dlopen/dlclose, or a call into
 * a provider (dat_provider_init/_fini, its ia_open), so a provider may call
 * back into the registry and a slow one holds up no other thread.  An IA
 * name whose library is being initialized or finalized is "busy": other
 * opens of that name wait for it (on cv_, which releases the lock).
 */
class Registry {
public:
	DAT_RETURN open(const char *name, DAT_COUNT qlen,
			DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
			DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN ts);
	void closed(DAT_IA_HANDLE ia, const HandleEntry &e);
	DAT_RETURN add(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info);
	DAT_RETURN remove(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info);
	DAT_RETURN list(DAT_COUNT max, DAT_COUNT *n, DAT_PROVIDER_INFO *out[]);
	void reset();

	BuiltinProvider *builtin(const char *name);
	std::mutex &fork_lock() noexcept { return lock_; }
	/*
	 * In a forked child, with lock_ held across the fork: a dat.conf
	 * read, a provider's init or fini in progress belonged to a thread
	 * the child does not have, and the condition variable's waiters too.
	 * The child reads dat.conf again; a name that was busy is not.
	 */
	void forget_after_fork() noexcept
	{
		if (loading_) {
			loading_ = false;
			loaded_ = false;
		}
		busy_.clear();
		new (&cv_) std::condition_variable;	/* the old: leaked */
	}

private:
	using Lock = std::unique_lock<std::mutex>;

	void load_conf();
	DAT_PROVIDER *find_registered(const char *name, DAT_UINT32 major,
				      DAT_UINT32 minor, DAT_BOOLEAN ts,
				      DAT_UINT32 *why, DAT_PROVIDER_INFO *info,
				      std::shared_ptr<void> *lib = nullptr);
	DAT_PROVIDER *add_builtin(const std::string &name,
				  const std::string &kernel_name,
				  const DAT_PROVIDER_INFO &info);
	DAT_RETURN load_library(const ConfEntry &e);
	void finalize(const std::string &name, Lock &g);
	void unpin(const std::string &name, Lock &g);

	std::mutex lock_;
	std::condition_variable cv_;
	bool loaded_ = false;
	bool loading_ = false;

	/* Does a dat.conf line register IA name @name? */
	bool names_in_conf(const char *name) const
	{
		for (const ConfEntry &e : conf_)
			if (e.ia_name == name)
				return true;
		return false;
	}
	std::vector<ConfEntry> conf_;
	std::vector<Registered> registered_;
	std::list<BuiltinProvider> builtins_;	/* never freed */
	std::list<Library> libs_;
	std::map<std::string, LoadedName> loaded_names_;
	/* names being initialized or finalized, by the thread doing it */
	std::map<std::string, std::thread::id> busy_;
	/*
	 * open IA -> name it was opened under (for dat_provider_fini), and
	 * its tracking (HandleEntry::seq; 0 for the built-in provider's): a
	 * late close of an IA whose address the provider gave a new one is
	 * not that one's
	 */
	struct OpenIa {
		std::string name;
		std::uint64_t seq = 0;
	};
	std::map<DAT_IA_HANDLE, OpenIa> open_ias_;
};

Registry &registry()
{
	static Registry *r = new Registry;	/* never destroyed */
	return *r;
}

/* Read dat.conf once; the file is read without the lock. */
void Registry::load_conf()
{
	{
		Lock g(lock_);

		cv_.wait(g, [this] { return !loading_; });
		if (loaded_)
			return;
		loading_ = true;
	}

	std::vector<ConfEntry> entries;
	std::string path = dat_conf_path();
	const char *o = secure_getenv("DAT_OVERRIDE");
	std::string why;
	bool missing = false;
	std::optional<std::string> text = read_dat_conf(path, &why, &missing);

	if (!text) {
		/*
		 * An unusable file is no file: the built-in provider serves
		 * the kernel's IAs.  Only a missing /etc/dat.conf is normal.
		 */
		if ((o && *o) || !missing)
			std::fprintf(stderr,
				     "libdat: cannot read %s%s: %s; "
				     "no dat.conf used\n",
				     o && *o ? "DAT_OVERRIDE=" : "",
				     path.c_str(), why.c_str());
	} else {
		ConfParse p = parse_dat_conf(*text, path);

		for (const std::string &e : p.errors)
			std::fprintf(stderr, "libdat: %s\n", e.c_str());
		/*
		 * Lines of another DAT major version belong to another
		 * registry sharing the file (OFED's libdat2 reads u2.0 lines
		 * of /etc/dat.conf): not ours to list, load or complain about.
		 */
		for (ConfEntry &e : p.entries) {
			if (e.dapl_major != DAT_VERSION_MAJOR)
				continue;
			e.builtin = is_builtin_library(e.library);
			entries.push_back(std::move(e));
		}
	}

	Lock g(lock_);
	conf_ = std::move(entries);
	loaded_ = true;
	loading_ = false;
	cv_.notify_all();
}

DAT_PROVIDER *Registry::find_registered(const char *name, DAT_UINT32 major,
					DAT_UINT32 minor, DAT_BOOLEAN ts,
					DAT_UINT32 *why,
					DAT_PROVIDER_INFO *info,
					std::shared_ptr<void> *lib)
{
	const Registered *best = nullptr;

	for (const Registered &r : registered_) {
		if (!info_matches(r.info, name, major, minor, ts, why))
			continue;
		/* an exact thread-safety match wins */
		if (!best || r.info.is_thread_safe == ts)
			best = &r;
	}
	if (!best)
		return nullptr;
	*info = best->info;
	if (lib)
		*lib = best->lib;
	return best->provider;
}

BuiltinProvider *Registry::builtin(const char *name)
{
	Lock g(lock_);

	for (BuiltinProvider &b : builtins_)
		if (b.name == name)
			return &b;
	return nullptr;
}

DAT_PROVIDER *Registry::add_builtin(const std::string &name,
				    const std::string &kernel_name,
				    const DAT_PROVIDER_INFO &info)
{
	BuiltinProvider *b = nullptr;

	for (BuiltinProvider &x : builtins_)
		if (x.name == name)
			b = &x;
	if (!b) {
		b = &builtins_.emplace_back();
		fill_builtin_table(b->table);
		b->name = name;
		b->table.device_name = b->name.c_str();
		b->table.extension = b;
	}
	b->kernel_name = kernel_name;
	for (const Registered &r : registered_)
		if (r.provider == &b->table && same_info(r.info, info))
			return &b->table;
	registered_.push_back({ &b->table, info, nullptr });
	return &b->table;
}

/*
 * Load @e's library and call its dat_provider_init, without the lock (the
 * caller marked the name busy).  On success the name is loaded.
 */
DAT_RETURN Registry::load_library(const ConfEntry &e)
{
	/* the same file gives the same handle: a second reference at most */
	void *dl = dlopen(e.library.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		std::fprintf(stderr, "libdat: %s\n", dlerror());
		return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	}
	auto init = (DAT_PROVIDER_INIT_FUNC)dlsym(dl,
						  DAT_PROVIDER_INIT_FUNC_STR);
	auto fini = (DAT_PROVIDER_FINI_FUNC)dlsym(dl,
						  DAT_PROVIDER_FINI_FUNC_STR);
	if (!init) {
		std::fprintf(stderr, "libdat: %s has no %s\n",
			     e.library.c_str(), DAT_PROVIDER_INIT_FUNC_STR);
		dlclose(dl);
		return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	}

	/*
	 * This dlopen's reference, closed by the last holder of the pin (if
	 * making the pin throws, its deleter closed it).  Made and, for a
	 * library loaded already, dropped outside the lock.
	 */
	std::shared_ptr<void> pin;
	try {
		pin = std::shared_ptr<void>(dl, dlclose);
	} catch (...) {
		return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	Library *lib = nullptr;
	{
		Lock g(lock_);

		for (Library &l : libs_)
			if (l.pin.get() == dl)
				lib = &l;
		if (!lib) {
			try {
				lib = &libs_.emplace_back();
			} catch (...) {
				g.unlock();
				return err(DAT_INSUFFICIENT_RESOURCES,
					   DAT_RESOURCE_MEMORY);
			}
			lib->pin = std::move(pin);
			lib->init = init;
			lib->fini = fini;
		}
		/* held from now on: the library stays while this name does */
		lib->names++;
	}
	pin.reset();	/* a second reference to a library loaded already */

	DAT_PROVIDER_INFO info = e.info();
	{
		/* restored after: an init may open a name that loads another */
		const std::shared_ptr<void> *outer = initializing_lib;

		initializing_lib = &lib->pin;
		lib->init(&info, e.ia_params.c_str());
		initializing_lib = outer;
	}

	Lock g(lock_);
	loaded_names_[e.ia_name] = LoadedName{ lib, info, 0 };
	return DAT_SUCCESS;
}

/* The registry entry of kernel IA @name served under its own name. */
static ConfEntry kernel_ia_entry(const std::string &name)
{
	ConfEntry e;

	e.ia_name = name;
	e.dapl_major = DAT_VERSION_MAJOR;
	e.dapl_minor = DAT_VERSION_MINOR;
	e.thread_safe = true;
	e.builtin = true;
	return e;
}

/*
 * The IAs the kernel lists; empty, with why /dev/kdat could not be used
 * in @why, if it cannot be opened.  System calls: never under the lock.
 */
static std::vector<std::string> kernel_ia_names(DAT_RETURN *why = nullptr)
{
	std::vector<std::string> out;
	DAT_RETURN r;
	auto dev = open_device(&r);

	if (why)
		*why = dev ? (DAT_RETURN)DAT_SUCCESS : r;
	if (!dev)
		return out;
	struct kdat_ioc_ia_list l = {};
	if (!ok(call(*dev, KDAT_IOC_IA_LIST, l)) || !l.count)
		return out;
	std::vector<char> names((std::size_t)l.count * KDAT_NAME_LEN);
	l.max = l.count;
	l.names = (__u64)(uintptr_t)names.data();
	if (!ok(call(*dev, KDAT_IOC_IA_LIST, l)))
		return out;
	for (__u32 i = 0; i < l.count && i < l.max; i++) {
		const char *n = &names[(std::size_t)i * KDAT_NAME_LEN];
		out.emplace_back(n, strnlen(n, KDAT_NAME_LEN));
	}
	return out;
}

DAT_RETURN Registry::open(const char *name, DAT_COUNT qlen,
			  DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
			  DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN ts)
{
	DAT_UINT32 why = DAT_NAME_NOT_REGISTERED;
	DAT_PROVIDER_INFO info;
	DAT_PROVIDER *p = nullptr;
	/*
	 * The loaded library's pin, which its handles get.  Declared before
	 * the lock, so that if this is the last pin (an open that failed
	 * finalized the name) the dlclose() runs after the lock is dropped.
	 */
	std::shared_ptr<void> lib;

	load_conf();
	Lock g(lock_);
	for (;;) {
		/* a library initializing or finalizing this name: wait */
		auto b = busy_.find(name);
		if (b != busy_.end()) {
			/* its own dat_provider_init(_fini) opening it */
			if (b->second == std::this_thread::get_id())
				return err(DAT_PROVIDER_NOT_FOUND,
					   DAT_NAME_NOT_REGISTERED);
			cv_.wait(g);
			continue;
		}
		why = DAT_NAME_NOT_REGISTERED;
		p = find_registered(name, major, minor, ts, &why, &info, &lib);
		if (p || !names_in_conf(name))
			break;

		const ConfEntry *best = nullptr;
		for (const ConfEntry &e : conf_) {
			if (!info_matches(e.info(), name, major, minor, ts,
					  &why))
				continue;
			if (!best || e.thread_safe == (bool)ts)
				best = &e;
		}
		if (!best)
			return err(DAT_PROVIDER_NOT_FOUND, why);
		if (best->builtin) {
			add_builtin(best->ia_name, kernel_ia_name(*best),
				    best->info());
			why = DAT_NAME_NOT_REGISTERED;
			p = find_registered(name, major, minor, ts, &why,
					    &info);
			break;
		}
		const ConfEntry e = *best;
		busy_[e.ia_name] = std::this_thread::get_id();
		g.unlock();
		DAT_RETURN r = load_library(e);
		g.lock();
		busy_.erase(e.ia_name);
		cv_.notify_all();
		if (!ok(r))
			return r;
		why = DAT_NAME_NOT_REGISTERED;
		p = find_registered(name, major, minor, ts, &why, &info, &lib);
		if (!p) {
			/* the library did not register what it serves */
			finalize(e.ia_name, g);
			return err(DAT_PROVIDER_NOT_FOUND, why);
		}
		break;
	}
	if (!p) {
		/*
		 * Not in dat.conf (or no dat.conf): every kernel IA through
		 * the built-in provider, so a dat.conf that lists some devices
		 * does not hide the others.
		 */
		const ConfEntry e = kernel_ia_entry(name);

		if (!info_matches(e.info(), name, major, minor, ts, &why))
			return err(DAT_PROVIDER_NOT_FOUND, why);
		bool no_conf = conf_.empty();
		g.unlock();
		/*
		 * Only a name the kernel lists: anything else stays
		 * unregistered.  Without a dat.conf, a device that cannot be
		 * used says why (no module, no permission, wrong ABI).
		 */
		DAT_RETURN dev_r;
		bool listed = false;
		for (const std::string &k : kernel_ia_names(&dev_r))
			listed |= k == name;
		if (!listed) {
			if (!ok(dev_r) && no_conf)
				return dev_r;
			return err(DAT_PROVIDER_NOT_FOUND,
				   DAT_NAME_NOT_REGISTERED);
		}
		g.lock();
		p = add_builtin(name, name, e.info());
		info = e.info();
	}

	/* pin the loaded name: no dat_provider_fini while this open runs */
	std::string opened = info.ia_name;
	auto it = loaded_names_.find(opened);
	if (it != loaded_names_.end()) {
		it->second.open_ias++;
		/* a table the init registered from another thread: no pin */
		if (!lib)
			lib = it->second.lib->pin;
	}
	bool builtin = false;
	for (BuiltinProvider &b : builtins_)
		builtin |= p == &b.table;
	g.unlock();

	DAT_RETURN r = call_provider(p->ia_open_func, (DAT_NAME_PTR)name, qlen,
				     async_evd, ia);

	g.lock();
	if (!ok(r)) {
		unpin(opened, g);
		return r;
	}
	try {
		OpenIa rec{ opened, 0 };

		if (!builtin) {
			rec.seq = handles().insert_foreign(*ia, DAT_HANDLE_TYPE_IA,
							   p, lib, *ia);
			if (*async_evd)
				handles().insert_foreign(*async_evd,
							 DAT_HANDLE_TYPE_EVD,
							 p, lib, *ia, rec.seq);
		}
		open_ias_.insert_or_assign(*ia, std::move(rec));
	} catch (...) {
		/*
		 * No memory to track it: the open fails, so the IA goes again
		 * (before the unpin, which may unload its provider).
		 */
		if (!builtin) {
			handles().erase(*ia);
			if (*async_evd)
				handles().erase(*async_evd);
		}
		g.unlock();
		(void)call_provider(p->ia_close_func, *ia,
				    DAT_CLOSE_ABRUPT_FLAG);
		g.lock();
		unpin(opened, g);
		*ia = nullptr;
		*async_evd = nullptr;
		return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	return DAT_SUCCESS;
}

void Registry::closed(DAT_IA_HANDLE ia, const HandleEntry &e)
{
	Lock g(lock_);

	/*
	 * Not the handles of an IA the provider opened at the same address
	 * since (another thread's open, tracked anew, is not this one).
	 */
	if (!e.builtin()) {
		handles().erase_owned_by(ia, e.owner_seq);
		handles().erase_tracked(ia, e.seq);
	}
	auto o = open_ias_.find(ia);
	if (o == open_ias_.end() || o->second.seq != e.seq)
		return;
	std::string name = std::move(o->second.name);
	open_ias_.erase(o);
	unpin(name, g);
}

/* An open IA of @name is gone (or an open failed): the last finalizes. */
void Registry::unpin(const std::string &name, Lock &g)
{
	auto it = loaded_names_.find(name);

	if (it == loaded_names_.end() || --it->second.open_ias > 0)
		return;
	finalize(name, g);
}

/*
 * The last IA of a loaded name is gone: dat_provider_fini, maybe unload.
 * Called and returns with the lock held; drops it around the provider's
 * fini and dlclose.
 */
void Registry::finalize(const std::string &name, Lock &g)
{
	auto it = loaded_names_.find(name);

	if (it == loaded_names_.end())
		return;
	LoadedName ln = it->second;
	loaded_names_.erase(it);
	busy_[name] = std::this_thread::get_id();
	g.unlock();
	/* ln.lib stays: this name still counts in its names */
	if (ln.lib->fini)
		ln.lib->fini(&ln.info);
	g.lock();
	/*
	 * The registration's pin (add() allows one per info; maybe another
	 * library's): dropped after the lock.
	 */
	std::shared_ptr<void> dropped;
	for (auto r = registered_.begin(); r != registered_.end();) {
		if (same_info(r->info, ln.info)) {
			dropped = std::move(r->lib);
			r = registered_.erase(r);
		} else {
			++r;
		}
	}
	std::shared_ptr<void> pin;
	if (--ln.lib->names == 0) {
		pin = std::move(ln.lib->pin);
		for (auto l = libs_.begin(); l != libs_.end(); ++l) {
			if (&*l == ln.lib) {
				libs_.erase(l);
				break;
			}
		}
	}
	busy_.erase(name);
	cv_.notify_all();
	if (pin || dropped) {
		/* dlclose() now, or when the last call into it returns */
		g.unlock();
		pin.reset();
		dropped.reset();
		g.lock();
	}
}

DAT_RETURN Registry::add(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	if (!p)
		return bad_arg(1);
	if (!info || !info->ia_name[0] ||
	    strnlen(info->ia_name, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH)
		return bad_arg(2);
	Lock g(lock_);
	for (const Registered &r : registered_)
		if (same_info(r.info, *info))
			return err(DAT_PROVIDER_ALREADY_REGISTERED);
	/* from a library's dat_provider_init: the table holds the library */
	registered_.push_back({ p, *info,
				initializing_lib ? *initializing_lib : nullptr });
	return DAT_SUCCESS;
}

DAT_RETURN Registry::remove(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	if (!p)
		return bad_arg(1);
	if (!info)
		return bad_arg(2);
	/* the registration's pin of its library: maybe the last, unlocked */
	std::shared_ptr<void> lib;
	Lock g(lock_);
	for (auto r = registered_.begin(); r != registered_.end(); ++r) {
		if (r->provider != p || !same_info(r->info, *info))
			continue;
		for (auto &[ia, rec] : open_ias_)
			if (handles().provider_of(ia) == p &&
			    rec.name == r->info.ia_name)
				return err(DAT_PROVIDER_IN_USE);
		lib = std::move(r->lib);
		registered_.erase(r);
		return DAT_SUCCESS;
	}
	return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
}

DAT_RETURN Registry::list(DAT_COUNT max, DAT_COUNT *n,
			  DAT_PROVIDER_INFO *out[])
{
	if (max < 0)
		return bad_arg(1);
	if (!n)
		return bad_arg(2);
	if (max > 0 && !out)
		return bad_arg(3);

	load_conf();
	/* asked without the lock: /dev/kdat is a system call away */
	std::vector<std::string> kernel = kernel_ia_names();
	std::vector<DAT_PROVIDER_INFO> all;
	{
		Lock g(lock_);

		for (const ConfEntry &e : conf_)
			all.push_back(e.info());
		/* kernel IAs dat.conf does not name, as dat_ia_open offers them */
		for (const std::string &name : kernel) {
			if (!names_in_conf(name.c_str()))
				all.push_back(kernel_ia_entry(name).info());
		}
		for (const Registered &r : registered_) {
			bool dup = false;

			for (const DAT_PROVIDER_INFO &i : all)
				dup |= same_info(i, r.info);
			if (!dup)
				all.push_back(r.info);
		}
	}
	if (max == 0) {
		*n = (DAT_COUNT)all.size();
		return DAT_SUCCESS;
	}
	DAT_COUNT k = 0;
	for (; k < max && (std::size_t)k < all.size(); k++) {
		if (!out[k])
			return bad_arg(3);
		*out[k] = all[(std::size_t)k];
	}
	*n = k;
	return DAT_SUCCESS;
}

void Registry::reset()
{
	std::vector<Registered> dropped;	/* their pins: after the lock */
	Lock g(lock_);

	cv_.wait(g, [this] { return !loading_; });
	loaded_ = false;
	conf_.clear();
	/* built-in tables stay allocated: objects may still point to them */
	dropped.swap(registered_);
	loaded_names_.clear();
	open_ias_.clear();
}

DAT_RETURN builtin_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
			   DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia)
{
	return guard([&]() -> DAT_RETURN {
		if (!name)
			return bad_arg(1);
		if (!async_evd)
			return bad_arg(3);
		if (!ia)
			return bad_arg(4);
		BuiltinProvider *b = registry().builtin(name);
		if (!b)
			return err(DAT_PROVIDER_NOT_FOUND,
				   DAT_NAME_NOT_REGISTERED);
		return Ia::open(&b->table, b->name, b->kernel_name, qlen,
				async_evd, ia);
	});
}

} // namespace

std::mutex &registry_fork_lock() noexcept
{
	return registry().fork_lock();
}

void registry_forget_after_fork() noexcept
{
	registry().forget_after_fork();
}

void registry_ia_closed(DAT_IA_HANDLE ia, const HandleEntry &e)
{
	registry().closed(ia, e);
}

void registry_reset()
{
	registry().reset();
}

} // namespace kdat

using namespace kdat;

extern "C" {

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT qlen,
			DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
			DAT_UINT32 major, DAT_UINT32 minor,
			DAT_BOOLEAN thread_safety)
{
	return guard([&]() -> DAT_RETURN {
		if (!name)
			return bad_arg(1);
		if (!async_evd)
			return bad_arg(3);
		if (!ia)
			return bad_arg(4);
		return registry().open(name, qlen, async_evd, ia, major, minor,
				       thread_safety);
	});
}

DAT_RETURN dat_registry_add_provider(DAT_PROVIDER *provider,
				     const DAT_PROVIDER_INFO *info)
{
	return guard([&] { return registry().add(provider, info); });
}

DAT_RETURN dat_registry_remove_provider(DAT_PROVIDER *provider,
					const DAT_PROVIDER_INFO *info)
{
	return guard([&] { return registry().remove(provider, info); });
}

DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT *n,
				       DAT_PROVIDER_INFO *(list[]))
{
	return guard([&] { return registry().list(max, n, list); });
}

} // extern "C"
