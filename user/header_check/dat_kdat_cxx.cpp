// The extension header alone, as C++20.
#include <dat/dat_kdat.h>

int dat_kdat_header_check_cxx();
int dat_kdat_header_check_cxx()
{
	return (int)sizeof(DAT_KDAT_PROVIDER_NAME);
}
