// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// An owned file descriptor, closed once when its owner goes.
#pragma once

#include <unistd.h>

namespace kdat {

class UniqueFd {
public:
	explicit UniqueFd(int fd = -1) : fd_(fd) {}
	UniqueFd(const UniqueFd &) = delete;
	UniqueFd &operator=(const UniqueFd &) = delete;
	~UniqueFd()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

} // namespace kdat
