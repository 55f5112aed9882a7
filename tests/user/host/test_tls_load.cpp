// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libdaplkdat.so.2 loads into a process whose static TLS is used up.
// libdat2 always dlopen()s the DAT 2.0 provider; an initial-exec
// thread-local there would take glibc's small static TLS surplus, and
// once other libraries took it, dlopen() fails ("cannot allocate memory
// in static TLS block").  The provider builds libdat's core with the
// dynamic TLS model (KDAT_DLOPENED, user/CMakeLists.txt); libdat.so.1,
// which programs link, keeps initial-exec.  The case runs in a process of
// its own (ctest), since it leaves the surplus used up.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

class TlsLoad : public ::testing::Test {
protected:
	void SetUp() override
	{
		/* in the build tree: a temporary directory may be noexec */
		std::string t = DAT_TLS_HOG_DIR "/tls-load-XXXXXX";

		ASSERT_NE(mkdtemp(t.data()), nullptr);
		dir_ = t;
	}
	void TearDown() override
	{
		std::error_code ec;

		fs::remove_all(dir_, ec);
	}

	/*
	 * Load copies of @lib, an initial-exec library (one file each: the
	 * loader shares a file loaded twice), until the loader refuses one
	 * for want of static TLS.  False if it never did.
	 */
	bool load_until_refused(const char *lib)
	{
		for (int i = 0; i < 4096; i++) {
			fs::path p = dir_ / ("hog" + std::to_string(n_++) + ".so");

			fs::copy_file(lib, p);
			if (dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))
				continue;
			std::string e = dlerror();
			EXPECT_NE(e.find("static TLS"), std::string::npos) << e;
			return true;
		}
		return false;
	}

	/* Leave less than 8 bytes of static TLS free. */
	bool use_up_static_tls()
	{
		return load_until_refused(DAT_TLS_HOG_BIG) &&
		       load_until_refused(DAT_TLS_HOG_SMALL);
	}

	int n_ = 0;
	fs::path dir_;
};

TEST_F(TlsLoad, Dat2ProviderLoadsWithStaticTlsUsedUp)
{
	ASSERT_TRUE(use_up_static_tls()) << "static TLS never ran out";
	void *h = dlopen(DAT_LIBDAPLKDAT, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(h, nullptr) << dlerror();
	EXPECT_NE(dlsym(h, "dat_provider_init"), nullptr);
}
} // namespace
