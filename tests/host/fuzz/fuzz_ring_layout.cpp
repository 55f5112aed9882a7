// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libFuzzer target: how libdat handles the sizes the kernel writes into a
// mapped ring (struct kdat_ring_hdr of include/uapi/kdat_abi.h: entries,
// entry_size, entry_offset) - user/ring.hpp, the code evd.cpp and srq.cpp
// run on every mapping, linked as is.
//
// The input is a ring mapping of a fuzzed length and content.  Whatever
// the header claims, validate() must accept only layouts whose every slot
// lies inside the mapping (ASan sees any access past the allocation, which
// is exactly the mapping's length), and the consumer and producer must
// never touch memory outside it, whatever the kernel's indices say.
#include "ring.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace kdat::ring;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	/* byte 0-1: the mapping's length; byte 2: the ring kind; 3: ops */
	std::size_t len = (std::size_t)(data[0] | data[1] << 8) * 8;
	bool events = data[2] & 1;
	uint8_t ops = data[3];
	data += 4;
	size -= 4;
	if (len < sizeof(struct kdat_ring_hdr) && (data[-2] & 2))
		len += sizeof(struct kdat_ring_hdr);

	/* exactly len bytes, 8-aligned (a mapping is page aligned) */
	std::size_t cap = (len + 7) & ~(std::size_t)7;
	auto *mem = static_cast<std::byte *>(std::aligned_alloc(8, cap ? cap : 8));
	if (!mem)
		return 0;
	std::memset(mem, 0, cap ? cap : 8);
	std::memcpy(mem, data, size < len ? size : len);

	std::size_t min_entry = events ? sizeof(struct kdat_uevent)
				       : kWqeHeader + sizeof(struct kdat_useg);
	auto l = validate(len ? mem : nullptr, len, min_entry);
	if (l) {
		if ((std::uint64_t)l->entry_offset +
			    (std::uint64_t)l->entries * l->entry_size > len ||
		    l->entry_size < min_entry)
			std::abort();
		/* the kernel's side of the header, changed between calls */
		auto *h = l->hdr;
		std::size_t k = size < len ? size : len;
		auto kernel_moves = [&](unsigned i) {
			std::uint32_t v;

			if (k < 8)
				return;
			std::memcpy(&v, data + (i * 4) % (k - 4), 4);
			if (events)
				h->tail = v;
			else
				h->head = v;
			if (ops & 0x80)
				h->flags = v;
		};
		if (events) {
			EventConsumer c(*l);
			struct kdat_uevent u;

			for (unsigned i = 0; i < 64; i++) {
				kernel_moves(i);
				if (i % 3 == 0)
					c.for_each_pending([&](const struct kdat_uevent &e) {
						u = e;
					});
				if (!c.pop(u) && (ops & 1))
					break;
				(void)c.wakes();
				(void)c.dropped();
			}
		} else {
			PostProducer p(*l);
			struct kdat_useg segs[KDAT_MAX_IOV] = {};

			if (p.max_segments() > KDAT_MAX_IOV ||
			    kWqeHeader + p.max_segments() * sizeof(struct kdat_useg) >
				    l->entry_size)
				std::abort();
			for (unsigned i = 0; i < 64; i++) {
				kernel_moves(i);
				if (p.full())
					continue;
				(void)p.push(i, (i + ops) % (p.max_segments() + 1), segs);
				(void)p.pending();
				(void)p.unconsumed();
			}
		}
	}
	std::free(mem);
	return 0;
}
