// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What libdat trusts from its environment and from the module:
//   - dat.conf ($DAT_OVERRIDE) must be a regular file of at most
//     kDatConfMax bytes; a FIFO, a directory, a device or a larger file is
//     refused without blocking (a message on stderr, and the registry works
//     as without a dat.conf: the kernel's IAs through the built-in provider)
//   - KDAT_DEVICE still names the device (read with secure_getenv; that
//     no plain getenv is imported is the ctest dat_no_plain_getenv)
//   - the module's ABI (KDAT_IOC_VERSION: abi_version, min_abi_version,
//     features): a module this library cannot use is no provider
//     (DAT_PROVIDER_NOT_FOUND), said once on stderr
// A call that could block if the check were missing runs in a child with
// an alarm, so a regression fails instead of hanging.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "test_util.hpp"

namespace {

class Loader : public FakeKernelTest {
protected:
	void SetUp() override
	{
		FakeKernelTest::SetUp();
		char tmpl[] = "/tmp/datloaderXXXXXX";
		ASSERT_NE(nullptr, mkdtemp(tmpl));
		dir = tmpl;
	}

	void TearDown() override
	{
		for (const std::string &f : files)
			::unlink(f.c_str());
		::rmdir(dir.c_str());
		FakeKernelTest::TearDown();
	}

	std::string path(const std::string &name)
	{
		files.push_back(dir + "/" + name);
		return files.back();
	}

	/* Names dat_registry_list_providers lists, in order. */
	static std::vector<std::string> listed()
	{
		DAT_PROVIDER_INFO i[8], *l[8];
		DAT_COUNT n = 0;
		std::vector<std::string> out;

		for (int k = 0; k < 8; k++)
			l[k] = &i[k];
		EXPECT_OK(dat_registry_list_providers(8, &n, l));
		for (DAT_COUNT k = 0; k < n; k++)
			out.emplace_back(i[k].ia_name);
		return out;
	}

	/*
	 * Use @conf as DAT_OVERRIDE in a child process bounded by an alarm:
	 * list the providers; the child's exit status is 0 if the list is
	 * exactly the kernel's IAs (dat.conf refused) and 1 otherwise; its
	 * stderr comes back in *err.
	 */
	int refused_in_child(const std::string &conf, std::string *err)
	{
		std::string out = path("stderr");
		pid_t pid = fork();

		if (pid == 0) {
			alarm(20);	/* a blocking read: SIGALRM, a failure */
			int fd = ::open(out.c_str(),
					O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0 || dup2(fd, 2) < 0)
				_exit(3);
			setenv("DAT_OVERRIDE", conf.c_str(), 1);
			kdat::registry_reset();
			auto v = listed();
			_exit(v == std::vector<std::string>{ "rxe0", "rxe1" } ?
				      0 : 1);
		}
		int st = 0;
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
		std::ifstream f(out);
		err->assign(std::istreambuf_iterator<char>(f), {});
		if (WIFSIGNALED(st))
			return 128 + WTERMSIG(st);
		return WEXITSTATUS(st);
	}

	std::string dir;
	std::vector<std::string> files;
};

const std::string kEntry =
	"fast u1.2 threadsafe default libdat.so.1 kdat.1.0 \"rxe1\" \"\"\n";

} // namespace

TEST_F(Loader, DatOverrideFifoIsRefusedWithoutBlocking)
{
	std::string fifo = path("fifo");
	std::string err;

	ASSERT_EQ(0, mkfifo(fifo.c_str(), 0600));
	EXPECT_EQ(0, refused_in_child(fifo, &err));
	EXPECT_NE(std::string::npos,
		  err.find("cannot read DAT_OVERRIDE=" + fifo +
			   ": a FIFO, not a regular file; no dat.conf used"))
		<< err;
}

TEST_F(Loader, DatOverrideDeviceIsRefusedWithoutReading)
{
	std::string err;

	/* read as a file, /dev/zero never ends */
	EXPECT_EQ(0, refused_in_child("/dev/zero", &err));
	EXPECT_NE(std::string::npos,
		  err.find("DAT_OVERRIDE=/dev/zero: a device, not a regular file"))
		<< err;
}

TEST_F(Loader, DatOverrideDirectoryIsRefused)
{
	std::string err;

	EXPECT_EQ(0, refused_in_child(dir, &err));
	EXPECT_NE(std::string::npos,
		  err.find("DAT_OVERRIDE=" + dir +
			   ": a directory, not a regular file"))
		<< err;
}

TEST_F(Loader, DatOverrideLargerThanTheLimitIsRefused)
{
	std::string big = path("big.conf");
	std::string err;
	{
		std::ofstream f(big);
		f << kEntry;
		std::string comment(1023, '#');
		std::size_t n = kEntry.size();
		while (n <= kdat::kDatConfMax) {
			f << comment << '\n';
			n += comment.size() + 1;
		}
	}
	EXPECT_EQ(0, refused_in_child(big, &err));
	EXPECT_NE(std::string::npos,
		  err.find("larger than " + std::to_string(kdat::kDatConfMax) +
			   " bytes"))
		<< err;
}

TEST_F(Loader, DatOverrideOfExactlyTheLimitIsRead)
{
	std::string conf = path("limit.conf");
	{
		std::ofstream f(conf);
		std::string pad(kdat::kDatConfMax - kEntry.size() - 1, '#');
		f << kEntry << pad << '\n';
	}
	struct stat st;
	ASSERT_EQ(0, ::stat(conf.c_str(), &st));
	ASSERT_EQ((off_t)kdat::kDatConfMax, st.st_size);
	setenv("DAT_OVERRIDE", conf.c_str(), 1);
	kdat::registry_reset();
	EXPECT_EQ((std::vector<std::string>{ "fast", "rxe0", "rxe1" }),
		  listed());
}

TEST_F(Loader, DatOverrideSymlinkToARegularFileIsFollowed)
{
	std::string conf = path("real.conf"), link = path("link.conf");
	std::ofstream(conf) << kEntry;
	ASSERT_EQ(0, symlink(conf.c_str(), link.c_str()));
	setenv("DAT_OVERRIDE", link.c_str(), 1);
	kdat::registry_reset();
	EXPECT_EQ((std::vector<std::string>{ "fast", "rxe0", "rxe1" }),
		  listed());

	/* and it is used: "fast" opens kernel IA rxe1 */
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "fast", 8, &async, &ia));
	EXPECT_EQ("rxe1", std::string(kernel.last<kdat_ioc_ia_open>(
						  KDAT_IOC_IA_OPEN).name));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST_F(Loader, RefusedDatConfIsNoDatConf)
{
	/* (a directory: a FIFO would block this process if it were read) */
	setenv("DAT_OVERRIDE", dir.c_str(), 1);
	kdat::registry_reset();
	::testing::internal::CaptureStderr();
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;
	/* the kernel's IAs still open; names only dat.conf gave do not */
	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	async = nullptr;
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   dat_ia_open((DAT_NAME_PTR) "fast", 8, &async, &ia));
	std::string err = ::testing::internal::GetCapturedStderr();
	EXPECT_NE(std::string::npos,
		  err.find("a directory, not a regular file")) << err;
}

/* ---- KDAT_DEVICE and the module's ABI ------------------------------- */

TEST_F(Loader, KdatDeviceNamesTheDevice)
{
	DAT_RETURN st = DAT_SUCCESS;

	setenv("KDAT_DEVICE", "/nonexistent/kdat", 1);
	EXPECT_EQ(nullptr, kdat::open_kdat_device(&st));
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED), st);
	/* a file that is no kdat device: opened, refused at the version */
	setenv("KDAT_DEVICE", "/dev/null", 1);
	auto dev = kdat::open_kdat_device(&st);
	EXPECT_NE(nullptr, dev);
	EXPECT_OK(st);
	dev.reset();
	fake::Kernel::uninstall();
	::testing::internal::CaptureStderr();
	EXPECT_EQ(nullptr, kdat::open_device(&st));
	std::string err = ::testing::internal::GetCapturedStderr();
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED), st);
	EXPECT_NE(std::string::npos,
		  err.find("kdat module does not answer its version"))
		<< err;
	kernel.install();
	unsetenv("KDAT_DEVICE");
}

namespace {

/* Make the fake answer KDAT_IOC_VERSION like another module. */
void module_says(fake::Kernel &k, std::uint32_t abi, std::uint32_t min,
		 std::uint64_t features)
{
	k.answer<kdat_ioc_version>(KDAT_IOC_VERSION,
				   [=](kdat_ioc_version &v) -> DAT_RETURN {
					   v.abi_version = abi;
					   v.min_abi_version = min;
					   v.features = features;
					   return DAT_SUCCESS;
				   });
}

/* dat_ia_open of rxe0 and what stderr said. */
DAT_RETURN open_rxe0(std::string *err)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;

	::testing::internal::CaptureStderr();
	DAT_RETURN r = dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia);
	*err = ::testing::internal::GetCapturedStderr();
	if (r == DAT_SUCCESS) {
		EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	}
	return r;
}

} // namespace

TEST_F(Loader, ModuleTooOldIsNoProviderSaidOnce)
{
	std::string err;

	/* ABI 1 predates every library that has the range */
	module_says(kernel, 1, 1, KDAT_FEATURES_ALL);
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   open_rxe0(&err));
	EXPECT_NE(std::string::npos,
		  err.find("libdat: kdat module too old (ABI 1, need >= "))
		<< err;
	EXPECT_EQ(0, kernel.ioctls(KDAT_IOC_IA_OPEN));
	/* said once: the next open fails the same, silently */
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   open_rxe0(&err));
	EXPECT_EQ("", err);
	/* the module listed nothing usable either */
	EXPECT_EQ((std::vector<std::string>{ "rxe0", "rxe1" }), listed());
}

TEST_F(Loader, ModuleTooNewIsNoProvider)
{
	std::string err;

	/* a newer module that no longer serves this library's ABI */
	module_says(kernel, KDAT_ABI_VERSION + 2, KDAT_ABI_VERSION + 1, 0);
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   open_rxe0(&err));
	EXPECT_NE(std::string::npos,
		  err.find("kdat module too new (ABI " +
			   std::to_string(KDAT_ABI_VERSION + 2) +
			   ", serves libraries of ABI >= " +
			   std::to_string(KDAT_ABI_VERSION + 1) +
			   ", need <= " + std::to_string(KDAT_ABI_VERSION) +
			   ")"))
		<< err;
	/* a newer module from before the range: its own ABI only */
	module_says(kernel, KDAT_ABI_VERSION + 1, 0, 0);
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   open_rxe0(&err));
	EXPECT_NE(std::string::npos,
		  err.find("kdat module too new (ABI " +
			   std::to_string(KDAT_ABI_VERSION + 1) + ", need <= " +
			   std::to_string(KDAT_ABI_VERSION) + ")"))
		<< err;
	EXPECT_EQ(0, kernel.ioctls(KDAT_IOC_IA_OPEN));
}

TEST_F(Loader, ModulesThatServeThisAbiAreUsed)
{
	std::string err;

	/* newer, still serving this ABI; unknown feature bits are fine */
	module_says(kernel, KDAT_ABI_VERSION + 1, KDAT_ABI_VERSION,
		    ~0ull);
	EXPECT_OK(open_rxe0(&err));
	EXPECT_EQ("", err);
	/* the same ABI from before min_abi_version and features */
	module_says(kernel, KDAT_ABI_VERSION, 0, 0);
	EXPECT_OK(open_rxe0(&err));
	EXPECT_EQ("", err);
	/* this module */
	kernel.answer_raw(KDAT_IOC_VERSION, nullptr);
	EXPECT_OK(open_rxe0(&err));
	auto v = kernel.last<kdat_ioc_version>(KDAT_IOC_VERSION);
	EXPECT_EQ((unsigned)KDAT_ABI_VERSION, v.abi_version);
	EXPECT_EQ(sizeof(kdat_ioc_version), v.hdr.size);
}

TEST_F(Loader, ModuleThatCannotSayItsVersionIsNoProvider)
{
	std::string err;

	/* (ENOTTY, as from a file that is no kdat device: KdatDevice above) */
	kernel.status_next(KDAT_IOC_VERSION, E(DAT_INVALID_STATE));
	EXPECT_DAT(E(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),
		   open_rxe0(&err));
	EXPECT_NE(std::string::npos,
		  err.find("kdat module does not answer its version"))
		<< err;
}

/*
 * Ia::open's kernel flags (the DAT 2.0 provider's KDAT_IA_OPEN_SRQ_EP_BROKEN)
 * reach KDAT_IOC_IA_OPEN; every other open sends none.  Unknown bits are
 * refused before the kernel is asked, and a module whose features lack
 * KDAT_FEATURE_SRQ_EP_BROKEN is not asked either: DAT_MODEL_NOT_SUPPORTED.
 */
TEST_F(Loader, KernelFlagsReachIaOpenOnlyWhereTheModuleHasThem)
{
	DAT_PROVIDER table{};
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = nullptr;

	ASSERT_OK(dat_ia_open((DAT_NAME_PTR) "rxe0", 8, &async, &ia));
	EXPECT_EQ(0u, kernel.last<kdat_ioc_ia_open>(KDAT_IOC_IA_OPEN).flags);
	EXPECT_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));

	async = nullptr;
	ASSERT_OK(kdat::Ia::open(&table, "rxe0", "rxe0", 8, &async, &ia,
				 nullptr, KDAT_IA_OPEN_SRQ_EP_BROKEN));
	EXPECT_EQ(std::uint32_t(KDAT_IA_OPEN_SRQ_EP_BROKEN),
		  kernel.last<kdat_ioc_ia_open>(KDAT_IOC_IA_OPEN).flags);
	EXPECT_OK(kdat::lookup<kdat::Ia>(ia)->close(DAT_CLOSE_ABRUPT_FLAG));

	int opens = kernel.ioctls(KDAT_IOC_IA_OPEN);
	async = nullptr;
	EXPECT_DAT(E(DAT_INVALID_PARAMETER),
		   kdat::Ia::open(&table, "rxe0", "rxe0", 8, &async, &ia,
				  nullptr, 0x80));
	module_says(kernel, KDAT_ABI_VERSION, KDAT_ABI_MIN_COMPAT,
		    KDAT_FEATURE_VERSION_RANGE);
	async = nullptr;
	EXPECT_DAT(E(DAT_MODEL_NOT_SUPPORTED),
		   kdat::Ia::open(&table, "rxe0", "rxe0", 8, &async, &ia,
				  nullptr, KDAT_IA_OPEN_SRQ_EP_BROKEN));
	EXPECT_EQ(opens, kernel.ioctls(KDAT_IOC_IA_OPEN));
}
