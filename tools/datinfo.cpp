// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datinfo: the DAT registry's providers and their Interface Adapters,
// like rdma-core's ibv_devinfo for verbs.
//
//   datinfo [-d DEV] [-l] [-v]
//   datinfo --dat2-conf [-d DEV]
//
// Lists every IA of the registry (dat.conf, or the kernel's IAs), opens
// each (or the one -d names: an IA name, or the RDMA device an IA sits
// on) and prints its IA and provider attributes; -v prints all of them,
// -l only the IA names.  Like ibv_devinfo, which opens a device context
// but allocates no PD or CQ, it opens and queries the IA and creates
// nothing under it (dat_ia_open's own async EVD is part of the open).
// Exit status 0 if every IA shown could be opened and queried, 1 if any
// could not (the others are still shown), 2 on a bad command line.
// --dat2-conf prints the dat.conf lines that make libdaplkdat.so.2 (kdat's
// DAT 2.0 provider) serve kdat's IAs to DAT 2.0 programs through libdat2:
// a nonthreadsafe and a threadsafe line per IA (libdat2 matches thread
// safety exactly; OFED's test programs ask for nonthreadsafe), named
// kdat-v2-<IA>.  The kdat IAs are the adapters of the registry's IAs that
// open, or DEV alone with -d (then nothing is opened).
#include <dat/udat.h>

#include <arpa/inet.h>

#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

#ifndef DAT_TOOLS_VERSION
#define DAT_TOOLS_VERSION "unknown"
#endif

constexpr const char *kVersion = DAT_TOOLS_VERSION;

std::string status(DAT_RETURN r)
{
	const char *major, *minor;

	dat_strerror(r, &major, &minor);
	return std::string(major) + (*minor ? " " : "") + minor;
}

std::string address(const DAT_SOCK_ADDR *a)
{
	char s[INET6_ADDRSTRLEN] = "-";

	if (a && a->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, s,
			  sizeof(s));
	else if (a && a->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr,
			  s, sizeof(s));
	return s;
}

const char *yes(DAT_BOOLEAN b)
{
	return b ? "yes" : "no";
}

void row(const char *name, const std::string &value)
{
	std::printf("\t%-34s %s\n", name, value.c_str());
}

void row(const char *name, long long value)
{
	row(name, std::to_string(value));
}

void show_ia(const DAT_IA_ATTR &a, const DAT_PROVIDER_ATTR &p, bool verbose)
{
	row("provider:", std::string(p.provider_name) + " " +
				 std::to_string(p.provider_version_major) + "." +
				 std::to_string(p.provider_version_minor));
	row("adapter:", a.adapter_name);
	row("vendor:", a.vendor_name);
	row("ia_address:", address(a.ia_address_ptr));
	row("hw_ver:", std::to_string(a.hardware_version_major) + "." +
			       std::to_string(a.hardware_version_minor));
	row("fw_ver:", std::to_string(a.firmware_version_major) + "." +
			       std::to_string(a.firmware_version_minor));
	row("max_eps:", a.max_eps);
	row("max_srqs:", a.max_srqs);
	row("max_recv_per_srq:", a.max_recv_per_srq);
	row("max_ep_per_srq:", a.max_ep_per_srq);
	row("srq_supported:", yes(p.srq_supported));
	if (!verbose)
		return;

	row("max_dto_per_ep:", a.max_dto_per_ep);
	row("max_rdma_read_per_ep_in:", a.max_rdma_read_per_ep_in);
	row("max_rdma_read_per_ep_out:", a.max_rdma_read_per_ep_out);
	row("max_evds:", a.max_evds);
	row("max_evd_qlen:", a.max_evd_qlen);
	row("max_iov_segments_per_dto:", a.max_iov_segments_per_dto);
	row("max_lmrs:", a.max_lmrs);
	row("max_lmr_block_size:", (long long)a.max_lmr_block_size);
	row("max_pzs:", a.max_pzs);
	row("max_message_size:", (long long)a.max_message_size);
	row("max_rdma_size:", (long long)a.max_rdma_size);
	row("max_rmrs:", a.max_rmrs);
	row("max_iov_segments_per_rdma_read:", a.max_iov_segments_per_rdma_read);
	row("max_iov_segments_per_rdma_write:", a.max_iov_segments_per_rdma_write);
	row("max_rdma_read_in:", a.max_rdma_read_in);
	row("max_rdma_read_out:", a.max_rdma_read_out);
	for (int i = 0; i < a.num_vendor_attr; i++)
		row((std::string("vendor ") + a.vendor_attr[i].name + ":").c_str(),
		    a.vendor_attr[i].value);

	row("dapl_version:", std::to_string(p.dapl_version_major) + "." +
				     std::to_string(p.dapl_version_minor));
	row("lmr_mem_types_supported:", (long long)p.lmr_mem_types_supported);
	row("iov_ownership_on_return:", (long long)p.iov_ownership_on_return);
	row("dat_qos_supported:", (long long)p.dat_qos_supported);
	char flags[16];
	std::snprintf(flags, sizeof(flags), "0x%x", p.completion_flags_supported);
	row("completion_flags_supported:", flags);
	row("is_thread_safe:", yes(p.is_thread_safe));
	row("max_private_data_size:", p.max_private_data_size);
	row("supports_multipath:", yes(p.supports_multipath));
	row("ep_creator:", (long long)p.ep_creator);
	row("pz_support:", (long long)p.pz_support);
	row("optimal_buffer_alignment:", (long long)p.optimal_buffer_alignment);
	row("srq_watermarks_supported:", p.srq_watermarks_supported);
	row("srq_ep_pz_difference_supported:", yes(p.srq_ep_pz_difference_supported));
	row("srq_info_supported:", p.srq_info_supported);
	row("ep_recv_info_supported:", p.ep_recv_info_supported);
	row("lmr_sync_req:", yes(p.lmr_sync_req));
	row("dto_async_return_guaranteed:", yes(p.dto_async_return_guaranteed));
	row("rdma_write_for_rdma_read_req:", yes(p.rdma_write_for_rdma_read_req));
	for (int i = 0; i < p.num_provider_specific_attr; i++)
		row((std::string(p.provider_specific_attr[i].name) + ":").c_str(),
		    p.provider_specific_attr[i].value);
}

/* Open @p's IA; on success *ia is open (the caller closes it). */
DAT_RETURN open_ia(const DAT_PROVIDER_INFO &p, DAT_IA_HANDLE *ia)
{
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL;

	return dat_ia_openv((DAT_NAME_PTR)p.ia_name, 8, &async, ia,
			    p.dapl_version_major, p.dapl_version_minor,
			    p.is_thread_safe);
}

/* The RDMA device an IA sits on (its adapter name), "" if it cannot tell. */
std::string adapter_of(const DAT_PROVIDER_INFO &p)
{
	DAT_IA_HANDLE ia;
	DAT_IA_ATTR a;
	std::string name;

	if (open_ia(p, &ia) != DAT_SUCCESS)
		return name;
	if (dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr) ==
	    DAT_SUCCESS)
		name.assign(a.adapter_name, strnlen(a.adapter_name,
						    sizeof(a.adapter_name)));
	dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return name;
}

/* One IA: false if it cannot be opened or queried. */
bool show(const DAT_PROVIDER_INFO &p, bool verbose)
{
	std::printf("ia_name:\t%s\n", p.ia_name);
	row("dat_version:", std::to_string(p.dapl_version_major) + "." +
				    std::to_string(p.dapl_version_minor) +
				    (p.is_thread_safe ? " threadsafe" :
							" nonthreadsafe"));

	DAT_IA_HANDLE ia;
	DAT_RETURN r = open_ia(p, &ia);
	if (r != DAT_SUCCESS) {
		row("state:", "cannot open: " + status(r));
		std::printf("\n");
		std::fprintf(stderr, "datinfo: %s: cannot open: %s\n", p.ia_name,
			     status(r).c_str());
		return false;
	}
	DAT_IA_ATTR a;
	DAT_PROVIDER_ATTR pa;
	r = dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a,
			 DAT_PROVIDER_FIELD_ALL, &pa);
	if (r == DAT_SUCCESS) {
		show_ia(a, pa, verbose);
	} else {
		row("state:", "cannot query: " + status(r));
		std::fprintf(stderr, "datinfo: %s: cannot query: %s\n",
			     p.ia_name, status(r).c_str());
	}
	dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	std::printf("\n");
	return r == DAT_SUCCESS;
}

/* The two dat.conf lines of libdaplkdat for kdat IA @ia. */
void dat2_conf_lines(const std::string &ia)
{
	for (const char *ts : { "nonthreadsafe", "threadsafe" })
		std::printf("kdat-v2-%s u2.0 %s default libdaplkdat.so.2 "
			    "kdat.2.0 \"%s\" \"\"\n",
			    ia.c_str(), ts, ia.c_str());
}

/* A kdat IA name as dat.conf can carry it: no blank, quote or '#'. */
bool conf_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s == '"' || *s == '#' || (unsigned char)*s <= ' ')
			return false;
	return true;
}

void usage(FILE *f)
{
	std::fprintf(f,
"Usage: datinfo [options]\n"
"  the DAT registry's Interface Adapters and their attributes\n"
"\n"
"Options:\n"
"  -d, --ib-dev=DEV   only the IA named DEV, or the IA on RDMA device DEV\n"
"  -l, --list         print only the IA names, one a line\n"
"  -v, --verbose      print all attributes\n"
"      --dat2-conf    print the dat.conf lines for libdaplkdat.so.2 (DAT 2.0\n"
"                     programs on kdat), for every kdat IA or DEV\n"
"  -h, --help         print this help and exit\n"
"      --version      print the version and exit\n");
}

} // namespace

int main(int argc, char **argv)
{
	enum { O_VERSION = 256, O_DAT2_CONF };
	static const struct option longopts[] = {
		{ "ib-dev", required_argument, nullptr, 'd' },
		{ "list", no_argument, nullptr, 'l' },
		{ "verbose", no_argument, nullptr, 'v' },
		{ "help", no_argument, nullptr, 'h' },
		{ "version", no_argument, nullptr, O_VERSION },
		{ "dat2-conf", no_argument, nullptr, O_DAT2_CONF },
		{}
	};
	bool verbose = false, list = false, dat2_conf = false;
	const char *dev = nullptr;
	int c;

	optind = 0;	/* main() may run more than once (the host tests) */
	while ((c = getopt_long(argc, argv, "d:lvh", longopts, nullptr)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case O_DAT2_CONF:
			dat2_conf = true;
			break;
		case O_VERSION:
			std::printf("datinfo %s\n", kVersion);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		std::fprintf(stderr, "datinfo: unexpected argument '%s'\n",
			     argv[optind]);
		usage(stderr);
		return 2;
	}

	if (dat2_conf && dev) {
		if (!conf_word(dev)) {
			std::fprintf(stderr, "datinfo: '%s' cannot be an IA "
				     "name of dat.conf\n", dev);
			return 2;
		}
		dat2_conf_lines(dev);
		return 0;
	}

	DAT_COUNT n = 0;
	DAT_RETURN r = dat_registry_list_providers(0, &n, nullptr);
	std::vector<DAT_PROVIDER_INFO> info(n);
	std::vector<DAT_PROVIDER_INFO *> ptr;
	for (auto &i : info)
		ptr.push_back(&i);
	if (r == DAT_SUCCESS && n)
		r = dat_registry_list_providers(n, &n, ptr.data());
	if (r != DAT_SUCCESS) {
		std::fprintf(stderr, "datinfo: %s\n", status(r).c_str());
		return 1;
	}
	info.resize(n);
	if (!n) {
		std::fprintf(stderr, "datinfo: no DAT providers found (dat.conf: "
			     "$DAT_OVERRIDE or /etc/dat.conf; without it, the "
			     "IAs of /dev/kdat)\n");
		return 1;
	}

	/* -d: an IA name, else the IA whose adapter is that RDMA device */
	std::vector<const DAT_PROVIDER_INFO *> want;
	for (const auto &p : info)
		if (!dev || !std::strcmp(dev, p.ia_name))
			want.push_back(&p);
	if (dev && want.empty())
		for (const auto &p : info)
			if (adapter_of(p) == dev)
				want.push_back(&p);
	if (dev && want.empty()) {
		std::fprintf(stderr, "datinfo: no IA named %s, nor one on an "
			     "RDMA device of that name\n", dev);
		return 1;
	}

	if (dat2_conf) {
		std::vector<std::string> seen;
		for (const DAT_PROVIDER_INFO *p : want) {
			std::string a = adapter_of(*p);
			bool dup = false;
			for (const std::string &x : seen)
				dup |= x == a;
			if (a.empty() || dup || !conf_word(a.c_str()))
				continue;
			seen.push_back(a);
			dat2_conf_lines(a);
		}
		if (seen.empty()) {
			std::fprintf(stderr, "datinfo: no kdat IA could be opened "
				     "(name one: datinfo --dat2-conf -d DEV)\n");
			return 1;
		}
		return 0;
	}
	if (list) {
		for (const DAT_PROVIDER_INFO *p : want)
			std::printf("%s\n", p->ia_name);
		return 0;
	}
	bool all_ok = true;
	for (const DAT_PROVIDER_INFO *p : want)
		all_ok &= show(*p, verbose);
	return all_ok ? 0 : 1;
}
