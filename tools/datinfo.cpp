// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// datinfo: the DAT registry's providers and their Interface Adapters,
// like ibv_devinfo for verbs.
//
//   datinfo [-v] [ia_name ...]
//
// Lists every provider of the registry (dat.conf, or the kernel's IAs),
// opens each IA (or those named) and prints its IA and provider
// attributes; -v prints all of them.
#include <dat/udat.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

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

} // namespace

int main(int argc, char **argv)
{
	bool verbose = false;
	std::vector<std::string> only;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (argv[i][0] == '-') {
			std::fprintf(stderr, "usage: datinfo [-v] [ia_name ...]\n");
			return 2;
		} else {
			only.push_back(argv[i]);
		}
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
	if (!n) {
		std::printf("No DAT providers found (dat.conf: $DAT_OVERRIDE or "
			    "/etc/dat.conf; without it, the IAs of /dev/kdat)\n");
		return 1;
	}

	int shown = 0;
	for (DAT_COUNT k = 0; k < n; k++) {
		const DAT_PROVIDER_INFO &p = info[k];
		bool wanted = only.empty();

		for (auto &o : only)
			wanted |= o == p.ia_name;
		if (!wanted)
			continue;
		shown++;
		std::printf("ia_name:\t%s\n", p.ia_name);
		row("dat_version:", std::to_string(p.dapl_version_major) + "." +
					    std::to_string(p.dapl_version_minor) +
					    (p.is_thread_safe ? " threadsafe" :
								" nonthreadsafe"));

		DAT_IA_HANDLE ia;
		DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
		r = dat_ia_openv((DAT_NAME_PTR)p.ia_name, 8, &async, &ia,
				 p.dapl_version_major, p.dapl_version_minor,
				 p.is_thread_safe);
		if (r != DAT_SUCCESS) {
			row("state:", "cannot open: " + status(r));
			std::printf("\n");
			continue;
		}
		DAT_IA_ATTR a;
		DAT_PROVIDER_ATTR pa;
		r = dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &a,
				 DAT_PROVIDER_FIELD_ALL, &pa);
		if (r == DAT_SUCCESS)
			show_ia(a, pa, verbose);
		else
			row("state:", "cannot query: " + status(r));
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		std::printf("\n");
	}
	if (!shown) {
		std::fprintf(stderr, "datinfo: no such IA\n");
		return 1;
	}
	return 0;
}
