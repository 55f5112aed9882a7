// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A library with an initial-exec thread-local, as some libraries have:
 * each copy a process loads takes DAT_TLS_HOG_SIZE bytes of glibc's
 * static TLS surplus, which test_tls_load.cpp uses up before it loads
 * libdaplkdat.so.2.  Built twice: big copies take most of it, small ones the rest.
 */
__thread char dat_test_tls_hog[DAT_TLS_HOG_SIZE]
	__attribute__((tls_model("initial-exec"), aligned(8)));

char *dat_test_tls_hog_addr(void);
char *dat_test_tls_hog_addr(void)
{
	return dat_test_tls_hog;
}
