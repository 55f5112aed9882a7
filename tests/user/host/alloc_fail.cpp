// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// See alloc_fail.hpp.  The replacement allocates as the default does, with
// malloc, so the default operator delete (free) stays its match.
#include "alloc_fail.hpp"

#include <cstdlib>
#include <new>

namespace {

thread_local bool fail_every;
thread_local long countdown = -1;
thread_local bool fired_once;
thread_local int suspended;

} // namespace

namespace alloc_fail {

void every(bool on)
{
	fail_every = on;
}

void nth(long n)
{
	countdown = n;
	fired_once = false;
}

bool fired()
{
	return fired_once;
}

Suspend::Suspend()
{
	suspended++;
}

Suspend::~Suspend()
{
	suspended--;
}

} // namespace alloc_fail

void *operator new(std::size_t n)
{
	if (!suspended) {
		if (fail_every)
			throw std::bad_alloc();
		if (countdown == 0) {
			countdown = -1;
			fired_once = true;
			throw std::bad_alloc();
		}
		if (countdown > 0)
			countdown--;
	}
	if (void *p = std::malloc(n ? n : 1))
		return p;
	throw std::bad_alloc();
}
