/* The extension header alone, as C11. */
#include <dat/dat_kdat.h>

int dat_kdat_header_check_c(void);
int dat_kdat_header_check_c(void)
{
	return (int)sizeof(DAT_KDAT_PROVIDER_NAME);
}
